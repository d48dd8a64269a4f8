package dumplog

import (
	"context"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
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

// TestViewKeepsLogAppendTime: a READ_COMMITTED dump prints a LogAppendTime
// batch's records as kafka-dump-log prints them ("LogAppendTime: T" with T
// the batch's append time: DefaultRecordBatch gives each record of a
// LOG_APPEND_TIME batch the batch's maxTimestamp), from the compacted view
// (MemoryRecords.filterTo keeps the original batch's timestamp type and
// append time) and from the COMMITTED tail.
func TestViewKeepsLogAppendTime(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("view-lat")
	sid := "s-lat"
	if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	cfg.CleanupPolicy = "compact"
	b := &layout.Binding{Topic: "lat", TopicID: "tid", Partition: 0, StreamID: sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("lat", 0), b); err != nil {
		t.Fatal(err)
	}
	w, err := stream.OpenWriter(ctx, st, sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	appendLAT := func(key string, createTime, appendTime int64) {
		next := w.Next()
		spec := kafka.NewBatchSpec(next, []kafka.Record{{Offset: next, Key: []byte(key), Value: []byte("v"), Timestamp: createTime}})
		spec.TimestampType, spec.MaxTimestamp = kafka.LogAppendTime, appendTime
		raw, err := kafka.EncodeBatch(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(ctx, [][]byte{raw}); err != nil {
			t.Fatal(err)
		}
	}
	appendLAT("a", 100, 1_700_000_000_500)
	if err := w.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	appendLAT("b", 200, 1_700_000_000_900)
	if _, err := compaction.Compact(ctx, st, b, compaction.Options{NowMs: 1_700_000_001_000}); err != nil {
		t.Fatal(err)
	}
	b, _, err = layout.LoadBinding(ctx, st, "lat", 0)
	if err != nil || b.Coverage.State != layout.CoverageActive || b.Coverage.End != 1 {
		t.Fatalf("coverage %+v, %v", b.Coverage, err)
	}
	var got []string
	if _, _, err := RunView(ctx, st, b, Options{From: -1}, func(l Line) error {
		r := l.(*RecordLine)
		got = append(got, r.Source+" "+r.Text())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"view | offset: 0 LogAppendTime: 1700000000500 keySize: 1 valueSize: 1 sequence: -1 headerKeys: []",
		"committed | offset: 1 LogAppendTime: 1700000000900 keySize: 1 valueSize: 1 sequence: -1 headerKeys: []",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
