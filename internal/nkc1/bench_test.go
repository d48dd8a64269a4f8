package nkc1

import (
	"math/rand"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"
)

const (
	benchProducers  = 10_000
	benchSegments   = 1_000
	benchIdxEntries = 16 // offset-index and time-index entries per segment
)

// benchState builds a realistic state directly: nProducers idempotent
// producers with five retained batches each (one in eight in an open
// transaction), and nSegments sealed 16 MiB segments with their sparse
// indexes, the last one open.
func benchState(nProducers, nSegments int) *state.Partition {
	rng := rand.New(rand.NewSource(1))
	p := state.New(0)
	off := int64(0)
	ts := int64(1_700_000_000_000)
	for i := 0; i < nSegments; i++ {
		s := state.Segment{Base: off, MaxTimestamp: state.NoTimestamp, OffsetOfMax: -1}
		for j := 0; j < benchIdxEntries; j++ {
			off += 500 + rng.Int63n(100)
			ts += rng.Int63n(1000)
			pos := int64(j+1) * (1 << 20)
			s.OffsetIndex = append(s.OffsetIndex, state.OffsetIndexEntry{Offset: off, Position: pos, ObjectBase: s.Base + int64(j/4)*2000, ObjectPos: pos % (4 << 20)})
			s.TimeIndex = append(s.TimeIndex, state.TimeIndexEntry{Timestamp: ts, Offset: off})
		}
		off += 100
		s.Bytes, s.MaxTimestamp, s.OffsetOfMax, s.LastIndexPos = 16<<20, ts, off-1, int64(benchIdxEntries)<<20
		s.End, s.Gen = off, int64(i)
		if i == nSegments-1 {
			s.End, s.Gen = -1, -1
		}
		p.Segments = append(p.Segments, s)
	}
	for i := 0; i < nProducers; i++ {
		id := int64(100_000 + i*3 + rng.Intn(3))
		pr := &state.Producer{ID: id, Epoch: int16(rng.Intn(3)), CoordinatorEpoch: -1, TxnFirstOffset: -1}
		seq := int32(rng.Intn(1 << 20))
		o := off - int64(rng.Intn(1<<20)) - 1
		t := ts - rng.Int63n(1<<24)
		for b := 0; b < state.NumBatchesToRetain; b++ {
			d := int32(rng.Intn(50))
			seq += d + 1
			o += int64(d) + 1 + rng.Int63n(200)
			t += rng.Int63n(100)
			pr.Batches = append(pr.Batches, state.BatchMeta{LastSeq: seq, LastOffset: o, OffsetDelta: d, Timestamp: t})
		}
		pr.LastTimestamp = t
		if i%8 == 0 {
			pr.CoordinatorEpoch = int32(rng.Intn(10))
			pr.TxnFirstOffset = off + int64(i) // past every data offset: unique
			p.Ongoing[pr.TxnFirstOffset] = state.Txn{ProducerID: id, FirstOffset: pr.TxnFirstOffset}
		}
		p.Producers[id] = pr
	}
	p.NextOffset = off + int64(nProducers) + 1
	p.Epochs = []state.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: off / 2}}
	return p
}

func benchCheckpoint(p *state.Partition) *Checkpoint {
	c := &Checkpoint{
		Anchor: Anchor{StreamID: "bench", TopicID: "q0bn6WqHRjSoh0z9sOXDfQ", Topic: "orders", Partition: 0,
			Offset: p.NextOffset, HeadEpoch: 3, LogStart: p.LogStart,
			ObjectKey: layout.ObjectKey("bench", max(0, p.NextOffset-10), p.NextOffset), ObjectSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
		State:    p,
		Coverage: Coverage{LogStart: p.LogStart, Anchor: p.NextOffset},
		Binding:  BindingRef{Key: layout.BindingKey("orders", 0), Version: 7},
	}
	for _, s := range p.Segments {
		if !s.Open() {
			c.Coverage.Sources = append(c.Coverage.Sources, SourceRef{Gen: s.Gen, ManifestSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})
		}
	}
	return c
}

// sizes returns the stored and raw bytes of a checkpoint.
func sizes(b *testing.B, c *Checkpoint) (stored, raw int64) {
	data := mustEncode(b, c)
	r, err := Open(data)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range r.Sections() {
		raw += s.RawLen
	}
	return int64(len(data)), raw
}

// reportSizes reports the marginal cost of a producer (5 batches) and of a
// sealed segment (with its coverage source and benchIdxEntries offset- and
// time-index entries), stored and raw.
func reportSizes(b *testing.B) {
	empty, emptyRaw := sizes(b, benchCheckpoint(benchState(0, 0)))
	prods, prodsRaw := sizes(b, benchCheckpoint(benchState(benchProducers, 0)))
	segs, segsRaw := sizes(b, benchCheckpoint(benchState(0, benchSegments)))
	b.ReportMetric(float64(prods-empty)/benchProducers, "B/producer")
	b.ReportMetric(float64(prodsRaw-emptyRaw)/benchProducers, "rawB/producer")
	b.ReportMetric(float64(segs-empty)/benchSegments, "B/segment")
	b.ReportMetric(float64(segsRaw-emptyRaw)/benchSegments, "rawB/segment")
}

func BenchmarkEncode(b *testing.B) {
	c := benchCheckpoint(benchState(benchProducers, benchSegments))
	data := mustEncode(b, c)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Encode(c); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(data)), "B/checkpoint")
	reportSizes(b)
}

func BenchmarkDecode(b *testing.B) {
	c := benchCheckpoint(benchState(benchProducers, benchSegments))
	data := mustEncode(b, c)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(data)), "B/checkpoint")
	reportSizes(b)
}

// BenchmarkAnchorOnly is what replay's checkpoint choice costs: open the
// footer and one small section.
func BenchmarkAnchorOnly(b *testing.B) {
	data := mustEncode(b, benchCheckpoint(benchState(benchProducers, benchSegments)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Open(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Anchor(); err != nil {
			b.Fatal(err)
		}
	}
}
