package nkc1

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/nereusctl/nereusctl/internal/state"
)

// SegmentView is one virtual segment as `checkpoint inspect` shows it.
type SegmentView struct {
	Base              int64 `json:"base"`
	End               int64 `json:"end"` // -1 while open
	Open              bool  `json:"open"`
	Bytes             int64 `json:"bytes"`
	MaxTimestamp      int64 `json:"max_timestamp"`
	OffsetOfMax       int64 `json:"offset_of_max_timestamp"`
	Gen               int64 `json:"gen"` // sealing generation, -1 while open
	LastIndexPosition int64 `json:"last_index_position"`
}

// IndexView is one segment's sparse indexes.
type IndexView struct {
	Base        int64                    `json:"base"`
	OffsetIndex []state.OffsetIndexEntry `json:"offset_index"`
	TimeIndex   []state.TimeIndexEntry   `json:"time_index"`
}

// ClockView is the clock section: the clock producer expiration was
// applied at when the checkpoint was made.
type ClockView struct {
	NowMs                  int64  `json:"now_ms"`
	Now                    string `json:"now"` // RFC3339, UTC
	ProducerIDExpirationMs int64  `json:"producer_id_expiration_ms"`
}

// UnknownSectionView describes an optional section this version does not
// know.
type UnknownSectionView struct {
	ID     uint16 `json:"id"`
	RawLen int    `json:"raw_len"`
	SHA256 string `json:"sha256"`
}

// DescribeSection decodes the raw payload of one section into a value for
// people and JSON (`checkpoint inspect`):
//
//	anchor        Anchor
//	producers     []state.Producer, by id
//	transactions  []state.Txn, by first offset
//	aborted       []state.AbortedTxn, in marker order
//	epochs        []state.EpochEntry
//	segments      []SegmentView
//	indexes       []IndexView
//	coverage      Coverage
//	binding       BindingRef
//	clock         ClockView
//	unknown id    UnknownSectionView
//
// Errors wrap ErrCorrupt and name the section.
func DescribeSection(id uint16, raw []byte) (any, error) {
	v, err := describe(id, raw)
	if err != nil {
		return nil, sectionCorrupt(id, CheckDecode, err, "payload does not decode")
	}
	return v, nil
}

func describe(id uint16, raw []byte) (any, error) {
	switch id {
	case SectionAnchor:
		return decodeAnchor(raw)
	case SectionProducers:
		m, err := state.DecodeProducers(raw)
		if err != nil {
			return nil, err
		}
		p := state.Partition{Producers: m}
		out := make([]state.Producer, 0, len(m))
		for _, pr := range p.SortedProducers() {
			out = append(out, *pr)
		}
		return out, nil
	case SectionTransactions:
		m, err := state.DecodeOngoing(raw)
		if err != nil {
			return nil, err
		}
		p := state.Partition{Ongoing: m}
		return p.SortedOngoing(), nil
	case SectionAborted:
		return state.DecodeAborted(raw)
	case SectionEpochs:
		return state.DecodeEpochs(raw)
	case SectionSegments:
		segs, err := state.DecodeSegments(raw)
		if err != nil {
			return nil, err
		}
		out := make([]SegmentView, len(segs))
		for i, s := range segs {
			out[i] = SegmentView{
				Base: s.Base, End: s.End, Open: s.Open(), Bytes: s.Bytes, MaxTimestamp: s.MaxTimestamp,
				OffsetOfMax: s.OffsetOfMax, Gen: s.Gen, LastIndexPosition: s.LastIndexPos,
			}
		}
		return out, nil
	case SectionIndexes:
		return describeIndexes(raw)
	case SectionCoverage:
		return decodeCoverage(raw)
	case SectionBindingRef:
		return decodeBinding(raw)
	case SectionClock:
		c, err := decodeClock(raw)
		if err != nil {
			return nil, err
		}
		return ClockView{NowMs: c.NowMs, Now: c.Time().Format(time.RFC3339Nano), ProducerIDExpirationMs: c.ExpirationMs}, nil
	case SectionManifests:
		return decodeManifests(raw)
	}
	sum := sha256.Sum256(raw)
	return UnknownSectionView{ID: id, RawLen: len(raw), SHA256: hex.EncodeToString(sum[:])}, nil
}

// describeIndexes reads the index section on its own (state.DecodeIndexes
// needs the segments): count u32, then per segment base i64, offset-index
// count u32 and entries, time-index count u32 and entries. It then lets
// state.DecodeIndexes judge the bytes, so both readers agree.
func describeIndexes(raw []byte) ([]IndexView, error) {
	r := &rbuf{b: raw}
	n := r.count(8+4+4, "indexes")
	segs := make([]state.Segment, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		base := r.i64("base")
		k := r.count(32, "offset index")
		r.bytes(k*32, "offset index")
		k = r.count(16, "time index")
		r.bytes(k*16, "time index")
		segs = append(segs, state.Segment{Base: base})
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	if err := state.DecodeIndexes(raw, segs); err != nil {
		return nil, err
	}
	out := make([]IndexView, len(segs))
	for i, s := range segs {
		out[i] = IndexView{Base: s.Base, OffsetIndex: s.OffsetIndex, TimeIndex: s.TimeIndex}
	}
	return out, nil
}
