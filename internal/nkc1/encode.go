package nkc1

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/state"

	"github.com/nereusctl/nereusctl/internal/container"
)

// Encode returns the NKC1 bytes of a checkpoint and the hex root. It is
// deterministic: the same checkpoint gives the same bytes. It refuses a
// checkpoint whose parts disagree (the state's bounds against the anchor,
// coverage or binding key against the anchor) or that Decode would refuse.
func Encode(c *Checkpoint) (data []byte, rootHex string, err error) {
	if c == nil || c.State == nil {
		return nil, "", fmt.Errorf("nkc1: encode: no checkpoint state")
	}
	var raws [numRequired + 1][]byte
	if raws[SectionAnchor], err = encodeAnchor(&c.Anchor); err != nil {
		return nil, "", fmt.Errorf("nkc1: encode: anchor: %w", err)
	}
	if raws[SectionCoverage], err = encodeCoverage(&c.Coverage); err != nil {
		return nil, "", fmt.Errorf("nkc1: encode: coverage: %w", err)
	}
	if raws[SectionBindingRef], err = encodeBinding(&c.Binding); err != nil {
		return nil, "", fmt.Errorf("nkc1: encode: binding: %w", err)
	}
	if id, err := validateCheckpoint(c); err != nil {
		return nil, "", fmt.Errorf("nkc1: encode: %s: %w", SectionName(id), err)
	}
	p := c.State
	raws[SectionProducers] = state.EncodeProducers(p)
	raws[SectionTransactions] = state.EncodeOngoing(p)
	raws[SectionAborted] = state.EncodeAborted(p)
	raws[SectionEpochs] = state.EncodeEpochs(p)
	raws[SectionSegments] = state.EncodeSegments(p)
	raws[SectionIndexes] = state.EncodeIndexes(p)

	var total uint64
	for id := 1; id <= numRequired; id++ {
		total += uint64(len(raws[id]))
	}
	if total > MaxRawBytes {
		return nil, "", fmt.Errorf("nkc1: encode: %d raw bytes exceed the %d-byte cap", total, MaxRawBytes)
	}
	// Never write what Decode would refuse: run the state decoders and
	// Assemble over the payloads (the cheap way to hold every rule they do).
	check := sectionRaws{raw: raws}
	for id := 1; id <= numRequired; id++ {
		check.have[id] = true
	}
	if _, errs := decodeAll(&check); len(errs) > 0 {
		return nil, "", fmt.Errorf("nkc1: encode: the state does not round-trip: %v", errs[0])
	}

	type sec struct {
		id    uint16
		flags uint8
		raw   []byte
	}
	secs := make([]sec, 0, numRequired+1)
	for id := 1; id <= numRequired; id++ {
		secs = append(secs, sec{id: uint16(id), raw: raws[id]})
	}
	if c.Clock != nil {
		raw, err := encodeClock(c.Clock)
		if err != nil {
			return nil, "", fmt.Errorf("nkc1: encode: clock: %w", err)
		}
		secs = append(secs, sec{id: SectionClock, flags: FlagOptional, raw: raw})
	}
	if c.Manifests != nil {
		raw, err := encodeManifests(c.Manifests)
		if err != nil {
			return nil, "", fmt.Errorf("nkc1: encode: manifests: %w", err)
		}
		secs = append(secs, sec{id: SectionManifests, flags: FlagOptional, raw: raw})
	}
	data = appendHeader(make([]byte, 0, headerSize+int(total)/2+1024), Version, 0, uint32(len(secs)))
	entries := make([]entry, 0, len(secs))
	for _, sc := range secs {
		id, raw := sc.id, sc.raw
		stored, codec, err := compress(raw)
		if err != nil {
			return nil, "", fmt.Errorf("nkc1: encode: section %s: %w", SectionName(id), err)
		}
		e := entry{
			id: id, codec: codec, flags: sc.flags, off: uint64(len(data)),
			stored: uint64(len(stored)), raw: uint64(len(raw)),
			crc: container.CRC32C(stored), sha: sha256.Sum256(raw),
		}
		data = append(data, stored...)
		entries = append(entries, e)
	}
	footerStart := len(data)
	data = append(data, data[:headerSize]...) // the header copy
	for i := range entries {
		data = entries[i].appendTo(data)
	}
	root := sha256.Sum256(data[footerStart:])
	data = append(data, root[:]...)
	footerLen := len(data) - footerStart + trailerSize
	data = container.AppendTrailer(data, uint32(footerLen), Magic)
	return data, hex.EncodeToString(root[:]), nil
}
