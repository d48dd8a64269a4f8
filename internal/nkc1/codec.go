package nkc1

import (
	"fmt"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// The writer's zstd encoder: a fixed level, one encoder, no frame checksum
// (the section table's SHA-256 covers the raw bytes). EncodeAll with fixed
// options is deterministic for a given library version (go.mod pins it).
var (
	encOnce sync.Once
	encZstd *zstd.Encoder
	encErr  error
)

func zstdEncoder() (*zstd.Encoder, error) {
	encOnce.Do(func() {
		encZstd, encErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false),
			zstd.WithZeroFrames(false),
		)
	})
	return encZstd, encErr
}

// compress returns the stored form of a raw payload and its codec, by the
// deterministic rule: zstd when raw has at least compressMinBytes bytes and
// the compressed form is strictly smaller, else the raw bytes as they are.
func compress(raw []byte) ([]byte, uint8, error) {
	if len(raw) < compressMinBytes {
		return raw, CodecNone, nil
	}
	enc, err := zstdEncoder()
	if err != nil {
		return nil, 0, fmt.Errorf("zstd encoder: %w", err)
	}
	z := enc.EncodeAll(raw, make([]byte, 0, len(raw)/2+64))
	if len(z) < len(raw) {
		return z, CodecZstd, nil
	}
	return raw, CodecNone, nil
}

// zstdMaxMatchWindow is the window our encoder declares for inputs at least
// that large (the SpeedDefault window); a smaller input of n bytes gets the
// power of two above n, at least 1 KiB.
const zstdMaxMatchWindow = 8 << 20

// decompressZstd decodes a zstd section whose raw length the table gives.
// The decoder refuses a frame whose declared content size or window exceeds
// limit, and stops once its output does: limit is rawLen, or for inputs
// below the encoder's window the window our encoder declares for rawLen
// (under 2*rawLen, at least 1 KiB). So hostile bytes cannot make it
// allocate more than about twice the raw length plus one block, whatever
// they claim; the output must then be exactly rawLen bytes.
func decompressZstd(stored []byte, rawLen uint64) ([]byte, error) {
	if rawLen == 0 || rawLen > MaxRawBytes {
		return nil, fmt.Errorf("raw length %d outside 1..%d", rawLen, MaxRawBytes)
	}
	limit := rawLen
	if rawLen < zstdMaxMatchWindow {
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
		return nil, fmt.Errorf("zstd: decompressed to %d bytes, table says %d", len(out), rawLen)
	}
	return out, nil
}
