// Package state owns the derived partition state a Kafka broker rebuilds from
// its log (docs/design.md §4): producer state entries, ongoing transactions, aborted
// ranges, the LSO, the leader-epoch cache, virtual segments and their sparse
// indexes; and the canonical encoding of that state and its state digest.
//
// The rules mirror Apache Kafka's recovery path with replication semantics
// (storage/.../log/ProducerStateManager.java, ProducerAppendInfo.java,
// ProducerStateEntry.java, LogSegment.recover, epoch/LeaderEpochFileCache.java).
// The package never touches a store: callers feed it batches in offset order.
package state

import (
	"errors"
	"fmt"
	"sort"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// NumBatchesToRetain is ProducerStateEntry.NUM_BATCHES_TO_RETAIN.
const NumBatchesToRetain = 5

// IndexIntervalBytes is Kafka's default index.interval.bytes.
const IndexIntervalBytes = 4096

// NoTimestamp is RecordBatch.NO_TIMESTAMP.
const NoTimestamp = -1

// BatchMeta is Kafka's BatchMetadata.
type BatchMeta struct {
	LastSeq     int32 `json:"last_sequence"`
	LastOffset  int64 `json:"last_offset"`
	OffsetDelta int32 `json:"offset_delta"`
	Timestamp   int64 `json:"timestamp"`
}

// Producer is Kafka's ProducerStateEntry.
type Producer struct {
	ID               int64       `json:"producer_id"`
	Epoch            int16       `json:"epoch"`
	CoordinatorEpoch int32       `json:"coordinator_epoch"`
	LastTimestamp    int64       `json:"last_timestamp"`
	TxnFirstOffset   int64       `json:"txn_first_offset"` // -1: no ongoing txn
	Batches          []BatchMeta `json:"batches"`
}

// LastSeq returns the last sequence (-1 when no batch is retained).
func (p *Producer) LastSeq() int32 {
	if n := len(p.Batches); n > 0 {
		return p.Batches[n-1].LastSeq
	}
	return -1
}

// LastOffset returns the last data offset (-1 when no batch is retained).
func (p *Producer) LastOffset() int64 {
	if n := len(p.Batches); n > 0 {
		return p.Batches[n-1].LastOffset
	}
	return -1
}

// LastOffsetDelta returns the last batch's offset delta (0 when none).
func (p *Producer) LastOffsetDelta() int32 {
	if n := len(p.Batches); n > 0 {
		return p.Batches[n-1].OffsetDelta
	}
	return 0
}

func (p *Producer) maybeUpdateEpoch(epoch int16) {
	if p.Epoch != epoch {
		p.Batches = p.Batches[:0]
		p.Epoch = epoch
	}
}

func (p *Producer) addBatch(epoch int16, lastSeq int32, lastOffset int64, offsetDelta int32, ts int64) {
	p.maybeUpdateEpoch(epoch)
	if len(p.Batches) == NumBatchesToRetain {
		p.Batches = append(p.Batches[:0], p.Batches[1:]...)
	}
	p.Batches = append(p.Batches, BatchMeta{LastSeq: lastSeq, LastOffset: lastOffset, OffsetDelta: offsetDelta, Timestamp: ts})
	p.LastTimestamp = ts
}

// Txn is an ongoing transaction.
type Txn struct {
	ProducerID  int64 `json:"producer_id"`
	FirstOffset int64 `json:"first_offset"`
}

// AbortedTxn is Kafka's AbortedTxn (a .txnindex entry).
type AbortedTxn struct {
	ProducerID       int64 `json:"producer_id"`
	FirstOffset      int64 `json:"first_offset"`
	LastOffset       int64 `json:"last_offset"`
	LastStableOffset int64 `json:"last_stable_offset"`
}

// EpochEntry is a leader-epoch cache entry.
type EpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// OffsetIndexEntry maps a batch's last offset to its position.
type OffsetIndexEntry struct {
	Offset     int64 `json:"offset"`
	Position   int64 `json:"position"`    // within the segment
	ObjectBase int64 `json:"object_base"` // the object holding the batch
	ObjectPos  int64 `json:"object_pos"`  // within that object
}

// TimeIndexEntry maps a max timestamp so far to its offset.
type TimeIndexEntry struct {
	Timestamp int64 `json:"timestamp"`
	Offset    int64 `json:"offset"`
}

// Segment is a virtual segment: [Base, End) with End = -1 while open.
type Segment struct {
	Base         int64              `json:"base"`
	End          int64              `json:"end"` // -1 while open
	Bytes        int64              `json:"bytes"`
	MaxTimestamp int64              `json:"max_timestamp"`
	OffsetOfMax  int64              `json:"offset_of_max_timestamp"`
	Gen          int64              `json:"gen"` // sealing COMMITTED generation, -1 while open
	LastIndexPos int64              `json:"last_index_position"`
	OffsetIndex  []OffsetIndexEntry `json:"offset_index"`
	TimeIndex    []TimeIndexEntry   `json:"time_index"`
}

// Open reports whether the segment is still open.
func (s *Segment) Open() bool { return s.End < 0 }

// Partition is the whole derived state of one partition at NextOffset.
type Partition struct {
	LogStart   int64
	NextOffset int64 // the map end offset: head == HW for a durable stream
	Producers  map[int64]*Producer
	// Ongoing transactions keyed by first offset (Kafka's ongoingTxns).
	Ongoing  map[int64]Txn
	Aborted  []AbortedTxn
	Epochs   []EpochEntry
	Segments []Segment
}

// New returns the empty state of a log that starts at start.
func New(start int64) *Partition {
	return &Partition{LogStart: start, NextOffset: start, Producers: map[int64]*Producer{}, Ongoing: map[int64]Txn{}}
}

// HW is the high watermark: every durable offset is replicated.
func (p *Partition) HW() int64 { return p.NextOffset }

// FirstUnstableOffset returns the first offset of the earliest ongoing
// transaction clamped to the log start, and false when there is none.
func (p *Partition) FirstUnstableOffset() (int64, bool) {
	first, ok := int64(0), false
	for off := range p.Ongoing {
		if !ok || off < first {
			first, ok = off, true
		}
	}
	if ok && first < p.LogStart {
		first = p.LogStart
	}
	return first, ok
}

// LSO is the last stable offset.
func (p *Partition) LSO() int64 {
	if f, ok := p.FirstUnstableOffset(); ok && f < p.HW() {
		return f
	}
	return p.HW()
}

// ErrOutOfOrder is returned for a batch that does not continue the log.
var ErrOutOfOrder = errors.New("batch out of order")

// Position says where a batch sits in the stream.
type Position struct {
	ObjectBase int64
	ObjectPos  int64
}

// Marker is the decoded control record of a control batch.
type Marker struct {
	Present          bool // false: the control batch had no records
	Type             kafka.ControlType
	CoordinatorEpoch int32
	Timestamp        int64
}

// Apply applies one batch (header, its size in bytes, and for control batches
// the decoded marker) at pos. Batches must come in offset order.
func (p *Partition) Apply(h kafka.BatchHeader, size int64, marker Marker, pos Position) error {
	if h.BaseOffset < p.NextOffset {
		return fmt.Errorf("%w: batch at %d, log already at %d", ErrOutOfOrder, h.BaseOffset, p.NextOffset)
	}
	if n := len(p.Segments); n > 0 && p.Segments[n-1].Open() && h.BaseOffset < p.Segments[n-1].Base {
		// Only a segment Roll opened can start above the log end: its
		// recorded base (a manifest's next_segment_base) must not lie
		// above its first batch.
		return fmt.Errorf("%w: batch at %d lies below %d, where its segment was rolled (the sealed segment before it records the next segment's base there)", kafka.ErrCorrupt, h.BaseOffset, p.Segments[n-1].Base)
	}
	if n := len(p.Segments); n > 0 && !p.Segments[n-1].Open() && h.BaseOffset < p.Segments[n-1].End {
		// Only an empty segment (AddEmptySegment) ends above the log end.
		return fmt.Errorf("%w: batch at %d lies inside the empty segment [%d, %d)", kafka.ErrCorrupt, h.BaseOffset, p.Segments[n-1].Base, p.Segments[n-1].End)
	}
	p.applySegment(h, size, pos)
	p.applyEpoch(h)
	if h.ProducerID >= 0 {
		p.applyProducer(h, marker)
	}
	p.NextOffset = h.LastOffset() + 1
	return nil
}

// applyEpoch is the recovery rule (LogSegment.recover): assign the batch's
// partitionLeaderEpoch at its base offset when it is newer than the latest.
func (p *Partition) applyEpoch(h kafka.BatchHeader) {
	e := h.PartitionLeaderEpoch
	if e < 0 {
		return
	}
	if n := len(p.Epochs); n > 0 && e <= p.Epochs[n-1].Epoch {
		return
	}
	p.AssignEpoch(e, h.BaseOffset)
}

// AssignEpoch is LeaderEpochFileCache.assign.
func (p *Partition) AssignEpoch(epoch int32, start int64) {
	if n := len(p.Epochs); n > 0 {
		last := p.Epochs[n-1]
		if epoch == last.Epoch && start >= last.StartOffset {
			return
		}
	}
	// maybeTruncateNonMonotonicEntries: remove trailing entries with
	// epoch >= new epoch or start >= new start.
	for n := len(p.Epochs); n > 0; n-- {
		last := p.Epochs[n-1]
		if last.Epoch >= epoch || last.StartOffset >= start {
			p.Epochs = p.Epochs[:n-1]
			continue
		}
		break
	}
	p.Epochs = append(p.Epochs, EpochEntry{Epoch: epoch, StartOffset: start})
}

// TruncateEpochsFromStart is LeaderEpochFileCache.truncateFromStart.
func (p *Partition) TruncateEpochsFromStart(start int64) {
	i := 0
	for i < len(p.Epochs) && p.Epochs[i].StartOffset <= start {
		i++
	}
	if i == 0 {
		return
	}
	last := p.Epochs[i-1]
	rest := append([]EpochEntry{{Epoch: last.Epoch, StartOffset: start}}, p.Epochs[i:]...)
	p.Epochs = rest
}

// TruncateEpochsFromEnd is LeaderEpochFileCache.truncateFromEnd.
func (p *Partition) TruncateEpochsFromEnd(end int64) {
	for n := len(p.Epochs); n > 0 && p.Epochs[n-1].StartOffset >= end; n-- {
		p.Epochs = p.Epochs[:n-1]
	}
}

// applyProducer is ProducerAppendInfo.append with replication semantics
// followed by ProducerStateManager.update and completeTxn, per batch as in
// LogSegment.updateProducerState.
func (p *Partition) applyProducer(h kafka.BatchHeader, m Marker) {
	pr := p.Producers[h.ProducerID]
	if pr == nil {
		pr = &Producer{ID: h.ProducerID, Epoch: -1, CoordinatorEpoch: -1, LastTimestamp: NoTimestamp, TxnFirstOffset: -1}
		p.Producers[h.ProducerID] = pr
	}
	if h.IsControl() {
		if !m.Present {
			// An empty control batch: the whole transaction was cleaned.
			return
		}
		if m.Type != kafka.ControlAbort && m.Type != kafka.ControlCommit {
			return
		}
		if pr.TxnFirstOffset >= 0 {
			first := pr.TxnFirstOffset
			if m.Type == kafka.ControlAbort {
				p.Aborted = append(p.Aborted, AbortedTxn{
					ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset,
					LastStableOffset: p.lastStableOffsetFor(h.ProducerID, h.BaseOffset),
				})
			}
			delete(p.Ongoing, first)
		}
		pr.maybeUpdateEpoch(h.ProducerEpoch)
		pr.TxnFirstOffset = -1
		pr.CoordinatorEpoch = m.CoordinatorEpoch
		pr.LastTimestamp = m.Timestamp
		return
	}
	pr.addBatch(h.ProducerEpoch, h.LastSequence(), h.LastOffset(), int32(h.LastOffset()-h.BaseOffset), h.MaxTimestamp)
	if h.IsTransactional() && pr.TxnFirstOffset < 0 {
		pr.TxnFirstOffset = h.BaseOffset
		p.Ongoing[h.BaseOffset] = Txn{ProducerID: h.ProducerID, FirstOffset: h.BaseOffset}
	}
}

// lastStableOffsetFor is ProducerStateManager.lastStableOffset: the first
// offset of the earliest ongoing transaction of another producer, else the
// marker offset + 1.
func (p *Partition) lastStableOffsetFor(pid, markerOffset int64) int64 {
	best, ok := int64(0), false
	for off, t := range p.Ongoing {
		if t.ProducerID != pid && (!ok || off < best) {
			best, ok = off, true
		}
	}
	if ok {
		return best
	}
	return markerOffset + 1
}

// applySegment adds the batch to the open segment and its indexes, as
// LogSegment.recover builds them.
func (p *Partition) applySegment(h kafka.BatchHeader, size int64, pos Position) {
	n := len(p.Segments)
	if n == 0 || !p.Segments[n-1].Open() {
		// A new segment starts at its first batch's base offset, as Kafka
		// rolls it (UnifiedLog.maybeRoll passes the first batch's offset,
		// LocalLog.roll takes max(it, log end)): after an offset gap it
		// does not start at the previous segment's end. The first segment
		// of a log starts at the log's start.
		base := h.BaseOffset
		if n == 0 {
			base = p.NextOffset
		}
		p.Segments = append(p.Segments, Segment{Base: base, End: -1, MaxTimestamp: NoTimestamp, OffsetOfMax: -1, Gen: -1})
		n++
	}
	s := &p.Segments[n-1]
	if h.MaxTimestamp > s.MaxTimestamp {
		s.MaxTimestamp, s.OffsetOfMax = h.MaxTimestamp, h.LastOffset()
	}
	if s.Bytes-s.LastIndexPos > IndexIntervalBytes {
		s.OffsetIndex = append(s.OffsetIndex, OffsetIndexEntry{Offset: h.LastOffset(), Position: s.Bytes, ObjectBase: pos.ObjectBase, ObjectPos: pos.ObjectPos})
		if k := len(s.TimeIndex); k == 0 || s.MaxTimestamp > s.TimeIndex[k-1].Timestamp {
			s.TimeIndex = append(s.TimeIndex, TimeIndexEntry{Timestamp: s.MaxTimestamp, Offset: s.OffsetOfMax})
		}
		s.LastIndexPos = s.Bytes
	}
	s.Bytes += size
}

// Seal closes the open segment at end (the next offset) as generation gen.
func (p *Partition) Seal(gen, end int64) error {
	n := len(p.Segments)
	if n == 0 || !p.Segments[n-1].Open() {
		return fmt.Errorf("seal generation %d at %d: no open segment", gen, end)
	}
	if end != p.NextOffset {
		return fmt.Errorf("seal generation %d at %d: log is at %d", gen, end, p.NextOffset)
	}
	s := &p.Segments[n-1]
	s.End = end
	s.Gen = gen
	s.appendFinalTimeIndexEntry()
	return nil
}

// Roll opens an empty segment at base, where Kafka rolled it: a segment's
// base offset is its .log file's name (LocalLog.roll creates the segment
// at its base offset before anything is appended to it; the log cleaner
// keeps the group's first base, LogCleaner.cleanSegments'
// segments.head.baseOffset, when it removes the first batches), which an
// imported segment's first batch may lie above. Without a Roll the next
// segment starts at its first batch (applySegment). base must lie at or
// above the log end, with no segment open; the first batch applied after
// it must not lie below it (Apply). Callers roll right after the Seal of
// a generation that records a next_segment_base.
func (p *Partition) Roll(base int64) error {
	if n := len(p.Segments); n > 0 && p.Segments[n-1].Open() {
		return fmt.Errorf("%w: roll a segment at %d: the segment at %d is still open", kafka.ErrCorrupt, base, p.Segments[n-1].Base)
	}
	if base < p.NextOffset {
		return fmt.Errorf("%w: roll a segment at %d: below the log end %d", kafka.ErrCorrupt, base, p.NextOffset)
	}
	if n := len(p.Segments); n > 0 && base < p.Segments[n-1].End {
		return fmt.Errorf("%w: roll a segment at %d: inside the segment [%d, %d)", kafka.ErrCorrupt, base, p.Segments[n-1].Base, p.Segments[n-1].End)
	}
	p.Segments = append(p.Segments, Segment{Base: base, End: -1, MaxTimestamp: NoTimestamp, OffsetOfMax: -1, Gen: -1})
	return nil
}

// AddEmptySegment appends a sealed segment [base, end) that holds no
// batch: a Kafka segment file the cleaner emptied, which is a segment of
// its own to retention (UnifiedLog.deleteRetentionMsBreachedSegments
// tests every segment in order and stops at the first it keeps) with the
// next segment's base as its upper bound. Its MaxTimestamp is the file's
// last-modified time, since LogSegment.largestTimestamp of a segment
// without a batch timestamp is lastModified(); its Gen is -1 (no
// generation holds it: the manifest of the segment before it records it,
// layout.Generation.EmptySegments); it has no index entries. base must lie
// at or above the log end and the last segment's end, with no segment
// open; the next batch must not lie below end (Apply).
func (p *Partition) AddEmptySegment(base, end, lastModifiedMs int64) error {
	n := len(p.Segments)
	switch {
	case n > 0 && p.Segments[n-1].Open():
		return fmt.Errorf("%w: empty segment at %d: the segment at %d is still open", kafka.ErrCorrupt, base, p.Segments[n-1].Base)
	case base < p.NextOffset:
		return fmt.Errorf("%w: empty segment at %d: below the log end %d", kafka.ErrCorrupt, base, p.NextOffset)
	case n > 0 && base < p.Segments[n-1].End:
		return fmt.Errorf("%w: empty segment at %d: inside the segment [%d, %d)", kafka.ErrCorrupt, base, p.Segments[n-1].Base, p.Segments[n-1].End)
	case end <= base:
		return fmt.Errorf("%w: empty segment [%d, %d) is reversed", kafka.ErrCorrupt, base, end)
	}
	p.Segments = append(p.Segments, Segment{Base: base, End: end, MaxTimestamp: lastModifiedMs, OffsetOfMax: -1, Gen: -1})
	return nil
}

// Empty reports whether s is a sealed segment without data
// (AddEmptySegment).
func (s *Segment) Empty() bool { return !s.Open() && s.Gen < 0 }

// appendFinalTimeIndexEntry is LogSegment.onBecomeInactiveSegment: a
// rolled segment appends its max timestamp and that timestamp's offset to
// the time index (TimeIndex.maybeAppend: only when above the last entry's
// timestamp; the empty index's last entry is NO_TIMESTAMP), so the largest
// timestamp survives a restart. Idempotent: a second call appends nothing.
func (s *Segment) appendFinalTimeIndexEntry() {
	last := int64(NoTimestamp)
	if k := len(s.TimeIndex); k > 0 {
		last = s.TimeIndex[k-1].Timestamp
	}
	if s.MaxTimestamp > last {
		s.TimeIndex = append(s.TimeIndex, TimeIndexEntry{Timestamp: s.MaxTimestamp, Offset: s.OffsetOfMax})
	}
}

// CompleteSealedTimeIndexes gives every sealed segment the final
// time-index entry Seal writes. A checkpoint made by a build before that
// rule holds sealed segments without it; hydrating one through this makes
// its state what a full replay derives today, so replay --compare does not
// report a mismatch that is only a change of rule. A no-op on state made
// under the rule.
func (p *Partition) CompleteSealedTimeIndexes() {
	for i := range p.Segments {
		if s := &p.Segments[i]; !s.Open() && !s.Empty() {
			s.appendFinalTimeIndexEntry()
		}
	}
}

// SealedEnd returns the end of the last sealed segment and its generation,
// or (-1, -1) when none is sealed; empty segments (AddEmptySegment), which
// no generation holds, are passed over.
func (p *Partition) SealedEnd() (end, gen int64) {
	for i := len(p.Segments) - 1; i >= 0; i-- {
		if !p.Segments[i].Open() && !p.Segments[i].Empty() {
			return p.Segments[i].End, p.Segments[i].Gen
		}
	}
	return -1, -1
}

// ApplyLogStart raises the log start to start (UnifiedLog.
// maybeIncrementLogStartOffset without its HW check, which the caller owns):
// epochs are truncated from the start, aborted ranges and sealed segments
// wholly below it are dropped. Producers are kept (KIP-360). It never lowers
// the log start.
func (p *Partition) ApplyLogStart(start int64) {
	if start <= p.LogStart {
		return
	}
	p.LogStart = start
	p.TruncateEpochsFromStart(start)
	kept := p.Aborted[:0]
	for _, a := range p.Aborted {
		if a.LastOffset >= start {
			kept = append(kept, a)
		}
	}
	p.Aborted = kept
	segs := p.Segments[:0]
	for _, s := range p.Segments {
		if s.Open() || s.End > start {
			segs = append(segs, s)
		}
	}
	p.Segments = segs
}

// SortedProducers returns the producers ordered by id.
func (p *Partition) SortedProducers() []*Producer {
	out := make([]*Producer, 0, len(p.Producers))
	for _, pr := range p.Producers {
		out = append(out, pr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SortedOngoing returns the ongoing transactions ordered by first offset.
func (p *Partition) SortedOngoing() []Txn {
	out := make([]Txn, 0, len(p.Ongoing))
	for _, t := range p.Ongoing {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out
}

// Clone returns a deep copy.
func (p *Partition) Clone() *Partition {
	q := &Partition{LogStart: p.LogStart, NextOffset: p.NextOffset, Producers: make(map[int64]*Producer, len(p.Producers)), Ongoing: make(map[int64]Txn, len(p.Ongoing))}
	for id, pr := range p.Producers {
		c := *pr
		c.Batches = append([]BatchMeta(nil), pr.Batches...)
		q.Producers[id] = &c
	}
	for k, v := range p.Ongoing {
		q.Ongoing[k] = v
	}
	q.Aborted = append([]AbortedTxn(nil), p.Aborted...)
	q.Epochs = append([]EpochEntry(nil), p.Epochs...)
	q.Segments = make([]Segment, len(p.Segments))
	for i, s := range p.Segments {
		s.OffsetIndex = append([]OffsetIndexEntry(nil), s.OffsetIndex...)
		s.TimeIndex = append([]TimeIndexEntry(nil), s.TimeIndex...)
		q.Segments[i] = s
	}
	return q
}

// OldRuleSegmentBases explains a difference between old, a state hydrated
// from a checkpoint whose segment bases were derived before the segment
// base rule (a build that started every segment after an offset gap at the
// previous segment's end), and cur, today's derivation of the same log (a
// full replay: a segment starts at its first batch, or where its Kafka
// .log file's name puts it, Roll). It returns cur's bases of the segments
// that differ, ascending, and true when the two states are equal once
// those bases are moved, each from the previous segment's end (or, for the
// first segment, whose predecessor a trim dropped, from below) up to
// cur's, within the segment. Any other difference, or none, is false: a
// mismatch it does not explain. The checkpoint's bases cannot be derived
// without reading the first batch of every segment it holds, so hydration
// keeps them: a log start they give lies below Kafka's by offsets that
// hold no record, never above (docs/kafka-retention-rules.md R4).
func OldRuleSegmentBases(old, cur *Partition) ([]int64, bool) {
	if len(old.Segments) != len(cur.Segments) {
		return nil, false
	}
	var moved []int64
	fixed := old.Clone()
	for i := range old.Segments {
		o, c := old.Segments[i], cur.Segments[i]
		if o.Base == c.Base {
			continue
		}
		end := c.End
		if c.Open() {
			end = cur.NextOffset
		}
		if o.Base > c.Base || c.Base > end || (i > 0 && o.Base != old.Segments[i-1].End) {
			return nil, false
		}
		fixed.Segments[i].Base = c.Base
		moved = append(moved, c.Base)
	}
	if len(moved) == 0 || Digest(fixed) != Digest(cur) {
		return nil, false
	}
	return moved, true
}
