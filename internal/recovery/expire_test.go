package recovery

import (
	"context"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/state"
)

// appendProducer appends one object holding one single-record batch per
// (pid, ts) pair; pids listed in txn write transactional batches.
func (f *fixture) appendProducer(t *testing.T, pids []int64, ts []int64, txn map[int64]bool) {
	t.Helper()
	next := f.w.Next()
	var batches [][]byte
	for i, pid := range pids {
		s := kafka.NewBatchSpec(next, []kafka.Record{{Offset: next, Timestamp: ts[i], Key: []byte("k"), Value: []byte("v")}})
		s.ProducerID, s.ProducerEpoch, s.BaseSequence, s.Transactional = pid, 0, f.seq[pid], txn[pid]
		f.seq[pid]++
		b, err := kafka.EncodeBatch(s)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
		next++
	}
	if err := f.w.Append(context.Background(), batches); err != nil {
		t.Fatal(err)
	}
}

// TestReplayExpiresProducersAtClock: producers idle past
// producer.id.expiration.ms at the clock are dropped, one in an open
// transaction and a fresh one are kept; a checkpoint records its clock; the
// same clock gives the same digest, a clock across an expiry another; and
// the full replay of --compare (AsOfCheckpoint) matches the checkpoint path
// even for a producer the checkpoint expired that writes again in the tail.
func TestReplayExpiresProducersAtClock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 16, 1<<20)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	// 1 and 3 idempotent, 2 opens a transaction, all at t0.
	f.appendProducer(t, []int64{1, 2, 3}, []int64{ms(0), ms(0), ms(0)}, map[int64]bool{2: true})
	c1 := state.Clock{NowMs: (t0.Add(48 * time.Hour)).UnixMilli(), ExpirationMs: state.DefaultProducerIDExpirationMs}
	b, etag := f.binding(t)
	cr, err := CreateAt(ctx, f.st, b, etag, c1, false)
	if err != nil {
		t.Fatal(err)
	}
	data, err := f.st.Get(ctx, cr.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := decodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	// It records the canonical clock of its state: the earliest that
	// expires exactly 1 and 3 (their last timestamp t0 + one day), not the
	// wall clock it ran at, so its bytes depend on its state only.
	canon := state.Horizon(ms(0), state.DefaultProducerIDExpirationMs)
	if cp.Clock == nil || *cp.Clock != canon || canon.NowMs != ms(24*time.Hour) {
		t.Fatalf("checkpoint clock %v, want %v", cp.Clock, canon)
	}
	b2, etag2 := f.binding(t)
	again1, err := CreateAt(ctx, f.st, b2, etag2, state.Clock{NowMs: (t0.Add(47 * time.Hour)).UnixMilli(), ExpirationMs: state.DefaultProducerIDExpirationMs}, false)
	if err != nil {
		t.Fatal(err)
	}
	if again1.Key != cr.Key || again1.Published {
		t.Fatalf("a create at another clock with the same outcome: key %s published %v, want %s reused", again1.Key, again1.Published, cr.Key)
	}
	if len(cp.State.Producers) != 1 || cp.State.Producers[2] == nil {
		t.Fatalf("checkpoint producers %v, want only 2 (open transaction)", cp.State.SortedProducers())
	}
	// 3 writes again after its expiry, 5 is new.
	f.appendProducer(t, []int64{3, 5}, []int64{ms(49 * time.Hour), ms(48 * time.Hour)}, nil)
	b, _ = f.binding(t)
	c2 := state.Clock{NowMs: (t0.Add(50 * time.Hour)).UnixMilli(), ExpirationMs: state.DefaultProducerIDExpirationMs}
	res, err := Replay(ctx, f.st, b, Options{Clock: c2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Chosen == nil || res.CheckpointClock != canon {
		t.Fatalf("chosen %v, checkpoint clock %v: want the checkpoint made at %v", res.Chosen, res.CheckpointClock, canon)
	}
	p := res.State
	if len(p.Producers) != 3 || p.Producers[2] == nil || p.Producers[3] == nil || p.Producers[5] == nil {
		t.Fatalf("producers %v, want 2 (open txn), 3 and 5 (fresh)", p.SortedProducers())
	}
	if n := len(p.Producers[3].Batches); n != 1 {
		t.Fatalf("producer 3 has %d batches: the checkpoint dropped it, the tail starts it afresh", n)
	}
	again, err := Replay(ctx, f.st, b, Options{Clock: c2})
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest() != res.Digest() {
		t.Fatal("same clock, different digests")
	}
	later, err := Replay(ctx, f.st, b, Options{Clock: state.Clock{NowMs: (t0.Add(100 * time.Hour)).UnixMilli(), ExpirationMs: state.DefaultProducerIDExpirationMs}})
	if err != nil {
		t.Fatal(err)
	}
	if later.Digest() == res.Digest() || len(later.State.Producers) != 1 || len(later.Expired) != 2 {
		t.Fatalf("a clock past 3's and 5's expiry: %d producers, expired %v", len(later.State.Producers), later.Expired)
	}
	// The full replay of --compare at the same clocks matches; a full
	// replay that never expired at the anchor keeps 3's old batch.
	full, err := Replay(ctx, f.st, b, Options{Full: true, Clock: c2, AsOfCheckpoint: &CheckpointClock{Anchor: res.Chosen.Anchor, Clock: res.CheckpointClock}})
	if err != nil {
		t.Fatal(err)
	}
	if full.Digest() != res.Digest() {
		t.Fatalf("compare at the checkpoint's clock: full %s, checkpoint path %s", full.Digest(), res.Digest())
	}
	// A plain full replay does the same by itself (the newest valid
	// checkpoint's clock at its anchor), with no clock too.
	auto, err := Replay(ctx, f.st, b, Options{Full: true, Clock: c2})
	if err != nil {
		t.Fatal(err)
	}
	if auto.Digest() != res.Digest() || len(auto.State.Producers[3].Batches) != 1 {
		t.Fatal("a full replay must expire at the checkpoint's anchor and clock")
	}
	cpNone, err := Replay(ctx, f.st, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fullNone, err := Replay(ctx, f.st, b, Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if cpNone.Digest() != fullNone.Digest() {
		t.Fatal("with no clock, the checkpoint path and the full replay differ")
	}
	// No clock: nothing expires, and the checkpoint's own producers are
	// what it holds.
	none, err := Replay(ctx, f.st, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Expired) != 0 || none.Clock.Set() {
		t.Fatalf("no clock expired %v", none.Expired)
	}
}

// TestCreateAtReusesAtSameClock: a second create at a later clock that
// expires nothing more publishes nothing; one that expires a producer
// publishes a checkpoint at the same anchor.
func TestCreateAtReusesAtSameClock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 17, 1<<20)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	f.appendProducer(t, []int64{1, 2}, []int64{t0.UnixMilli(), t0.Add(20 * time.Hour).UnixMilli()}, nil)
	create := func(at time.Duration) *CreateResult {
		b, etag := f.binding(t)
		cr, err := CreateAt(ctx, f.st, b, etag, state.Clock{NowMs: (t0.Add(at)).UnixMilli(), ExpirationMs: state.DefaultProducerIDExpirationMs}, false)
		if err != nil {
			t.Fatal(err)
		}
		return cr
	}
	first := create(30 * time.Hour) // 1 expired, 2 kept
	if !first.Published {
		t.Fatal("first create published nothing")
	}
	if second := create(31 * time.Hour); second.Published || !second.Reused || second.Key != first.Key {
		t.Fatalf("a clock that expires nothing more: published %v reused %v", second.Published, second.Reused)
	}
	third := create(50 * time.Hour) // 2 expires too
	if !third.Published || third.Key == first.Key || third.Anchor != first.Anchor {
		t.Fatalf("a clock that expires producer 2: published %v key %s", third.Published, third.Key)
	}
	if n := len(third.Replay.State.Producers); n != 0 {
		t.Fatalf("%d producers left", n)
	}
}
