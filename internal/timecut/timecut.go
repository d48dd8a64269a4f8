// Package timecut owns the offset a time answers, as Kafka's ListOffsets
// by timestamp does (UnifiedLog.fetchOffsetByTimestamp: the first segment
// whose largest timestamp is at or after the target, then
// LogSegment.findOffsetByTimestamp / FileRecords.searchForTimestamp: the
// first batch whose max timestamp is at or after it, and in it the first
// record whose timestamp is) — the earliest offset whose timestamp is at
// or after TIME — and the preflight of a trim to that offset: the records
// whose timestamps are out of order around the cut.
//
// It reads a stream's COMMITTED objects from the log start to the HW and
// never writes. Every batch's CRC is checked before its records are used.
package timecut

import (
	"context"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Cut is the offset a time answers and what a trim to it would do.
type Cut struct {
	// TimeMs is the target time (ms since the epoch).
	TimeMs int64 `json:"time_ms"`
	// Offset is the earliest offset in [log start, HW) whose record
	// timestamp is at or after TimeMs; the HW when no record is (every
	// record is older: ListOffsets would answer no offset, and a trim
	// before the time removes them all).
	Offset int64 `json:"offset"`
	// Found is false when no record is at or after TimeMs.
	Found bool `json:"found"`
	// Timestamp is the timestamp of the record at Offset (null when not
	// Found).
	Timestamp *int64 `json:"timestamp"`
	// Preflight is what a trim to Offset deletes and keeps, by timestamp.
	Preflight Preflight `json:"preflight"`
	// ObjectsRead and BytesRead are what the search read.
	ObjectsRead int   `json:"objects_read"`
	BytesRead   int64 `json:"bytes_read"`
}

// Preflight reports the records whose timestamps are out of order around
// the cut: a producer's clock skew makes a time-based trim delete more
// or keep more than the time says.
type Preflight struct {
	// Deleted counts the records (offsets) below the cut, from the log
	// start: all older than the time, by Kafka's rule; NewestDeleted is
	// the newest timestamp among them (null when none).
	Deleted       int64  `json:"deleted"`
	NewestDeleted *int64 `json:"newest_deleted_timestamp"`
	// KeptOlder counts the records at or above the cut whose timestamp is
	// older than the time: kept, although older (out of order);
	// FirstKeptOlder and LastKeptOlder are the first and last such
	// offsets, OldestKept the oldest such timestamp (null when none).
	KeptOlder      int64  `json:"kept_older"`
	FirstKeptOlder *int64 `json:"first_kept_older_offset"`
	LastKeptOlder  *int64 `json:"last_kept_older_offset"`
	OldestKept     *int64 `json:"oldest_kept_older_timestamp"`
	// NewerBeforeLastOlder counts the records in [cut, last kept older]
	// whose timestamp is at or after the time: what a cut placed after the
	// last older record (instead of Kafka's) would delete although newer.
	NewerBeforeLastOlder int64 `json:"newer_before_last_older"`
	// OutOfOrder is true when KeptOlder > 0.
	OutOfOrder bool `json:"out_of_order"`
}

// Find answers the earliest offset in [logStart, hw) of b's stream whose
// timestamp is at or after timeMs, reading the COMMITTED objects from the
// log start to hw (the object holding the log start first), and counts
// the preflight over the same range.
func Find(ctx context.Context, st store.Store, b *layout.Binding, logStart, hw, timeMs int64) (*Cut, error) {
	c := &Cut{TimeMs: timeMs, Offset: hw}
	if logStart >= hw {
		return c, nil
	}
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return nil, fmt.Errorf("time cut %s: %w", b.Name(), err)
	}
	objs, err := layout.ListObjects(ctx, st, b.StreamID)
	if err != nil {
		return nil, fmt.Errorf("time cut %s: list objects: %w", b.Name(), err)
	}
	chain, err := stream.Chain(objs, logStart, hw)
	if err != nil {
		return nil, fmt.Errorf("time cut %s: %w", b.Name(), err)
	}
	p := &c.Preflight
	// In offset order, the records of [logStart, hw) with their
	// timestamps: before the cut is found every one is older (else it
	// would be the cut); after it, the older ones are kept out of order.
	// The records newer than the time between the cut and the last older
	// one are counted as they come and settled when a later older one
	// shows they lie before it.
	var pendingNewer int64
	err = stream.ReadChain(ctx, st, chain, func(o layout.StreamObject, data []byte) error {
		c.ObjectsRead++
		c.BytesRead += int64(len(data))
		return stream.ScanObjectWith(o, data, stream.ScanOptions{VerifyCRC: true, Epochs: h.LeaderEpochs}, func(sb stream.Batch) error {
			if sb.Header.LastOffset() < logStart || sb.Header.BaseOffset >= hw {
				return nil
			}
			bt, err := kafka.DecodeBatch(sb.Raw, kafka.DefaultLimits())
			if err != nil {
				return fmt.Errorf("object %s: batch at offset %d: %w", o.Key, sb.Header.BaseOffset, err)
			}
			for i := range bt.Records {
				r := &bt.Records[i]
				if r.Offset < logStart || r.Offset >= hw {
					continue
				}
				ts := r.Timestamp
				older := ts < timeMs
				switch {
				case !c.Found && older:
					p.Deleted++
					if p.NewestDeleted == nil || ts > *p.NewestDeleted {
						p.NewestDeleted = ptr(ts)
					}
				case !c.Found:
					c.Found, c.Offset, c.Timestamp = true, r.Offset, ptr(ts)
					pendingNewer = 1
				case older:
					p.KeptOlder++
					if p.FirstKeptOlder == nil {
						p.FirstKeptOlder = ptr(r.Offset)
					}
					p.LastKeptOlder = ptr(r.Offset)
					if p.OldestKept == nil || ts < *p.OldestKept {
						p.OldestKept = ptr(ts)
					}
					p.NewerBeforeLastOlder += pendingNewer
					pendingNewer = 0
				default:
					pendingNewer++
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("time cut %s: %w", b.Name(), err)
	}
	if !c.Found {
		// Offsets below the HW without a record (a compacted range)
		// count as the log start moves past them; Deleted counts records.
		c.Offset = hw
	}
	p.OutOfOrder = p.KeptOlder > 0
	return c, nil
}

func ptr(v int64) *int64 { return &v }
