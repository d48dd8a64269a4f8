package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression stream formats (docs/design.md §4; Kafka: clients/.../common/compress):
// gzip is standard gzip (multi-member accepted); snappy is the xerial
// framing of SnappyOutputStream (a raw snappy block is accepted when the
// xerial magic is absent, as xerial's reader does); lz4 is the LZ4 frame
// format, written as Kafka's Lz4BlockOutputStream does (64 KiB independent
// blocks, no checksums); zstd is standard zstd frames.

// xerialMagic is the first 8 bytes of a xerial snappy stream, followed by
// int32 version (1) and int32 compatible version (1).
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialVersion    = 1
	xerialCompatible = 1
	xerialBlockSize  = 32 * 1024 // SnappyOutputStream's default block size

	// zstdMaxWindow is libzstd's default decoder window limit (2^27), which
	// zstd-jni and so Kafka use: frames needing more are refused.
	zstdMaxWindow = 1 << 27

	// zstdMinWindowCap is the smallest window limit used, whatever the
	// decode cap: Kafka's producers write 2–8 MiB windows.
	zstdMinWindowCap = 8 << 20
)

// errOverCap is returned by capWriter once the cap would be passed.
var errOverCap = errors.New("decompressed size over the cap")

// capWriter collects output up to max bytes.
type capWriter struct {
	buf []byte
	max int
}

func (w *capWriter) Write(p []byte) (int, error) {
	if len(p) > w.max-len(w.buf) {
		return 0, errOverCap
	}
	if need := len(w.buf) + len(p); need > cap(w.buf) {
		// Double (append grows large slices by only 1.25x, which
		// would allocate several times the cap in total), within the
		// cap.
		grown := make([]byte, len(w.buf), min(max(need, 2*cap(w.buf)), w.max))
		copy(grown, w.buf)
		w.buf = grown
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func initialCap(srcLen, limit int) int {
	return min(4*srcLen+512, limit)
}

var (
	zstdDecoders = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil
		}
		return d
	}}
	zstdEncoder     *zstd.Encoder
	zstdEncoderErr  error
	zstdEncoderOnce sync.Once
	gzipReaders     sync.Pool
	gzipWriters     sync.Pool
	// lz4Writers write frames as Kafka's Lz4BlockOutputStream does: 64
	// KiB independent blocks, no block or content checksum.
	lz4Writers = sync.Pool{New: func() any {
		zw := lz4.NewWriter(nil)
		_ = zw.Apply(
			lz4.BlockSizeOption(lz4.Block64Kb),
			lz4.ChecksumOption(false),
			lz4.BlockChecksumOption(false),
			lz4.ConcurrencyOption(1),
		)
		return zw
	}}
	lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
)

// Decompress inflates a records stream compressed with codec c, refusing
// (with ErrTooLarge) to produce more than limit bytes: memory stays within
// about twice the limit (zstd: at least 8 MiB of window) whatever the
// input claims. A broken stream is ErrCorrupt.
func Decompress(c Codec, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0)
	var out []byte
	var err error
	switch c {
	case CodecNone:
		if len(src) > limit {
			return nil, fmt.Errorf("decompress none: %d bytes, cap %d: %w", len(src), limit, ErrTooLarge)
		}
		return append([]byte(nil), src...), nil
	case CodecGzip:
		out, err = gunzip(src, limit)
	case CodecSnappy:
		out, err = unsnappy(src, limit)
	case CodecLZ4:
		out, err = unlz4(src, limit)
	case CodecZstd:
		out, err = unzstd(src, limit)
	default:
		return nil, fmt.Errorf("decompress: unknown codec %d: %w", int8(c), ErrCorrupt)
	}
	if err != nil {
		if errors.Is(err, errOverCap) {
			return nil, fmt.Errorf("decompress %s: output passes the %d-byte cap: %w", c, limit, ErrTooLarge)
		}
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("decompress %s: %w", c, err)
		}
		return nil, fmt.Errorf("decompress %s: %v: %w", c, err, ErrCorrupt)
	}
	return out, nil
}

func gunzip(src []byte, limit int) ([]byte, error) {
	var zr *gzip.Reader
	if v := gzipReaders.Get(); v != nil {
		zr = v.(*gzip.Reader)
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			gzipReaders.Put(zr)
			return nil, err
		}
	} else {
		var err error
		if zr, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
			return nil, err
		}
	}
	defer gzipReaders.Put(zr)
	w := &capWriter{buf: make([]byte, 0, initialCap(len(src), limit)), max: limit}
	if _, err := zr.WriteTo(w); err != nil {
		return nil, err
	}
	return w.buf, nil
}

func unzstd(src []byte, limit int) ([]byte, error) {
	if fcs, ok := zstdContentSize(src); ok && fcs > uint64(limit) {
		return nil, errOverCap
	}
	d, _ := zstdDecoders.Get().(*zstd.Decoder)
	if d == nil {
		return nil, errors.New("zstd decoder unavailable")
	}
	defer func() {
		_ = d.Reset(nil)
		zstdDecoders.Put(d)
	}()
	// The window a frame may declare follows the cap, at least 8 MiB
	// (Kafka's producers declare 2–8 MiB windows whatever the content
	// size) and at most libzstd's 128 MiB, so a frame cannot make the
	// decoder allocate far beyond the cap. The streaming decoder reuses
	// one window buffer across the frames of a stream.
	window := uint64(min(max(limit, zstdMinWindowCap), zstdMaxWindow))
	if err := d.ResetWithOptions(bytes.NewReader(src), zstd.WithDecoderMaxWindow(window)); err != nil {
		return nil, err
	}
	w := &capWriter{buf: make([]byte, 0, initialCap(len(src), limit)), max: limit}
	if _, err := d.WriteTo(w); err != nil {
		if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, errOverCap
		}
		return nil, err
	}
	return w.buf, nil
}

// zstdContentSize reads the frame content size of the first zstd frame,
// when its header declares one.
func zstdContentSize(src []byte) (uint64, bool) {
	if len(src) < 5 || binary.LittleEndian.Uint32(src) != 0xFD2FB528 {
		return 0, false
	}
	fhd := src[4]
	single := fhd&0x20 != 0
	p := 5
	if !single {
		p++ // window descriptor
	}
	p += [4]int{0, 1, 2, 4}[fhd&3] // dictionary id
	var n int
	switch fhd >> 6 {
	case 0:
		if !single {
			return 0, false
		}
		n = 1
	case 1:
		n = 2
	case 2:
		n = 4
	case 3:
		n = 8
	}
	if len(src) < p+n {
		return 0, false
	}
	switch n {
	case 1:
		return uint64(src[p]), true
	case 2:
		return uint64(binary.LittleEndian.Uint16(src[p:])) + 256, true
	case 4:
		return uint64(binary.LittleEndian.Uint32(src[p:])), true
	}
	return binary.LittleEndian.Uint64(src[p:]), true
}

func unlz4(src []byte, limit int) ([]byte, error) {
	// Kafka's Lz4BlockInputStream reads only the LZ4 frame format.
	if len(src) < 4 || binary.LittleEndian.Uint32(src) != 0x184D2204 {
		return nil, fmt.Errorf("no lz4 frame magic: %w", ErrCorrupt)
	}
	zr := lz4Readers.Get().(*lz4.Reader)
	zr.Reset(bytes.NewReader(src))
	defer func() {
		zr.Reset(nil)
		lz4Readers.Put(zr)
	}()
	w := &capWriter{buf: make([]byte, 0, initialCap(len(src), limit)), max: limit}
	if _, err := zr.WriteTo(w); err != nil {
		return nil, err
	}
	return w.buf, nil
}

// unsnappy reads the xerial framing: a 16-byte header, then chunks of
// int32 compressed length + raw snappy block; a repeated header
// (concatenated streams) is skipped. Input without the magic is one raw
// snappy block.
func unsnappy(src []byte, limit int) ([]byte, error) {
	if len(src) < len(xerialMagic) || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return snappyBlock(nil, src, limit, 0)
	}
	out := make([]byte, 0, initialCap(len(src), limit))
	p := 0
	for p < len(src) {
		if len(src)-p >= len(xerialMagic) && bytes.Equal(src[p:p+len(xerialMagic)], xerialMagic) {
			if len(src)-p < xerialHeaderSize {
				return nil, fmt.Errorf("xerial header at byte %d cut short: %w", p, ErrCorrupt)
			}
			// SnappyInputStream refuses a version below its minimum
			// compatible version (1).
			if v := int32(binary.BigEndian.Uint32(src[p+8:])); v < xerialCompatible {
				return nil, fmt.Errorf("xerial header at byte %d: version %d below %d: %w", p, v, xerialCompatible, ErrCorrupt)
			}
			p += xerialHeaderSize
			continue
		}
		if len(src)-p < 4 {
			return nil, fmt.Errorf("xerial chunk length at byte %d cut short: %w", p, ErrCorrupt)
		}
		n := int32(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if n < 0 || int(n) > len(src)-p {
			return nil, fmt.Errorf("xerial chunk at byte %d: length %d, %d bytes left: %w", p-4, n, len(src)-p, ErrCorrupt)
		}
		var err error
		if out, err = snappyBlock(out, src[p:p+int(n)], limit, p); err != nil {
			return nil, err
		}
		p += int(n)
	}
	return out, nil
}

// snappyBlock appends the decoding of one raw snappy block to out, checking
// the declared length against the cap before allocating.
func snappyBlock(out, block []byte, limit, at int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("snappy block at byte %d: %v: %w", at, err, ErrCorrupt)
	}
	if n > limit-len(out) {
		return nil, errOverCap
	}
	if need := len(out) + n; cap(out) < need {
		grown := make([]byte, len(out), min(max(need, 2*cap(out)), limit))
		copy(grown, out)
		out = grown
	}
	d, err := snappy.DecodeStrict(out[len(out):len(out)+n], block)
	if err != nil {
		return nil, fmt.Errorf("snappy block at byte %d: %v: %w", at, err, ErrCorrupt)
	}
	if len(d) != n {
		return nil, fmt.Errorf("snappy block at byte %d: decoded %d bytes, header says %d: %w", at, len(d), n, ErrCorrupt)
	}
	return out[:len(out)+n], nil
}

// Compress compresses a records section with codec c. The output is
// deterministic for a given input and library version.
func Compress(c Codec, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append([]byte(nil), src...), nil
	case CodecGzip:
		var buf bytes.Buffer
		zw, _ := gzipWriters.Get().(*gzip.Writer)
		if zw == nil {
			var err error
			if zw, err = gzip.NewWriterLevel(&buf, gzip.DefaultCompression); err != nil {
				return nil, fmt.Errorf("compress gzip: %w", err)
			}
		} else {
			zw.Reset(&buf)
		}
		defer gzipWriters.Put(zw)
		if _, err := zw.Write(src); err != nil {
			return nil, fmt.Errorf("compress gzip: %w", err)
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("compress gzip: %w", err)
		}
		return buf.Bytes(), nil
	case CodecSnappy:
		return xerialEncode(src), nil
	case CodecLZ4:
		var buf bytes.Buffer
		zw := lz4Writers.Get().(*lz4.Writer)
		zw.Reset(&buf)
		defer lz4Writers.Put(zw)
		if _, err := zw.Write(src); err != nil {
			return nil, fmt.Errorf("compress lz4: %w", err)
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("compress lz4: %w", err)
		}
		return buf.Bytes(), nil
	case CodecZstd:
		zstdEncoderOnce.Do(func() {
			zstdEncoder, zstdEncoderErr = zstd.NewWriter(nil,
				zstd.WithEncoderConcurrency(1),
				zstd.WithEncoderLevel(zstd.SpeedDefault))
		})
		if zstdEncoderErr != nil {
			return nil, fmt.Errorf("compress zstd: %w", zstdEncoderErr)
		}
		return zstdEncoder.EncodeAll(src, nil), nil
	}
	return nil, fmt.Errorf("compress: unknown codec %d: %w", int8(c), ErrCorrupt)
}

// xerialEncode frames src as SnappyOutputStream does: the header (also
// for empty input), then one chunk per 32 KiB of input.
func xerialEncode(src []byte) []byte {
	out := make([]byte, 0, xerialHeaderSize+len(src)/2+64)
	out = append(out, xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, xerialVersion)
	out = binary.BigEndian.AppendUint32(out, xerialCompatible)
	var tmp []byte
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		tmp = snappy.Encode(tmp[:cap(tmp)], src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(tmp)))
		out = append(out, tmp...)
		src = src[n:]
	}
	return out
}

// unzstd decompresses a zstd records section into the decoder's reused
// buffer with one DecodeAll (a batch's frames are small: the per-frame
// setup of the streaming reader costs more than the decoding). The decoder
// stops at limit bytes of output and refuses a frame declaring more before
// allocating; a frame whose declared window is above limit (Kafka's
// producers declare 2–8 MiB whatever the content) goes to Decompress,
// whose streaming reader bounds it as before.
func (d *BatchDecoder) unzstd(src []byte, limit int) ([]byte, error) {
	if d.zstd == nil {
		zd, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(uint64(min(limit, zstdMaxWindow))),
			zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, fmt.Errorf("decompress zstd: %v: %w", err, ErrCorrupt)
		}
		d.zstd = zd
	}
	if fcs, ok := zstdContentSize(src); ok && fcs > uint64(limit) {
		return nil, fmt.Errorf("decompress zstd: output passes the %d-byte cap: %w", limit, ErrTooLarge)
	}
	if cap(d.buf) > 16<<20 {
		d.buf = nil // do not keep one huge batch's buffer
	}
	out, err := d.zstd.DecodeAll(src, d.buf[:0])
	switch {
	case errors.Is(err, zstd.ErrWindowSizeExceeded):
		return Decompress(CodecZstd, src, limit)
	case len(out) > limit || errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return nil, fmt.Errorf("decompress zstd: output passes the %d-byte cap: %w", limit, ErrTooLarge)
	case err != nil:
		return nil, fmt.Errorf("decompress zstd: %v: %w", err, ErrCorrupt)
	}
	d.buf = out
	return out, nil
}
