package kafka

import (
	"errors"

	"github.com/nereusctl/nereusctl/internal/errkind"
)

// Sentinel errors. Every error returned by this package wraps one of them.
var (
	// ErrTruncated reports input that ends before the structure it starts:
	// a batch header claiming more bytes than remain (a torn write at the
	// end of a segment), or a file cut short.
	ErrTruncated = errors.New("truncated")

	// ErrZeroTail reports that the rest of a log byte stream is zero bytes:
	// a preallocated segment's unused tail. It is not corruption.
	ErrZeroTail = errors.New("zero-filled tail")

	// ErrCorrupt reports bytes that cannot be what they claim to be: a bad
	// magic, an impossible length or count, a record whose body disagrees
	// with its length, a broken compression stream, a CRC mismatch.
	ErrCorrupt = errkind.New(errkind.Corrupt, "corrupt")

	// ErrCRC reports a checksum mismatch. errors.Is(err, ErrCorrupt) is
	// also true for it.
	ErrCRC error = crcError{}

	// ErrTooLarge reports input beyond a [Limits] cap or beyond what the
	// format can represent (a decompression bomb, a batch over
	// MaxBatchBytes, more records than MaxRecords).
	ErrTooLarge = errors.New("too large")

	// ErrInvalidName reports a topic name or partition directory name that
	// breaks Kafka's naming rules.
	ErrInvalidName = errors.New("invalid name")
)

type crcError struct{}

func (crcError) Error() string { return "crc mismatch" }

// Kind makes a CRC mismatch corruption for errkind.
func (crcError) Kind() errkind.Kind { return errkind.Corrupt }

// Is makes a CRC mismatch count as corruption too.
func (crcError) Is(target error) bool { return target == ErrCorrupt }
