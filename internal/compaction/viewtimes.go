package compaction

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ViewTimes holds the largest row timestamps of a compacted view, per span
// of offsets, so that the largest timestamp of the rows in any range whose
// bounds are among the cuts it was read with can be answered without
// reading a row again.
//
// It is what Kafka's cleaned segment carries: LogCleaner.cleanInto appends
// only the retained batches to the cleaned segment (dest.append), whose
// largest timestamp (LogSegment.maxTimestampSoFar) is therefore the
// largest of the retained batches' maxTimestamp: for a rewritten batch
// MemoryRecordsBuilder's maxTimestamp over the retained records (the batch's
// append time under LOG_APPEND_TIME), for a batch kept whole its own.
type ViewTimes struct {
	spans []timeSpan // ascending, never overlapping, none across a cut
}

// timeSpan is a run of rows [first, last] whose largest timestamp is maxTS.
type timeSpan struct {
	first, last, maxTS int64
}

// MaxIn returns the largest timestamp of the view's rows with offsets in
// [from, to), and false when no such row has a timestamp >= 0 (Kafka's
// LogSegment.largestTimestamp then falls back to the file's mtime). from
// and to must each be a cut ReadViewTimes was given, or outside the view.
func (v *ViewTimes) MaxIn(from, to int64) (int64, bool) {
	best, ok := int64(-1), false
	i := sort.Search(len(v.spans), func(i int) bool { return v.spans[i].last >= from })
	for ; i < len(v.spans) && v.spans[i].first < to; i++ {
		if s := v.spans[i]; s.maxTS >= 0 && s.maxTS > best {
			best, ok = s.maxTS, true
		}
	}
	return best, ok
}

// ReadViewTimes reads the block index of every object of a compacted view
// (one ranged GET of its tail, a second one only when the footer and index
// are longer than ntc2.SuggestedTailRead) and, for each block whose rows
// span a cut (first < cut <= last), that block too (one ranged GET),
// decoding its rows to split its timestamps at the cut. Every tail and
// block read is checked (footer, index and block CRC-32C, the rows against
// the index); a failure is ErrViewCorrupt naming the object.
func ReadViewTimes(ctx context.Context, st store.Store, objs []layout.ObjectRef, cuts []int64) (*ViewTimes, error) {
	cuts = append([]int64(nil), cuts...)
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	v := &ViewTimes{}
	for _, o := range objs {
		ix, err := readTail(ctx, st, o)
		if err != nil {
			return nil, err
		}
		for i, b := range ix.Blocks() {
			// The first cut above the block's first row: the block is
			// split when that cut lies at or below its last row.
			c := sort.Search(len(cuts), func(k int) bool { return cuts[k] > b.FirstOffset })
			if c == len(cuts) || cuts[c] > b.LastOffset {
				v.spans = append(v.spans, timeSpan{b.FirstOffset, b.LastOffset, b.MaxTimestamp})
				continue
			}
			stored, err := st.Get(ctx, o.Key, &store.Range{Offset: b.Offset, Length: b.StoredLen})
			if err != nil {
				return nil, viewReadErr(o, fmt.Errorf("block %d: %w", i, err))
			}
			rows, err := ix.DecodeBlock(i, stored)
			if err != nil {
				return nil, viewReadErr(o, err)
			}
			for _, r := range rows {
				n := len(v.spans)
				// A new span at each row past a cut (or the block's first).
				if n == 0 || v.spans[n-1].last < b.FirstOffset || crosses(cuts, v.spans[n-1].first, r.Offset) {
					v.spans = append(v.spans, timeSpan{r.Offset, r.Offset, r.Timestamp})
					continue
				}
				s := &v.spans[n-1]
				s.last, s.maxTS = r.Offset, max(s.maxTS, r.Timestamp)
			}
		}
	}
	sort.Slice(v.spans, func(i, j int) bool { return v.spans[i].first < v.spans[j].first })
	return v, nil
}

// crosses reports a cut c with first < c <= off.
func crosses(cuts []int64, first, off int64) bool {
	c := sort.Search(len(cuts), func(k int) bool { return cuts[k] > first })
	return c < len(cuts) && cuts[c] <= off
}

// readTail reads and opens an NTC2 object's footer and block index.
func readTail(ctx context.Context, st store.Store, o layout.ObjectRef) (*ntc2.Index, error) {
	n := min(o.Size, int64(ntc2.SuggestedTailRead))
	for round := 0; ; round++ {
		tail, err := st.Get(ctx, o.Key, &store.Range{Offset: o.Size - n, Length: n})
		if err != nil {
			return nil, viewReadErr(o, err)
		}
		if int64(len(tail)) != n {
			return nil, viewReadErr(o, fmt.Errorf("a ranged read of its last %d bytes gave %d: the object is not the %d bytes its manifest recorded", n, len(tail), o.Size))
		}
		ix, err := ntc2.OpenTail(tail, o.Size)
		if err == nil {
			return ix, nil
		}
		if !errors.Is(err, ntc2.ErrShortTail) || round > 1 {
			return nil, viewReadErr(o, err)
		}
		need, err := ntc2.TailLen(tail)
		if err != nil {
			return nil, viewReadErr(o, err)
		}
		n = min(o.Size, int64(need))
	}
}

func viewReadErr(o layout.ObjectRef, err error) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, ntc2.ErrCorrupt) {
		return fmt.Errorf("%w: compacted object %s: %w", ErrViewCorrupt, o.Key, err)
	}
	return fmt.Errorf("read compacted object %s: %w", o.Key, err)
}
