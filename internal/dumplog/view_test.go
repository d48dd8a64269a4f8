package dumplog

import (
	"context"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

// TestViewTailShowsSequence: a READ_COMMITTED dump shows the real producer
// sequence of a tail record (the batch's base sequence + the record's
// offset delta, as kafka-dump-log prints it), -1 for records without a
// producer.
func TestViewTailShowsSequence(t *testing.T) {
	st := store.NewMem("view")
	b := testStream(t, st)
	seq := map[int64]int32{}
	_, n, err := RunView(context.Background(), st, b, Options{From: -1}, func(l Line) error {
		if r, ok := l.(*RecordLine); ok {
			seq[r.Offset] = r.Sequence
			if r.Source != "committed" {
				t.Errorf("offset %d from %s, want the committed tail", r.Offset, r.Source)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no records")
	}
	// Producer 7's transactional batch at 5 has base sequence 10.
	if seq[5] != 10 || seq[6] != 11 {
		t.Fatalf("sequences at 5, 6: %d, %d; want 10, 11", seq[5], seq[6])
	}
	if s, ok := seq[0]; !ok || s != -1 {
		t.Fatalf("a record with no producer: sequence %d (present %v), want -1", s, ok)
	}
}
