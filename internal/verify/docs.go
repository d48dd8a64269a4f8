package verify

import (
	"context"
	"errors"
	"fmt"

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

// readDoc reads a document's bytes; a document over the size cap is
// malformed (no writer makes one), any other failure is returned as is.
func readDoc(ctx context.Context, st store.Store, key string) ([]byte, error) {
	data, err := store.GetCapped(ctx, st, key, layout.MaxDocumentBytes)
	if errors.Is(err, store.ErrTooLarge) {
		return nil, malformed(err)
	}
	return data, err
}

// malformed marks err as ErrMalformed. A document layout already calls
// corrupt keeps layout's message (it names the key and the field); a
// legacy document (no digest) is not malformed: its error says to run
// store upgrade, and stays as it is.
func malformed(err error) error {
	switch {
	case errors.Is(err, layout.ErrLegacyDocument):
		return err
	case errors.Is(err, layout.ErrCorruptDocument):
		return malformedError{err}
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}

// malformedError is ErrMalformed with the message of the error it wraps.
type malformedError struct{ err error }

func (e malformedError) Error() string        { return e.err.Error() }
func (e malformedError) Unwrap() error        { return e.err }
func (e malformedError) Is(target error) bool { return target == ErrMalformed }

// LoadBinding reads a binding like layout.LoadBinding, marking bytes that do
// not decode (or name another partition) as ErrMalformed.
func LoadBinding(ctx context.Context, st store.Store, tp layout.TopicPartition) (*layout.Binding, string, error) {
	key := layout.BindingKey(tp.Topic, tp.Partition)
	data, err := readDoc(ctx, st, key)
	if err != nil {
		return nil, "", err
	}
	var b layout.Binding
	if err := layout.Decode(key, data, &b); err != nil {
		return nil, "", malformed(err)
	}
	if b.Topic != tp.Topic || b.Partition != tp.Partition {
		return nil, "", malformed(fmt.Errorf("decode %s: names %s-%d", key, b.Topic, b.Partition))
	}
	return &b, store.ETagOf(data), nil
}

// LoadHead reads a stream head like layout.LoadHead, marking bytes that do
// not decode as ErrMalformed.
func LoadHead(ctx context.Context, st store.Store, sid string) (*layout.Head, string, error) {
	key := layout.HeadKey(sid)
	data, err := readDoc(ctx, st, key)
	if err != nil {
		return nil, "", err
	}
	var h layout.Head
	if err := layout.Decode(key, data, &h); err != nil {
		return nil, "", malformed(err)
	}
	if h.StreamID != sid {
		return nil, "", malformed(fmt.Errorf("decode %s: names stream %s", key, h.StreamID))
	}
	return &h, store.ETagOf(data), nil
}

// LoadGeneration reads a generation manifest like layout.LoadGeneration
// (returning the SHA-256 of its bytes), marking bytes that do not decode as
// ErrMalformed.
func LoadGeneration(ctx context.Context, st store.Store, sid string, gen int64) (*layout.Generation, string, error) {
	key := layout.GenerationKey(sid, gen)
	data, err := readDoc(ctx, st, key)
	if err != nil {
		return nil, "", err
	}
	var g layout.Generation
	if err := layout.Decode(key, data, &g); err != nil {
		return nil, "", malformed(err)
	}
	if g.StreamID != sid || g.Gen != gen {
		return nil, "", malformed(fmt.Errorf("decode %s: names stream %s generation %d", key, g.StreamID, g.Gen))
	}
	return &g, store.SHA256Of(data), nil
}
