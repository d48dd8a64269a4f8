package nkc1

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/state"

	"github.com/nereusctl/nereusctl/internal/container"
)

// maxFooterBytes bounds a footer length before the version is known.
const maxFooterBytes = 1 << 20

// Footer is a parsed footer: the header copy, the section table and the
// root. It is what OpenFooter returns from a ranged read of the tail, and
// what a Reader is built on.
type Footer struct {
	f         format
	header    []byte // the footer's header copy
	table     []byte // the raw section table
	entries   []entry
	root      [32]byte
	size      int64
	footerLen int
}

// FooterLen reads the trailer (the last 8 bytes of tail) and returns the
// length of the whole footer, so that a reader that fetched too short a
// tail knows how many bytes to fetch.
func FooterLen(tail []byte) (int, error) {
	n, err := container.ParseTrailer(tail, Magic, "an NKC1 checkpoint")
	if err != nil {
		return 0, corrupt("footer", CheckStructure, "%v", err)
	}
	if n < headerSize+rootSize+trailerSize || n > maxFooterBytes {
		return 0, corrupt("footer", CheckStructure, "footer length %d outside %d..%d", n, headerSize+rootSize+trailerSize, maxFooterBytes)
	}
	return int(n), nil
}

// OpenFooter parses the footer from tail, the last len(tail) bytes of a
// checkpoint of totalSize bytes (a ranged read; SuggestedTailRead bytes
// hold any footer this version writes). It checks the header copy, the
// version and the section table's structure and bounds against totalSize.
// When tail is too short it returns an error wrapping ErrShortTail; read
// FooterLen(tail) bytes and retry. It does not check the root: VerifyRoot.
func OpenFooter(tail []byte, totalSize int64) (*Footer, error) {
	if int64(len(tail)) > totalSize {
		return nil, fmt.Errorf("nkc1: footer: tail of %d bytes is longer than the %d-byte file", len(tail), totalSize)
	}
	n, err := FooterLen(tail)
	if err != nil {
		return nil, err
	}
	if int64(n) > totalSize-headerSize {
		return nil, corrupt("footer", CheckStructure, "footer length %d leaves no room for the header in %d bytes", n, totalSize)
	}
	if n > len(tail) {
		return nil, fmt.Errorf("nkc1: footer: %w: have %d bytes, need %d", ErrShortTail, len(tail), n)
	}
	foot := tail[len(tail)-n:]
	if string(foot[:4]) != Magic {
		return nil, corrupt("footer", CheckStructure, "header copy: magic %q, want %q", foot[:4], Magic)
	}
	f, err := resolveVersion(binary.BigEndian.Uint16(foot[4:]))
	if err != nil {
		return nil, err
	}
	if flags := binary.BigEndian.Uint16(foot[6:]); flags != 0 {
		return nil, corrupt("footer", CheckStructure, "header copy: flags 0x%04x, version %d defines none", flags, f.version)
	}
	count := binary.BigEndian.Uint32(foot[8:])
	if count < uint32(f.numRequired) || count > maxSections {
		return nil, corrupt("footer", CheckStructure, "section count %d outside %d..%d", count, f.numRequired, maxSections)
	}
	tableLen := int(count) * f.entrySize
	if want := f.headerSize + tableLen + rootSize + trailerSize; n != want {
		return nil, corrupt("footer", CheckStructure, "footer length %d, %d sections need %d", n, count, want)
	}
	ft := &Footer{
		f:         f,
		header:    foot[:f.headerSize:f.headerSize],
		table:     foot[f.headerSize : f.headerSize+tableLen : f.headerSize+tableLen],
		size:      totalSize,
		footerLen: n,
	}
	copy(ft.root[:], foot[f.headerSize+tableLen:])
	ft.entries = make([]entry, count)
	for i := range ft.entries {
		ft.entries[i] = parseEntry(ft.table[i*f.entrySize:])
	}
	if err := ft.checkTable(uint64(totalSize) - uint64(n)); err != nil {
		return nil, err
	}
	return ft, nil
}

// checkTable checks ids, flags, codecs and that the sections lie back to
// back from the end of the header to footerStart.
func (ft *Footer) checkTable(footerStart uint64) error {
	next := uint64(ft.f.headerSize)
	var total uint64
	for i := range ft.entries {
		e := &ft.entries[i]
		if e.id == 0 || i > 0 && e.id <= ft.entries[i-1].id {
			return corrupt("table", CheckStructure, "entry %d: section id %d is not strictly ascending", i, e.id)
		}
		if i < ft.f.numRequired && e.id != uint16(i+1) {
			return corrupt("table", CheckStructure, "required section %s is missing", SectionName(uint16(i+1)))
		}
		if e.flags&^knownEntryFlags != 0 {
			return sectionCorrupt(e.id, CheckStructure, nil, "unknown entry flags 0x%02x", e.flags)
		}
		known := int(e.id) <= ft.f.numRequired
		if known && e.flags&FlagOptional != 0 {
			return sectionCorrupt(e.id, CheckStructure, nil, "required section flagged optional")
		}
		if !known && e.flags&FlagOptional == 0 {
			return sectionCorrupt(e.id, CheckStructure, nil, "unknown section id %d is not flagged optional", e.id)
		}
		switch e.codec {
		case CodecNone:
			if e.stored != e.raw {
				return sectionCorrupt(e.id, CheckStructure, nil, "uncompressed, but stored length %d differs from raw length %d", e.stored, e.raw)
			}
		case CodecZstd:
			if e.raw == 0 || e.stored == 0 {
				return sectionCorrupt(e.id, CheckStructure, nil, "zstd with stored length %d, raw length %d", e.stored, e.raw)
			}
		default:
			return sectionCorrupt(e.id, CheckStructure, nil, "unknown codec %d", e.codec)
		}
		if e.off != next {
			return sectionCorrupt(e.id, CheckStructure, nil, "offset %d, want %d (sections lie back to back)", e.off, next)
		}
		if e.stored > footerStart-next {
			return sectionCorrupt(e.id, CheckStructure, nil, "%d bytes at %d run past the footer at %d", e.stored, e.off, footerStart)
		}
		next += e.stored
		if e.raw > MaxRawBytes-total {
			return sectionCorrupt(e.id, CheckStructure, nil, "raw lengths exceed the %d-byte cap", MaxRawBytes)
		}
		total += e.raw
	}
	if next != footerStart {
		return corrupt("table", CheckStructure, "sections end at %d, the footer starts at %d", next, footerStart)
	}
	return nil
}

// Version is the format version.
func (ft *Footer) Version() int { return ft.f.version }

// Root is the hex root stored in the footer (VerifyRoot checks it).
func (ft *Footer) Root() string { return hex.EncodeToString(ft.root[:]) }

// Size is the checkpoint's total size in bytes.
func (ft *Footer) Size() int64 { return ft.size }

// FooterLen is the footer's length in bytes (the tail a ranged read needs).
func (ft *Footer) FooterLen() int { return ft.footerLen }

// Sections describes the section table in order.
func (ft *Footer) Sections() []SectionInfo {
	out := make([]SectionInfo, len(ft.entries))
	for i := range ft.entries {
		out[i] = ft.entries[i].info()
	}
	return out
}

// Info describes one section (its Offset and StoredLen are the byte range
// to fetch for DecodeSection).
func (ft *Footer) Info(id uint16) (SectionInfo, bool) {
	if e := ft.entry(id); e != nil {
		return e.info(), true
	}
	return SectionInfo{}, false
}

func (ft *Footer) entry(id uint16) *entry {
	for i := range ft.entries {
		if ft.entries[i].id == id {
			return &ft.entries[i]
		}
	}
	return nil
}

// VerifyRoot recomputes the root, SHA-256 over the header and the section
// table, and compares it with the stored one.
func (ft *Footer) VerifyRoot() error {
	h := sha256.New()
	h.Write(ft.header)
	h.Write(ft.table)
	var got [32]byte
	h.Sum(got[:0])
	if got != ft.root {
		return corrupt("root", CheckRoot, "root mismatch: stored %x, computed %x", ft.root, got)
	}
	return nil
}

// DecodeSection checks and decodes the stored bytes of one section (fetched
// by a ranged read of Info's range): length, CRC-32C, decompression capped
// at the raw length, SHA-256 of the raw bytes. It returns the raw payload,
// which may alias stored.
func (ft *Footer) DecodeSection(id uint16, stored []byte) ([]byte, error) {
	e := ft.entry(id)
	if e == nil {
		return nil, fmt.Errorf("nkc1: section %s: not in this checkpoint", SectionName(id))
	}
	return e.decode(stored)
}

func (e *entry) decode(stored []byte) ([]byte, error) {
	if uint64(len(stored)) != e.stored {
		return nil, sectionCorrupt(e.id, CheckStructure, nil, "stored bytes are %d long, the table says %d", len(stored), e.stored)
	}
	if got := container.CRC32C(stored); got != e.crc {
		return nil, sectionCorrupt(e.id, CheckCRC, nil, "crc32c mismatch: stored 0x%08x, computed 0x%08x", e.crc, got)
	}
	raw := stored
	if e.codec == CodecZstd {
		var err error
		if raw, err = decompressZstd(stored, e.raw); err != nil {
			return nil, sectionCorrupt(e.id, CheckSHA256, err, "cannot rebuild the raw bytes")
		}
	}
	if got := sha256.Sum256(raw); got != e.sha {
		return nil, sectionCorrupt(e.id, CheckSHA256, nil, "sha256 mismatch: stored %x, computed %x", e.sha, got)
	}
	return raw, nil
}

// Reader reads a whole checkpoint held in memory.
type Reader struct {
	*Footer
	data []byte
}

// Open parses the header, the footer and the section table of a whole
// checkpoint and checks its structure and bounds. It decompresses nothing
// and does not check the root or any section digest (Section, Verify and
// Decode do).
func Open(data []byte) (*Reader, error) {
	if err := container.CheckMagic(data, Magic, "an NKC1 checkpoint"); err != nil {
		return nil, corrupt("header", CheckStructure, "%v", err)
	}
	version, flags, err := container.ParsePrefix(data)
	if err != nil {
		return nil, corrupt("header", CheckStructure, "%v", err)
	}
	f, err := resolveVersion(version)
	if err != nil {
		return nil, err
	}
	if len(data) < f.headerSize {
		return nil, corrupt("header", CheckStructure, "truncated: %d bytes", len(data))
	}
	if flags != 0 {
		return nil, corrupt("header", CheckStructure, "flags 0x%04x, version %d defines none", flags, f.version)
	}
	ft, err := OpenFooter(data, int64(len(data)))
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(data[:ft.f.headerSize], ft.header) {
		return nil, corrupt("header", CheckStructure, "header % x differs from the footer's copy % x", data[:ft.f.headerSize], ft.header)
	}
	return &Reader{Footer: ft, data: data}, nil
}

// Section checks and returns the raw payload of one section (CRC-32C,
// decompression capped at the table's raw length, SHA-256) without reading
// any other section. The result may alias the checkpoint's bytes.
func (r *Reader) Section(id uint16) ([]byte, error) {
	e := r.entry(id)
	if e == nil {
		return nil, fmt.Errorf("nkc1: section %s: not in this checkpoint", SectionName(id))
	}
	return e.decode(r.data[e.off : e.off+e.stored])
}

// Finding is one failed check of Verify.
type Finding struct {
	Check   string `json:"check"` // CheckStructure, CheckCRC, CheckSHA256, CheckRoot, CheckDecode
	Section string `json:"section,omitempty"`
	Detail  string `json:"detail"`
}

func (f Finding) String() string {
	if f.Section != "" {
		return fmt.Sprintf("%s: section %s: %s", f.Check, f.Section, f.Detail)
	}
	return fmt.Sprintf("%s: %s", f.Check, f.Detail)
}

func findingOf(err error) Finding {
	var ce *CorruptError
	if errors.As(err, &ce) {
		d := ce.Detail
		if ce.Err != nil {
			d += ": " + ce.Err.Error()
		}
		if ce.Section == "" && ce.Part != "root" {
			d = ce.Part + ": " + d
		}
		return Finding{Check: ce.Check, Section: ce.Section, Detail: d}
	}
	return Finding{Check: CheckStructure, Detail: err.Error()}
}

// Verify checks the root, every section's CRC-32C and SHA-256, and (when
// those pass) that the payloads decode and agree. No findings: valid.
func (r *Reader) Verify() []Finding {
	var out []Finding
	if err := r.VerifyRoot(); err != nil {
		out = append(out, findingOf(err))
	}
	var raws sectionRaws
	for i := range r.entries {
		e := &r.entries[i]
		raw, err := e.decode(r.data[e.off : e.off+e.stored])
		if err != nil {
			out = append(out, findingOf(err))
			continue
		}
		if int(e.id) <= numRequired {
			raws.raw[e.id], raws.have[e.id] = raw, true
		} else if e.id == SectionClock {
			raws.clock, raws.haveClock = raw, true
		} else if e.id == SectionManifests {
			raws.manifests, raws.haveManifests = raw, true
		}
	}
	_, errs := decodeAll(&raws)
	for _, err := range errs {
		out = append(out, findingOf(err))
	}
	return out
}

// Checkpoint checks the root and every section and rebuilds the checkpoint.
func (r *Reader) Checkpoint() (*Checkpoint, error) {
	if err := r.VerifyRoot(); err != nil {
		return nil, err
	}
	var raws sectionRaws
	for i := range r.entries {
		e := &r.entries[i]
		raw, err := e.decode(r.data[e.off : e.off+e.stored])
		if err != nil {
			return nil, err
		}
		if int(e.id) <= numRequired {
			raws.raw[e.id], raws.have[e.id] = raw, true
		} else if e.id == SectionClock {
			raws.clock, raws.haveClock = raw, true
		} else if e.id == SectionManifests {
			raws.manifests, raws.haveManifests = raw, true
		}
	}
	c, errs := decodeAll(&raws)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return c, nil
}

// sectionRaws holds the raw payloads of the required sections by id.
type sectionRaws struct {
	raw  [numRequired + 1][]byte
	have [numRequired + 1]bool
	// The optional clock and manifests sections, when present.
	clock, manifests         []byte
	haveClock, haveManifests bool
}

// decodeAll decodes every section present in raws independently, then,
// when all decoded, assembles the state and checks that the parts agree.
func decodeAll(raws *sectionRaws) (*Checkpoint, []error) {
	var errs []error
	fail := func(id uint16, err error) {
		errs = append(errs, sectionCorrupt(id, CheckDecode, err, "payload does not decode"))
	}
	c := &Checkpoint{}
	var (
		producers map[int64]*state.Producer
		ongoing   map[int64]state.Txn
		aborted   []state.AbortedTxn
		epochs    []state.EpochEntry
		segs      []state.Segment
		err       error
		ok        = true
	)
	for id := uint16(1); id <= numRequired; id++ {
		if !raws.have[id] {
			ok = false
			continue
		}
		raw := raws.raw[id]
		switch id {
		case SectionAnchor:
			c.Anchor, err = decodeAnchor(raw)
		case SectionProducers:
			producers, err = state.DecodeProducers(raw)
		case SectionTransactions:
			ongoing, err = state.DecodeOngoing(raw)
		case SectionAborted:
			aborted, err = state.DecodeAborted(raw)
		case SectionEpochs:
			epochs, err = state.DecodeEpochs(raw)
		case SectionSegments:
			segs, err = state.DecodeSegments(raw)
		case SectionIndexes:
			if !raws.have[SectionSegments] || segs == nil {
				ok = false
				continue // judged with the segments
			}
			err = state.DecodeIndexes(raw, segs)
		case SectionCoverage:
			c.Coverage, err = decodeCoverage(raw)
		case SectionBindingRef:
			c.Binding, err = decodeBinding(raw)
		}
		if err != nil {
			fail(id, err)
			ok = false
			if id == SectionSegments {
				segs = nil
			}
		}
	}
	if raws.haveClock {
		clock, err := decodeClock(raws.clock)
		if err != nil {
			fail(SectionClock, err)
			ok = false
		} else {
			c.Clock = &clock
		}
	}
	if raws.haveManifests {
		refs, err := decodeManifests(raws.manifests)
		if err != nil {
			fail(SectionManifests, err)
			ok = false
		} else {
			c.Manifests = refs
		}
	}
	if !ok {
		return nil, errs
	}
	c.State, err = state.Assemble(c.Anchor.LogStart, c.Anchor.Offset, producers, ongoing, aborted, epochs, segs)
	if err != nil {
		return nil, []error{&CorruptError{Part: "state", Check: CheckDecode, Detail: "sections disagree", Err: err}}
	}
	if id, err := validateCheckpoint(c); err != nil {
		return nil, []error{sectionCorrupt(id, CheckDecode, err, "disagrees with the other sections")}
	}
	return c, nil
}
