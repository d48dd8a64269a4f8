package compaction

import (
	"context"
	"fmt"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// tsStream is a compacted partition written batch by batch, with the
// segments sealed where the test says.
type tsStream struct {
	st *store.Mem
	b  *layout.Binding
	w  *stream.Writer
}

func newTSStream(t *testing.T) *tsStream {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem(t.Name())
	sid := "s-ts"
	if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	cfg.CleanupPolicy = "compact"
	b := &layout.Binding{Topic: "c", TopicID: "tid", Partition: 0, StreamID: sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("c", 0), b); err != nil {
		t.Fatal(err)
	}
	w, err := stream.OpenWriter(ctx, st, sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &tsStream{st: st, b: b, w: w}
}

// batch appends one batch of keyed records at the writer's next offset:
// record i has key keys[i] and CreateTime timestamp ts[i]; lat makes it a
// LogAppendTime batch whose append time (MaxTimestamp) is appendTime.
func (s *tsStream) batch(t *testing.T, keys []string, ts []int64, lat bool, appendTime int64) {
	t.Helper()
	next := s.w.Next()
	recs := make([]kafka.Record, len(keys))
	for i, k := range keys {
		recs[i] = kafka.Record{Offset: next + int64(i), Key: []byte(k), Value: []byte(fmt.Sprintf("%s@%d", k, next+int64(i))), Timestamp: ts[i]}
	}
	spec := kafka.NewBatchSpec(next, recs)
	if lat {
		spec.TimestampType, spec.MaxTimestamp = kafka.LogAppendTime, appendTime
	}
	raw, err := kafka.EncodeBatch(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.w.Append(context.Background(), [][]byte{raw}); err != nil {
		t.Fatal(err)
	}
}

func (s *tsStream) roll(t *testing.T) {
	t.Helper()
	if err := s.w.Roll(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (s *tsStream) binding(t *testing.T) *layout.Binding {
	t.Helper()
	b, _, err := layout.LoadBinding(context.Background(), s.st, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type tsRec struct {
	ts  int64
	typ kafka.TimestampType
}

func readTimestamps(t *testing.T, st store.Store, b *layout.Binding) map[int64]tsRec {
	t.Helper()
	out := map[int64]tsRec{}
	if _, err := Read(context.Background(), st, b, 0, func(r Record) error {
		out[r.Offset] = tsRec{r.Timestamp, r.TimestampType}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLogAppendTimeKeptThroughCompaction: a LogAppendTime batch's records
// keep their timestamp type through compaction, and their timestamp is the
// batch's append time, on the view and on the COMMITTED tail of the
// READ_COMMITTED read path, through a second compaction (rows of the
// previous view) and through a compaction in several passes (rows spilled
// between passes). Kafka: DefaultRecordBatch gives every record of a
// LOG_APPEND_TIME batch the batch's maxTimestamp (DefaultRecord.readFrom
// with logAppendTime = maxTimestamp()); MemoryRecords.filterTo rewrites the
// retained records with buildRetainedRecordsInto(originalBatch, …), whose
// builder takes originalBatch.timestampType() and, for LOG_APPEND_TIME,
// logAppendTime = originalBatch.maxTimestamp(). The expected values below
// are those rules applied to the batches written, not nereusctl's output.
func TestLogAppendTimeKeptThroughCompaction(t *testing.T) {
	ctx := context.Background()
	s := newTSStream(t)
	// Segment [0, 3): a LogAppendTime batch (record CreateTimes 100, 200,
	// append time 5000) and a CreateTime batch.
	s.batch(t, []string{"a", "b"}, []int64{100, 200}, true, 5000)
	s.batch(t, []string{"c"}, []int64{300}, false, 0)
	s.roll(t)
	// Segment [3, 5): "a" again (CreateTime 400), then "d" under
	// LogAppendTime 6000.
	s.batch(t, []string{"a"}, []int64{400}, false, 0)
	s.batch(t, []string{"d"}, []int64{450}, true, 6000)
	s.roll(t)
	// The open tail: a LogAppendTime batch, append time 7000.
	s.batch(t, []string{"e"}, []int64{500}, true, 7000)

	want := map[int64]tsRec{
		1: {5000, kafka.LogAppendTime}, // "b": the batch's append time, not its CreateTime 200
		2: {300, kafka.CreateTime},
		3: {400, kafka.CreateTime},
		4: {6000, kafka.LogAppendTime},
		5: {7000, kafka.LogAppendTime}, // the COMMITTED tail
	}
	check := func(what string, got map[int64]tsRec, want map[int64]tsRec) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d records %v, want %d %v", what, len(got), got, len(want), want)
		}
		for off, w := range want {
			if g, ok := got[off]; !ok || g != w {
				t.Errorf("%s: offset %d: %s %d, want %s %d", what, off, g.typ, g.ts, w.typ, w.ts)
			}
		}
	}
	r, err := Compact(ctx, s.st, s.binding(t), Options{NowMs: 10_000})
	if err != nil || !r.Activated || r.Plan.End != 5 {
		t.Fatalf("compact: %v %+v", err, r)
	}
	check("first compaction", readTimestamps(t, s.st, s.binding(t)), want)

	// A second compaction reads the first one's rows back.
	s.roll(t)
	s.batch(t, []string{"b"}, []int64{800}, false, 0) // supersedes offset 1
	s.roll(t)
	if r, err := Compact(ctx, s.st, s.binding(t), Options{NowMs: 20_000}); err != nil || !r.Activated || r.Plan.End != 7 {
		t.Fatalf("second compaction: %v %+v", err, r)
	}
	want2 := map[int64]tsRec{2: want[2], 3: want[3], 4: want[4], 5: want[5], 6: {800, kafka.CreateTime}}
	check("second compaction", readTimestamps(t, s.st, s.binding(t)), want2)
}

// TestLogAppendTimeKeptAcrossPasses: a compaction in several passes (the
// offset map holds fewer keys than the range) spills rows between passes;
// their timestamp type and append time survive the spill.
func TestLogAppendTimeKeptAcrossPasses(t *testing.T) {
	ctx := context.Background()
	s := newTSStream(t)
	const keys = 60
	for i := 0; i < keys; i++ {
		s.batch(t, []string{fmt.Sprintf("k%02d", i)}, []int64{int64(i)}, i%2 == 0, 10_000+int64(i))
		if i%20 == 19 {
			s.roll(t)
		}
	}
	s.batch(t, []string{"tail"}, []int64{1}, false, 0)
	r, err := Compact(ctx, s.st, s.binding(t), Options{NowMs: 50_000, MaxMemory: 16 * EntryBytes, TempDir: t.TempDir()})
	if err != nil || !r.Activated || r.Stats.Passes < 2 {
		t.Fatalf("compact: %v %+v", err, r)
	}
	got := readTimestamps(t, s.st, s.binding(t))
	for i := int64(0); i < keys; i++ {
		want := tsRec{i, kafka.CreateTime}
		if i%2 == 0 {
			want = tsRec{10_000 + i, kafka.LogAppendTime}
		}
		if got[i] != want {
			t.Errorf("offset %d: %s %d, want %s %d", i, got[i].typ, got[i].ts, want.typ, want.ts)
		}
	}
}
