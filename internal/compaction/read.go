package compaction

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// ErrViewCorrupt marks a compacted view of ACTIVE coverage whose member
// manifest or object is missing or holds other bytes than the set
// recorded. It wraps ntc2.ErrCorrupt, so it is corruption (exit 3).
var ErrViewCorrupt = fmt.Errorf("compacted view is corrupt or incomplete: %w", ntc2.ErrCorrupt)

// Record is one record a READ_COMMITTED fetch returns.
type Record struct {
	Offset    int64 `json:"offset"`
	Timestamp int64 `json:"timestamp"`
	// TimestampType is the record's batch's timestamp type, kept through
	// compaction (MemoryRecords.filterTo rewrites retained records under
	// the original batch's timestampType and, for LOG_APPEND_TIME, with
	// the original batch's maxTimestamp as the log append time); under
	// LogAppendTime Timestamp is that batch's MaxTimestamp
	// (DefaultRecordBatch hands every record the batch's maxTimestamp).
	TimestampType   kafka.TimestampType  `json:"-"`
	Key             []byte               `json:"key"`
	Value           []byte               `json:"value"`
	Headers         []kafka.RecordHeader `json:"headers,omitempty"`
	FromView        bool                 `json:"from_view"`
	DeleteHorizonMs int64                `json:"delete_horizon_ms"`
	// Sequence is the record's producer sequence (its batch's base
	// sequence + offset delta, wrapping as Kafka's); -1 for a record with
	// no producer and for a view record (NTC2 keeps no batch structure).
	Sequence int32 `json:"sequence"`
}

// ReadInfo describes the view a read served.
type ReadInfo struct {
	LogStart     int64  `json:"log_start"`
	HW           int64  `json:"hw"`
	LSO          int64  `json:"lso"`
	Coverage     string `json:"coverage"`
	CompactedEnd int64  `json:"compacted_end"`
}

// Read calls fn for what a READ_COMMITTED Fetch of the partition from
// offset from would return, in offset order: nothing below the log start;
// with ACTIVE coverage, the compacted prefix from the NTC2 view (each object
// checked against its manifest digest first) and the tail from COMMITTED;
// aborted transactional data and control records filtered; nothing at or
// above the LSO. Under QUARANTINED coverage it refuses (ErrBlocked): a
// compacted-away value must never come back from COMMITTED.
func Read(ctx context.Context, st store.Store, b *layout.Binding, from int64, fn func(Record) error) (*ReadInfo, error) {
	if err := b.CheckNotBlocked(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	res, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", b.Name(), err)
	}
	if res.Health.Blocked {
		// Mandatory coverage is missing (or quarantined): COMMITTED data
		// compaction superseded must never be served.
		return nil, fmt.Errorf("read %s: %w: %s", b.Name(), layout.ErrBlocked, res.Health.BlockedReason)
	}
	info := &ReadInfo{LogStart: res.State.LogStart, HW: res.State.HW(), LSO: res.State.LSO(), Coverage: b.Coverage.State, CompactedEnd: -1}
	at := max(from, info.LogStart)
	if b.Coverage.State == layout.CoverageActive {
		info.CompactedEnd = b.Coverage.End
		if err := readView(ctx, st, b, at, fn); err != nil {
			return info, err
		}
		at = max(at, b.Coverage.End)
	}
	if at >= info.LSO {
		return info, nil
	}
	objs, err := layout.ListObjects(ctx, st, b.StreamID)
	if err != nil {
		return info, err
	}
	chain, err := stream.Chain(objs, at, res.Head.Head)
	if err != nil {
		return info, fmt.Errorf("read %s: %w", b.Name(), err)
	}
	var ranges []layout.AbortedRange
	for _, a := range res.State.Aborted {
		ranges = append(ranges, layout.AbortedRange{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: a.LastOffset})
	}
	aborts := newAbortIndex(ranges)
	for _, o := range chain {
		if o.Base >= info.LSO {
			break
		}
		data, err := stream.ReadObject(ctx, st, o)
		if err != nil {
			return info, err
		}
		err = stream.ScanObjectWith(o, data, stream.ScanOptions{VerifyCRC: true, Epochs: res.Head.LeaderEpochs}, func(bt stream.Batch) error {
			h := bt.Header
			if h.LastOffset() < at || h.BaseOffset >= info.LSO || h.IsControl() {
				return nil
			}
			if h.IsTransactional() && h.ProducerID >= 0 && aborts.aborted(h.ProducerID, h.BaseOffset) {
				return nil
			}
			batch, err := kafka.DecodeBatch(bt.Raw, kafka.DefaultLimits())
			if err != nil {
				return fmt.Errorf("decode batch at offset %d in %s: %w", h.BaseOffset, o.Key, err)
			}
			for _, r := range batch.Records {
				if r.Offset < at || r.Offset >= info.LSO {
					continue
				}
				if err := fn(Record{Offset: r.Offset, Timestamp: r.Timestamp, TimestampType: h.TimestampType(), Key: r.Key, Value: r.Value, Headers: r.Headers, DeleteHorizonMs: h.DeleteHorizonMs(), Sequence: h.RecordSequence(r.OffsetDelta)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return info, err
		}
	}
	return info, nil
}

// readView serves the compacted prefix [at, coverage end).
func readView(ctx context.Context, st store.Store, b *layout.Binding, at int64, fn func(Record) error) error {
	members := append([]layout.SetMember(nil), b.Coverage.Members...)
	var gens []*layout.Generation
	for _, m := range members {
		g, sum, err := layout.LoadGeneration(ctx, st, b.StreamID, m.Gen)
		if err != nil {
			if layout.IsCorrupt(err) || errors.Is(err, store.ErrNotFound) {
				err = fmt.Errorf("%w: %w", ErrViewCorrupt, err)
			}
			return fmt.Errorf("read %s: compacted generation %d: %w (coverage is ACTIVE; run 'nereusctl verify %s')", b.Name(), m.Gen, err, b.Name())
		}
		if sum != m.ManifestSHA256 {
			return fmt.Errorf("read %s: %w: compacted generation %d manifest sha256 %s, the set recorded %s (run 'nereusctl verify %s')", b.Name(), ErrViewCorrupt, m.Gen, sum, m.ManifestSHA256, b.Name())
		}
		gens = append(gens, g)
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i].Base < gens[j].Base })
	for _, g := range gens {
		for _, o := range g.Objects {
			if o.End <= at || o.Base >= b.Coverage.End {
				continue
			}
			data, err := st.Get(ctx, o.Key, nil)
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					// A member of ACTIVE coverage that is gone is lost
					// data, not an I/O failure.
					err = fmt.Errorf("%w: %w", ErrViewCorrupt, err)
				}
				return fmt.Errorf("read %s: compacted object %s: %w (run 'nereusctl verify %s')", b.Name(), o.Key, err, b.Name())
			}
			if got := store.SHA256Of(data); got != o.SHA256 {
				return fmt.Errorf("read %s: %w: compacted object %s has sha256 %s, its manifest recorded %s (run 'nereusctl verify %s')", b.Name(), ErrViewCorrupt, o.Key, got, o.SHA256, b.Name())
			}
			r, err := ntc2.Open(data)
			if err != nil {
				return fmt.Errorf("read %s: %s: %w", b.Name(), o.Key, err)
			}
			err = r.Rows(func(row ntc2.Row) error {
				if row.Offset < at || row.Offset >= b.Coverage.End {
					return nil
				}
				return fn(Record{Offset: row.Offset, Timestamp: row.Timestamp, TimestampType: row.TimestampType, Key: row.Key, Value: row.Value, Headers: row.Headers, FromView: true, DeleteHorizonMs: row.DeleteHorizonMs, Sequence: -1})
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
