// Package stream owns reading and appending a Nereus stream the way a broker
// does (docs/design.md §3): data objects written IfAbsent, the head advanced by CAS,
// virtual segments rolled by segment.bytes / segment.ms and sealed as
// COMMITTED generations; and the reader side that finds the chain of objects
// from an offset to the head and checks each object's batches.
//
// It never decides retention, compaction or checkpoints.
package stream

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC-32C of data.
func CRC32C(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }

// ErrFenced is returned when the head moved under the writer.
var ErrFenced = errors.New("stream head moved: writer fenced")

// Writer appends batches to one stream. It is not safe for concurrent use;
// concurrent writers are fenced by the head CAS.
type Writer struct {
	st       store.Store
	sid      string
	cfg      layout.TopicConfig
	head     layout.Head
	headETag string

	// The open segment.
	segBase  int64
	segBytes int64
	segFirst int64 // max timestamp of the first batch, -1 when empty
	segMaxTs int64
	segObjs  []layout.ObjectRef
	lastGen  int64
	// NowMs stamps sealed generations; demo and tests set it for determinism.
	NowMs func() int64
}

// CreateStream writes a new head (IfAbsent) for sid starting at start.
func CreateStream(ctx context.Context, st store.Store, sid string, start int64) error {
	h := layout.Head{StreamID: sid, Epoch: 1, Start: start, Head: start, Trim: start, Version: 1}
	if err := h.Validate(); err != nil {
		return err
	}
	_, err := layout.Create(ctx, st, layout.HeadKey(sid), &h)
	if err != nil {
		return fmt.Errorf("create stream %s: %w", sid, err)
	}
	return nil
}

// OpenWriter loads the head, the last sealed generation and the open
// segment's objects (their digests are re-read from the store).
func OpenWriter(ctx context.Context, st store.Store, sid string, cfg layout.TopicConfig) (*Writer, error) {
	h, etag, err := layout.LoadHead(ctx, st, sid)
	if err != nil {
		return nil, fmt.Errorf("open writer for stream %s: %w", sid, err)
	}
	w := &Writer{st: st, sid: sid, cfg: cfg, head: *h, headETag: etag, segFirst: -1, segMaxTs: -1, lastGen: -1, NowMs: func() int64 { return 0 }}
	gens, err := layout.ListGenerations(ctx, st, sid)
	if err != nil {
		return nil, err
	}
	w.segBase = h.Trim
	// The open segment starts at the end of the last COMMITTED generation.
	for i := len(gens) - 1; i >= 0; i-- {
		g, _, err := layout.LoadGeneration(ctx, st, sid, gens[i])
		if err != nil {
			return nil, err
		}
		if w.lastGen < 0 {
			w.lastGen = g.Gen
		}
		if g.Kind == layout.KindCommitted {
			w.segBase = g.End
			break
		}
	}
	if len(gens) > 0 && w.lastGen < gens[len(gens)-1] {
		w.lastGen = gens[len(gens)-1]
	}
	// A roll whose next append did not happen left the head's
	// leader-epoch record unpruned: prune it as the roll did (written
	// with the next append).
	w.head.LeaderEpochs = pruneEpochs(h.LeaderEpochs, w.segBase)
	objs, err := layout.ListObjects(ctx, st, sid)
	if err != nil {
		return nil, err
	}
	chain, err := Chain(objs, w.segBase, h.Head)
	if err != nil && w.segBase < h.Head {
		return nil, fmt.Errorf("open writer for stream %s: %w", sid, err)
	}
	for _, o := range chain {
		// These bytes go into the manifest the next roll seals: read them
		// like a replay does (size against the listing, every batch CRC).
		data, err := ReadObject(ctx, st, o)
		if err != nil {
			return nil, fmt.Errorf("open writer for stream %s: %w", sid, err)
		}
		ref, maxTs, firstTs, err := describeObject(o, data)
		if err != nil {
			return nil, fmt.Errorf("open writer for stream %s: %w", sid, err)
		}
		if w.segFirst < 0 {
			w.segFirst = firstTs
		}
		w.segMaxTs = max(w.segMaxTs, maxTs)
		w.segBytes += ref.Size
		w.segObjs = append(w.segObjs, ref)
	}
	return w, nil
}

// Next is the offset the next batch must start at (or above, for gaps).
func (w *Writer) Next() int64 { return w.head.Head }

// describeObject scans an object (every batch CRC checked) and returns its
// reference and timestamps.
func describeObject(o layout.StreamObject, data []byte) (layout.ObjectRef, int64, int64, error) {
	maxTs, firstTs := int64(-1), int64(-1)
	err := ScanObject(o, data, true, func(b Batch) error {
		if firstTs < 0 {
			firstTs = b.Header.MaxTimestamp
		}
		maxTs = max(maxTs, b.Header.MaxTimestamp)
		return nil
	})
	if err != nil {
		return layout.ObjectRef{}, 0, 0, err
	}
	return layout.ObjectRef{Key: o.Key, Base: o.Base, End: o.End, Size: int64(len(data)), ETag: store.ETagOf(data), CRC32C: CRC32C(data), SHA256: store.SHA256Of(data)}, maxTs, firstTs, nil
}

// Append writes batches (already carrying their final offsets, starting at
// or above Next) as one object, rolling the segment first when segment.bytes
// or segment.ms says so, then advances the head by CAS.
func (w *Writer) Append(ctx context.Context, batches [][]byte) error {
	if len(batches) == 0 {
		return nil
	}
	var data []byte
	next := w.head.Head
	firstTs, maxTs := int64(-1), int64(-1)
	for i, b := range batches {
		h, err := kafka.ParseHeader(b)
		if err != nil {
			return fmt.Errorf("append batch %d: %w", i, err)
		}
		if h.Size() != len(b) {
			return fmt.Errorf("append batch %d: header says %d bytes, have %d", i, h.Size(), len(b))
		}
		if h.BaseOffset < next {
			return fmt.Errorf("append batch %d: base offset %d below the next offset %d", i, h.BaseOffset, next)
		}
		next = h.LastOffset() + 1
		if firstTs < 0 {
			firstTs = h.MaxTimestamp
		}
		maxTs = max(maxTs, h.MaxTimestamp)
		data = append(data, b...)
	}
	if w.shouldRoll(int64(len(data)), maxTs) {
		if err := w.Roll(ctx); err != nil {
			return err
		}
	}
	key := layout.ObjectKey(w.sid, w.head.Head, next)
	info, err := w.st.Put(ctx, key, data, store.IfAbsent())
	if err != nil {
		return fmt.Errorf("append %s: %w", key, err)
	}
	nh := w.head
	nh.Head = next
	nh.Version++
	nh.LeaderEpochs = recordEpochs(w.head.LeaderEpochs, batches)
	if err := w.casHead(ctx, nh); err != nil {
		return err
	}
	if w.segFirst < 0 {
		w.segFirst = firstTs
	}
	w.segMaxTs = max(w.segMaxTs, maxTs)
	w.segBytes += int64(len(data))
	w.segObjs = append(w.segObjs, layout.ObjectRef{Key: key, Base: w.head.Head, End: next, Size: info.Size, ETag: store.ETagOf(data), CRC32C: CRC32C(data), SHA256: store.SHA256Of(data)})
	w.head = nh
	return nil
}

// casHead advances the head; a lost response whose write landed is
// recognised by re-reading the head.
func (w *Writer) casHead(ctx context.Context, nh layout.Head) error {
	info, err := layout.Replace(ctx, w.st, layout.HeadKey(w.sid), &nh, w.headETag)
	if err == nil {
		w.headETag = info.ETag
		return nil
	}
	cur, etag, lerr := layout.LoadHead(ctx, w.st, w.sid)
	if lerr == nil && *cur == nh {
		w.headETag = etag
		return nil
	}
	if errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("advance head of stream %s to %d: %w", w.sid, nh.Head, ErrFenced)
	}
	return fmt.Errorf("advance head of stream %s to %d: %w", w.sid, nh.Head, err)
}

func (w *Writer) shouldRoll(size, maxTs int64) bool {
	if len(w.segObjs) == 0 {
		return false
	}
	if w.segBytes+size > w.cfg.SegmentBytes {
		return true
	}
	return w.segFirst >= 0 && maxTs-w.segFirst > w.cfg.SegmentMs
}

// Roll seals the open segment as a COMMITTED generation (no-op when empty).
func (w *Writer) Roll(ctx context.Context) error {
	return w.RollAt(ctx, -1)
}

// RollAt is Roll that also records where the next segment starts
// (the manifest's next_segment_base) when next >= 0: import passes the
// next .log file's name when that file's first batch lies above it, the
// base Kafka gave that segment (docs/kafka-retention-rules.md R4). A
// broker's rolls pass nothing: its next segment starts at its first
// batch. next must lie at or above the head; the caller checks that it
// does not lie above the next segment's first batch.
func (w *Writer) RollAt(ctx context.Context, next int64) error {
	return w.RollWith(ctx, next, nil)
}

// RollWith is RollAt that also records the Kafka segments without batches
// that follow the sealed one (the manifest's empty_segments): import
// passes the .log files the cleaner emptied, each [its name, the next
// file's name) with its mtime. They must lie at or above the head and
// below next (when next >= 0).
func (w *Writer) RollWith(ctx context.Context, next int64, empties []layout.EmptySegment) error {
	if len(w.segObjs) == 0 {
		return nil
	}
	g := layout.Generation{
		StreamID: w.sid, Kind: layout.KindCommitted,
		Base: w.segBase, End: w.head.Head, Objects: w.segObjs, Sources: []layout.SourceRef{},
		MaxTimestamp: w.segMaxTs, CreatedMs: w.NowMs(),
	}
	if next >= 0 {
		g.NextSegmentBase = &next
	}
	if len(empties) > 0 {
		g.EmptySegments = append([]layout.EmptySegment(nil), empties...)
	}
	// The first object may start above the segment base after a trim or a
	// gap; the manifest covers the objects it lists.
	g.Base = w.segObjs[0].Base
	gen, err := PublishGeneration(ctx, w.st, &g, w.lastGen+1)
	if err != nil {
		return err
	}
	w.lastGen = gen
	w.segBase, w.segBytes, w.segFirst, w.segMaxTs, w.segObjs = w.head.Head, 0, -1, -1, nil
	// The sealed segment's bytes are in its manifest now (crc32c): the
	// head's leader-epoch record keeps only the mark in force at the new
	// segment's base. The head written with the next append carries it.
	w.head.LeaderEpochs = pruneEpochs(w.head.LeaderEpochs, w.head.Head)
	return nil
}

// recordEpochs is the head's leader-epoch record after batches are
// appended (layout.Head.LeaderEpochs): a mark wherever a batch's
// partition leader epoch differs from the one in force. A record that
// does not parse, or would pass layout.MaxLeaderEpochMarks marks, is
// dropped, and the next append starts a new one at its first batch (a
// reader checks from the first mark on: a record describes every batch
// from there, an absent one checks nothing, never wrongly).
func recordEpochs(rec string, batches [][]byte) string {
	marks, err := layout.ParseLeaderEpochs(rec)
	if err != nil {
		return ""
	}
	changed := false
	for _, b := range batches {
		h, err := kafka.ParseHeader(b)
		if err != nil {
			return "" // Append checked every header before
		}
		if n := len(marks); n > 0 && marks[n-1].Epoch == h.PartitionLeaderEpoch {
			continue
		}
		if len(marks) == layout.MaxLeaderEpochMarks {
			return ""
		}
		marks = append(marks, layout.LeaderEpochMark{Epoch: h.PartitionLeaderEpoch, Start: h.BaseOffset})
		changed = true
	}
	if !changed {
		return rec
	}
	return layout.FormatLeaderEpochs(marks)
}

// pruneEpochs keeps of a leader-epoch record the marks from the one in
// force at base on.
func pruneEpochs(rec string, base int64) string {
	marks, err := layout.ParseLeaderEpochs(rec)
	if err != nil || len(marks) == 0 {
		return ""
	}
	i := 0
	for i+1 < len(marks) && marks[i+1].Start <= base {
		i++
	}
	return layout.FormatLeaderEpochs(marks[i:])
}

// PublishGeneration writes g under the first free generation number at or
// above from (IfAbsent; a taken number moves on) and returns the number.
func PublishGeneration(ctx context.Context, st store.Store, g *layout.Generation, from int64) (int64, error) {
	for gen := max(from, 0); ; gen++ {
		g.Gen = gen
		if err := g.Validate(); err != nil {
			return 0, fmt.Errorf("publish generation %d: %w", gen, err)
		}
		_, err := layout.Create(ctx, st, layout.GenerationKey(g.StreamID, gen), g)
		if err == nil {
			return gen, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return 0, fmt.Errorf("publish generation %d of stream %s: %w", gen, g.StreamID, err)
		}
	}
}
