package ntc2

import (
	"fmt"
	"runtime"

	"github.com/klauspost/compress/zstd"

	"github.com/nereusctl/nereusctl/internal/container"
)

// The writer's zstd encoder: a fixed level, one EncodeAll frame per block
// (the container package makes it deterministic: no frame checksum, since
// the block's CRC-32C and the content SHA-256 cover the bytes). Its
// identity (library version and level) decides the bytes: EncoderIdentity,
// which a TOPIC_COMPACTED manifest records so that a regeneration knows
// whether this build can reproduce it.
var encoder = container.NewEncoder(zstd.SpeedFastest, runtime.GOMAXPROCS(0))

// EncoderIdentity names what decides the bytes this build writes.
func EncoderIdentity() string { return fmt.Sprintf("ntc2 v%d %s", Version, encoder.Identity()) }

// appendStored appends the stored form of a raw block to dst and returns
// it with the codec, by the deterministic rule of worthCompressing.
func appendStored(dst, raw []byte) ([]byte, uint8, error) {
	if len(raw) < compressMinBytes {
		return append(dst, raw...), CodecNone, nil
	}
	enc, err := encoder.Get()
	if err != nil {
		return dst, 0, err
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

// The reader's zstd decoder, shared: DecodeAll is safe for concurrent use.
// With the cap limit, it never writes past cap(dst), so a block decodes
// into one allocation of exactly the index's raw length and hostile bytes
// cannot make it allocate more, whatever they claim.
var decoder = container.NewSharedDecoder(MaxBlockRaw, zstdMaxWindow)

// decompressZstd decodes a zstd block whose raw length the index gives
// (at most MaxBlockRaw, checked by Open). It goes to dst when dst can hold
// rawLen bytes, else to a new buffer of exactly that size.
func decompressZstd(stored []byte, rawLen uint32, dst []byte) ([]byte, error) {
	if rawLen == 0 || rawLen > MaxBlockRaw {
		return nil, fmt.Errorf("raw length %d outside 1..%d", rawLen, MaxBlockRaw)
	}
	return decoder.DecodeInto(stored, uint64(rawLen), dst)
}
