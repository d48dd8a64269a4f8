package nkc1

import (
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/nereusctl/nereusctl/internal/container"
)

// The writer's zstd encoder: a fixed level, one encoder (the container
// package makes it deterministic: no frame checksum, since the section
// table's SHA-256 covers the raw bytes). Its identity (library version and
// level) decides the bytes: EncoderIdentity.
var encoder = container.NewEncoder(zstd.SpeedDefault, 1)

// compress returns the stored form of a raw payload and its codec, by the
// deterministic rule: zstd when raw has at least compressMinBytes bytes and
// the compressed form is strictly smaller, else the raw bytes as they are.
func compress(raw []byte) ([]byte, uint8, error) {
	if len(raw) < compressMinBytes {
		return raw, CodecNone, nil
	}
	enc, err := encoder.Get()
	if err != nil {
		return nil, 0, err
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

// decompressZstd decodes a zstd section whose raw length the table gives,
// bounded by what the table claims (container.DecodeZstdBounded): hostile
// bytes cannot make it allocate more than about twice the raw length plus
// one block, whatever they claim.
func decompressZstd(stored []byte, rawLen uint64) ([]byte, error) {
	if rawLen == 0 || rawLen > MaxRawBytes {
		return nil, fmt.Errorf("raw length %d outside 1..%d", rawLen, MaxRawBytes)
	}
	return container.DecodeZstdBounded(stored, rawLen, zstdMaxMatchWindow)
}
