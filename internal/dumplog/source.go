package dumplog

import (
	"context"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Batch is one stored batch as a Source hands it to the dump.
type Batch struct {
	Header kafka.BatchHeader
	// Raw is the whole batch, exactly as stored. It may alias the source's
	// buffer and is only valid during the callback.
	Raw []byte
	// Object names where the batch lives (a stream object key).
	Object string
	// Pos is the batch's byte position within Object.
	Pos int64
	// Segment is the virtual segment holding the batch (Kafka's .log file),
	// nil when the source does not know it; SegmentPos is the batch's byte
	// position within it, where kafka-dump-log's "position:" counts from
	// (DumpLogSegments.dumpLog: validBytes, the bytes of the file's
	// batches before it). A source hands the same *Segment for every batch
	// of one segment.
	Segment    *Segment
	SegmentPos int64
}

// Segment names a virtual segment: the partition's directory name and the
// segment's base offset, Kafka's .log file name.
type Segment struct {
	Dir  string // TOPIC-PARTITION, the broker's partition directory
	Base int64
}

// File is the segment's .log file as the broker names it:
// DIR/<base, 20 digits>.log (LogFileUtils.logFile).
func (s *Segment) File() string {
	return fmt.Sprintf("%s/%020d.log", s.Dir, s.Base)
}

// Source is where a dump reads batches from. It is the seam between "what
// the partition holds" and "how dump shows it": CommittedSource reads the
// stream's COMMITTED objects; a READ_COMMITTED view of a compacted topic
// (its compacted prefix followed by the COMMITTED tail) will be another
// Source, and Run will not change.
type Source interface {
	// Bounds returns the log start and the head: a dump shows [logStart, head).
	Bounds() (logStart, head int64)
	// Describe names the source for people, e.g. "COMMITTED objects of
	// stream s-…".
	Describe() string
	// Batches calls fn for every batch that ends at or after from, in
	// offset order, starting with the batch that contains from (or the
	// first one after it), up to the head. An error returned by fn stops
	// the walk and is returned as is.
	Batches(ctx context.Context, from int64, fn func(Batch) error) error
}

// CommittedSource reads a stream's COMMITTED data objects, header only,
// one object at a time: the chain of objects from the object holding the
// first wanted offset to the head (stream.Chain). It places each batch in
// its virtual segment (segments.go): a sealed segment is a COMMITTED
// generation's objects back to back, the open one the objects after the
// last generation, as the broker's .log files were.
type CommittedSource struct {
	st   store.Store
	sid  string
	dir  string
	head layout.Head
	objs []layout.StreamObject

	// ObjectsRead and BytesRead count what Batches fetched.
	ObjectsRead int
	BytesRead   int64
}

// OpenCommitted loads the head and the object listing of b's stream.
func OpenCommitted(ctx context.Context, st store.Store, b *layout.Binding) (*CommittedSource, error) {
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return nil, fmt.Errorf("dump %s: read head: %w", b.Name(), err)
	}
	// A head whose trim contradicts the binding would decide which records
	// the dump shows as live: refuse, as every read path does.
	if err := layout.CheckInvariants(b, h); err != nil {
		return nil, fmt.Errorf("dump %s: %w", b.Name(), err)
	}
	objs, err := layout.ListObjects(ctx, st, b.StreamID)
	if err != nil {
		return nil, fmt.Errorf("dump %s: list objects: %w", b.Name(), err)
	}
	return &CommittedSource{st: st, sid: b.StreamID, dir: b.Name(), head: *h, objs: objs}, nil
}

// Bounds is the durable trim (the log start) and the head.
func (s *CommittedSource) Bounds() (int64, int64) { return s.head.Trim, s.head.Head }

// Describe names the stream.
func (s *CommittedSource) Describe() string { return "COMMITTED objects of stream " + s.sid }

// Batches walks the chain of objects covering [from, head).
func (s *CommittedSource) Batches(ctx context.Context, from int64, fn func(Batch) error) error {
	if from >= s.head.Head {
		return nil
	}
	chain, err := stream.Chain(s.objs, from, s.head.Head)
	if err != nil {
		return fmt.Errorf("stream %s: %w", s.sid, err)
	}
	segs, err := s.segments(ctx, from, chain)
	if err != nil {
		return err
	}
	for _, o := range chain {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := stream.ReadObject(ctx, s.st, o)
		if err != nil {
			return err
		}
		s.ObjectsRead++
		s.BytesRead += int64(len(data))
		place, placed := segs[o.Key]
		err = stream.ScanObjectWith(o, data, stream.ScanOptions{Epochs: s.head.LeaderEpochs}, func(b stream.Batch) error {
			if placed && place.first && b.Pos == 0 && place.seg.Base < 0 {
				// The segment starts at its first batch (no recorded base).
				place.seg.Base = b.Header.BaseOffset
			}
			if b.Header.LastOffset() < from {
				return nil
			}
			bt := Batch{Header: b.Header, Raw: b.Raw, Object: o.Key, Pos: b.Pos}
			if placed {
				bt.Segment, bt.SegmentPos = place.seg, place.pos+b.Pos
			}
			return fn(bt)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// SourceFor picks the Source a dump of b reads. Today that is always the
// COMMITTED objects; note is non-empty when that is not what a
// READ_COMMITTED fetch would serve (a binding with compacted coverage),
// so the caller can say so.
func SourceFor(ctx context.Context, st store.Store, b *layout.Binding) (Source, string, error) {
	src, err := OpenCommitted(ctx, st, b)
	if err != nil {
		return nil, "", err
	}
	note := ""
	if b.Coverage.State != layout.CoverageNone {
		note = fmt.Sprintf("%s has %s compacted coverage [%d, %d); this dump shows the COMMITTED objects, not the compacted view a READ_COMMITTED fetch serves",
			b.Name(), b.Coverage.State, b.Coverage.Start, b.Coverage.End)
	}
	return src, note, nil
}
