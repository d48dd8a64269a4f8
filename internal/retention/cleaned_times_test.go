package retention

import (
	"context"
	"strconv"
	"testing"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// sealMs is when cdStream seals its segments (their generations'
// created_ms: the analogue of a .log file's mtime).
const sealMs = 50_000

// cdStream is a compact,delete partition written segment by segment.
type cdStream struct {
	st  *store.Mem
	tp  layout.TopicPartition
	sid string
	w   *stream.Writer
}

func newCDStream(t *testing.T) *cdStream {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem(t.Name())
	s := &cdStream{st: st, tp: layout.TopicPartition{Topic: "cd", Partition: 0}, sid: "s-cd"}
	if err := stream.CreateStream(ctx, st, s.sid, 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	cfg.CleanupPolicy = "compact,delete"
	b := &layout.Binding{Topic: "cd", TopicID: "tid", Partition: 0, StreamID: s.sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("cd", 0), b); err != nil {
		t.Fatal(err)
	}
	w, err := stream.OpenWriter(ctx, st, s.sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.NowMs = func() int64 { return sealMs } // every segment is sealed at sealMs
	s.w = w
	return s
}

// segment appends one batch of records (key, CreateTime timestamp) and,
// unless open, seals the segment.
func (s *cdStream) segment(t *testing.T, open bool, recs ...kafka.Record) {
	t.Helper()
	next := s.w.Next()
	for i := range recs {
		recs[i].Offset = next + int64(i)
		recs[i].Value = []byte("v")
	}
	raw, err := kafka.EncodeBatch(kafka.NewBatchSpec(next, recs))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.w.Append(ctx, [][]byte{raw}); err != nil {
		t.Fatal(err)
	}
	if !open {
		if err := s.w.Roll(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func rec(key string, ts int64) kafka.Record { return kafka.Record{Key: []byte(key), Timestamp: ts} }

// committed returns the COMMITTED generations in offset order.
func (s *cdStream) committed(t *testing.T) []*layout.Generation {
	t.Helper()
	ctx := context.Background()
	gens, err := layout.ListGenerations(ctx, s.st, s.sid)
	if err != nil {
		t.Fatal(err)
	}
	var out []*layout.Generation
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, s.st, s.sid, n)
		if err != nil {
			t.Fatal(err)
		}
		if g.Kind == layout.KindCommitted {
			out = append(out, g)
		}
	}
	return out
}

// compactAndConfigure compacts the closed segments, then sets retention.ms
// and a segment.bytes under which every cleaned group is one segment (no
// two segments fit together).
func (s *cdStream) compactAndConfigure(t *testing.T, retentionMs int64) {
	t.Helper()
	ctx := context.Background()
	b := mustBinding(t, s.st, s.tp)
	if r, err := compaction.Compact(ctx, s.st, b, compaction.Options{NowMs: 1}); err != nil || !r.Activated {
		t.Fatalf("compact: %v %+v", err, r)
	}
	var largest int64
	for _, g := range s.committed(t) {
		var n int64
		for _, o := range g.Objects {
			n += o.Size
		}
		largest = max(largest, n)
	}
	if _, err := SetConfig(ctx, s.st, s.tp, []KV{{Key: "retention.ms", Value: itoa(retentionMs)}, {Key: "retention.bytes", Value: "-1"}, {Key: "segment.bytes", Value: itoa(largest)}}, false); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func (s *cdStream) plan(t *testing.T, nowMs int64) *Result {
	t.Helper()
	r := RunPartition(context.Background(), s.st, Request{TP: s.tp, Retention: true, NowMs: nowMs, PlanOnly: true})
	if !r.OK() {
		t.Fatalf("plan: %s %s", r.Error, r.ErrorDetail)
	}
	return r
}

// TestCleanedSegmentTimestampIsRetainedRecords: retention of a
// compact,delete partition measures each cleaned segment by the records
// the cleaner kept. Kafka: LogCleaner.cleanInto appends only the retained
// batches to the cleaned segment, so LogSegment.largestTimestamp (its
// maxTimestampSoFar) is the largest timestamp the cleaner kept; a cleaned
// segment that kept no record falls back to its file's mtime, which
// LogCleaner.cleanSegments sets to the last source segment's
// (cleaned.setLastModified(segments.last.lastModified)); retention.ms
// deletes oldest first while now - largestTimestamp > retention.ms
// (UnifiedLog.deleteRetentionMsBreachedSegments) and stops at the first
// segment it keeps. The expected log starts apply those rules to the
// records written.
func TestCleanedSegmentTimestampIsRetainedRecords(t *testing.T) {
	t.Run("kept records", func(t *testing.T) {
		s := newCDStream(t)
		s.segment(t, false, rec("a", 100), rec("b", 5000)) // [0, 2): b is superseded below
		s.segment(t, false, rec("b", 5100))                // [2, 3)
		s.segment(t, false, rec("c", 9000))                // [3, 4)
		s.segment(t, true, rec("d", 9500))                 // the open segment
		s.compactAndConfigure(t, 1000)
		// At 5500 the cleaned [0, 2) holds a@100 only: 5400 ms old, past
		// retention.ms 1000, deleted; [2, 3) holds b@5100, 400 ms old:
		// kept, and the walk stops. (Its uncleaned maximum, 5000, would
		// keep [0, 2) too.)
		if r := s.plan(t, 5500); r.NewLogStart != 2 {
			t.Fatalf("new log start %d, want 2; plan %+v", r.NewLogStart, r.Plan)
		}
		// At 9999 [3, 4)'s c@9000 is 999 ms old: kept.
		if r := s.plan(t, 9999); r.NewLogStart != 3 {
			t.Fatalf("at 9999: new log start %d, want 3; plan %+v", r.NewLogStart, r.Plan)
		}
	})
	t.Run("nothing kept: the last segment's seal time", func(t *testing.T) {
		s := newCDStream(t)
		s.segment(t, false, rec("a", 100)) // [0, 1): superseded whole by [1, 2)
		s.segment(t, false, rec("a", 200)) // [1, 2)
		s.segment(t, true, rec("z", 300))
		s.compactAndConfigure(t, 1000)
		sealed := s.committed(t)[0].CreatedMs // [0, 1)'s seal time: its .log file's mtime analogue
		if sealed != sealMs {
			t.Fatalf("sealed at %d, want %d", sealed, sealMs)
		}
		// The cleaned [0, 1) kept nothing: it is as old as its file's
		// mtime, 500 ms: kept, and so is everything after it. (Its
		// uncleaned maximum, 100, is long past retention.ms.)
		if r := s.plan(t, sealed+500); r.NewLogStart != 0 {
			t.Fatalf("new log start %d, want 0; plan %+v", r.NewLogStart, r.Plan)
		}
		// 1001 ms after the seal: [0, 1) goes, [1, 2) (a@200) too, and
		// with every segment before it gone the open one (z@300) as well
		// (Kafka rolls the active segment and deletes it).
		if r := s.plan(t, sealed+1001); r.NewLogStart != 3 {
			t.Fatalf("a second later: new log start %d, want 3; plan %+v", r.NewLogStart, r.Plan)
		}
	})
}

// TestCleanedTimesSplitsBlocksAtCuts: ReadViewTimes answers per cleaned
// segment even when one NTC2 block holds rows of several (it decodes that
// block and splits it at the bounds), and agrees with the rows themselves.
func TestCleanedTimesSplitsBlocksAtCuts(t *testing.T) {
	ctx := context.Background()
	s := newCDStream(t)
	// Ten one-record segments with falling timestamps: every row in one
	// block of the view.
	for i := int64(0); i < 10; i++ {
		s.segment(t, false, rec(string(rune('a'+i)), 1000-i*10))
	}
	s.segment(t, true, rec("z", 1))
	s.compactAndConfigure(t, 1000)
	b := mustBinding(t, s.st, s.tp)
	view, err := viewObjects(ctx, s.st, b)
	if err != nil {
		t.Fatal(err)
	}
	vt, err := compaction.ReadViewTimes(ctx, s.st, view, []int64{0, 3, 4, 9, 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to, want int64
	}{{0, 3, 1000}, {3, 4, 970}, {4, 9, 960}, {9, 10, 910}, {0, 10, 1000}, {4, 10, 960}} {
		if got, ok := vt.MaxIn(c.from, c.to); !ok || got != c.want {
			t.Errorf("[%d, %d): %d %v, want %d", c.from, c.to, got, ok, c.want)
		}
	}
}
