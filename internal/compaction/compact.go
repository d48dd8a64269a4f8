// Package compaction owns offline key compaction (docs/design.md §8): freezing the
// inputs, the bounded-memory scan for the latest offset per key, emitting
// the NTC2 view, publishing the TOPIC_COMPACTED generation and activating
// the binding's compacted coverage — plus the READ_COMMITTED read path that
// serves the compacted prefix from the view and the tail from COMMITTED.
//
// Tasks and staging are workflow state; only a published generation plus
// the binding's coverage CAS decide what a reader may use. It never falls
// back to COMMITTED data under QUARANTINED coverage.
package compaction

import (
	"bytes"
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

// ErrBlocked is returned for a partition whose compacted coverage is
// QUARANTINED: nothing may be read or compacted until it is repaired.
var ErrBlocked = layout.ErrBlocked

// ErrNotCompacted is returned for a topic whose cleanup.policy lacks compact.
var ErrNotCompacted = errors.New("cleanup.policy does not contain compact")

// Steps, for hooks and the crash harness.
const (
	StepFrozen    = "frozen"    // the task records the frozen inputs
	StepWritten   = "written"   // every output object is PUT and verified
	StepPublished = "published" // the TOPIC_COMPACTED manifest is published
	StepActivated = "activated" // the binding's coverage points at the new set
)

// Options steer a compaction.
type Options struct {
	NowMs int64
	// MaxMemory bounds the offset map (24 bytes per key, Kafka's bar);
	// beyond it the range is processed in passes, spilling the view between
	// passes to a local temp file.
	MaxMemory int64
	// ObjectBytes splits the output into NTC2 objects of about this size.
	ObjectBytes int
	DryRun      bool
	TempDir     string
	After       func(step string) error
	// Fence, when set, is called before each publish (every NTC2 PUT, the
	// manifest, the coverage CAS): it proves the partition lease the
	// compaction runs under is still this run's (lease.Fence), so a run
	// paused past its lease publishes nothing.
	Fence func(ctx context.Context, step string) error
}

func (o Options) fence(ctx context.Context, step string) error {
	if o.Fence == nil {
		return nil
	}
	return o.Fence(ctx, step)
}

// defaultObjectBytes splits the output into NTC2 objects of about 4 MiB
// (a compaction holds about three objects in memory at once).
// It is part of the deterministic output: regenerate relies on it.
const defaultObjectBytes = 4 << 20

// DefaultMaxMemory is the default offset-map budget.
const DefaultMaxMemory = 256 << 20

// Plan is the frozen input of one compaction (step 1).
type Plan struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	StreamID  string `json:"stream_id"`
	// Base and End are the view's range: [log start, compacted end).
	Base    int64 `json:"base"`
	End     int64 `json:"end"`
	PrevEnd int64 `json:"prev_end"`
	// Params are recorded in the manifest, so that a regenerate reproduces
	// the bytes exactly.
	Params  layout.CompactionParams `json:"params"`
	Sources []layout.SourceRef      `json:"sources"`

	LogStart int64 `json:"-"`
	prev     []source
	new      []source
	dirty    []source // every closed segment after the previous set (task.go's due)
	aborts   abortIndex
	binding  *layout.Binding
	dec      *kafka.BatchDecoder
	rows     []ntc2.Row             // reused for each batch's rows
	objBuf   []byte                 // reused for each source object read
	verified map[string]fingerprint // objects read and verified, by key
}

// Result is the outcome of a compaction.
type Result struct {
	Plan      *Plan              `json:"plan"`
	Stats     Stats              `json:"stats"`
	UpToDate  bool               `json:"up_to_date"`
	Reason    string             `json:"reason,omitempty"`
	Gen       int64              `json:"gen"`
	SetID     string             `json:"set_id,omitempty"`
	Objects   []layout.ObjectRef `json:"objects"`
	Resumed   bool               `json:"resumed"`
	Activated bool               `json:"activated"`
	DryRun    bool               `json:"dry_run"`
	// Due is whether Kafka's cleaner would pick the partition now (task.go).
	Due *Due `json:"due"`
}

// Freeze is step 1: the closed segments below the LSO (and old enough for
// min.compaction.lag.ms) after the previous compacted set, the HW, LSO,
// cleanup.policy, aborted ranges and the exact source generations by
// manifest digest.
func Freeze(ctx context.Context, st store.Store, b *layout.Binding, nowMs int64) (*Plan, string, error) {
	if !b.Config.HasPolicy("compact") {
		return nil, "", fmt.Errorf("compact %s: %w (it is %q)", b.Name(), ErrNotCompacted, b.Config.CleanupPolicy)
	}
	if err := b.CheckNotBlocked(); err != nil {
		return nil, "", fmt.Errorf("compact: %w", err)
	}
	res, err := recovery.Replay(ctx, st, b, recovery.Options{RequireHealthy: true})
	if err != nil {
		return nil, "", fmt.Errorf("compact %s: %w", b.Name(), err)
	}
	p := &Plan{Topic: b.Topic, Partition: b.Partition, StreamID: b.StreamID, LogStart: res.State.LogStart, binding: b}
	p.Base = res.State.LogStart
	p.PrevEnd = p.Base
	p.Params = layout.CompactionParams{NowMs: nowMs, DeleteRetentionMs: b.Config.DeleteRetentionMs, HW: res.State.HW(), LSO: res.State.LSO(), LogStart: res.State.LogStart, Encoder: ntc2.EncoderIdentity()}
	if b.Coverage.State == layout.CoverageActive {
		p.Params.PrevSetID = b.Coverage.SetID
		p.PrevEnd = max(b.Coverage.End, p.Base)
		for _, m := range b.Coverage.Members {
			g, sum, err := layout.LoadGeneration(ctx, st, b.StreamID, m.Gen)
			if err != nil {
				return nil, "", fmt.Errorf("compact %s: previous set member %d: %w", b.Name(), m.Gen, err)
			}
			if sum != m.ManifestSHA256 {
				return nil, "", fmt.Errorf("compact %s: %w: previous set member %d has manifest sha256 %s, the binding recorded %s", b.Name(), ErrSourceChanged, m.Gen, sum, m.ManifestSHA256)
			}
			p.prev = append(p.prev, source{gen: g, sha256: sum})
		}
		sort.Slice(p.prev, func(i, j int) bool { return p.prev[i].gen.Base < p.prev[j].gen.Base })
	}
	gens, err := layout.ListGenerations(ctx, st, b.StreamID)
	if err != nil {
		return nil, "", err
	}
	var committed []source
	for _, n := range gens {
		g, sum, err := layout.LoadGeneration(ctx, st, b.StreamID, n)
		if err != nil {
			return nil, "", err
		}
		if g.Kind == layout.KindCommitted && g.End > p.PrevEnd {
			committed = append(committed, source{gen: g, sha256: sum})
		}
	}
	sort.Slice(committed, func(i, j int) bool { return committed[i].gen.Base < committed[j].gen.Base })
	p.dirty = committed
	// firstUncleanable (LogCleanerManager): nothing at or above the LSO,
	// nothing in the open segment, nothing younger than
	// min.compaction.lag.ms; whole segments only.
	end, reason := p.PrevEnd, ""
	for _, s := range committed {
		if s.gen.Base > end {
			reason = fmt.Sprintf("a gap before generation %d at %d", s.gen.Gen, s.gen.Base)
			break
		}
		if s.gen.End > p.Params.LSO {
			reason = fmt.Sprintf("segment [%d, %d) reaches the LSO %d", s.gen.Base, s.gen.End, p.Params.LSO)
			break
		}
		if lag := b.Config.MinCompactionLagMs; lag > 0 && segmentTime(s.gen) > nowMs-lag {
			reason = fmt.Sprintf("segment [%d, %d) is younger than min.compaction.lag.ms", s.gen.Base, s.gen.End)
			break
		}
		p.new = append(p.new, s)
		end = s.gen.End
	}
	p.End = end
	p.Params.CleanEnd = end
	p.Params.PrevEnd = p.PrevEnd
	p.Params.Aborted = []layout.AbortedRange{}
	for _, a := range res.State.Aborted {
		if a.FirstOffset < end && a.LastOffset >= p.PrevEnd {
			p.Params.Aborted = append(p.Params.Aborted, layout.AbortedRange{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: a.LastOffset})
		}
	}
	p.aborts = newAbortIndex(p.Params.Aborted)
	for _, s := range p.prev {
		p.Sources = append(p.Sources, layout.SourceRef{Gen: s.gen.Gen, ManifestSHA256: s.sha256})
	}
	for _, s := range p.new {
		p.Sources = append(p.Sources, layout.SourceRef{Gen: s.gen.Gen, ManifestSHA256: s.sha256})
	}
	if reason == "" && len(p.new) == 0 {
		reason = "no closed segment below the LSO since the last compaction"
	}
	return p, reason, nil
}

// Compact runs the seven steps of docs/design.md §8 for one binding. A rerun after a
// crash at any step resumes the task with its frozen inputs (same bytes,
// same generation) or, when a source changed, restarts cleanly.
func Compact(ctx context.Context, st store.Store, b *layout.Binding, o Options) (*Result, error) {
	after := func(step string) error {
		if o.After == nil {
			return nil
		}
		return o.After(step)
	}
	if o.ObjectBytes <= 0 {
		o.ObjectBytes = defaultObjectBytes
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	out := &Result{Gen: -1, DryRun: o.DryRun, Objects: []layout.ObjectRef{}}
	// An interrupted task for this stream resumes with its frozen clock.
	task, taskETag, err := loadTask(ctx, st, b.StreamID)
	if err != nil {
		return nil, err
	}
	nowMs := o.NowMs
	if task != nil && !o.DryRun {
		nowMs = task.Plan.Params.NowMs
	}
	p, reason, err := Freeze(ctx, st, b, nowMs)
	if err != nil {
		return nil, err
	}
	p.Params.ObjectBytes = o.ObjectBytes
	out.Plan = p
	if task != nil && !o.DryRun {
		if sameInputs(task.Plan, p) {
			out.Resumed = true
		} else {
			// The inputs moved on (new segments, another compaction):
			// the old task's outputs are staging for gc; start over
			// with a fresh clock.
			if err := st.Delete(ctx, taskKey(b.StreamID), store.IfMatch(taskETag)); err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("compact %s: drop stale task: %w", b.Name(), err)
			}
			task, taskETag = nil, ""
			if nowMs != o.NowMs {
				if p, reason, err = Freeze(ctx, st, b, o.NowMs); err != nil {
					return nil, err
				}
				p.Params.ObjectBytes = o.ObjectBytes
				out.Plan = p
			}
		}
	}
	if out.Due, err = p.due(ctx, st, b.Config, p.Params.NowMs, reason); err != nil {
		return nil, err
	}
	if reason != "" && len(p.new) == 0 {
		out.UpToDate, out.Reason = true, reason
		if task != nil {
			_ = st.Delete(ctx, taskKey(b.StreamID), store.IfMatch(taskETag))
		}
		return out, nil
	}
	out.Reason = reason
	if !o.DryRun && task == nil {
		task = &Task{StreamID: b.StreamID, Plan: p, Step: StepFrozen}
		info, err := layout.Create(ctx, st, taskKey(b.StreamID), task)
		if err != nil {
			return nil, fmt.Errorf("compact %s: record task: %w", b.Name(), err)
		}
		taskETag = info.ETag
		if err := after(StepFrozen); err != nil {
			return out, err
		}
	}

	// 2-4. Scan, re-read and emit; PUT and verify each object.
	em := &emitter{st: st, p: p, limit: o.ObjectBytes, dryRun: o.DryRun, stats: &out.Stats, fence: o.fence}
	if err := p.run(ctx, st, o, em, &out.Stats); err != nil {
		return out, fmt.Errorf("compact %s: %w", b.Name(), err)
	}
	out.Objects = em.refs
	if o.DryRun {
		return out, nil
	}
	task.Step, task.Objects = StepWritten, em.refs
	if taskETag, err = saveTask(ctx, st, task, taskETag); err != nil {
		return out, err
	}
	if err := after(StepWritten); err != nil {
		return out, err
	}

	// 5. Publish the TOPIC_COMPACTED generation (reusing one a crashed run
	// already published with the same content).
	g := &layout.Generation{
		StreamID: b.StreamID, Kind: layout.KindTopicCompacted, Base: p.Base, End: p.End,
		Objects: em.refs, Sources: p.Sources, MaxTimestamp: -1, CreatedMs: p.Params.NowMs, Compaction: &p.Params,
	}
	if err := o.fence(ctx, "compact publish"); err != nil {
		return out, fmt.Errorf("compact %s: %w", b.Name(), err)
	}
	gen, sum, err := publish(ctx, st, g)
	if err != nil {
		return out, fmt.Errorf("compact %s: %w", b.Name(), err)
	}
	out.Gen = gen
	task.Step, task.Gen = StepPublished, gen
	if taskETag, err = saveTask(ctx, st, task, taskETag); err != nil {
		return out, err
	}
	if err := after(StepPublished); err != nil {
		return out, err
	}

	// 6. Activate the new gap-free set in the binding.
	members := []layout.SetMember{{Gen: gen, ManifestSHA256: sum}}
	out.SetID = layout.SetID(members)
	if err := activate(ctx, st, b, p, members, o.fence); err != nil {
		return out, err
	}
	out.Activated = true
	if err := after(StepActivated); err != nil {
		return out, err
	}
	// 7. Readers now take [Base, End) from the view. The task is done.
	if err := st.Delete(ctx, taskKey(b.StreamID), store.IfMatch(taskETag)); err != nil && !errors.Is(err, store.ErrNotFound) {
		return out, fmt.Errorf("compact %s: remove task: %w", b.Name(), err)
	}
	return out, nil
}

// activate CASes the binding's coverage from the frozen previous set to the
// new one; a lost response that landed is recognised.
func activate(ctx context.Context, st store.Store, b *layout.Binding, p *Plan, members []layout.SetMember, fence func(context.Context, string) error) error {
	want := layout.Coverage{State: layout.CoverageActive, SetID: layout.SetID(members), Start: p.Base, End: p.End, Members: members}
	for attempt := 0; attempt < 4; attempt++ {
		cur, etag, err := layout.LoadBinding(ctx, st, b.Topic, b.Partition)
		if err != nil {
			return fmt.Errorf("activate coverage of %s: %w", b.Name(), err)
		}
		if cur.Coverage.SetID == want.SetID && cur.Coverage.State == layout.CoverageActive {
			*b = *cur
			return nil
		}
		if cur.Coverage.State == layout.CoverageQuarantined {
			return fmt.Errorf("activate coverage of %s: %w", b.Name(), ErrBlocked)
		}
		if cur.Coverage.SetID != p.Params.PrevSetID {
			return fmt.Errorf("activate coverage of %s: another compaction activated set %s meanwhile: %w", b.Name(), cur.Coverage.SetID, store.ErrPreconditionFailed)
		}
		nb := *cur
		nb.Coverage = want
		nb.Version++
		if err := fence(ctx, "compact activate coverage"); err != nil {
			return fmt.Errorf("activate coverage of %s: %w", b.Name(), err)
		}
		if _, err := layout.Replace(ctx, st, layout.BindingKey(b.Topic, b.Partition), &nb, etag); err == nil {
			*b = nb
			return nil
		} else if !errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("activate coverage of %s: %w", b.Name(), err)
		}
	}
	return fmt.Errorf("activate coverage of %s: the binding keeps changing: %w", b.Name(), store.ErrPreconditionFailed)
}

// publish writes g under the first free generation number, unless a
// generation with the same content (objects, sources, range, parameters)
// exists already, which it reuses. Such a generation (a crashed run's) was
// published after every one of its sources: only the generations above
// the newest source are read.
func publish(ctx context.Context, st store.Store, g *layout.Generation) (int64, string, error) {
	gens, err := layout.ListGenerations(ctx, st, g.StreamID)
	if err != nil {
		return 0, "", err
	}
	next, newestSource := int64(0), int64(-1)
	if len(gens) > 0 {
		next = gens[len(gens)-1] + 1 // listed in ascending order
	}
	for _, s := range g.Sources {
		newestSource = max(newestSource, s.Gen)
	}
	for i := len(gens) - 1; i >= 0 && gens[i] > newestSource; i-- {
		old, sum, err := layout.LoadGeneration(ctx, st, g.StreamID, gens[i])
		if err != nil {
			return 0, "", err
		}
		if old.Kind == layout.KindTopicCompacted && sameContent(old, g) {
			return old.Gen, sum, nil
		}
		if old.Kind == layout.KindTopicCompacted {
			break // only the newest compacted generation can be ours
		}
	}
	gen, err := stream.PublishGeneration(ctx, st, g, next)
	if err != nil {
		return 0, "", err
	}
	return gen, layout.DocSHA256(g), nil
}

func sameContent(a, b *layout.Generation) bool {
	x, y := *a, *b
	x.Gen, y.Gen = 0, 0
	return string(layout.Encode(&x)) == string(layout.Encode(&y))
}

// emitter writes the final rows as NTC2 objects of about limit bytes and,
// unless in a dry run, PUTs and verifies each (step 4).
type emitter struct {
	st     store.Store
	p      *Plan
	limit  int
	dryRun bool
	stats  *Stats
	w      *ntc2.Writer
	base   int64
	last   int64
	refs   []layout.ObjectRef
	// onObject, when set, receives every finished object instead of the
	// store (regenerate); it must not keep data.
	onObject func(ref layout.ObjectRef, data []byte)
	// fence proves the lease before each PUT (Options.Fence).
	fence func(ctx context.Context, step string) error
	// spare and readBuf are reused from object to object: the last
	// object's bytes once stored, and the buffer its read-back went to.
	spare, readBuf []byte
}

// newWriter starts the next object. A compaction's output holds one row
// per key, so the writer need not keep a key set (verification recounts).
func (e *emitter) newWriter() *ntc2.Writer {
	w := ntc2.NewWriterWith(ntc2.Meta{Base: e.base, End: e.p.End, Sources: ntcSources(e.p.Sources)}, ntc2.WriterOptions{Buffer: e.spare, DistinctKeys: true})
	e.spare = nil
	return w
}

func (e *emitter) add(ctx context.Context, r *ntc2.Row) error {
	if e.w == nil {
		e.w = e.newWriter()
	}
	if err := e.w.Add(*r); err != nil {
		return err
	}
	e.last = r.Offset
	if e.w.Len() >= e.limit {
		return e.flush(ctx, r.Offset+1)
	}
	return nil
}

func ntcSources(rs []layout.SourceRef) []ntc2.Source {
	out := make([]ntc2.Source, len(rs))
	for i, r := range rs {
		out[i] = ntc2.Source{Gen: r.Gen, ManifestSHA256: r.ManifestSHA256}
	}
	return out
}

// flush finishes the current object at end and stores it.
func (e *emitter) flush(ctx context.Context, end int64) error {
	if e.w == nil {
		if end <= e.base || len(e.refs) > 0 {
			return nil
		}
		// An empty view still gets one (empty) object for its range.
		e.w = e.newWriter()
	}
	if err := e.w.SetEnd(end); err != nil {
		return err
	}
	data, f, err := e.w.Finish()
	if err != nil {
		return err
	}
	e.w = nil
	sum := store.SHA256Of(data)
	ref := layout.ObjectRef{Key: CompactedKey(e.p.StreamID, sum), Base: e.base, End: end, Size: int64(len(data)), CRC32C: stream.CRC32C(data), SHA256: sum}
	e.stats.Objects++
	e.stats.BytesOut += int64(len(data))
	e.stats.Keys += f.Keys
	e.base = end
	if e.onObject != nil || e.dryRun {
		ref.ETag = store.ETagOf(data)
		e.refs = append(e.refs, ref)
		if e.onObject != nil {
			e.onObject(ref, data)
		}
		e.spare = data
		return nil
	}
	// The ETag recorded is the one the store gave (the MD5 of the bytes
	// on every supported backend), so verify's HEAD checks compare like
	// with like.
	//
	// The PUT is unconditional: the key is the SHA-256 of these bytes, so
	// it can only (re)write the same content, and a rerun that finds its
	// object already there (a crashed run's, maybe older than gc's grace)
	// restarts the object's age, so gc's grace counts from this run, not
	// from the run that first wrote it. The read-back below checks the
	// digest of what the key holds.
	if err := e.fence(ctx, "compact put "+ref.Key); err != nil {
		return err
	}
	info, err := e.st.Put(ctx, ref.Key, data, store.None())
	if err != nil {
		return fmt.Errorf("put %s: %w", ref.Key, err)
	}
	if ref.ETag = info.ETag; ref.ETag == "" {
		ref.ETag = store.ETagOf(data)
	}
	e.refs = append(e.refs, ref)
	// Full verification of what the store now holds.
	back, err := store.GetInto(ctx, e.st, ref.Key, e.readBuf)
	if err != nil {
		return fmt.Errorf("verify %s: %w", ref.Key, err)
	}
	e.readBuf = back
	if store.SHA256Of(back) != sum || !bytes.Equal(back, data) {
		return fmt.Errorf("verify %s: the bytes read back differ from the %d bytes written (sha256 %s)", ref.Key, len(data), sum)
	}
	r, err := ntc2.Open(back)
	if err != nil {
		return fmt.Errorf("verify %s: %w", ref.Key, err)
	}
	if fs := r.Verify(); len(fs) > 0 {
		return fmt.Errorf("verify %s: %s check failed: %s", ref.Key, fs[0].Check, fs[0].Detail)
	}
	e.spare = data
	return nil
}

// CompactedKey is where an NTC2 object lives (layout.CompactedKey).
func CompactedKey(sid, sha256 string) string { return layout.CompactedKey(sid, sha256) }
