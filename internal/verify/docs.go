package verify

import (
	"context"
	"errors"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrMalformed marks a stored layout document (binding, head, generation
// manifest, quarantine record) whose bytes do not decode or validate: the
// store holds wrong bytes, which is corruption (exit 3), not an I/O
// failure. Errors wrap both ErrMalformed and the decode error.
var ErrMalformed = errors.New("stored document is malformed")

// ErrHeadRollback marks a stream head below what the stream holds (objects,
// generations or checkpoints above it): the head was rolled back, and
// what lies above it is data, not garbage.
var ErrHeadRollback = errors.New("stream head is below data the stream holds")

// IsMalformed reports whether err is a malformed stored document.
func IsMalformed(err error) bool { return errors.Is(err, ErrMalformed) }

// malformed marks err as ErrMalformed when it says the stored bytes are
// wrong: a document layout calls corrupt (its message names the key and
// the field, and is kept) or one over the size cap (no writer makes one).
// Anything else — an I/O failure, a missing key, a legacy document without
// a digest (its error says to run store upgrade) — is returned as it is.
func malformed(err error) error {
	switch {
	case errors.Is(err, layout.ErrLegacyDocument):
		return err
	case errors.Is(err, layout.ErrCorruptDocument), errors.Is(err, store.ErrTooLarge):
		return malformedError{err}
	}
	return err
}

// malformedError is ErrMalformed with the message of the error it wraps.
type malformedError struct{ err error }

func (e malformedError) Error() string        { return e.err.Error() }
func (e malformedError) Unwrap() error        { return e.err }
func (e malformedError) Is(target error) bool { return target == ErrMalformed }

// LoadBinding is layout.LoadBinding with stored bytes that do not decode
// (or name another partition) marked ErrMalformed.
func LoadBinding(ctx context.Context, st store.Store, tp layout.TopicPartition) (*layout.Binding, string, error) {
	b, etag, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		return nil, "", malformed(err)
	}
	return b, etag, nil
}

// LoadHead is layout.LoadHead with bytes that do not decode marked
// ErrMalformed.
func LoadHead(ctx context.Context, st store.Store, sid string) (*layout.Head, string, error) {
	h, etag, err := layout.LoadHead(ctx, st, sid)
	if err != nil {
		return nil, "", malformed(err)
	}
	return h, etag, nil
}

// LoadGeneration is layout.LoadGeneration (the manifest and the SHA-256 of
// its bytes) with bytes that do not decode marked ErrMalformed.
func LoadGeneration(ctx context.Context, st store.Store, sid string, gen int64) (*layout.Generation, string, error) {
	g, sum, err := layout.LoadGeneration(ctx, st, sid, gen)
	if err != nil {
		return nil, "", malformed(err)
	}
	return g, sum, nil
}
