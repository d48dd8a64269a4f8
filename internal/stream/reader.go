package stream

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrMissing is returned when no chain of objects covers a range: data the
// head promises is not in the store.
var ErrMissing = errors.New("stream data missing")

// ErrAmbiguous is returned when two different chains of objects reach the
// head: the stream cannot be read without a decision by an operator.
var ErrAmbiguous = errors.New("stream objects ambiguous")

// Chain returns the objects that cover [from, head) back to back, in order.
// Objects beyond the head and leftovers of failed appends are ignored. An
// object may start at from or, when from falls inside it, cover from.
func Chain(objs []layout.StreamObject, from, head int64) ([]layout.StreamObject, error) {
	if from >= head {
		return nil, nil
	}
	byBase := map[int64][]layout.StreamObject{}
	for _, o := range objs {
		if o.End <= head {
			byBase[o.Base] = append(byBase[o.Base], o)
		}
	}
	// Start: the object containing from.
	var starts []layout.StreamObject
	for _, o := range objs {
		if o.Base <= from && from < o.End && o.End <= head {
			starts = append(starts, o)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Base > starts[j].Base })
	var found [][]layout.StreamObject
	var walk func(path []layout.StreamObject, at int64)
	walk = func(path []layout.StreamObject, at int64) {
		if len(found) > 1 {
			return
		}
		if at == head {
			found = append(found, append([]layout.StreamObject(nil), path...))
			return
		}
		for _, o := range byBase[at] {
			walk(append(path, o), o.End)
		}
	}
	for _, s := range starts {
		walk([]layout.StreamObject{s}, s.End)
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w: no chain of objects covers [%d, %d)", ErrMissing, from, head)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%w: more than one chain of objects covers [%d, %d); leftover objects of a failed append must be removed by gc", ErrAmbiguous, from, head)
}

// FirstOffset returns the lowest offset from which the objects reach head
// back to back (the first retained offset of the stream), walking back from
// the head; head when nothing ends there. Where two objects end at the same
// offset the walk stops: Chain reports the ambiguity.
func FirstOffset(objs []layout.StreamObject, head int64) int64 {
	byEnd := map[int64][]layout.StreamObject{}
	for _, o := range objs {
		byEnd[o.End] = append(byEnd[o.End], o)
	}
	at := head
	for {
		prev := byEnd[at]
		if len(prev) != 1 {
			return at
		}
		at = prev[0].Base
	}
}

// Batch is one batch met while reading an object.
type Batch struct {
	Header kafka.BatchHeader
	Raw    []byte
	Object layout.StreamObject
	Pos    int64 // position within the object
}

// ReadObject GETs an object and checks its size against the listing.
func ReadObject(ctx context.Context, st store.Store, o layout.StreamObject) ([]byte, error) {
	return ReadObjectInto(ctx, st, o, nil)
}

// ReadObjectInto is ReadObject reading into buf (store.GetInto): the
// result may alias buf, for a caller reading objects one after another.
func ReadObjectInto(ctx context.Context, st store.Store, o layout.StreamObject, buf []byte) ([]byte, error) {
	data, err := store.GetInto(ctx, st, o.Key, buf)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", o.Key, err)
	}
	if o.Size > 0 && int64(len(data)) != o.Size {
		return nil, fmt.Errorf("read %s: %w: %d bytes, listed as %d", o.Key, kafka.ErrCorrupt, len(data), o.Size)
	}
	return data, nil
}

// ScanObject calls fn for every batch of an object's bytes, checking the
// batches against the object's key range.
func ScanObject(o layout.StreamObject, data []byte, verifyCRC bool, fn func(Batch) error) error {
	var sc *kafka.Scanner
	if verifyCRC {
		sc = kafka.NewScannerVerify(data)
	} else {
		sc = kafka.NewScanner(data)
	}
	next := o.Base
	for sc.Next() {
		h := sc.Header()
		if h.BaseOffset < next || h.LastOffset() >= o.End {
			return fmt.Errorf("scan %s at byte %d: %w: batch [%d, %d] outside the object's range [%d, %d) or out of order", o.Key, sc.Pos(), kafka.ErrCorrupt, h.BaseOffset, h.LastOffset(), next, o.End)
		}
		next = h.LastOffset() + 1
		if err := fn(Batch{Header: h, Raw: sc.Batch(), Object: o, Pos: sc.Pos()}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan %s: %w", o.Key, err)
	}
	if next != o.End {
		return fmt.Errorf("scan %s: %w: batches end at %d, the key says %d", o.Key, kafka.ErrCorrupt, next, o.End)
	}
	return nil
}
