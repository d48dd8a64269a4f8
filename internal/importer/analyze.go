package importer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
	kept     int    // bytes kept after recovery
	sum      []byte // SHA-256 of the kept bytes
	maxTs    int64
	objects  []plannedObject
	rep      *SegmentReport
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
	hyd      *hydration // the producer snapshot, nil when none
	covered  []offRange // offsets held by batches, merged
	// carried: every leader epoch a batch carries (partitionLeaderEpoch
	// >= 0); batchEpochs the cache the batches alone give (before the
	// leader-epoch-checkpoint is merged in: importer.go).
	carried     map[int32]bool
	batchEpochs []state.EpochEntry
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
func analyze(segs []segmentFile, res *Result, opt Options, recoveryPoint int64) (*plan, error) {
	p := &plan{start: segs[0].base, carried: map[int32]bool{}}
	p.part = opt.hyd.seed(p.start) // the producer snapshot's state, if any (snapshot.go)
	expect := p.start
	digest := sha256.New()
	gen := int64(0)
	lim := kafka.DefaultLimits()
	truncated := ""
	var kept []segmentFile
	// After a segment is sealed, rollAt is the name of the file that
	// follows it (Kafka's base of the next segment) and sealedIdx its
	// plan; the next batch opens the next segment, at rollAt when that
	// lies below the batch (-1: no segment sealed since the last batch).
	rollAt, sealedIdx := int64(-1), -1
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
		sp := segPlan{file: sf, maxTs: kafka.NoTimestamp, rep: rep}
		cur := plannedObject{base: expect}
		sc := kafka.NewScannerVerify(data)
		for sc.Next() {
			h := sc.HeaderPtr()
			pos := int(sc.Pos())
			size := h.Size()
			if size > lim.MaxBatchBytes {
				return nil, fmt.Errorf("%s: batch at byte %d: %d bytes, more than the %d-byte cap: %w", sf.path, pos, size, lim.MaxBatchBytes, kafka.ErrTooLarge)
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
			if cur.batches > 0 && pos+size-cur.start > opt.ObjectBytes {
				cur.end, cur.next = pos, expect
				sp.objects = append(sp.objects, cur)
				cur = plannedObject{start: pos, base: expect}
			}
			if rollAt >= 0 {
				// Kafka's segment base is the file name (LocalLog.roll;
				// the cleaner keeps a group's first base,
				// LogCleaner.cleanSegments' segments.head.baseOffset):
				// when the cleaner removed the file's first batches, the
				// segment still starts at its name, and the generation
				// before it records that (next_segment_base).
				if rollAt < h.BaseOffset {
					if err := p.part.Roll(rollAt); err != nil {
						return nil, fmt.Errorf("%s: %w", sf.path, err)
					}
					p.segs[sealedIdx].nextBase, p.segs[sealedIdx].hasNext = rollAt, true
				}
				rollAt = -1
			}
			bt := stream.Batch{Header: *h, Raw: sc.Batch(), Object: layout.StreamObject{Key: sf.name, Base: cur.base}, Pos: int64(pos - cur.start)}
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
		}
		sp.kept = len(data)
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
			cur.end, cur.next = sp.kept, expect
			sp.objects = append(sp.objects, cur)
		}
		kept := data[:sp.kept]
		s := sha256.Sum256(kept)
		sp.sum = s[:]
		writeDigest(digest, sf.base, len(kept), sp.sum)
		rep.Bytes = int64(sp.kept)
		rep.NextOffset = expect
		rep.Objects = len(sp.objects)
		if rep.Batches > 0 && sp.maxTs < 0 {
			// LogSegment.largestTimestamp: no batch timestamp, so Kafka
			// measures retention.ms and min.compaction.lag.ms from the
			// file's last-modified time.
			if last {
				res.Notes = append(res.Notes, fmt.Sprintf("%s: no batch carries a timestamp; Kafka measures its age by the file's modification time, nereusctl by the write time of the open segment's newest object (the import, which is later: never earlier deletion)", sf.name))
			} else {
				res.Notes = append(res.Notes, fmt.Sprintf("%s: no batch carries a timestamp; its seal time is the file's modification time %s (LogSegment.largestTimestamp)", sf.name, time.UnixMilli(sf.mtimeMs).UTC().Format(time.RFC3339)))
			}
		}
		switch {
		case last:
		case len(sp.objects) == 0:
			res.Notes = append(res.Notes, fmt.Sprintf("%s holds no batches: it becomes no generation", sf.name))
		default:
			g := gen
			rep.Generation = &g
			if err := p.part.Seal(gen, expect); err != nil {
				return nil, fmt.Errorf("%s: %w", sf.path, err)
			}
			gen++
			rollAt, sealedIdx = segs[i+1].base, len(p.segs)
		}
		p.segs = append(p.segs, sp)
	}
	p.dataEnd = expect
	p.kafkaEnd = max(expect, kept[len(kept)-1].base)
	p.digest = hex.EncodeToString(digest.Sum(nil))
	return p, nil
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
