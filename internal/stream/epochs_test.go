package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

func epochBatch(t *testing.T, base int64, n int, epoch int32) []byte {
	t.Helper()
	recs := make([]kafka.Record, n)
	for i := range recs {
		recs[i] = kafka.Record{Offset: base + int64(i), Timestamp: 1000 + base, Value: []byte("v")}
	}
	s := kafka.NewBatchSpec(base, recs)
	s.PartitionLeaderEpoch = epoch
	b, err := kafka.EncodeBatch(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newTestWriter is a writer of a new stream s-1 in a mem:// store.
func newTestWriter(t *testing.T) (*store.Mem, *Writer) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem(t.Name())
	if err := CreateStream(ctx, st, "s-1", 0); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriter(ctx, st, "s-1", layout.DefaultTopicConfig())
	if err != nil {
		t.Fatal(err)
	}
	return st, w
}

// TestWriterRecordsLeaderEpochs: the writer records in the head a mark
// wherever its batches' leader epoch changes, keeps only the mark in
// force at the open segment's base when a segment is sealed, and a reader
// checks every batch from the first mark on against the record.
func TestWriterRecordsLeaderEpochs(t *testing.T) {
	ctx := context.Background()
	st, w := newTestWriter(t)
	appendAt := func(epochs ...int32) {
		var bs [][]byte
		for _, e := range epochs {
			bs = append(bs, epochBatch(t, w.Next()+int64(len(bs))*2, 2, e))
		}
		if err := w.Append(ctx, bs); err != nil {
			t.Fatal(err)
		}
	}
	head := func() *layout.Head {
		h, _, err := layout.LoadHead(ctx, st, "s-1")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	appendAt(0, 0)    // [0, 4)
	appendAt(0, 3, 3) // [4, 10)
	if got := head().LeaderEpochs; got != "0@0,3@6" {
		t.Fatalf("record %q, want 0@0,3@6", got)
	}
	if err := w.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	appendAt(3, 5) // [10, 14)
	if got := head().LeaderEpochs; got != "3@6,5@12" {
		t.Fatalf("record after the roll %q, want 3@6,5@12 (the mark in force at 10, then the change)", got)
	}

	// Every batch of the open segment passes; a leader epoch changed by
	// any bit, in any batch, is corruption naming the object and offset.
	h := head()
	objs, err := layout.ListObjects(ctx, st, "s-1")
	if err != nil {
		t.Fatal(err)
	}
	open := objs[len(objs)-1]
	data, err := ReadObject(ctx, st, open)
	if err != nil {
		t.Fatal(err)
	}
	if err := ScanObjectWith(open, data, ScanOptions{VerifyCRC: true, Epochs: h.LeaderEpochs}, func(Batch) error { return nil }); err != nil {
		t.Fatalf("untouched: %v", err)
	}
	var positions []int
	if err := ScanObject(open, data, true, func(b Batch) error { positions = append(positions, int(b.Pos)); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, pos := range positions {
		for bit := 0; bit < 32; bit++ {
			flipped := append([]byte(nil), data...)
			flipped[pos+12+bit/8] ^= 1 << (bit % 8) // partitionLeaderEpoch: bytes 12..15
			err := ScanObjectWith(open, flipped, ScanOptions{VerifyCRC: true, Epochs: h.LeaderEpochs}, func(Batch) error { return nil })
			if !errors.Is(err, kafka.ErrCorrupt) || !strings.Contains(err.Error(), open.Key) || !strings.Contains(err.Error(), "leader epoch") {
				t.Fatalf("batch at byte %d, epoch bit %d: %v, want corruption naming the object and the leader epoch", pos, bit, err)
			}
			// Without the record, the CRC does not cover it: unseen.
			if err := ScanObject(open, flipped, true, func(Batch) error { return nil }); err != nil {
				t.Fatalf("the CRC covers the leader epoch after all? %v", err)
			}
		}
	}
}

// TestLeaderEpochRecordBounded: past layout.MaxLeaderEpochMarks changes in
// one segment the record is dropped and starts again at the next append,
// so a head never grows with them, and the record always describes the
// batches from its first mark on.
func TestLeaderEpochRecordBounded(t *testing.T) {
	ctx := context.Background()
	st, w := newTestWriter(t)
	for i := range layout.MaxLeaderEpochMarks + 3 {
		if err := w.Append(ctx, [][]byte{epochBatch(t, w.Next(), 1, int32(i))}); err != nil {
			t.Fatal(err)
		}
		h, _, err := layout.LoadHead(ctx, st, "s-1")
		if err != nil {
			t.Fatal(err)
		}
		marks, err := layout.ParseLeaderEpochs(h.LeaderEpochs)
		if err != nil || len(marks) > layout.MaxLeaderEpochMarks {
			t.Fatalf("append %d: record %q (%v)", i, h.LeaderEpochs, err)
		}
		objs, _ := layout.ListObjects(ctx, st, "s-1")
		for _, o := range objs {
			data, _ := ReadObject(ctx, st, o)
			if err := ScanObjectWith(o, data, ScanOptions{VerifyCRC: true, Epochs: h.LeaderEpochs}, func(Batch) error { return nil }); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
	}
}
