// Package demo owns the demo cluster (docs/design.md §12): a deterministic, realistic
// set of partitions written into a store exactly the way a broker would —
// idempotent and transactional producers, a compacted topic, real
// __consumer_offsets and __transaction_state records, several leader epochs,
// rolled and sealed segments, all four codecs, and periodic NKC1 checkpoints
// written through the same code as `checkpoint create`.
//
// It writes only through the stream writer and the recovery package.
package demo

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Options size the demo.
type Options struct {
	Partitions int   // partitions per user topic
	Records    int   // records across the whole cluster
	Seed       int64 // same seed, same bytes
	// Checkpoints per partition, spread over its life (0: none).
	Checkpoints int
	// Topics limits the demo to these topics (all when empty); the records
	// are shared among them.
	Topics []string
	// Parallel is how many partitions are written at once (< 1: one);
	// the bytes do not depend on it.
	Parallel int
	// BatchRecords, when > 0, fills the user topics' batches as a busy
	// producer does (BatchRecords/2+1 to BatchRecords records each)
	// instead of the demo's small batches (benchmarks).
	BatchRecords int
	// Progress, when set, is told the records written as they go.
	Progress func(records int64)
}

// DefaultOptions finish in a few seconds.
func DefaultOptions() Options {
	return Options{Partitions: 2, Records: 20000, Seed: 1, Checkpoints: 2}
}

// Epoch0 is the demo's clock start: every timestamp is derived from it.
var Epoch0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// Span is the time the demo's records cover.
const Span = 21 * 24 * time.Hour

// PartitionSummary says what the demo wrote into one partition.
type PartitionSummary struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StreamID    string `json:"stream_id"`
	Kind        string `json:"kind"`
	Records     int    `json:"records"`
	Batches     int    `json:"batches"`
	Objects     int    `json:"objects"`
	Bytes       int64  `json:"bytes"`
	Segments    int    `json:"sealed_segments"`
	Checkpoints int    `json:"checkpoints"`
	Head        int64  `json:"head"`
}

// Summary is the whole demo.
type Summary struct {
	Seed     int64 `json:"seed"`
	Existing bool  `json:"existing"` // the store already held this demo, whole
	// Resumed: the store held this demo interrupted (its record in
	// tasks/demo/ not complete); this run finished it with the options it
	// was started with (Options), to exactly the store an uninterrupted
	// run writes.
	Resumed bool `json:"resumed"`
	// Options are the options the demo in the store was written with.
	Options    *RecordedOptions   `json:"options,omitempty"`
	Partitions []PartitionSummary `json:"partitions"`
	Records    int                `json:"records"`
	Bytes      int64              `json:"bytes"`
	// Compacted lists the partitions whose compacted coverage the demo
	// activated (the internal topics and the compacted user topic).
	Compacted []string `json:"compacted"`
}

// ConfigSource is the config_source of the bindings the demo writes: their
// config snapshots are the demo's own topic configs.
const ConfigSource = "demo"

// CompactNow is the clock the demo compacts with: a day after its records.
var CompactNow = Epoch0.Add(Span + 24*time.Hour)

// ErrOtherData is returned when the store holds bindings the demo did not
// write with this seed.
var ErrOtherData = errors.New("the store already holds other data")

// topicPlan describes one demo topic.
type topicPlan struct {
	name       string
	kind       string // idempotent, transactional, compacted, offsets, txnlog
	partitions int
	share      float64 // of Options.Records
	cfg        layout.TopicConfig
}

func plans(o Options) []topicPlan {
	day := int64(24 * 3600 * 1000)
	del := layout.DefaultTopicConfig()
	del.SegmentBytes = 64 << 10
	del.SegmentMs = 3 * day
	del.RetentionMs = 7 * day

	txn := del
	txn.RetentionMs = -1
	txn.RetentionBytes = 512 << 10

	comp := layout.DefaultTopicConfig()
	comp.CleanupPolicy = "compact"
	comp.SegmentBytes = 32 << 10
	comp.SegmentMs = 2 * day
	comp.DeleteRetentionMs = 3600 * 1000

	internal := comp
	internal.SegmentBytes = 32 << 10

	return []topicPlan{
		{"orders", "idempotent", o.Partitions, 0.40, del},
		{"payments", "transactional", o.Partitions, 0.25, txn},
		{"customers", "compacted", o.Partitions, 0.20, comp},
		{"__consumer_offsets", "offsets", 2, 0.10, internal},
		{"__transaction_state", "txnlog", 1, 0.05, internal},
	}
}

// ErrDuplicateTopic is a --topics list that names a topic twice: refused
// before anything is written (two writers of one partition).
var ErrDuplicateTopic = errors.New("a topic is named twice")

// selectPlans keeps the named topics and shares the records among them.
func selectPlans(all []topicPlan, topics []string) ([]topicPlan, error) {
	if len(topics) == 0 {
		return all, nil
	}
	var out []topicPlan
	total := 0.0
	seen := map[string]bool{}
	for _, name := range topics {
		if seen[name] {
			return nil, fmt.Errorf("demo: --topics %s: %w", name, ErrDuplicateTopic)
		}
		seen[name] = true
		found := false
		for _, p := range all {
			if p.name == name {
				out = append(out, p)
				total += p.share
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("demo: no demo topic %q (orders, payments, customers, __consumer_offsets, __transaction_state)", name)
		}
	}
	for i := range out {
		out[i].share /= total
	}
	return out, nil
}

// StreamID is the demo's deterministic stream id of a partition.
func StreamID(seed int64, topic string, p int32) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("nereus-demo/%d/%s/%d", seed, topic, p)))
	return "s-" + hex.EncodeToString(sum[:8])
}

func topicID(seed int64, topic string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("nereus-demo-topic/%d/%s", seed, topic)))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// Run writes the demo into st, recording the options it starts with in
// the store first (tasks/demo/seed-<seed>.json) and that it finished
// last. A store that holds this demo whole is left as it is and reported
// as existing; one that holds it interrupted (its record not complete) is
// resumed with the recorded options, whatever o says besides the seed,
// and ends exactly as an uninterrupted run would have written it: every
// partition is regenerated (the demo is deterministic), what the store
// holds already is checked against it (key and size of every object) and
// only the rest is written. A store without the record that holds this
// seed's bindings (a demo an older nereusctl wrote) is reported existing.
func Run(ctx context.Context, st store.Store, o Options) (*Summary, error) {
	if o.Partitions < 1 || o.Records < 0 {
		return nil, fmt.Errorf("demo: --partitions must be >= 1 and --records >= 0")
	}
	if _, err := selectPlans(plans(o), o.Topics); err != nil {
		return nil, err
	}
	sum := &Summary{Seed: o.Seed, Partitions: []PartitionSummary{}, Compacted: []string{}}
	existing, err := layout.ListBindings(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("demo: list bindings in %s: %w", st, err)
	}
	rec, recETag, err := loadRecord(ctx, st, o.Seed)
	switch {
	case err != nil:
		return nil, err
	case rec != nil && rec.Complete:
		sum.Existing, sum.Options = true, rec
		return sum, nil
	case rec != nil:
		// Interrupted: resume with what it was started with.
		o = rec.apply(o)
		sum.Resumed, sum.Options = true, rec
	case len(existing) > 0:
		ps := plans(o)
		b, _, err := layout.LoadBinding(ctx, st, ps[0].name, 0)
		if err != nil || b.StreamID != StreamID(o.Seed, ps[0].name, 0) {
			return nil, fmt.Errorf("demo: %w (%d bindings, not this demo's seed %d); use an empty --store", ErrOtherData, len(existing), o.Seed)
		}
		sum.Existing = true
		return sum, nil
	default:
		rec = record(o)
		info, err := layout.Create(ctx, st, recordKey(o.Seed), rec)
		if err != nil {
			return nil, fmt.Errorf("demo: record %s: %w", recordKey(o.Seed), err)
		}
		recETag = info.ETag
		sum.Options = rec
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x6e65726575730001))
	ps, err := selectPlans(plans(o), o.Topics)
	if err != nil {
		return nil, err
	}
	// Every partition's generator is seeded in one fixed order before any
	// is written, so the bytes are the same whatever --parallel is; the
	// partitions are then written o.Parallel at once (fleet.Map keeps the
	// summary in this order).
	type job struct {
		tp      topicPlan
		p       int32
		records int
		s1, s2  uint64
	}
	var jobs []job
	for _, tp := range ps {
		perPart := int(float64(o.Records) * tp.share / float64(tp.partitions))
		for p := 0; p < tp.partitions; p++ {
			jobs = append(jobs, job{tp: tp, p: int32(p), records: perPart, s1: rng.Uint64(), s2: rng.Uint64()})
		}
	}
	type written struct {
		ps        *PartitionSummary
		compacted bool
		err       error
	}
	outs, err := fleet.Map(ctx, o.Parallel, jobs, func(ctx context.Context, _ int, j job) (written, error) {
		ps, err := writePartition(ctx, st, o, j.tp, j.p, j.records, rand.New(rand.NewPCG(j.s1, j.s2)))
		if err != nil {
			return written{err: fmt.Errorf("demo: %s-%d: %w", j.tp.name, j.p, err)}, nil
		}
		// Compacted topics get a compacted view, as the log cleaner
		// would have made: __consumer_offsets and __transaction_state
		// then run under mandatory compacted coverage.
		if ps.Kind != "compacted" && ps.Kind != "offsets" && ps.Kind != "txnlog" {
			return written{ps: ps}, nil
		}
		b, _, err := layout.LoadBinding(ctx, st, ps.Topic, ps.Partition)
		if err != nil {
			return written{err: err}, nil
		}
		// A resumed demo finds its compaction done (up to date) or
		// resumes its task; either way the coverage ends ACTIVE.
		if _, err := compaction.Compact(ctx, st, b, compaction.Options{NowMs: CompactNow.UnixMilli()}); err != nil {
			return written{err: fmt.Errorf("demo: compact %s-%d: %w", ps.Topic, ps.Partition, err)}, nil
		}
		b, _, err = layout.LoadBinding(ctx, st, ps.Topic, ps.Partition)
		if err != nil {
			return written{err: err}, nil
		}
		return written{ps: ps, compacted: b.Coverage.State == layout.CoverageActive}, nil
	})
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, w := range outs {
		if w.err != nil {
			errs = append(errs, w.err)
			continue
		}
		sum.Partitions = append(sum.Partitions, *w.ps)
		sum.Records += w.ps.Records
		sum.Bytes += w.ps.Bytes
		if w.compacted {
			sum.Compacted = append(sum.Compacted, fmt.Sprintf("%s-%d", w.ps.Topic, w.ps.Partition))
		}
	}
	if len(errs) > 0 {
		// Every partition was tried; the first failure is reported with
		// the count (a rerun resumes: the record is not complete).
		return sum, fmt.Errorf("%d of %d partitions failed; first: %w", len(errs), len(jobs), errs[0])
	}
	done := *rec
	done.Complete = true
	if _, err := layout.Replace(ctx, st, recordKey(o.Seed), &done, recETag); err != nil {
		return sum, fmt.Errorf("demo: record %s complete: %w", recordKey(o.Seed), err)
	}
	return sum, nil
}

// writePartition creates the binding and stream and appends the partition's
// generated batches, with checkpoints along the way. What an interrupted
// run wrote already (the stream, the binding, objects up to the head, the
// checkpoints on the way) is found, checked against the regenerated bytes
// and not written again.
func writePartition(ctx context.Context, st store.Store, o Options, tp topicPlan, p int32, records int, rng *rand.Rand) (*PartitionSummary, error) {
	sid := StreamID(o.Seed, tp.name, p)
	ps := &PartitionSummary{Topic: tp.name, Partition: p, StreamID: sid, Kind: tp.kind}
	// Large demos (benchmarks) write bigger objects and segments, as a
	// busy broker does; small ones stay as they are.
	scale := max(1, records/100_000)
	tp.cfg.SegmentBytes *= int64(scale)
	if _, _, err := layout.LoadHead(ctx, st, sid); errors.Is(err, store.ErrNotFound) {
		if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	b := &layout.Binding{
		Topic: tp.name, TopicID: topicID(o.Seed, tp.name), Partition: p, StreamID: sid,
		Config: tp.cfg, ConfigSource: ConfigSource, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1,
	}
	switch cur, _, err := layout.LoadBinding(ctx, st, tp.name, p); {
	case errors.Is(err, store.ErrNotFound):
		if _, err := layout.Create(ctx, st, layout.BindingKey(tp.name, p), b); err != nil {
			return nil, fmt.Errorf("create binding: %w", err)
		}
	case err != nil:
		return nil, err
	case cur.StreamID != sid:
		return nil, fmt.Errorf("%w: binding %s names stream %s, not the demo's %s", ErrOtherData, layout.BindingKey(tp.name, p), cur.StreamID, sid)
	default:
		b = cur
	}
	w, err := stream.OpenWriter(ctx, st, sid, tp.cfg)
	if err != nil {
		return nil, err
	}
	// What an interrupted run appended: the objects up to the head.
	stored := w.Next()
	var have map[string]int64
	if stored > 0 {
		objs, err := layout.ListObjects(ctx, st, sid)
		if err != nil {
			return nil, err
		}
		have = make(map[string]int64, len(objs))
		for _, ob := range objs {
			have[ob.Key] = ob.Size
		}
	}
	at := int64(0) // the next regenerated object's base
	gen := newGenerator(tp.kind, tp.name, p, records, rng)
	gen.partitions = int32(tp.partitions)
	gen.scale = scale
	gen.batchRecords = o.BatchRecords
	w.NowMs = func() int64 { return gen.clock }
	var cpAt []int
	for i := 1; i <= o.Checkpoints; i++ {
		cpAt = append(cpAt, records*i/(o.Checkpoints+1))
	}
	for !gen.done() {
		batches, n, err := gen.nextObject(at)
		if err != nil {
			return nil, err
		}
		size, end := int64(0), at
		for _, bt := range batches {
			size += int64(len(bt))
			h, err := kafka.ParseHeader(bt)
			if err != nil {
				return nil, err
			}
			end = h.LastOffset() + 1
		}
		if end <= stored {
			// Appended by the interrupted run: the same object, or the
			// store is not this demo's.
			key := layout.ObjectKey(sid, at, end)
			if got, ok := have[key]; !ok || (got >= 0 && got != size) {
				return nil, fmt.Errorf("%w: stream %s: the demo's object %s (%d bytes) is not in the store (the stream's head is %d)", ErrOtherData, sid, key, size, stored)
			}
		} else {
			if at != w.Next() {
				return nil, fmt.Errorf("%w: stream %s: its head %d lies inside the demo's object [%d, %d)", ErrOtherData, sid, stored, at, end)
			}
			if err := w.Append(ctx, batches); err != nil {
				return nil, err
			}
		}
		at = end
		ps.Objects++
		ps.Batches += len(batches)
		ps.Bytes += size
		before := ps.Records
		ps.Records += n
		if o.Progress != nil {
			o.Progress(int64(n))
		}
		for _, cp := range cpAt {
			if before < cp && ps.Records >= cp {
				// Made at the head right after its object's append, the
				// binding's reference to it next: an interrupted run made
				// every one below its head, and the one at its head is
				// done when the binding refers to it (else made again, or
				// reused where its PUT landed: nothing was written after
				// it, so the state is the same).
				if end >= stored {
					cur, bETag, err := layout.LoadBinding(ctx, st, tp.name, p)
					if err != nil {
						return nil, err
					}
					b = cur
					if ref := cur.CheckpointRef; end > stored || ref == nil || ref.Anchor < end {
						if _, err := recovery.Create(ctx, st, b, bETag, false); err != nil {
							return nil, fmt.Errorf("checkpoint: %w", err)
						}
					}
				}
				ps.Checkpoints++
			}
		}
	}
	gens, err := layout.ListGenerations(ctx, st, sid)
	if err != nil {
		return nil, err
	}
	// The sealed segments: every generation up to the last COMMITTED one
	// (a resumed demo may find its compaction's generation after them).
	for i := len(gens) - 1; i >= 0; i-- {
		g, _, err := layout.LoadGeneration(ctx, st, sid, gens[i])
		if err != nil {
			return nil, err
		}
		if g.Kind == layout.KindCommitted {
			ps.Segments = i + 1
			break
		}
	}
	ps.Head = w.Next()
	return ps, nil
}

// codecs cycles through every codec for the demo's compressed batches.
var codecs = []kafka.Codec{kafka.CodecNone, kafka.CodecGzip, kafka.CodecSnappy, kafka.CodecLZ4, kafka.CodecZstd}
