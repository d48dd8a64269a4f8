package kafka

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Scanner walks the batches of a log byte stream (a segment file or a
// stored object) reading headers only: it never decompresses and does not
// allocate per batch. With NewScannerVerify it also checks each batch's
// CRC.
//
//	sc := kafka.NewScanner(data)
//	for sc.Next() {
//		h := sc.Header()
//		...
//	}
//	if err := sc.Err(); err != nil { ... }
//
// Next stops at the end of data (Err() == nil) or at the first bad batch
// (Err() != nil, Pos() its position): errors.Is(err, ErrTruncated) for a
// batch claiming more bytes than remain (a torn write), ErrZeroTail when
// the rest of data is zero bytes (a preallocated segment), ErrCorrupt for
// an impossible header, ErrCRC (also ErrCorrupt) for a checksum mismatch.
type Scanner struct {
	data   []byte
	pos    int // start of the current batch
	next   int // start of the next batch
	verify bool
	h      BatchHeader
	err    error
	done   bool
}

// NewScanner returns a header-only Scanner over data.
func NewScanner(data []byte) *Scanner { return &Scanner{data: data} }

// NewScannerVerify returns a Scanner that also verifies every batch's CRC.
func NewScannerVerify(data []byte) *Scanner { return &Scanner{data: data, verify: true} }

// Next advances to the next batch and reports whether there is one.
func (s *Scanner) Next() bool {
	if s.done {
		return false
	}
	s.pos = s.next
	rest := s.data[s.pos:]
	if len(rest) == 0 {
		s.done = true
		return false
	}
	if len(rest) < LogOverhead {
		return s.fail(s.tailError(rest, fmt.Errorf("%d bytes, less than a batch's %d-byte offset and length: %w", len(rest), LogOverhead, ErrTruncated)))
	}
	length := int32(binary.BigEndian.Uint32(rest[offLength:]))
	if length == 0 {
		return s.fail(s.tailError(rest, fmt.Errorf("zero length: %w", ErrCorrupt)))
	}
	if length < MinLength {
		return s.fail(fmt.Errorf("length %d below minimum %d: %w", length, MinLength, ErrCorrupt))
	}
	if len(rest) > offMagic && rest[offMagic] != Magic {
		return s.fail(fmt.Errorf("magic %d, want %d: %w", int8(rest[offMagic]), Magic, ErrCorrupt))
	}
	size := LogOverhead + int(length)
	if size > len(rest) {
		return s.fail(fmt.Errorf("batch of %d bytes, %d remain: %w", size, len(rest), ErrTruncated))
	}
	if e := decodeHeader(rest, &s.h); e != hdrOK {
		return s.fail(headerErr(e, &s.h, len(rest)))
	}
	if s.verify {
		if got := crc32.Checksum(rest[offAttributes:size], castagnoli); got != s.h.CRC {
			return s.fail(fmt.Errorf("base offset %d: stored crc %08x, computed %08x: %w", s.h.BaseOffset, s.h.CRC, got, ErrCRC))
		}
	}
	s.next = s.pos + size
	return true
}

func (s *Scanner) fail(err error) bool {
	s.err = fmt.Errorf("scan log: batch at position %d: %w", s.pos, err)
	s.done = true
	s.h = BatchHeader{}
	return false
}

// tailError returns ErrZeroTail when rest is all zero bytes, else other.
func (s *Scanner) tailError(rest []byte, other error) error {
	for _, c := range rest {
		if c != 0 {
			return other
		}
	}
	return fmt.Errorf("%d zero bytes to the end: %w", len(rest), ErrZeroTail)
}

// Header is the current batch's header.
func (s *Scanner) Header() BatchHeader { return s.h }

// HeaderPtr is the current batch's header without a copy; it is
// overwritten by the next call to Next.
func (s *Scanner) HeaderPtr() *BatchHeader { return &s.h }

// Batch is the raw bytes of the whole current batch, aliasing the scanned
// data. After Next returns false it is nil.
func (s *Scanner) Batch() []byte {
	if s.err != nil || s.next <= s.pos {
		return nil
	}
	return s.data[s.pos:s.next:s.next]
}

// Pos is the byte position of the current batch in data. After Next
// returns false it is where scanning stopped: len(data) at a clean end, the
// position of the bad batch otherwise, so data[:Pos()] holds only whole,
// valid batches.
func (s *Scanner) Pos() int64 { return int64(s.pos) }

// Err is the reason scanning stopped early, nil at a clean end.
func (s *Scanner) Err() error { return s.err }
