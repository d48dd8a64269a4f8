package nkc1

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/container"
	"github.com/nereusctl/nereusctl/internal/errkind"
)

// Magic opens every NKC1 checkpoint and closes it (the trailer).
const Magic = "NKC1"

// Format versions. Version is the one this package writes; resolveVersion
// lists the ones it reads.
const (
	Version1 = 1
	Version  = Version1
)

// Section ids. They are fixed and never reused (docs/formats/nkc1.md §4).
const (
	SectionAnchor       uint16 = 1
	SectionProducers    uint16 = 2
	SectionTransactions uint16 = 3
	SectionAborted      uint16 = 4
	SectionEpochs       uint16 = 5
	SectionSegments     uint16 = 6
	SectionIndexes      uint16 = 7
	SectionCoverage     uint16 = 8
	SectionBindingRef   uint16 = 9
	// SectionClock (optional, flagged FlagOptional) is the clock producer
	// expiration was applied at: a checkpoint made without one has no
	// section 10, and a reader that does not know it skips it.
	SectionClock uint16 = 10
)

// numRequired is the number of sections every version-1 checkpoint carries
// (ids 1..numRequired, in order).
const numRequired = 9

var sectionNames = [numRequired + 2]string{
	"", "anchor", "producers", "transactions", "aborted", "epochs",
	"segments", "indexes", "coverage", "binding", "clock",
}

// sectionAliases are the other names SectionByName accepts.
var sectionAliases = map[string]uint16{
	"ongoing":          SectionTransactions,
	"txns":             SectionTransactions,
	"aborted-ranges":   SectionAborted,
	"leader-epochs":    SectionEpochs,
	"virtual-segments": SectionSegments,
	"binding-ref":      SectionBindingRef,
	"binding_ref":      SectionBindingRef,
}

// SectionName returns a section's name ("producers"), or "section-N" for an
// id this version does not know.
func SectionName(id uint16) string {
	if id >= 1 && int(id) < len(sectionNames) {
		return sectionNames[id]
	}
	return fmt.Sprintf("section-%d", id)
}

// SectionByName maps a section name (or "section-N") to its id.
func SectionByName(name string) (uint16, bool) {
	for id := 1; id < len(sectionNames); id++ {
		if sectionNames[id] == name {
			return uint16(id), true
		}
	}
	if id, ok := sectionAliases[name]; ok {
		return id, true
	}
	var n uint16
	if _, err := fmt.Sscanf(name, "section-%d", &n); err == nil && n > 0 && fmt.Sprintf("section-%d", n) == name {
		return n, true
	}
	return 0, false
}

// Section codecs: the container's ids, stored in the section table and
// never reused.
const (
	CodecNone = container.CodecNone
	CodecZstd = container.CodecZstd
)

func codecName(c uint8) string { return container.CodecName(c) }

// Section entry flags.
const (
	// FlagOptional marks a section a reader of the same version may skip
	// when it does not know the id. The nine version-1 sections are never
	// optional.
	FlagOptional    uint8 = 1 << 0
	knownEntryFlags       = FlagOptional
)

// MaxRawBytes caps the sum of the sections' raw (decompressed) lengths of a
// checkpoint, and so each section's: no decompression can exceed it.
const MaxRawBytes = 1 << 30

// Compression rule (writer side, deterministic): a section is stored zstd
// compressed when its raw payload has at least compressMinBytes bytes and
// the compressed form is strictly smaller; otherwise it is stored as is.
const compressMinBytes = 64

// Fixed sizes of version 1.
const (
	headerSize  = 12                    // magic, version, flags, section count
	entrySize   = 64                    // one section table entry
	rootSize    = 32                    // SHA-256
	trailerSize = container.TrailerSize // footer length, magic
	maxSections = 64
)

// SuggestedTailRead is a ranged-read size that holds the whole footer of any
// checkpoint this version writes (see OpenFooter).
const SuggestedTailRead = 4096

// Sentinel errors.
var (
	// ErrCorrupt is wrapped by every error that reports bytes that are not
	// a valid checkpoint: bad magic, structure or bounds, a CRC-32C or
	// SHA-256 mismatch, a root mismatch, a payload that does not decode.
	ErrCorrupt = errkind.New(errkind.Corrupt, "corrupt checkpoint")

	// ErrVersion reports a format version this build does not read.
	ErrVersion = errors.New("unknown format version")

	// ErrShortTail reports a tail passed to OpenFooter that does not hold
	// the whole footer; FooterLen says how many bytes it needs.
	ErrShortTail = errors.New("tail too short for the footer")
)

// Checks named by CorruptError and Finding.
const (
	CheckStructure = "structure" // magic, header, footer, table, bounds
	CheckCRC       = "crc"       // CRC-32C of a section's stored bytes
	CheckSHA256    = "sha256"    // SHA-256 of a section's raw bytes (and its decompression)
	CheckRoot      = "root"      // SHA-256 over header and section table
	CheckDecode    = "decode"    // a payload that does not decode or disagrees with another
)

// CorruptError is the error for every corruption this package reports.
// errors.Is(err, ErrCorrupt) holds for it; Unwrap gives the underlying
// decoder error when there is one.
type CorruptError struct {
	Part    string // "header", "footer", "table", "root" or "section"
	Section string // the section's name when Part is "section"
	Check   string // CheckStructure, CheckCRC, CheckSHA256, CheckRoot, CheckDecode
	Detail  string
	Err     error
}

func (e *CorruptError) Error() string {
	where := e.Part
	if e.Section != "" {
		where = "section " + e.Section
	}
	msg := "nkc1: " + where + ": " + e.Detail
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes every CorruptError match ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the underlying decoder error, if any.
func (e *CorruptError) Unwrap() error { return e.Err }

func corrupt(part, check, format string, a ...any) error {
	return &CorruptError{Part: part, Check: check, Detail: fmt.Sprintf(format, a...)}
}

func sectionCorrupt(id uint16, check string, err error, format string, a ...any) error {
	return &CorruptError{Part: "section", Section: SectionName(id), Check: check, Detail: fmt.Sprintf(format, a...), Err: err}
}

// format describes one version of the layout. Every version-dependent
// decision goes through resolveVersion.
type format struct {
	version     int
	headerSize  int
	entrySize   int
	numRequired int
}

var formatV1 = format{version: Version1, headerSize: headerSize, entrySize: entrySize, numRequired: numRequired}

// resolveVersion returns the layout of a version, or an ErrVersion error.
func resolveVersion(v uint16) (format, error) {
	switch v {
	case Version1:
		return formatV1, nil
	default:
		return format{}, fmt.Errorf("nkc1: header: %w", container.UnknownVersion(ErrVersion, v, Version1))
	}
}

// entry is one section table entry.
type entry struct {
	id     uint16
	codec  uint8
	flags  uint8
	off    uint64
	stored uint64
	raw    uint64
	crc    uint32
	sha    [32]byte
}

func (e *entry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, e.id)
	b = append(b, e.codec, e.flags)
	b = binary.BigEndian.AppendUint64(b, e.off)
	b = binary.BigEndian.AppendUint64(b, e.stored)
	b = binary.BigEndian.AppendUint64(b, e.raw)
	b = binary.BigEndian.AppendUint32(b, e.crc)
	return append(b, e.sha[:]...)
}

func parseEntry(b []byte) entry {
	var e entry
	e.id = binary.BigEndian.Uint16(b[0:])
	e.codec = b[2]
	e.flags = b[3]
	e.off = binary.BigEndian.Uint64(b[4:])
	e.stored = binary.BigEndian.Uint64(b[12:])
	e.raw = binary.BigEndian.Uint64(b[20:])
	e.crc = binary.BigEndian.Uint32(b[28:])
	copy(e.sha[:], b[32:64])
	return e
}

// SectionInfo describes one section table entry.
type SectionInfo struct {
	ID        uint16 `json:"id"`
	Name      string `json:"name"`
	Codec     string `json:"codec"`
	Optional  bool   `json:"optional,omitempty"`
	Offset    int64  `json:"offset"`
	StoredLen int64  `json:"stored_len"`
	RawLen    int64  `json:"raw_len"`
	CRC32C    uint32 `json:"crc32c"`
	SHA256    string `json:"sha256"`
}

func (e *entry) info() SectionInfo {
	return SectionInfo{
		ID: e.id, Name: SectionName(e.id), Codec: codecName(e.codec), Optional: e.flags&FlagOptional != 0,
		Offset: int64(e.off), StoredLen: int64(e.stored), RawLen: int64(e.raw),
		CRC32C: e.crc, SHA256: hex.EncodeToString(e.sha[:]),
	}
}

// appendHeader appends the fixed header: the container's prefix and the
// section count.
func appendHeader(b []byte, version uint16, flags uint16, count uint32) []byte {
	return binary.BigEndian.AppendUint32(container.AppendPrefix(b, Magic, version, flags), count)
}
