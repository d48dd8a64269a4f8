package state

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// FuzzDecodeProducers feeds the same bytes to every section decoder of the
// derived state (the NKC1 sections that hold it). None may panic, and each
// encoding is canonical: a decoder accepts only ordered, exactly sized
// input, so whatever it accepts must encode back to exactly the input
// bytes. A decoder that accepted two spellings of one state, or lost a
// field, breaks the checkpoint's determinism (docs/design.md §5) and fails
// here.
func FuzzDecodeProducers(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := New(0)
	for _, o := range workload(rng, 100) {
		_ = p.Apply(o.h, 10, o.marker, Position{})
	}
	// The index section decodes against a segment list: the workload's,
	// without their indexes.
	bare := make([]Segment, len(p.Segments))
	for i, sg := range p.Segments {
		sg.OffsetIndex, sg.TimeIndex = nil, nil
		bare[i] = sg
	}
	for _, b := range [][]byte{EncodeProducers(p), EncodeOngoing(p), EncodeAborted(p), EncodeEpochs(p),
		EncodeSegments(p), EncodeIndexes(p), EncodeBounds(p)} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		same := func(what string, got []byte) {
			t.Helper()
			if !bytes.Equal(got, b) {
				t.Fatalf("%s: decode then encode changed the bytes:\n got %x\nwant %x", what, got, b)
			}
		}
		if prs, err := DecodeProducers(b); err == nil {
			same("producers", EncodeProducers(&Partition{Producers: prs}))
		}
		if txns, err := DecodeOngoing(b); err == nil {
			same("transactions", EncodeOngoing(&Partition{Ongoing: txns}))
		}
		if ab, err := DecodeAborted(b); err == nil {
			same("aborted ranges", EncodeAborted(&Partition{Aborted: ab}))
		}
		if eps, err := DecodeEpochs(b); err == nil {
			same("leader epochs", EncodeEpochs(&Partition{Epochs: eps}))
		}
		if segs, err := DecodeSegments(b); err == nil {
			same("segments", EncodeSegments(&Partition{Segments: segs}))
		}
		segs := append([]Segment(nil), bare...)
		if err := DecodeIndexes(b, segs); err == nil {
			same("indexes", EncodeIndexes(&Partition{Segments: segs}))
		}
		if ls, next, err := DecodeBounds(b); err == nil {
			same("bounds", EncodeBounds(&Partition{LogStart: ls, NextOffset: next}))
		}
	})
}
