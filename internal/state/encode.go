package state

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/errkind"
)

// The canonical encoding: big-endian fixed-width fields, lists prefixed by a
// uint32 count, entries in a fixed order (producers by id, transactions by
// first offset, aborted ranges by marker offset, epochs and segments by
// offset). The same state always gives the same bytes. NKC1 stores these
// encodings as its section payloads; the state digest hashes them.

// Fixed entry sizes, used by decoders to bound counts by the bytes present.
const (
	batchMetaSize = 4 + 8 + 4 + 8
	producerFixed = 8 + 2 + 4 + 8 + 8 + 4 // + batches
	txnSize       = 8 + 8
	abortedSize   = 8 * 4
	epochSize     = 4 + 8
	segmentSize   = 8*5 + 8 + 8 // base end bytes maxts offsetOfMax gen lastIndexPos
	offsetIdxSize = 8 * 4
	timeIdxSize   = 8 * 2
	indexHeadSize = 8 + 4 + 4
)

// ErrMalformed is returned by the decoders for bytes that are not a valid
// canonical encoding.
var ErrMalformed = errkind.New(errkind.Corrupt, "malformed state encoding")

type enc struct{ b []byte }

func (e *enc) u16(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) i16(v int16)  { e.u16(uint16(v)) }
func (e *enc) i32(v int32)  { e.u32(uint32(v)) }
func (e *enc) i64(v int64)  { e.u64(uint64(v)) }

type dec struct {
	b    []byte
	what string
	err  error
}

func (d *dec) need(n int) bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: %s: truncated (need %d bytes, have %d)", ErrMalformed, d.what, n, len(d.b))
		return false
	}
	return true
}
func (d *dec) u16() uint16 {
	if !d.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.b)
	d.b = d.b[2:]
	return v
}
func (d *dec) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}
func (d *dec) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}
func (d *dec) i16() int16 { return int16(d.u16()) }
func (d *dec) i32() int32 { return int32(d.u32()) }
func (d *dec) i64() int64 { return int64(d.u64()) }

// count reads a list length and checks that count*minSize bytes remain.
func (d *dec) count(minSize int) int {
	n := d.u32()
	if d.err != nil {
		return 0
	}
	if uint64(n)*uint64(minSize) > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: %s: count %d exceeds the %d bytes present", ErrMalformed, d.what, n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *dec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s: %s", ErrMalformed, d.what, fmt.Sprintf(format, a...))
	}
}

func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}

// EncodeProducers encodes the producer entries, ordered by id.
func EncodeProducers(p *Partition) []byte {
	e := &enc{b: make([]byte, 0, 4+len(p.Producers)*(producerFixed+NumBatchesToRetain*batchMetaSize))}
	prs := p.SortedProducers()
	e.u32(uint32(len(prs)))
	for _, pr := range prs {
		e.i64(pr.ID)
		e.i16(pr.Epoch)
		e.i32(pr.CoordinatorEpoch)
		e.i64(pr.LastTimestamp)
		e.i64(pr.TxnFirstOffset)
		e.u32(uint32(len(pr.Batches)))
		for _, b := range pr.Batches {
			e.i32(b.LastSeq)
			e.i64(b.LastOffset)
			e.i32(b.OffsetDelta)
			e.i64(b.Timestamp)
		}
	}
	return e.b
}

// DecodeProducers is the inverse of EncodeProducers.
func DecodeProducers(b []byte) (map[int64]*Producer, error) {
	d := &dec{b: b, what: "producers"}
	n := d.count(producerFixed)
	out := make(map[int64]*Producer, n)
	prev := int64(0)
	for i := 0; i < n && d.err == nil; i++ {
		pr := &Producer{ID: d.i64(), Epoch: d.i16(), CoordinatorEpoch: d.i32(), LastTimestamp: d.i64(), TxnFirstOffset: d.i64()}
		k := d.count(batchMetaSize)
		if k > NumBatchesToRetain {
			d.fail("producer %d has %d batches, at most %d", pr.ID, k, NumBatchesToRetain)
		}
		for j := 0; j < k && d.err == nil; j++ {
			pr.Batches = append(pr.Batches, BatchMeta{LastSeq: d.i32(), LastOffset: d.i64(), OffsetDelta: d.i32(), Timestamp: d.i64()})
		}
		if i > 0 && pr.ID <= prev {
			d.fail("producer ids not strictly ascending at %d", pr.ID)
		}
		prev = pr.ID
		out[pr.ID] = pr
	}
	return out, d.done()
}

// EncodeOngoing encodes the ongoing transactions ordered by first offset.
func EncodeOngoing(p *Partition) []byte {
	e := &enc{}
	ts := p.SortedOngoing()
	e.u32(uint32(len(ts)))
	for _, t := range ts {
		e.i64(t.ProducerID)
		e.i64(t.FirstOffset)
	}
	return e.b
}

// DecodeOngoing is the inverse of EncodeOngoing.
func DecodeOngoing(b []byte) (map[int64]Txn, error) {
	d := &dec{b: b, what: "transactions"}
	n := d.count(txnSize)
	out := make(map[int64]Txn, n)
	prev := int64(0)
	for i := 0; i < n && d.err == nil; i++ {
		t := Txn{ProducerID: d.i64(), FirstOffset: d.i64()}
		if i > 0 && t.FirstOffset <= prev {
			d.fail("first offsets not strictly ascending at %d", t.FirstOffset)
		}
		prev = t.FirstOffset
		out[t.FirstOffset] = t
	}
	return out, d.done()
}

// EncodeAborted encodes the aborted ranges in marker order.
func EncodeAborted(p *Partition) []byte {
	e := &enc{}
	e.u32(uint32(len(p.Aborted)))
	for _, a := range p.Aborted {
		e.i64(a.ProducerID)
		e.i64(a.FirstOffset)
		e.i64(a.LastOffset)
		e.i64(a.LastStableOffset)
	}
	return e.b
}

// DecodeAborted is the inverse of EncodeAborted.
func DecodeAborted(b []byte) ([]AbortedTxn, error) {
	d := &dec{b: b, what: "aborted ranges"}
	n := d.count(abortedSize)
	out := make([]AbortedTxn, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		a := AbortedTxn{ProducerID: d.i64(), FirstOffset: d.i64(), LastOffset: d.i64(), LastStableOffset: d.i64()}
		if a.LastOffset < a.FirstOffset || (i > 0 && a.LastOffset <= out[i-1].LastOffset) {
			d.fail("aborted ranges not in marker order at %d", a.LastOffset)
		}
		out = append(out, a)
	}
	return out, d.done()
}

// EncodeEpochs encodes the leader-epoch cache.
func EncodeEpochs(p *Partition) []byte {
	e := &enc{}
	e.u32(uint32(len(p.Epochs)))
	for _, x := range p.Epochs {
		e.i32(x.Epoch)
		e.i64(x.StartOffset)
	}
	return e.b
}

// DecodeEpochs is the inverse of EncodeEpochs.
func DecodeEpochs(b []byte) ([]EpochEntry, error) {
	d := &dec{b: b, what: "leader epochs"}
	n := d.count(epochSize)
	out := make([]EpochEntry, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		x := EpochEntry{Epoch: d.i32(), StartOffset: d.i64()}
		if i > 0 && (x.Epoch <= out[i-1].Epoch || x.StartOffset < out[i-1].StartOffset) {
			d.fail("entries not ascending at epoch %d", x.Epoch)
		}
		out = append(out, x)
	}
	return out, d.done()
}

// EncodeSegments encodes the virtual segments without their indexes.
func EncodeSegments(p *Partition) []byte {
	e := &enc{b: make([]byte, 0, 4+len(p.Segments)*segmentSize)}
	e.u32(uint32(len(p.Segments)))
	for _, s := range p.Segments {
		e.i64(s.Base)
		e.i64(s.End)
		e.i64(s.Bytes)
		e.i64(s.MaxTimestamp)
		e.i64(s.OffsetOfMax)
		e.i64(s.Gen)
		e.i64(s.LastIndexPos)
	}
	return e.b
}

// DecodeSegments is the inverse of EncodeSegments.
func DecodeSegments(b []byte) ([]Segment, error) {
	d := &dec{b: b, what: "segments"}
	n := d.count(segmentSize)
	out := make([]Segment, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		s := Segment{Base: d.i64(), End: d.i64(), Bytes: d.i64(), MaxTimestamp: d.i64(), OffsetOfMax: d.i64(), Gen: d.i64(), LastIndexPos: d.i64()}
		if s.Open() && i != n-1 {
			d.fail("open segment at %d is not the last", s.Base)
		}
		if (!s.Open() && s.End < s.Base) || (i > 0 && s.Base < out[i-1].End) {
			d.fail("segment at %d is reversed or overlaps the previous one", s.Base)
		}
		out = append(out, s)
	}
	return out, d.done()
}

// EncodeIndexes encodes every segment's offset and time index, in segment
// order: base, then the two lists.
func EncodeIndexes(p *Partition) []byte {
	n := 4
	for _, s := range p.Segments {
		n += indexHeadSize + len(s.OffsetIndex)*offsetIdxSize + len(s.TimeIndex)*timeIdxSize
	}
	e := &enc{b: make([]byte, 0, n)}
	e.u32(uint32(len(p.Segments)))
	for _, s := range p.Segments {
		e.i64(s.Base)
		e.u32(uint32(len(s.OffsetIndex)))
		for _, x := range s.OffsetIndex {
			e.i64(x.Offset)
			e.i64(x.Position)
			e.i64(x.ObjectBase)
			e.i64(x.ObjectPos)
		}
		e.u32(uint32(len(s.TimeIndex)))
		for _, x := range s.TimeIndex {
			e.i64(x.Timestamp)
			e.i64(x.Offset)
		}
	}
	return e.b
}

// DecodeIndexes fills the indexes of segs (decoded by DecodeSegments).
func DecodeIndexes(b []byte, segs []Segment) error {
	d := &dec{b: b, what: "indexes"}
	n := d.count(indexHeadSize)
	if d.err == nil && n != len(segs) {
		d.fail("%d index lists for %d segments", n, len(segs))
	}
	for i := 0; i < n && d.err == nil; i++ {
		base := d.i64()
		if d.err == nil && base != segs[i].Base {
			d.fail("index list %d is for segment %d, want %d", i, base, segs[i].Base)
		}
		k := d.count(offsetIdxSize)
		oi := make([]OffsetIndexEntry, 0, k)
		for j := 0; j < k && d.err == nil; j++ {
			oi = append(oi, OffsetIndexEntry{Offset: d.i64(), Position: d.i64(), ObjectBase: d.i64(), ObjectPos: d.i64()})
		}
		k = d.count(timeIdxSize)
		ti := make([]TimeIndexEntry, 0, k)
		for j := 0; j < k && d.err == nil; j++ {
			ti = append(ti, TimeIndexEntry{Timestamp: d.i64(), Offset: d.i64()})
		}
		if d.err == nil {
			segs[i].OffsetIndex, segs[i].TimeIndex = oi, ti
		}
	}
	return d.done()
}

// EncodeBounds encodes log start and next offset.
func EncodeBounds(p *Partition) []byte {
	e := &enc{}
	e.i64(p.LogStart)
	e.i64(p.NextOffset)
	return e.b
}

// Assemble builds a Partition from decoded parts and checks that the parts
// agree with each other (every ongoing transaction belongs to its producer).
func Assemble(logStart, next int64, producers map[int64]*Producer, ongoing map[int64]Txn, aborted []AbortedTxn, epochs []EpochEntry, segs []Segment) (*Partition, error) {
	if logStart < 0 || next < logStart {
		return nil, fmt.Errorf("%w: log start %d, next offset %d", ErrMalformed, logStart, next)
	}
	for off, t := range ongoing {
		pr := producers[t.ProducerID]
		if pr == nil || pr.TxnFirstOffset != off || t.FirstOffset != off {
			return nil, fmt.Errorf("%w: ongoing transaction at %d has no matching producer %d", ErrMalformed, off, t.ProducerID)
		}
	}
	for _, pr := range producers {
		if pr.TxnFirstOffset >= 0 {
			if t, ok := ongoing[pr.TxnFirstOffset]; !ok || t.ProducerID != pr.ID {
				return nil, fmt.Errorf("%w: producer %d's transaction at %d is not listed", ErrMalformed, pr.ID, pr.TxnFirstOffset)
			}
		}
	}
	if aborted == nil {
		aborted = []AbortedTxn{}
	}
	return &Partition{LogStart: logStart, NextOffset: next, Producers: producers, Ongoing: ongoing, Aborted: aborted, Epochs: epochs, Segments: segs}, nil
}

// Digest is the state digest: SHA-256 over the tagged canonical encodings of
// bounds, producers, transactions, aborted ranges, epochs, segments and
// indexes. Two states with equal digests are equal.
func Digest(p *Partition) string {
	h := sha256.New()
	parts := []struct {
		tag  string
		data []byte
	}{
		{"bounds", EncodeBounds(p)},
		{"producers", EncodeProducers(p)},
		{"transactions", EncodeOngoing(p)},
		{"aborted", EncodeAborted(p)},
		{"epochs", EncodeEpochs(p)},
		{"segments", EncodeSegments(p)},
		{"indexes", EncodeIndexes(p)},
	}
	var lenbuf [8]byte
	for _, part := range parts {
		h.Write([]byte(part.tag))
		binary.BigEndian.PutUint64(lenbuf[:], uint64(len(part.data)))
		h.Write(lenbuf[:])
		h.Write(part.data)
	}
	return hex.EncodeToString(h.Sum(nil))
}
