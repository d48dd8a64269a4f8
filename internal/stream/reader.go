package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrMissing is returned when no chain of objects covers a range: data the
// head promises is not in the store.
var ErrMissing = errkind.New(errkind.Missing, "stream data missing")

// ErrAmbiguous is returned when two different chains of objects reach the
// head: the stream cannot be read without a decision by an operator.
var ErrAmbiguous = errkind.New(errkind.Corrupt, "stream objects ambiguous")

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

// MissingError reports data loss: offsets between the durable trim and the
// head that no object of the stream's chain holds. errors.Is(err,
// ErrMissing) is true for it.
type MissingError struct {
	// Ranges are the missing offsets, half-open [from, to), in order.
	Ranges     [][2]int64
	Trim, Head int64
}

func (e *MissingError) Error() string {
	var b strings.Builder
	for i, r := range e.Ranges {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "[%d, %d)", r[0], r[1])
	}
	return fmt.Sprintf("missing objects for offsets %s between the durable trim %d and the head %d", b.String(), e.Trim, e.Head)
}

// Is makes a MissingError count as ErrMissing.
func (e *MissingError) Is(target error) bool { return target == ErrMissing }

// Kind makes data loss missing data for errkind.
func (e *MissingError) Kind() errkind.Kind { return errkind.Missing }

// Missing returns the ranges of [from, head) that the stream's objects do
// not reach: walking back from the head object by object (each object must
// end where the next one starts), every offset where nothing ends opens a
// hole that reaches down to the highest end of an object below it (or to
// from). Objects beyond the head are ignored. Where two objects end at the
// same offset the walk stops (Chain reports the ambiguity), so the result
// may miss holes below an ambiguity but never reports one that is not.
func Missing(objs []layout.StreamObject, from, head int64) [][2]int64 {
	byEnd := map[int64][]layout.StreamObject{}
	var ends []int64
	for _, o := range objs {
		if o.End <= head && o.Base < o.End {
			if len(byEnd[o.End]) == 0 {
				ends = append(ends, o.End)
			}
			byEnd[o.End] = append(byEnd[o.End], o)
		}
	}
	slices.Sort(ends)
	var out [][2]int64
	for at := head; at > from; {
		switch prev := byEnd[at]; len(prev) {
		case 1:
			at = prev[0].Base
			continue
		case 0:
		default:
			return reversed(out)
		}
		// The hole reaches down to the highest end below it.
		lo := from
		if i, _ := slices.BinarySearch(ends, at); i > 0 {
			lo = max(lo, ends[i-1])
		}
		out = append(out, [2]int64{lo, at})
		at = lo
	}
	return reversed(out)
}

func reversed(rs [][2]int64) [][2]int64 {
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	return rs
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
// batches against the object's key range. With verifyCRC every batch's
// CRC-32C is checked before fn sees it. Inside a stored object every
// failure is corruption (kafka.ErrCorrupt): a batch that runs past the end
// of the object or a zero-filled rest are a damaged length or a torn
// object, not a torn write a reader may cut off as a broker's log recovery
// does for its own last segment.
func ScanObject(o layout.StreamObject, data []byte, verifyCRC bool, fn func(Batch) error) error {
	return ScanObjectWith(o, data, ScanOptions{VerifyCRC: verifyCRC}, fn)
}

// ScanOptions steer ScanObjectWith.
type ScanOptions struct {
	// VerifyCRC checks every batch's CRC-32C before fn sees it.
	VerifyCRC bool
	// Epochs is the stream head's leader-epoch record
	// (layout.Head.LeaderEpochs): every batch from its first mark on must
	// carry the partition leader epoch the record gives for its base
	// offset. The field lies outside the batch CRC and an open-segment
	// object is in no manifest, so without it a flipped leader epoch
	// there goes unseen. "" checks nothing.
	Epochs string
}

// ScanObjectWith is ScanObject with options: the CRC check, and the
// leader epochs against the head's record.
func ScanObjectWith(o layout.StreamObject, data []byte, opt ScanOptions, fn func(Batch) error) error {
	marks, err := layout.ParseLeaderEpochs(opt.Epochs)
	if err != nil {
		return fmt.Errorf("scan %s: the head's %w: %w", o.Key, err, kafka.ErrCorrupt)
	}
	inForce := -1 // the mark covering the batch, while batches come in order
	var sc *kafka.Scanner
	verifyCRC := opt.VerifyCRC
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
		if len(marks) > 0 && h.BaseOffset >= marks[0].Start {
			for inForce+1 < len(marks) && marks[inForce+1].Start <= h.BaseOffset {
				inForce++
			}
			if want := marks[inForce]; h.PartitionLeaderEpoch != want.Epoch {
				return fmt.Errorf("object %s: batch at offset %d (byte %d): %w: partition leader epoch %d, the stream head records epoch %d from offset %d (leader_epochs)",
					o.Key, h.BaseOffset, sc.Pos(), kafka.ErrCorrupt, h.PartitionLeaderEpoch, want.Epoch, want.Start)
			}
		}
		if err := fn(Batch{Header: h, Raw: sc.Batch(), Object: o, Pos: sc.Pos()}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return scanError(o, data, sc.Pos(), err)
	}
	if next != o.End {
		return fmt.Errorf("scan %s: %w: batches end at %d, the key says %d", o.Key, kafka.ErrCorrupt, next, o.End)
	}
	return nil
}

// scanError names the object, the batch and what is wrong with it; the
// result is always kafka.ErrCorrupt.
func scanError(o layout.StreamObject, data []byte, pos int64, err error) error {
	at := "at byte " + strconv.FormatInt(pos, 10)
	if rest := data[pos:]; len(rest) >= 8 {
		// baseOffset leads the batch; it is not covered by the CRC, so it
		// only names the batch for the operator, when it is in the
		// object's range (a zero-filled rest is not).
		if off := int64(binary.BigEndian.Uint64(rest)); off >= o.Base && off < o.End {
			at = fmt.Sprintf("at offset %d (byte %d)", off, pos)
		}
	}
	switch {
	case errors.Is(err, kafka.ErrCRC):
		return fmt.Errorf("object %s: batch %s: batch CRC mismatch: %w", o.Key, at, err)
	case errors.Is(err, kafka.ErrCorrupt):
		return fmt.Errorf("object %s: batch %s: %w", o.Key, at, err)
	}
	// ErrTruncated or ErrZeroTail: acceptable at the end of a broker's
	// segment file, never inside an object the stream committed.
	return fmt.Errorf("object %s: batch %s does not fit in the object's %d bytes (a damaged batch length or a torn object): %w: %w", o.Key, at, len(data), kafka.ErrCorrupt, err)
}
