package ntc2

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// The writer's zstd encoder: a fixed level, no frame checksum (the block's
// CRC-32C and the content SHA-256 cover the bytes), one EncodeAll frame per
// block. EncodeAll with fixed options is deterministic for a given library
// version (go.mod pins it) whatever the concurrency, which only bounds how
// many calls run at once.
var (
	encOnce sync.Once
	encZstd *zstd.Encoder
	encErr  error
)

func zstdEncoder() (*zstd.Encoder, error) {
	encOnce.Do(func() {
		encZstd, encErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithEncoderCRC(false),
			zstd.WithZeroFrames(false),
		)
	})
	return encZstd, encErr
}

// appendStored appends the stored form of a raw block to dst and returns
// it with the codec, by the deterministic rule of worthCompressing.
func appendStored(dst, raw []byte) ([]byte, uint8, error) {
	if len(raw) < compressMinBytes {
		return append(dst, raw...), CodecNone, nil
	}
	enc, err := zstdEncoder()
	if err != nil {
		return dst, 0, fmt.Errorf("zstd encoder: %w", err)
	}
	n := len(dst)
	out := enc.EncodeAll(raw, dst)
	if worthCompressing(len(raw), len(out)-n) {
		return out, CodecZstd, nil
	}
	return append(out[:n], raw...), CodecNone, nil
}

// zstdMaxWindow is the largest window a reader accepts: the SpeedFastest
// encoder never declares more than 8 MiB.
const zstdMaxWindow = 8 << 20

// The reader's zstd decoder, shared: DecodeAll is safe for concurrent use
// (up to GOMAXPROCS calls run at once). With the cap limit, DecodeAll never
// writes past cap(dst), so a block decodes into one allocation of exactly
// the index's raw length and hostile bytes cannot make it allocate more,
// whatever they claim.
var (
	decOnce sync.Once
	decZstd *zstd.Decoder
	decErr  error
)

func zstdDecoder() (*zstd.Decoder, error) {
	decOnce.Do(func() {
		decZstd, decErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(MaxBlockRaw),
			zstd.WithDecoderMaxWindow(zstdMaxWindow),
			zstd.WithDecodeAllCapLimit(true),
		)
	})
	return decZstd, decErr
}

// decompressZstd decodes a zstd block whose raw length the index gives
// (at most MaxBlockRaw, checked by Open). The output must be exactly rawLen
// bytes. It goes to dst when dst can hold rawLen bytes, else to a new
// buffer of exactly that size.
func decompressZstd(stored []byte, rawLen uint32, dst []byte) ([]byte, error) {
	if rawLen == 0 || rawLen > MaxBlockRaw {
		return nil, fmt.Errorf("raw length %d outside 1..%d", rawLen, MaxBlockRaw)
	}
	d, err := zstdDecoder()
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	if cap(dst) < int(rawLen) {
		dst = make([]byte, 0, rawLen)
	}
	out, err := d.DecodeAll(stored, dst[:0:rawLen])
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if len(out) != int(rawLen) {
		return nil, fmt.Errorf("zstd: decompressed to %d bytes, the index says %d", len(out), rawLen)
	}
	return out, nil
}
