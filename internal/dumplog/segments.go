package dumplog

import (
	"context"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// objectPlace is where a stream object lies in its virtual segment.
type objectPlace struct {
	seg   *Segment
	pos   int64 // the byte position of the object's first byte in the segment
	first bool  // the segment's first object
}

// segments places the objects of chain (the objects a dump from from
// reads) in their virtual segments, as the broker's .log files held them:
// a sealed segment is its COMMITTED generation's objects back to back (the
// manifest lists them in order, with their sizes), the open segment the
// objects after the last generation. A segment's base offset (its file
// name, "Log starting offset") is the one replay gives it (state.Roll,
// state.applySegment): the previous generation's next_segment_base when it
// records one; the stream's first offset for the log's first segment; else
// its first batch's offset (filled in when the dump reads that batch, or
// read with one ranged GET of its header when the dump starts past the
// segment's first object).
//
// Only the generations from the one holding from to the newest are loaded
// (newest first, one manifest GET each), and the one before them, for its
// next_segment_base. An object the manifests do not place is left out of
// the map: its batches are shown without a segment.
func (s *CommittedSource) segments(ctx context.Context, from int64, chain []layout.StreamObject) (map[string]objectPlace, error) {
	places := map[string]objectPlace{}
	if len(chain) == 0 {
		return places, nil
	}
	gens, err := layout.ListGenerations(ctx, s.st, s.sid)
	if err != nil {
		return nil, fmt.Errorf("stream %s: list generations: %w", s.sid, err)
	}
	var newer []*layout.Generation // COMMITTED generations ending above from, newest first
	var pred *layout.Generation    // the newest one ending at or below from
	for i := len(gens) - 1; i >= 0; i-- {
		g, _, err := layout.LoadGeneration(ctx, s.st, s.sid, gens[i])
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", s.sid, err)
		}
		if g.Kind != layout.KindCommitted {
			continue
		}
		if g.End <= from {
			pred = g
			break
		}
		newer = append(newer, g)
	}
	firstOf := map[*Segment]string{}
	prev, lastEnd := pred, s.head.Start
	if pred != nil {
		lastEnd = pred.End
	}
	place := func(objs []layout.StreamObject) {
		if len(objs) == 0 {
			return
		}
		seg := &Segment{Dir: s.dir, Base: segmentBase(prev, objs[0].Base, s.head.Start)}
		firstOf[seg] = objs[0].Key
		var pos int64
		for i, o := range objs {
			places[o.Key] = objectPlace{seg: seg, pos: pos, first: i == 0}
			pos += o.Size
		}
	}
	for i := len(newer) - 1; i >= 0; i-- {
		g := newer[i]
		objs := make([]layout.StreamObject, len(g.Objects))
		for j, o := range g.Objects {
			objs[j] = layout.StreamObject{Key: o.Key, Base: o.Base, End: o.End, Size: o.Size}
		}
		place(objs)
		prev, lastEnd = g, g.End
	}
	if lastEnd < s.head.Head {
		open, err := stream.Chain(s.objs, lastEnd, s.head.Head)
		if err != nil {
			return nil, fmt.Errorf("stream %s: the open segment: %w", s.sid, err)
		}
		place(open)
	}
	// The segment the dump starts in may start at its first batch in an
	// object the dump does not read.
	if p, ok := places[chain[0].Key]; ok && p.seg.Base < 0 && !p.first {
		key := firstOf[p.seg]
		raw, err := s.st.Get(ctx, key, &store.Range{Offset: 0, Length: kafka.HeaderSize})
		if err != nil {
			return nil, fmt.Errorf("read the first batch header of %s: %w", key, err)
		}
		h, err := kafka.ParseHeader(raw)
		if err != nil {
			return nil, fmt.Errorf("read the first batch header of %s: %w", key, err)
		}
		p.seg.Base = h.BaseOffset
	}
	return places, nil
}

// segmentBase is the base offset replay gives the segment after prev
// (nil: no generation before it) whose first object starts at first, or
// -1 when it is its first batch's offset.
func segmentBase(prev *layout.Generation, first, streamStart int64) int64 {
	switch {
	case prev != nil && prev.NextSegmentBase != nil:
		return *prev.NextSegmentBase
	case prev == nil && first == streamStart:
		return streamStart // the log's first segment starts at the log's start
	}
	return -1
}
