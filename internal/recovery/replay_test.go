package recovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// fixture is one partition in a mem:// store with a writer.
type fixture struct {
	st  *store.Mem
	b   *layout.Binding
	w   *stream.Writer
	rng *rand.Rand
	// producer bookkeeping
	seq  map[int64]int32
	ep   map[int64]int16
	open map[int64]bool
	le   int32
	ts   int64
}

func newFixture(t *testing.T, seed uint64, segBytes int64) *fixture {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem("test")
	sid := fmt.Sprintf("s-%d", seed)
	if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	cfg.SegmentBytes = segBytes
	b := &layout.Binding{Topic: "t", TopicID: "tid", Partition: 0, StreamID: sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("t", 0), b); err != nil {
		t.Fatal(err)
	}
	w, err := stream.OpenWriter(ctx, st, sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, b: b, w: w, rng: rand.New(rand.NewPCG(seed, 99)), seq: map[int64]int32{}, ep: map[int64]int16{}, open: map[int64]bool{}, ts: 1_700_000_000_000}
}

// appendRandom appends one object of 1-3 random batches: idempotent,
// transactional data, commit/abort markers, epoch bumps, leader changes.
func (f *fixture) appendRandom(t *testing.T) {
	t.Helper()
	next := f.w.Next()
	var batches [][]byte
	for i := 0; i < 1+f.rng.IntN(3); i++ {
		f.ts += int64(f.rng.IntN(5000))
		if f.rng.IntN(30) == 0 {
			f.le++
		}
		pid := int64(1 + f.rng.IntN(4))
		txn := pid%2 == 0
		var b []byte
		var err error
		if txn && f.open[pid] && f.rng.IntN(3) == 0 {
			b, err = kafka.MarkerBatch(next, f.le, pid, f.ep[pid], f.rng.IntN(3) != 0, int32(f.rng.IntN(2)), f.ts)
			f.open[pid] = false
			if f.rng.IntN(4) == 0 {
				f.ep[pid]++
				f.seq[pid] = 0
			}
		} else {
			n := 1 + f.rng.IntN(6)
			recs := make([]kafka.Record, n)
			for j := range recs {
				recs[j] = kafka.Record{Offset: next + int64(j), Timestamp: f.ts + int64(j), Key: []byte(fmt.Sprintf("k%d", f.rng.IntN(50))), Value: []byte(strings.Repeat("v", f.rng.IntN(200)))}
			}
			s := kafka.NewBatchSpec(next, recs)
			s.PartitionLeaderEpoch = f.le
			s.Codec = kafka.Codec(f.rng.IntN(5))
			if pid != 3 || f.rng.IntN(2) == 0 {
				s.ProducerID, s.ProducerEpoch, s.BaseSequence = pid, f.ep[pid], f.seq[pid]
				f.seq[pid] = kafka.IncrementSequence(f.seq[pid], int32(n))
				s.Transactional = txn
				if txn {
					f.open[pid] = true
				}
			}
			b, err = kafka.EncodeBatch(s)
		}
		if err != nil {
			t.Fatal(err)
		}
		h, _ := kafka.ParseHeader(b)
		next = h.LastOffset() + 1
		batches = append(batches, b)
	}
	if err := f.w.Append(context.Background(), batches); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) binding(t *testing.T) (*layout.Binding, string) {
	t.Helper()
	b, etag, err := layout.LoadBinding(context.Background(), f.st, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	return b, etag
}

// setTrim moves the durable trim the way the trim sequence does (CAS).
func (f *fixture) setTrim(t *testing.T, trim int64) {
	t.Helper()
	ctx := context.Background()
	h, etag, err := layout.LoadHead(ctx, f.st, f.b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	if trim <= h.Trim {
		return
	}
	h.Trim = min(trim, h.Head)
	h.Version++
	if _, err := layout.Replace(ctx, f.st, layout.HeadKey(f.b.StreamID), h, etag); err != nil {
		t.Fatal(err)
	}
	// the writer's cached head ETag is stale now: reopen it
	w, err := stream.OpenWriter(ctx, f.st, f.b.StreamID, f.b.Config)
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
}

// TestCheckpointPlusTailEqualsFull is the invariant of docs/design.md §6: for random
// workloads with checkpoints at random anchors and trims in between,
// checkpoint + tail replay gives the same state digest as a full replay.
func TestCheckpointPlusTailEqualsFull(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 40; seed++ {
		f := newFixture(t, seed, int64(2000+f64(seed)*300))
		objects := 10 + f.rng.IntN(60)
		checkpoints := 0
		for i := 0; i < objects; i++ {
			f.appendRandom(t)
			if f.rng.IntN(12) == 0 {
				f.setTrim(t, f.w.Next()-int64(f.rng.IntN(int(f.w.Next()+1))))
			}
			if f.rng.IntN(8) == 0 {
				b, etag := f.binding(t)
				if _, err := Create(ctx, f.st, b, etag, false); err != nil {
					t.Fatalf("seed %d: checkpoint: %v", seed, err)
				}
				checkpoints++
			}
		}
		if f.rng.IntN(2) == 0 {
			f.setTrim(t, f.w.Next()-int64(f.rng.IntN(int(f.w.Next()+1))))
		}
		b, _ := f.binding(t)
		cp, err := Replay(ctx, f.st, b, Options{VerifyCRC: true})
		if err != nil {
			t.Fatalf("seed %d: replay: %v", seed, err)
		}
		full, err := Replay(ctx, f.st, b, Options{Full: true, VerifyCRC: true})
		if err != nil {
			t.Fatalf("seed %d: full replay: %v", seed, err)
		}
		if checkpoints > 0 && cp.Chosen == nil {
			t.Fatalf("seed %d: %d checkpoints but none chosen: %+v", seed, checkpoints, cp.Candidates)
		}
		if cp.Digest() != full.Digest() {
			t.Fatalf("seed %d: checkpoint path %s (anchor %v) != full %s\ncp   %+v\nfull %+v", seed, cp.Digest(), cp.Chosen, full.Digest(), cp.State, full.State)
		}
	}
}

func f64(u uint64) int64 { return int64(u % 7) }

// TestCheckpointCreateIdempotent: a rerun with nothing new writes nothing.
func TestCheckpointCreateIdempotent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 5, 4000)
	for i := 0; i < 20; i++ {
		f.appendRandom(t)
	}
	b, etag := f.binding(t)
	r1, err := Create(ctx, f.st, b, etag, false)
	if err != nil || !r1.Published {
		t.Fatalf("first create: %+v %v", r1, err)
	}
	before, _ := f.st.List(ctx, "")
	b, etag = f.binding(t)
	r2, err := Create(ctx, f.st, b, etag, false)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Published || !r2.Reused || r2.Key != r1.Key {
		t.Fatalf("rerun published again: %+v", r2)
	}
	after, _ := f.st.List(ctx, "")
	if len(before) != len(after) {
		t.Fatalf("rerun changed the store: %d objects before, %d after", len(before), len(after))
	}
	for i := range before {
		if before[i].Key != after[i].Key || before[i].ETag != after[i].ETag {
			t.Fatalf("rerun changed %s", before[i].Key)
		}
	}
	// dry run writes nothing either
	f.appendRandom(t)
	before, _ = f.st.List(ctx, "")
	b, etag = f.binding(t)
	r3, err := Create(ctx, f.st, b, etag, true)
	if err != nil || r3.Published || r3.Key == r1.Key {
		t.Fatalf("dry run: %+v %v", r3, err)
	}
	after, _ = f.st.List(ctx, "")
	if len(before) != len(after) {
		t.Fatal("dry run wrote objects")
	}
}
