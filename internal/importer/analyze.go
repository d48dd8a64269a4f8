package importer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sort"
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// maxGapsListed bounds the gaps a report lists; all are counted.
const maxGapsListed = 100

// plannedObject is one stream object the import writes: bytes
// [start, end) of its segment's kept bytes, keyed [base, next).
type plannedObject struct {
	start, end int
	base, next int64
	batches    int
}

// segPlan is what pass 1 learnt about one segment file.
type segPlan struct {
	file segmentFile
	// nextBase, when hasNext, is the next_segment_base this segment's
	// generation records: where Kafka's next segment starts (its .log
	// file's name) when that lies below the next segment's first batch.
	nextBase int64
	hasNext  bool
	// empties are the segments without a batch right after this one
	// (files the cleaner emptied), which its generation records
	// (empty_segments): each a segment of its own to Kafka's retention.
	empties []layout.EmptySegment
	// gen is the COMMITTED generation the segment becomes (-1: none, the
	// open segment or a segment without batches).
	gen  int64
	kept int    // bytes of the file kept after recovery
	sum  []byte // SHA-256 of the kept bytes
	// legacy: the segment holds legacy message sets, which are stored
	// up-converted (stored bytes in all, not the file's).
	legacy  bool
	stored  int
	maxTs   int64
	objects []plannedObject
	rep     *SegmentReport
}

// plan is the outcome of pass 1: everything needed to write, and the
// state a replay of the imported stream must reproduce.
type plan struct {
	segs     []segPlan
	start    int64 // the stream's first offset: the first segment's base
	dataEnd  int64 // next offset after the last kept batch
	kafkaEnd int64 // Kafka's log end offset: dataEnd, or an empty last segment's base
	digest   string
	part     *state.Partition
	// seedEpochs are the leader-epoch-checkpoint's entries the batches do
	// not give (mergeEpochFile); genesis is the genesis checkpoint's state
	// (snapshot.go, loaderState), nil when the stream needs none; objSHA
	// maps each object's end offset to its SHA-256 (write).
	seedEpochs []state.EpochEntry
	genesis    *genesisState
	objSHA     map[int64]string
	covered    []offRange // offsets held by batches, merged
	// carried: every leader epoch a batch carries (partitionLeaderEpoch
	// >= 0); batchEpochs the cache the batches alone give (before the
	// leader-epoch-checkpoint is merged in: importer.go).
	carried     map[int32]bool
	batchEpochs []state.EpochEntry
	// leading are the segments without a batch before the first one with
	// batches, and leadingRoll (-1: none) the first such segment's base
	// when it lies below its first batch: no manifest precedes them, so
	// the genesis checkpoint holds them (snapshot.go).
	leading     []layout.EmptySegment
	leadingRoll int64
	// points maps each offset the import may anchor its genesis at (every
	// producer snapshot's offset, the log start; cutsAt) to where Kafka's
	// log loader would start replaying from it: the base of the first
	// batch whose last offset is at or above it (LogSegment.read finds
	// the batch holding an offset), or the end of the data. An object
	// boundary lies there: the stream objects are cut at it.
	points map[int64]int64
}

// offRange is [from, to).
type offRange struct{ from, to int64 }

// analyze is pass 1: read every segment once, recover its tail like
// Kafka's log loader, check offsets across segments, plan the objects and
// derive the partition state the import must reproduce.
//
// With opt.Recover it recovers the way LogLoader.recoverLog does after an
// unclean shutdown: every segment from the one holding the recovery point
// on is read with LogSegment.recover, which truncates it at the first
// invalid batch (a CRC failure, a corrupt header, garbage, a torn batch);
// the first segment that loses bytes becomes the last, and every segment
// after it is deleted (removeAndDeleteSegmentsAsync). Every byte dropped
// is reported.
func analyze(segs []segmentFile, res *Result, opt Options, recoveryPoint int64, cuts []int64) (*plan, error) {
	p := &plan{start: segs[0].base, carried: map[int32]bool{}, leadingRoll: -1, points: map[int64]int64{}}
	p.part = state.New(p.start) // the batches' own state; the genesis (snapshot.go) comes later
	// One report per file, never moved: the plans keep pointers to them.
	res.Segments = make([]SegmentReport, 0, len(segs))
	expect := p.start
	digest := sha256.New()
	gen := int64(0)
	lim := kafka.DefaultLimits()
	truncated := ""
	var kept []segmentFile
	// cuts not yet met, ascending: the next object starts at the first
	// batch whose last offset reaches one (points).
	pending := slices.Clone(cuts)
	slices.Sort(pending)
	pending = slices.Compact(pending)
	// lastData is the plan of the last segment with batches (-1: none
	// yet); empty holds the segments without batches since then, which
	// become segments of their own once a batch follows them (Kafka's
	// retention tests each segment; trailing ones cannot be represented:
	// the stream head cannot pass the data).
	lastData := -1
	var empty []int
	for i, sf := range segs {
		if truncated != "" {
			// LogLoader.recoverLog: after a segment lost bytes, the rest
			// of the unflushed segments are deleted.
			zero := int64(0)
			res.Segments = append(res.Segments, SegmentReport{File: sf.name, BaseOffset: sf.base, Size: sf.size, DroppedBytes: sf.size, DropPosition: &zero, NextOffset: expect,
				DropReason: fmt.Sprintf("deleted whole: recovery truncated %s, and Kafka's log loader deletes every segment after the one it truncates", truncated)})
			continue
		}
		last := i == len(segs)-1
		// Kafka recovers the segments from the one holding the recovery
		// point on (segments.values(recoveryPoint, MAX)).
		recover := opt.Recover && (last || segs[i+1].base > recoveryPoint)
		if sf.base < expect {
			return nil, fmt.Errorf("segments overlap: %s holds offsets up to %d, but %s starts at %d: %w",
				segs[i-1].path, expect-1, sf.path, sf.base, kafka.ErrCorrupt)
		}
		data, err := readRegular(sf.path, opt.MaxSegmentBytes)
		if err != nil {
			return nil, err
		}
		res.Segments = append(res.Segments, SegmentReport{File: sf.name, BaseOffset: sf.base, Size: int64(len(data)), NextOffset: expect})
		rep := &res.Segments[len(res.Segments)-1]
		sp := segPlan{file: sf, maxTs: kafka.NoTimestamp, rep: rep, gen: -1}
		cur := plannedObject{base: expect}
		// Every entry as Kafka reads it (FileLogInputStream): a v2 batch as
		// it is, a legacy message set (magic 0 or 1) up-converted to the v2
		// batch holding what Kafka reads from it (kafka.LogScanner): the
		// stream stores v2 only (docs/formats/legacy.md). opos is the
		// position in the bytes stored, pos in the file.
		sc := kafka.NewLogScanner(data, lim)
		opos := 0
		for sc.Next() {
			h := sc.HeaderPtr()
			pos := int(sc.Pos())
			size := len(sc.Batch())
			if size > lim.MaxBatchBytes {
				return nil, fmt.Errorf("%s: batch at byte %d: %d bytes, more than the %d-byte cap: %w", sf.path, pos, size, lim.MaxBatchBytes, kafka.ErrTooLarge)
			}
			if sc.Legacy() {
				sp.legacy = true
				rep.LegacyBatches++
			}
			switch {
			case h.BaseOffset < sf.base:
				return nil, fmt.Errorf("%s: batch at byte %d starts at offset %d, below the segment's base offset %d: %w", sf.path, pos, h.BaseOffset, sf.base, kafka.ErrCorrupt)
			case h.BaseOffset < expect:
				return nil, fmt.Errorf("%s: batch at byte %d starts at offset %d, but offset %d was already written (non-consecutive offsets going back): %w", sf.path, pos, h.BaseOffset, expect-1, kafka.ErrCorrupt)
			case !last && h.LastOffset() >= segs[i+1].base:
				return nil, fmt.Errorf("segments overlap: %s: batch at byte %d ends at offset %d, at or above the next segment %s's base offset %d: %w",
					sf.path, pos, h.LastOffset(), segs[i+1].name, segs[i+1].base, kafka.ErrCorrupt)
			case h.BaseOffset > expect:
				where := "within"
				if rep.Batches == 0 {
					where = "before the first batch of"
				}
				res.GapsTotal++
				res.GapOffsets += h.BaseOffset - expect
				if len(res.Gaps) < maxGapsListed {
					res.Gaps = append(res.Gaps, Gap{From: expect, To: h.BaseOffset, File: sf.name, Where: where})
				}
			}
			cut := false
			for len(pending) > 0 && h.LastOffset() >= pending[0] {
				p.points[pending[0]] = h.BaseOffset
				pending = pending[1:]
				cut = true
			}
			if cur.batches > 0 && (cut || opos+size-cur.start > opt.ObjectBytes) {
				cur.end, cur.next = opos, expect
				sp.objects = append(sp.objects, cur)
				cur = plannedObject{start: opos, base: expect}
			}
			if rep.Batches == 0 {
				if err := p.openSegment(sf, h.BaseOffset, lastData, empty); err != nil {
					return nil, err
				}
				empty = nil
			}
			bt := stream.Batch{Header: *h, Raw: sc.Batch(), Object: layout.StreamObject{Key: sf.name, Base: cur.base}, Pos: int64(opos - cur.start)}
			if err := recovery.ApplyBatch(p.part, bt); err != nil {
				return nil, fmt.Errorf("%s: batch at byte %d: %w", sf.path, pos, err)
			}
			if e := h.PartitionLeaderEpoch; e >= 0 && !p.carried[e] {
				p.carried[e] = true
			}
			cur.batches++
			if rep.Batches == 0 {
				f := h.BaseOffset
				rep.FirstOffset = &f
			}
			rep.Batches++
			rep.Records += int64(h.RecordsCount)
			sp.maxTs = max(sp.maxTs, h.MaxTimestamp)
			if n := len(p.covered); n > 0 && p.covered[n-1].to == h.BaseOffset {
				p.covered[n-1].to = h.NextOffset()
			} else {
				p.covered = append(p.covered, offRange{h.BaseOffset, h.NextOffset()})
			}
			expect = h.NextOffset()
			opos += size
		}
		sp.kept, sp.stored = len(data), opos
		if err := sc.Err(); err != nil {
			pos := int(sc.Pos())
			if recover {
				if err := recoverInvalid(sf, data, pos, err, rep); err != nil {
					return nil, err
				}
				if !last {
					truncated = sf.name
					last = true
				}
			} else if err := recoverTail(sf, data, pos, err, last, rep, opt.Recover); err != nil {
				return nil, err
			}
			sp.kept = pos
		}
		kept = append(kept, sf)
		if cur.batches > 0 {
			cur.end, cur.next = sp.stored, expect
			sp.objects = append(sp.objects, cur)
		}
		keptBytes := data[:sp.kept]
		s := sha256.Sum256(keptBytes)
		sp.sum = s[:]
		writeDigest(digest, sf.base, len(keptBytes), sp.sum)
		rep.Bytes = int64(sp.kept)
		rep.StoredBytes = int64(sp.stored)
		rep.NextOffset = expect
		rep.Objects = len(sp.objects)
		if rep.Batches > 0 && sp.maxTs < 0 {
			// LogSegment.largestTimestamp: no batch timestamp, so Kafka
			// measures retention.ms and min.compaction.lag.ms from the
			// file's last-modified time.
			if last {
				res.Notes = append(res.Notes, fmt.Sprintf("%s: no batch carries a timestamp; Kafka measures its age by the file's modification time %s, and so does retention while the open segment holds only what the import wrote (the binding records it: import.open_segment)", sf.name, time.UnixMilli(sf.mtimeMs).UTC().Format(time.RFC3339)))
			} else {
				res.Notes = append(res.Notes, fmt.Sprintf("%s: no batch carries a timestamp; its seal time is the file's modification time %s (LogSegment.largestTimestamp)", sf.name, time.UnixMilli(sf.mtimeMs).UTC().Format(time.RFC3339)))
			}
		}
		switch {
		case last:
		case len(sp.objects) == 0:
			empty = append(empty, len(p.segs))
		default:
			sp.gen = gen
			g := gen
			rep.Generation = &g
			if err := p.part.Seal(gen, expect); err != nil {
				return nil, fmt.Errorf("%s: %w", sf.path, err)
			}
			gen++
			lastData = len(p.segs)
		}
		p.segs = append(p.segs, sp)
	}
	for _, i := range empty {
		res.Notes = append(res.Notes, fmt.Sprintf("%s holds no batches and no batch follows it: it is not imported (Kafka's segment [%d, %d) lies above the end of the data %d, which the stream head cannot pass)",
			p.segs[i].file.name, p.segs[i].file.base, kept[i+1].base, expect))
	}
	for _, c := range pending {
		p.points[c] = expect
	}
	p.dataEnd = expect
	p.kafkaEnd = max(expect, kept[len(kept)-1].base)
	p.digest = hex.EncodeToString(digest.Sum(nil))
	return p, nil
}

// openSegment is called at the first batch (at offset first) of segment
// file sf: the segments without batches since the last segment with
// batches (empty, indexes into p.segs) become segments of their own, each
// [its name, the next file's name) aged by its file's mtime (Kafka's
// LogSegment.largestTimestamp of an empty segment), recorded in the
// manifest of the segment before them (or the genesis, for those before
// any batch); then, when sf's name lies below its first batch, the segment
// opens there (state.Roll: Kafka's segment base is the file name, also
// after the cleaner removed its first batches, LogCleaner.cleanSegments'
// segments.head.baseOffset), recorded as next_segment_base. The first
// segment of the stream starts at the stream's first offset.
func (p *plan) openSegment(sf segmentFile, first int64, lastData int, empty []int) error {
	var es []layout.EmptySegment
	for _, i := range empty {
		e := layout.EmptySegment{Base: p.segs[i].file.base, LastModifiedMs: p.segs[i].file.mtimeMs}
		if i+1 < len(p.segs) {
			e.End = p.segs[i+1].file.base
		} else {
			e.End = sf.base
		}
		if err := p.part.AddEmptySegment(e.Base, e.End, e.LastModifiedMs); err != nil {
			return fmt.Errorf("%s: %w", p.segs[i].file.path, err)
		}
		end := e.End
		p.segs[i].rep.EmptySegmentEnd = &end
		es = append(es, e)
	}
	if lastData < 0 && len(empty) == 0 {
		return nil // the stream's first segment: it starts at the first offset
	}
	if lastData >= 0 {
		p.segs[lastData].empties = es
	} else {
		p.leading = es
	}
	if sf.base < first {
		if err := p.part.Roll(sf.base); err != nil {
			return fmt.Errorf("%s: %w", sf.path, err)
		}
		if lastData >= 0 {
			p.segs[lastData].nextBase, p.segs[lastData].hasNext = sf.base, true
		} else {
			p.leadingRoll = sf.base
		}
	}
	return nil
}

// recoverTail decides what a scan that stopped at pos means, as Kafka's
// log loader does for the segment being recovered: in the last segment a
// torn batch (its header claims more bytes than the file holds) and a
// zero-filled preallocated tail end the log there, and the bytes after pos
// are dropped and reported. Anything else, and any torn or zero tail in a
// segment that is not the last, is corruption.
func recoverTail(sf segmentFile, data []byte, pos int, scanErr error, last bool, rep *SegmentReport, recovering bool) error {
	rest := data[pos:]
	torn := errors.Is(scanErr, kafka.ErrTruncated)
	zero := errors.Is(scanErr, kafka.ErrZeroTail)
	flushed := ""
	if recovering {
		// --recover was given, but the segment lies below the recovery
		// point: Kafka flushed it and never recovers it.
		flushed = "; the segment lies below the broker's recovery point (recovery-point-offset-checkpoint), so Kafka's recovery would not touch it either"
	}
	switch {
	case errors.Is(scanErr, kafka.ErrLegacyUnreadable):
		// Kafka's recovery keeps it (the wrapper's CRC passes): not a
		// defect --recover may drop.
		return fmt.Errorf("%s: byte %d: %w; Kafka keeps this message set in the log (its CRC passes) but cannot read it either, so it cannot be imported", sf.path, pos, scanErr)
	case errors.Is(scanErr, kafka.ErrCRC):
		return fmt.Errorf("%s: batch at byte %d fails its CRC (%w); Kafka's recovery would truncate the segment there and lose every batch after it, so the import stops instead%s: %w",
			sf.path, pos, scanErr, flushed, ErrNeedsRecovery)
	case (torn || zero) && !last:
		return fmt.Errorf("%s: %s at byte %d, but %s is not the last segment (%w)%s: %w: %w",
			sf.path, tailKind(zero), pos, sf.name, scanErr, flushed, kafka.ErrCorrupt, ErrNeedsRecovery)
	case torn:
		rep.DroppedBytes = int64(len(rest))
		p := int64(pos)
		rep.DropPosition = &p
		if len(rest) >= kafka.LogOverhead {
			rep.DropReason = fmt.Sprintf("torn write: the batch at byte %d claims %d bytes, the file holds %d",
				pos, kafka.LogOverhead+int64(binary.BigEndian.Uint32(rest[8:12])), len(rest))
		} else {
			rep.DropReason = fmt.Sprintf("torn write: %d bytes at byte %d, less than a batch's %d-byte offset and length", len(rest), pos, kafka.LogOverhead)
		}
		return nil
	case zero:
		rep.DroppedBytes = int64(len(rest))
		p := int64(pos)
		rep.DropPosition = &p
		rep.DropReason = fmt.Sprintf("zero-filled preallocated tail (log.preallocate): %d zero bytes from byte %d", len(rest), pos)
		return nil
	}
	return fmt.Errorf("%s: %w%s: %w", sf.path, scanErr, flushed, ErrNeedsRecovery)
}

// recoverInvalid is LogSegment.recover for a segment whose scan stopped at
// pos: batch.ensureValid (CRC, header) throws, or the batch iterator ends
// at a torn batch, and log.truncateTo(validBytes) drops everything from
// pos on. The drop is reported with its reason.
func recoverInvalid(sf segmentFile, data []byte, pos int, scanErr error, rep *SegmentReport) error {
	if errors.Is(scanErr, kafka.ErrLegacyUnreadable) {
		// Valid to Kafka's recovery (LogSegment.recover checks the
		// wrapper's CRC): it never truncates there, and neither does
		// --recover.
		return recoverTail(sf, data, pos, scanErr, true, rep, false)
	}
	if !errors.Is(scanErr, kafka.ErrCorrupt) && !errors.Is(scanErr, kafka.ErrTruncated) && !errors.Is(scanErr, kafka.ErrZeroTail) {
		return fmt.Errorf("%s: %w", sf.path, scanErr)
	}
	if err := recoverTail(sf, data, pos, scanErr, true, rep, false); err == nil {
		return nil // torn or zero tail: reported
	}
	rest := data[pos:]
	rep.DroppedBytes = int64(len(rest))
	p := int64(pos)
	rep.DropPosition = &p
	what := "an invalid batch"
	if errors.Is(scanErr, kafka.ErrCRC) {
		what = "a batch failing its CRC"
	}
	rep.DropReason = fmt.Sprintf("recovered (--recover): %s at byte %d (%v); LogSegment.recover truncates the segment there, %d bytes", what, pos, errors.Unwrap(scanErr), len(rest))
	return nil
}

func tailKind(zero bool) string {
	if zero {
		return "a zero-filled tail"
	}
	return "a torn batch"
}

// writeDigest adds one segment to the import digest: its base offset and
// kept length (8 bytes each, big-endian), then the SHA-256 of the kept
// bytes.
func writeDigest(h hash.Hash, base int64, kept int, sum []byte) {
	var hdr [16]byte
	binary.BigEndian.PutUint64(hdr[:8], uint64(base))
	binary.BigEndian.PutUint64(hdr[8:], uint64(kept))
	h.Write(hdr[:])
	h.Write(sum)
}

// StreamID derives the stream id of an import: "s-" and 16 hex digits of
// SHA-256("nereus-import/v1", topic, partition, digest of the imported
// bytes). The same bytes of the same partition always give the same id, so
// an interrupted import resumes into its own stream.
func StreamID(topic string, partition int32, digest string) string {
	h := sha256.New()
	fmt.Fprintf(h, "nereus-import/v1\x00%s\x00%d\x00%s", topic, partition, digest)
	return "s-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// coveredIn reports whether any batch holds an offset in [from, to);
// covered is sorted and merged.
func coveredIn(covered []offRange, from, to int64) bool {
	if from >= to {
		return false
	}
	i := sort.Search(len(covered), func(i int) bool { return covered[i].to > from })
	return i < len(covered) && covered[i].from < to
}
