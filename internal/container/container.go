// Package container owns the framing the two binary formats of nereusctl
// share (NKC1 checkpoints, NTC2 compacted views; docs/formats/): the
// header prefix every object opens with (4-byte magic, big-endian uint16
// version, uint16 flags), the trailer it closes with (uint32 footer length,
// the magic again), the payload codec ids and their zstd setup, CRC-32C,
// and the identity of the encoder that wrote an object's bytes.
//
// It knows nothing of either format's sections, blocks or footers, and it
// reports problems as plain errors: each format wraps them into its own
// corruption error, naming the part and the check.
package container

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// PrefixSize is the size of the header prefix: magic, version, flags.
const PrefixSize = 8

// TrailerSize is the size of the trailer: footer length, magic.
const TrailerSize = 8

// Payload codecs. The ids are stored in the objects (NKC1's section table,
// NTC2's block index) and never reused.
const (
	CodecNone uint8 = 0
	CodecZstd uint8 = 1
)

// CodecName returns "none", "zstd", or "unknown(N)".
func CodecName(c uint8) string {
	switch c {
	case CodecNone:
		return "none"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", c)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the CRC-32C (Castagnoli) of b, as both formats and Kafka's
// record batches use it.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// AppendPrefix appends the header prefix.
func AppendPrefix(b []byte, magic string, version, flags uint16) []byte {
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint16(b, version)
	return binary.BigEndian.AppendUint16(b, flags)
}

// CheckMagic reports whether data opens with magic; what names the format
// in the error ("an NKC1 checkpoint").
func CheckMagic(data []byte, magic, what string) error {
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return fmt.Errorf("magic %q, want %q (not %s)", data[:min(len(data), len(magic))], magic, what)
	}
	return nil
}

// ParsePrefix reads the version and flags of a header prefix whose magic
// CheckMagic accepted.
func ParsePrefix(data []byte) (version, flags uint16, err error) {
	if len(data) < PrefixSize {
		return 0, 0, fmt.Errorf("truncated: %d bytes", len(data))
	}
	return binary.BigEndian.Uint16(data[4:]), binary.BigEndian.Uint16(data[6:]), nil
}

// UnknownVersion is the error for a version a build does not read; the
// format wraps its ErrVersion sentinel into it.
func UnknownVersion(sentinel error, v uint16, reads int) error {
	return fmt.Errorf("%w %d (this build reads version %d; written by a newer nereusctl?)", sentinel, v, reads)
}

// AppendTrailer appends the trailer; footerLen counts the footer from its
// first byte through the trailer.
func AppendTrailer(b []byte, footerLen uint32, magic string) []byte {
	b = binary.BigEndian.AppendUint32(b, footerLen)
	return append(b, magic...)
}

// ParseTrailer reads the footer length from the trailer at the end of
// tail; what names the format in the error.
func ParseTrailer(tail []byte, magic, what string) (uint32, error) {
	if len(tail) < TrailerSize {
		return 0, fmt.Errorf("truncated: %d bytes, the trailer alone is %d", len(tail), TrailerSize)
	}
	t := tail[len(tail)-TrailerSize:]
	if string(t[4:]) != magic {
		return 0, fmt.Errorf("trailing magic %q, want %q (not %s, or truncated)", t[4:], magic, what)
	}
	return binary.BigEndian.Uint32(t), nil
}

// Encoder is a deterministic zstd encoder at a fixed level: no frame
// checksum (the formats' own CRC-32C and SHA-256 cover the bytes), no
// zero frames. EncodeAll with fixed options gives the same bytes for the
// same input with the same library version, whatever the concurrency
// (which only bounds how many calls run at once); Identity names both.
type Encoder struct {
	level       zstd.EncoderLevel
	concurrency int
	once        sync.Once
	enc         *zstd.Encoder
	err         error
}

// NewEncoder returns an encoder made on first use.
func NewEncoder(level zstd.EncoderLevel, concurrency int) *Encoder {
	return &Encoder{level: level, concurrency: concurrency}
}

// Get returns the shared zstd encoder.
func (e *Encoder) Get() (*zstd.Encoder, error) {
	e.once.Do(func() {
		e.enc, e.err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(e.level),
			zstd.WithEncoderConcurrency(e.concurrency),
			zstd.WithEncoderCRC(false),
			zstd.WithZeroFrames(false),
		)
		if e.err != nil {
			e.err = fmt.Errorf("zstd encoder: %w", e.err)
		}
	})
	return e.enc, e.err
}

// Identity names what decides the encoder's bytes: the codec library and
// its version, and the level ("zstd klauspost/compress@v1.20.4 level
// fastest"). Two builds with the same identity write the same bytes.
func (e *Encoder) Identity() string {
	return fmt.Sprintf("zstd %s level %s", zstdLibrary(), e.level.String())
}

const zstdModule = "github.com/klauspost/compress"

// zstdLib names the codec library this binary was built with. A binary
// from 'go build' or 'go install' records its modules (debug.BuildInfo's
// Deps); a test binary records none, so there the version is read from
// where the compiler found the library's source (the module cache path
// ".../github.com/klauspost/compress@v1.20.4/zstd/..."), which is again
// what was built, not what go.mod asks for. Neither known (a vendored test
// build): "unknown", which no recorded identity should be taken to match.
var zstdLib = sync.OnceValue(func() string {
	var deps []*debug.Module
	if bi, ok := debug.ReadBuildInfo(); ok {
		deps = bi.Deps
	}
	fn := runtime.FuncForPC(reflect.ValueOf(zstd.NewWriter).Pointer())
	file := ""
	if fn != nil {
		file, _ = fn.FileLine(fn.Entry())
	}
	return "klauspost/compress@" + zstdVersion(deps, file)
})

// zstdVersion is the library's version from the build's module list, else
// from the path of one of its source files, else "unknown". A replaced
// module names its replacement: a local directory has no version, so its
// bytes are only known to be reproducible by the same build.
func zstdVersion(deps []*debug.Module, file string) string {
	for _, d := range deps {
		if d.Path != zstdModule {
			continue
		}
		switch {
		case d.Replace == nil:
			return d.Version
		case d.Replace.Version != "":
			return d.Version + " replaced by " + d.Replace.Path + "@" + d.Replace.Version
		default:
			return d.Version + " replaced by the local directory " + d.Replace.Path
		}
	}
	file = filepath.ToSlash(file)
	if i := strings.LastIndex(file, zstdModule+"@"); i >= 0 {
		v := file[i+len(zstdModule)+1:]
		if j := strings.IndexByte(v, '/'); j > 0 {
			return v[:j]
		}
	}
	return "unknown"
}

func zstdLibrary() string { return zstdLib() }

// DecodeZstdBounded decodes a zstd payload whose raw length the container
// records, with a decoder made for it: the decoder refuses a frame whose
// declared content size or window exceeds the bound and stops once its
// output does. The bound is rawLen, or, for inputs below maxWindow, the
// window an encoder declares for rawLen bytes (the power of two above it,
// at least zstd.MinWindowSize): hostile bytes cannot make it allocate more
// than about twice the raw length, whatever they claim. The output must
// be exactly rawLen bytes.
func DecodeZstdBounded(stored []byte, rawLen, maxWindow uint64) ([]byte, error) {
	limit := rawLen
	if rawLen < maxWindow {
		limit = max(uint64(1)<<bits.Len64(rawLen), zstd.MinWindowSize)
	}
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(limit),
		zstd.WithDecoderMaxWindow(limit),
	)
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	defer d.Close()
	out, err := d.DecodeAll(stored, nil)
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if uint64(len(out)) != rawLen {
		return nil, fmt.Errorf("zstd: decompressed to %d bytes, the container says %d", len(out), rawLen)
	}
	return out, nil
}

// SharedDecoder is a zstd decoder shared by concurrent readers, capped at
// maxRaw bytes of output and maxWindow of window, writing into the
// caller's buffer (DecodeAll never writes past cap(dst)).
type SharedDecoder struct {
	maxRaw, maxWindow uint64
	once              sync.Once
	dec               *zstd.Decoder
	err               error
}

// NewSharedDecoder returns a decoder made on first use.
func NewSharedDecoder(maxRaw, maxWindow uint64) *SharedDecoder {
	return &SharedDecoder{maxRaw: maxRaw, maxWindow: maxWindow}
}

// DecodeInto decodes stored into dst (or a new buffer of exactly rawLen
// bytes when dst cannot hold them); the output must be rawLen bytes.
func (s *SharedDecoder) DecodeInto(stored []byte, rawLen uint64, dst []byte) ([]byte, error) {
	s.once.Do(func() {
		s.dec, s.err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(s.maxRaw),
			zstd.WithDecoderMaxWindow(s.maxWindow),
			zstd.WithDecodeAllCapLimit(true),
		)
	})
	if s.err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", s.err)
	}
	if uint64(cap(dst)) < rawLen {
		dst = make([]byte, 0, rawLen)
	}
	out, err := s.dec.DecodeAll(stored, dst[:0:rawLen])
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if uint64(len(out)) != rawLen {
		return nil, fmt.Errorf("zstd: decompressed to %d bytes, the index says %d", len(out), rawLen)
	}
	return out, nil
}
