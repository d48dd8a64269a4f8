package container

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// bombFrame is a zstd frame that declares contentSize bytes of output
// (single segment: the window is the content size) and holds one empty
// raw block: a few bytes that claim to unpack to contentSize.
func bombFrame(contentSize uint64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528) // magic
	b = append(b, 0xE0)                                    // FCS 8 bytes, single segment, no checksum, no dictionary
	b = binary.LittleEndian.AppendUint64(b, contentSize)
	return append(b, 0x01, 0x00, 0x00) // last block, raw, 0 bytes
}

// windowFrame declares a window of 1<<(10+exp) bytes and no content size.
func windowFrame(exp byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	b = append(b, 0x00)   // no FCS, not single segment
	b = append(b, exp<<3) // window descriptor: exponent, mantissa 0
	return append(b, 0x01, 0x00, 0x00)
}

// rleBomb is a zstd frame of blocks RLE blocks of 1 KiB each (a 1 KiB
// window, no declared content size): 4 bytes of input per KiB of output.
func rleBomb(blocks int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	b = append(b, 0x00, 0x00) // no FCS, not single segment; window 1 KiB
	for i := range blocks {
		h := uint32(1<<1 | 1024<<3) // RLE, 1024 bytes
		if i == blocks-1 {
			h |= 1 // last block
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 'x')
	}
	return b
}

// allocated is the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeZstdBoundedRefusesBombs proves the decoders' memory bounds: a
// frame of a few bytes that declares 1 GiB or 256 MiB of content, or a
// 512 MiB window, is refused with the decoder's size or window error
// before anything near that is allocated (under 4 MiB: an unbounded
// decoder allocates the declared 256 MiB for its output first).
func TestDecodeZstdBoundedRefusesBombs(t *testing.T) {
	const gib = 1 << 30
	const budget = 4 << 20
	bomb := bombFrame(gib)
	var err error
	// 400 KiB that unpack to 100 MiB: the bounded decoder stops at its
	// limit (an unbounded one produces them all before the length check).
	rle := rleBomb(100 << 10)
	n := allocated(func() { _, err = DecodeZstdBounded(rle, 1000, 8<<20) })
	if !errors.Is(err, zstd.ErrDecoderSizeExceeded) || n > budget {
		t.Fatalf("RLE bomb: %v after %d bytes allocated, want ErrDecoderSizeExceeded under %d", err, n, budget)
	}
	for _, size := range []uint64{256 << 20, 64 << 20} {
		n := allocated(func() { _, err = DecodeZstdBounded(bombFrame(size), 1000, 8<<20) })
		if !errors.Is(err, zstd.ErrDecoderSizeExceeded) || n > budget {
			t.Fatalf("a frame declaring %d bytes: %v after %d bytes allocated, want ErrDecoderSizeExceeded under %d", size, err, n, budget)
		}
	}
	n = allocated(func() { _, err = DecodeZstdBounded(bomb, 1000, 8<<20) })
	if !errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		t.Fatalf("content-size bomb: %v, want zstd.ErrDecoderSizeExceeded", err)
	}
	if n > budget {
		t.Fatalf("content-size bomb: %d bytes allocated, want under %d", n, budget)
	}
	// A large, honest raw length bounds it too (the limit is rawLen).
	n = allocated(func() { _, err = DecodeZstdBounded(bomb, 16<<20, 8<<20) })
	if !errors.Is(err, zstd.ErrDecoderSizeExceeded) || n > 2*(16<<20)+budget {
		t.Fatalf("content-size bomb over a 16 MiB claim: %v after %d bytes, want ErrDecoderSizeExceeded under %d", err, n, 2*(16<<20)+budget)
	}
	n = allocated(func() { _, err = DecodeZstdBounded(windowFrame(19), 1000, 8<<20) })
	if !errors.Is(err, zstd.ErrWindowSizeExceeded) {
		t.Fatalf("window bomb: %v, want zstd.ErrWindowSizeExceeded", err)
	}
	if n > budget {
		t.Fatalf("window bomb: %d bytes allocated, want under %d", n, budget)
	}

	d := NewSharedDecoder(1<<20, 8<<20)
	n = allocated(func() { _, err = d.DecodeInto(rle, 1000, nil) })
	if err == nil || n > budget {
		t.Fatalf("shared decoder, RLE bomb: %v after %d bytes, want a refusal under %d", err, n, budget)
	}
	n = allocated(func() { _, err = d.DecodeInto(bomb, 1000, nil) })
	if !errors.Is(err, zstd.ErrDecoderSizeExceeded) || n > budget {
		t.Fatalf("shared decoder, content-size bomb: %v after %d bytes, want ErrDecoderSizeExceeded under %d", err, n, budget)
	}
	n = allocated(func() { _, err = d.DecodeInto(windowFrame(19), 1000, nil) })
	if !errors.Is(err, zstd.ErrWindowSizeExceeded) || n > budget {
		t.Fatalf("shared decoder, window bomb: %v after %d bytes, want ErrWindowSizeExceeded under %d", err, n, budget)
	}
}
