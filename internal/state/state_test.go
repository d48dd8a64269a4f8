package state

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// op is one batch of a random workload.
type op struct {
	h      kafka.BatchHeader
	marker Marker
}

// workload builds n batches over a few idempotent and transactional
// producers with commits, aborts, open transactions, epoch bumps, leader
// epoch changes and plain (producer-less) batches.
func workload(rng *rand.Rand, n int) []op {
	type pst struct {
		id    int64
		epoch int16
		seq   int32
		txn   bool
		open  bool
		coord int32
	}
	var ps []*pst
	for i := 0; i < 2+rng.IntN(3); i++ {
		ps = append(ps, &pst{id: int64(100 + i), txn: i%2 == 1})
	}
	var out []op
	next, ts, le := int64(rng.IntN(50)), int64(1_000_000), int32(rng.IntN(3))
	for len(out) < n {
		ts += int64(rng.IntN(1000))
		if rng.IntN(25) == 0 {
			le += int32(1 + rng.IntN(2))
		}
		h := kafka.BatchHeader{BaseOffset: next, PartitionLeaderEpoch: le, Magic: 2, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, MaxTimestamp: ts}
		p := ps[rng.IntN(len(ps))]
		switch k := rng.IntN(10); {
		case k == 0:
			// a plain batch, no producer
			h.LastOffsetDelta = int32(rng.IntN(5))
			out = append(out, op{h: h})
		case p.txn && p.open && k < 4:
			h.ProducerID, h.ProducerEpoch = p.id, p.epoch
			h.Attributes = 1<<4 | 1<<5 // transactional control
			if rng.IntN(6) == 0 {
				p.coord++
			}
			t := kafka.ControlCommit
			if rng.IntN(3) == 0 {
				t = kafka.ControlAbort
			}
			out = append(out, op{h: h, marker: Marker{Present: true, Type: t, CoordinatorEpoch: p.coord, Timestamp: ts}})
			p.open = false
			if rng.IntN(5) == 0 {
				p.epoch++
				p.seq = 0
			}
		default:
			if !p.txn && rng.IntN(15) == 0 {
				p.epoch++
				p.seq = 0
			}
			cnt := 1 + rng.IntN(5)
			h.LastOffsetDelta = int32(cnt - 1)
			h.ProducerID, h.ProducerEpoch, h.BaseSequence = p.id, p.epoch, p.seq
			if p.txn {
				h.Attributes = 1 << 4
				p.open = true
			}
			p.seq = kafka.IncrementSequence(p.seq, int32(cnt))
			out = append(out, op{h: h})
		}
		next = out[len(out)-1].h.LastOffset() + 1 + int64(rng.IntN(2)) // gaps, as compaction leaves
	}
	return out
}

func apply(t *testing.T, p *Partition, ops []op) {
	t.Helper()
	for _, o := range ops {
		if err := p.Apply(o.h, 100, o.marker, Position{ObjectBase: o.h.BaseOffset}); err != nil {
			t.Fatal(err)
		}
	}
}

// model recomputes the expected state from the whole history, in a
// different way from the incremental code: by scanning back.
type modelProducer struct {
	epoch    int16
	coord    int32
	lastTs   int64
	txnFirst int64
	batches  []BatchMeta
}

func model(ops []op) (map[int64]modelProducer, []AbortedTxn, map[int64]int64) {
	byPid := map[int64][]op{}
	var pids []int64
	for _, o := range ops {
		if o.h.ProducerID >= 0 {
			if _, ok := byPid[o.h.ProducerID]; !ok {
				pids = append(pids, o.h.ProducerID)
			}
			byPid[o.h.ProducerID] = append(byPid[o.h.ProducerID], o)
		}
	}
	prods := map[int64]modelProducer{}
	for _, pid := range pids {
		hist := byPid[pid]
		last := hist[len(hist)-1]
		m := modelProducer{epoch: last.h.ProducerEpoch, coord: -1, lastTs: last.h.MaxTimestamp, txnFirst: -1}
		if last.h.IsControl() {
			m.lastTs = last.marker.Timestamp
		}
		// batches: data batches since the last epoch change, last 5
		start := 0
		for i := 1; i < len(hist); i++ {
			if hist[i].h.ProducerEpoch != hist[i-1].h.ProducerEpoch {
				start = i
			}
		}
		for _, o := range hist[start:] {
			if !o.h.IsControl() {
				m.batches = append(m.batches, BatchMeta{LastSeq: o.h.LastSequence(), LastOffset: o.h.LastOffset(), OffsetDelta: o.h.LastOffsetDelta, Timestamp: o.h.MaxTimestamp})
			}
		}
		if len(m.batches) > 5 {
			m.batches = m.batches[len(m.batches)-5:]
		}
		if len(m.batches) == 0 {
			m.batches = nil
		}
		for i := len(hist) - 1; i >= 0; i-- {
			if hist[i].h.IsControl() {
				m.coord = hist[i].marker.CoordinatorEpoch
				break
			}
		}
		// open txn: transactional data after the last marker
		for i := len(hist) - 1; i >= 0 && !hist[i].h.IsControl(); i-- {
			if hist[i].h.IsTransactional() {
				m.txnFirst = hist[i].h.BaseOffset
			}
		}
		prods[pid] = m
	}
	// aborted ranges: at each abort marker, the txn start and the first
	// offset of the earliest open txn of another producer at that moment.
	var aborted []AbortedTxn
	open := map[int64]int64{} // pid -> first offset
	for _, o := range ops {
		pid := o.h.ProducerID
		if pid < 0 {
			continue
		}
		if o.h.IsControl() {
			if first, ok := open[pid]; ok {
				if o.marker.Type == kafka.ControlAbort {
					lso := o.h.BaseOffset + 1
					best := int64(-1)
					for q, f := range open {
						if q != pid && (best < 0 || f < best) {
							best = f
						}
					}
					if best >= 0 {
						lso = best
					}
					aborted = append(aborted, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: o.h.BaseOffset, LastStableOffset: lso})
				}
				delete(open, pid)
			}
			continue
		}
		if o.h.IsTransactional() {
			if _, ok := open[pid]; !ok {
				open[pid] = o.h.BaseOffset
			}
		}
	}
	return prods, aborted, open
}

func TestApplyMatchesModel(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		ops := workload(rng, 20+rng.IntN(200))
		p := New(ops[0].h.BaseOffset)
		apply(t, p, ops)
		prods, aborted, open := model(ops)
		if len(p.Producers) != len(prods) {
			t.Fatalf("seed %d: %d producers, model %d", seed, len(p.Producers), len(prods))
		}
		for pid, m := range prods {
			got := p.Producers[pid]
			want := Producer{ID: pid, Epoch: m.epoch, CoordinatorEpoch: m.coord, LastTimestamp: m.lastTs, TxnFirstOffset: m.txnFirst, Batches: m.batches}
			g := *got
			if len(g.Batches) == 0 {
				g.Batches = nil
			}
			if !reflect.DeepEqual(g, want) {
				t.Fatalf("seed %d producer %d:\n got %+v\nwant %+v", seed, pid, g, want)
			}
		}
		if len(aborted) == 0 {
			aborted = nil
		}
		gotAborted := p.Aborted
		if len(gotAborted) == 0 {
			gotAborted = nil
		}
		if !reflect.DeepEqual(gotAborted, aborted) {
			t.Fatalf("seed %d aborted:\n got %+v\nwant %+v", seed, gotAborted, aborted)
		}
		wantLSO := p.HW()
		for _, f := range open {
			wantLSO = min(wantLSO, f)
		}
		if p.LSO() != wantLSO {
			t.Fatalf("seed %d: LSO %d, model %d", seed, p.LSO(), wantLSO)
		}
		if len(p.Ongoing) != len(open) {
			t.Fatalf("seed %d: %d ongoing, model %d", seed, len(p.Ongoing), len(open))
		}
	}
}

// roundTrip encodes and decodes a state through the canonical encodings.
func roundTrip(t *testing.T, p *Partition) *Partition {
	t.Helper()
	ls, next, err := DecodeBounds(EncodeBounds(p))
	if err != nil {
		t.Fatal(err)
	}
	prods, err := DecodeProducers(EncodeProducers(p))
	if err != nil {
		t.Fatal(err)
	}
	ongoing, err := DecodeOngoing(EncodeOngoing(p))
	if err != nil {
		t.Fatal(err)
	}
	aborted, err := DecodeAborted(EncodeAborted(p))
	if err != nil {
		t.Fatal(err)
	}
	epochs, err := DecodeEpochs(EncodeEpochs(p))
	if err != nil {
		t.Fatal(err)
	}
	segs, err := DecodeSegments(EncodeSegments(p))
	if err != nil {
		t.Fatal(err)
	}
	if err := DecodeIndexes(EncodeIndexes(p), segs); err != nil {
		t.Fatal(err)
	}
	q, err := Assemble(ls, next, prods, ongoing, aborted, epochs, segs)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestSplitEqualsWhole is docs/design.md §6's invariant at the state level: state
// at a random anchor, encoded, decoded and continued, with trims applied
// along the way, equals one pass with the final trim.
func TestSplitEqualsWhole(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		ops := workload(rng, 30+rng.IntN(300))
		start := ops[0].h.BaseOffset
		cut := rng.IntN(len(ops) + 1)
		// seal segments every few batches, the same in both runs
		sealEvery := 1 + rng.IntN(20)
		run := func(p *Partition, from, to int) {
			for i := from; i < to; i++ {
				apply(t, p, ops[i:i+1])
				if (i+1)%sealEvery == 0 {
					if err := p.Seal(int64(i), p.NextOffset); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		whole := New(start)
		run(whole, 0, len(ops))
		trim1 := start + rng.Int64N(whole.NextOffset-start+1)
		trim2 := trim1 + rng.Int64N(whole.NextOffset-trim1+1)

		split := New(start)
		run(split, 0, cut)
		if trim1 <= split.NextOffset {
			split.ApplyLogStart(trim1)
		}
		split = roundTrip(t, split)
		run(split, cut, len(ops))
		split.ApplyLogStart(trim2)
		whole.ApplyLogStart(trim2)
		if dw, ds := Digest(whole), Digest(split); dw != ds {
			t.Fatalf("seed %d cut %d trims %d,%d: whole %s split %s\nwhole %+v\nsplit %+v", seed, cut, trim1, trim2, dw, ds, whole, split)
		}
	}
}

func TestLeaderEpochCache(t *testing.T) {
	p := New(0)
	p.AssignEpoch(0, 0)
	p.AssignEpoch(1, 10)
	p.AssignEpoch(1, 15) // same epoch, later start: no-op
	p.AssignEpoch(2, 20)
	p.AssignEpoch(3, 30)
	want := []EpochEntry{{0, 0}, {1, 10}, {2, 20}, {3, 30}}
	if !reflect.DeepEqual(p.Epochs, want) {
		t.Fatalf("assign: %v", p.Epochs)
	}
	// A lower epoch truncates the entries with epoch >= it (non-monotonic).
	q := p.Clone()
	q.AssignEpoch(2, 25)
	if want := []EpochEntry{{0, 0}, {1, 10}, {2, 25}}; !reflect.DeepEqual(q.Epochs, want) {
		t.Fatalf("non-monotonic assign: %v", q.Epochs)
	}
	q = p.Clone()
	q.TruncateEpochsFromStart(15)
	if want := []EpochEntry{{1, 15}, {2, 20}, {3, 30}}; !reflect.DeepEqual(q.Epochs, want) {
		t.Fatalf("truncateFromStart(15): %v", q.Epochs)
	}
	q = p.Clone()
	q.TruncateEpochsFromStart(20)
	if want := []EpochEntry{{2, 20}, {3, 30}}; !reflect.DeepEqual(q.Epochs, want) {
		t.Fatalf("truncateFromStart(20): %v", q.Epochs)
	}
	q = p.Clone()
	q.TruncateEpochsFromEnd(20)
	if want := []EpochEntry{{0, 0}, {1, 10}}; !reflect.DeepEqual(q.Epochs, want) {
		t.Fatalf("truncateFromEnd(20): %v", q.Epochs)
	}
}

func TestDecodersRejectGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := New(0)
	apply(t, p, workload(rng, 200))
	encs := map[string][]byte{"producers": EncodeProducers(p), "ongoing": EncodeOngoing(p), "aborted": EncodeAborted(p), "epochs": EncodeEpochs(p), "segments": EncodeSegments(p)}
	for name, b := range encs {
		for cut := 0; cut < len(b); cut += 1 + len(b)/50 {
			var err error
			switch name {
			case "producers":
				_, err = DecodeProducers(b[:cut])
			case "ongoing":
				_, err = DecodeOngoing(b[:cut])
			case "aborted":
				_, err = DecodeAborted(b[:cut])
			case "epochs":
				_, err = DecodeEpochs(b[:cut])
			case "segments":
				_, err = DecodeSegments(b[:cut])
			}
			if err == nil && cut != len(b) {
				t.Errorf("%s truncated to %d bytes decoded without error", name, cut)
			}
		}
	}
	// A count far beyond the bytes present is refused before allocating.
	if _, err := DecodeProducers([]byte{0xff, 0xff, 0xff, 0xff}); err == nil {
		t.Fatal("huge count accepted")
	}
}

func TestApplyLogStart(t *testing.T) {
	p := New(0)
	p.Epochs = []EpochEntry{{0, 0}, {1, 10}, {2, 20}}
	p.Aborted = []AbortedTxn{{1, 0, 5, 6}, {1, 8, 12, 13}}
	p.Segments = []Segment{{Base: 0, End: 10, Gen: 0}, {Base: 10, End: 20, Gen: 1}, {Base: 20, End: -1, Gen: -1}}
	p.NextOffset = 25
	p.Producers[7] = &Producer{ID: 7, TxnFirstOffset: -1}
	p.ApplyLogStart(11)
	if p.LogStart != 11 {
		t.Fatalf("log start %d", p.LogStart)
	}
	if want := []EpochEntry{{1, 11}, {2, 20}}; !reflect.DeepEqual(p.Epochs, want) {
		t.Fatalf("epochs %v", p.Epochs)
	}
	if want := []AbortedTxn{{1, 8, 12, 13}}; !reflect.DeepEqual(p.Aborted, want) {
		t.Fatalf("aborted %v", p.Aborted)
	}
	if len(p.Segments) != 2 || p.Segments[0].Base != 10 {
		t.Fatalf("segments %v", p.Segments)
	}
	if p.Producers[7] == nil {
		t.Fatal("producers must survive a log start increment (KIP-360)")
	}
	p.ApplyLogStart(5) // never lowers
	if p.LogStart != 11 {
		t.Fatalf("log start lowered to %d", p.LogStart)
	}
}

// An empty segment (AddEmptySegment) is a sealed segment [base, end)
// without data, aged by its file's mtime (its MaxTimestamp): it survives
// the log start until the start reaches its end (Kafka deletes a segment
// whose next segment's base is at or below the log start), a batch inside
// it is corrupt, SealedEnd passes over it (no generation holds it), it
// gets no final time-index entry, and it round-trips the canonical
// encoding.
func TestAddEmptySegment(t *testing.T) {
	h := func(off int64) kafka.BatchHeader {
		return kafka.BatchHeader{BaseOffset: off, Magic: 2, ProducerID: -1, PartitionLeaderEpoch: -1, MaxTimestamp: 100 + off}
	}
	p := New(0)
	for _, off := range []int64{0, 1} {
		if err := p.Apply(h(off), 70, Marker{}, Position{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Seal(0, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.AddEmptySegment(1, 4, 5); err == nil {
		t.Fatal("an empty segment below the log end was accepted")
	}
	if err := p.AddEmptySegment(3, 5, 777); err != nil {
		t.Fatal(err)
	}
	if err := p.Roll(4); err == nil {
		t.Fatal("a roll inside the empty segment was accepted")
	}
	if err := p.Apply(h(4), 70, Marker{}, Position{}); err == nil {
		t.Fatal("a batch inside the empty segment [3, 5) was accepted")
	}
	if err := p.Apply(h(5), 70, Marker{}, Position{}); err != nil {
		t.Fatal(err)
	}
	if end, gen := p.SealedEnd(); end != 2 || gen != 0 {
		t.Fatalf("sealed end %d gen %d, want 2 and 0 (the empty segment has no generation)", end, gen)
	}
	e := p.Segments[1]
	if !e.Empty() || e.Base != 3 || e.End != 5 || e.Bytes != 0 || e.MaxTimestamp != 777 || e.Gen != -1 {
		t.Fatalf("empty segment %+v", e)
	}
	p.CompleteSealedTimeIndexes()
	if len(p.Segments[1].TimeIndex) != 0 {
		t.Fatal("the empty segment got a time-index entry")
	}
	segs, err := DecodeSegments(EncodeSegments(p))
	if err != nil || !reflect.DeepEqual(segs[1], Segment{Base: 3, End: 5, MaxTimestamp: 777, OffsetOfMax: -1, Gen: -1}) {
		t.Fatalf("round trip: %v %+v", err, segs)
	}
	q := p.Clone()
	q.ApplyLogStart(3)
	if len(q.Segments) != 2 || q.Segments[0].Base != 3 {
		t.Fatalf("log start 3: segments %+v, want the empty one kept", q.Segments)
	}
	q.ApplyLogStart(5)
	if len(q.Segments) != 1 || q.Segments[0].Base != 5 {
		t.Fatalf("log start 5: segments %+v, want only the open one", q.Segments)
	}
}
