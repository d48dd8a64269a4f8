package ntc2

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/container"
	"github.com/nereusctl/nereusctl/internal/errkind"
)

// Magic opens every NTC2 object and closes it (the trailer).
const Magic = "NTC2"

// Format versions. Version is the one this package writes; resolveVersion
// lists the ones it reads.
const (
	Version1 = 1
	Version  = Version1
)

// Block codecs: the container's ids, stored in the block index and never
// reused.
const (
	CodecNone = container.CodecNone
	CodecZstd = container.CodecZstd
)

// CodecName returns "none", "zstd", or "unknown(N)".
func CodecName(c uint8) string { return container.CodecName(c) }

// Block sizing and the caps every reader enforces (docs/formats/ntc2.md §4).
const (
	// TargetBlockRaw is the writer's target raw block size: a row that
	// would take a non-empty block past it starts a new block. A row never
	// splits, so a row larger than this gets a block of its own.
	TargetBlockRaw = 64 << 10

	// MaxMultiRowBlockRaw caps the raw length of a block of two or more
	// rows (readers accept up to this, writers stay at TargetBlockRaw). It
	// bounds the memory of decoding one block: a row is at least
	// minRowBytes raw bytes.
	MaxMultiRowBlockRaw = 1 << 20

	// MaxBlockRaw caps the raw length of any block, and so the encoded
	// size of one row (key, value and headers included).
	MaxBlockRaw = 256 << 20

	// MaxHeaders caps the headers of one row.
	MaxHeaders = 1 << 20

	// MaxSources caps the source generations a footer lists.
	MaxSources = 1 << 16
)

// Compression rule (writer side, deterministic): a block is stored zstd
// compressed when its raw bytes are at least compressMinBytes long and the
// compressed form saves at least an eighth of them; otherwise as is.
const compressMinBytes = 64

// worthCompressing is the rule above.
func worthCompressing(raw, compressed int) bool {
	return raw >= compressMinBytes && compressed <= raw-raw/8
}

// Fixed sizes of version 1.
const (
	headerSize  = 8                     // magic, version, flags
	entrySize   = 49                    // one block index entry
	sourceSize  = 40                    // gen, manifest SHA-256
	footerFixed = 120                   // a footer without sources, trailer included
	trailerSize = container.TrailerSize // footer length, magic
	minRowBytes = 5                     // offset, attributes, timestamp, key length, header count

	// footer field offsets (from the footer start)
	offBase       = 8
	offEnd        = 16
	offRows       = 24
	offKeys       = 32
	offTombstones = 40
	offFirst      = 48
	offLast       = 56
	offBlocks     = 64
	offIndexCRC   = 68
	offSources    = 72
	offSourceList = 76
)

// maxFooterBytes bounds a footer length before the version is known.
const maxFooterBytes = footerFixed + MaxSources*sourceSize

// minObjectSize is the size of an empty view with one source.
const minObjectSize = headerSize + footerFixed + sourceSize

// SuggestedTailRead is a ranged-read size that holds the footer and the
// block index of most objects (about 1 300 blocks, 80 MiB of raw rows, with
// one source); TailLen says how much a given object needs.
const SuggestedTailRead = 64 << 10

func crc32c(b []byte) uint32 { return container.CRC32C(b) }

// Sentinel errors.
var (
	// ErrCorrupt is wrapped by every error that reports bytes that are not
	// a valid NTC2 object: bad magic, structure or bounds, a CRC-32C or
	// SHA-256 mismatch, a block that does not decompress or decode, counts
	// or offsets that disagree with the footer or the index.
	ErrCorrupt = errkind.New(errkind.Corrupt, "corrupt compacted view")

	// ErrVersion reports a format version this build does not read.
	ErrVersion = errors.New("unknown format version")

	// ErrShortTail reports a tail passed to OpenTail that does not hold the
	// footer and the block index; TailLen says how many bytes it needs.
	ErrShortTail = errors.New("tail too short for the footer and block index")

	// ErrOutOfRange reports a SeekBlock to an offset outside the view's
	// [Base, End).
	ErrOutOfRange = errors.New("offset outside the view")
)

// Checks named by CorruptError and Finding.
const (
	CheckStructure = "structure" // magic, header, footer, index, bounds
	CheckCRC       = "crc"       // CRC-32C of a block, of the index, of the footer
	CheckSHA256    = "sha256"    // the content digest
	CheckDecode    = "decode"    // a block that does not decompress or decode, or disagrees with its index entry
	CheckCount     = "count"     // footer counts against the index and the rows
	CheckOrder     = "order"     // offsets ascending and inside [Base, End)
)

// CorruptError is the error for every corruption this package reports.
// errors.Is(err, ErrCorrupt) holds for it; Unwrap gives the underlying
// decoder error when there is one.
type CorruptError struct {
	Part   string // "header", "footer", "index", "block" or "content"
	Block  int    // the block's index when Part is "block" or "index" names one entry; else -1
	Check  string // CheckStructure, CheckCRC, CheckSHA256, CheckDecode, CheckCount, CheckOrder
	Detail string
	Err    error
}

func (e *CorruptError) where() string {
	if e.Block >= 0 {
		if e.Part == "index" {
			return fmt.Sprintf("index entry %d", e.Block)
		}
		return fmt.Sprintf("block %d", e.Block)
	}
	return e.Part
}

func (e *CorruptError) Error() string {
	msg := "ntc2: " + e.where() + ": " + e.Detail
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
	return &CorruptError{Part: part, Block: -1, Check: check, Detail: fmt.Sprintf(format, a...)}
}

func entryCorrupt(i int, check, format string, a ...any) error {
	return &CorruptError{Part: "index", Block: i, Check: check, Detail: fmt.Sprintf(format, a...)}
}

func blockCorrupt(i int, check string, err error, format string, a ...any) error {
	return &CorruptError{Part: "block", Block: i, Check: check, Detail: fmt.Sprintf(format, a...), Err: err}
}

// layout describes one version of the format. Every version-dependent
// decision goes through resolveVersion.
type layout struct {
	version     int
	headerSize  int
	entrySize   int
	footerFixed int
}

var layoutV1 = layout{version: Version1, headerSize: headerSize, entrySize: entrySize, footerFixed: footerFixed}

// resolveVersion returns the layout of a version, or an ErrVersion error.
func resolveVersion(v uint16) (layout, error) {
	switch v {
	case Version1:
		return layoutV1, nil
	default:
		return layout{}, fmt.Errorf("ntc2: header: %w", container.UnknownVersion(ErrVersion, v, Version1))
	}
}

// appendHeader appends the fixed header: the container's prefix.
func appendHeader(b []byte, version, flags uint16) []byte {
	return container.AppendPrefix(b, Magic, version, flags)
}

// entry is one block index entry.
type entry struct {
	first, last int64 // offsets of the block's first and last row
	maxTS       int64 // the largest row timestamp
	off         uint64
	stored, raw uint32
	rows        uint32
	crc         uint32 // CRC-32C of the stored bytes
	codec       uint8
}

func (e *entry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.first))
	b = binary.BigEndian.AppendUint64(b, uint64(e.last))
	b = binary.BigEndian.AppendUint64(b, uint64(e.maxTS))
	b = binary.BigEndian.AppendUint64(b, e.off)
	b = binary.BigEndian.AppendUint32(b, e.stored)
	b = binary.BigEndian.AppendUint32(b, e.raw)
	b = binary.BigEndian.AppendUint32(b, e.rows)
	b = binary.BigEndian.AppendUint32(b, e.crc)
	return append(b, e.codec)
}

func parseEntry(b []byte) entry {
	return entry{
		first:  int64(binary.BigEndian.Uint64(b[0:])),
		last:   int64(binary.BigEndian.Uint64(b[8:])),
		maxTS:  int64(binary.BigEndian.Uint64(b[16:])),
		off:    binary.BigEndian.Uint64(b[24:]),
		stored: binary.BigEndian.Uint32(b[32:]),
		raw:    binary.BigEndian.Uint32(b[36:]),
		rows:   binary.BigEndian.Uint32(b[40:]),
		crc:    binary.BigEndian.Uint32(b[44:]),
		codec:  b[48],
	}
}

// BlockInfo describes one block index entry.
type BlockInfo struct {
	FirstOffset  int64  `json:"first_offset"`
	LastOffset   int64  `json:"last_offset"`
	MaxTimestamp int64  `json:"max_timestamp"`
	Offset       int64  `json:"offset"` // byte offset of the stored bytes in the object
	StoredLen    int64  `json:"stored_len"`
	RawLen       int64  `json:"raw_len"`
	Rows         int    `json:"rows"`
	Codec        string `json:"codec"`
	CRC32C       uint32 `json:"crc32c"`
}

func (e *entry) info() BlockInfo {
	return BlockInfo{
		FirstOffset: e.first, LastOffset: e.last, MaxTimestamp: e.maxTS,
		Offset: int64(e.off), StoredLen: int64(e.stored), RawLen: int64(e.raw),
		Rows: int(e.rows), Codec: CodecName(e.codec), CRC32C: e.crc,
	}
}

// Source names one source generation of a view by its manifest digest.
type Source struct {
	Gen            int64  `json:"gen"`
	ManifestSHA256 string `json:"manifest_sha256"`
}

// Meta is what the writer's caller says about a view: its offset range
// [Base, End) (End exclusive; rows are sparse inside it) and the exact
// source generations it was computed from.
type Meta struct {
	Base    int64    `json:"base"`
	End     int64    `json:"end"`
	Sources []Source `json:"sources"`
}

// Footer is the parsed footer of an object: Meta (sources ascending by
// gen), the counts, the first and last row offsets (-1 when the view holds
// no row), the content digest (hex) and the number of blocks.
type Footer struct {
	Meta
	Rows          int64  `json:"rows"`
	Keys          int64  `json:"keys"`
	Tombstones    int64  `json:"tombstones"`
	FirstOffset   int64  `json:"first_offset"`
	LastOffset    int64  `json:"last_offset"`
	ContentSHA256 string `json:"content_sha256"`
	Blocks        int    `json:"blocks"`
}

func (f *Footer) clone() *Footer {
	c := *f
	c.Sources = append([]Source(nil), f.Sources...)
	return &c
}
