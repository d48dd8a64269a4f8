package retention

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// GC categories.
const (
	GarbageBelowTrim  = "below-trim"       // objects of sealed segments wholly below the durable trim, and their manifests
	GarbageBeyondHead = "beyond-head"      // leftovers of appends whose head CAS never happened
	GarbageOffChain   = "off-chain"        // leftovers below the head that no chain uses
	GarbageCheckpoint = "stale-checkpoint" // checkpoints anchored below the trim that nothing refers to
	GarbageTask       = "task"             // workflow state under tasks/ older than the grace period
	GarbageTempFile   = "temp-file"        // file:// temp files (.nereus-tmp-*) a killed writer left, older than the grace period
	GarbageCompacted  = "superseded-view"  // compacted generations a newer set replaced, and NTC2 objects nothing references
)

// GCOptions steer a gc run.
type GCOptions struct {
	DryRun bool
	// Grace protects recent objects that may belong to work in progress
	// (an append between its object PUT and its head CAS, a running task).
	Grace time.Duration
	Now   time.Time
	// Progress, when set, is told each partition done (collected, or left
	// alone with its error).
	Progress func(partitions int64)
	// Partition, when set (and not in a dry run), wraps the deciding and
	// the deleting of one partition's garbage: the command holds the
	// partition's lease in it, so a compaction or a trim holding the same
	// lease never sees its objects collected under it. Its error (a lease
	// another job holds) is that partition's failure; the others go on.
	Partition func(ctx context.Context, tp layout.TopicPartition, fn func(ctx context.Context) error) error
	// Fence, when set with Partition, is called before each delete of a
	// partition's garbage: it proves the lease Partition holds is still
	// this run's (lease.Fence), so a gc paused past its lease between its
	// decision and its deletes (SIGSTOP, a VM pause) deletes nothing on
	// that decision, which a compaction that took the lease over meanwhile
	// may have made wrong.
	Fence func(ctx context.Context, step string) error
	// Decided, when set (tests, the crash harness), is called once a
	// partition's garbage is decided, before any of it is deleted.
	Decided func(tp layout.TopicPartition)
	// Parallel bounds how many partitions are collected at once (< 1: 1).
	Parallel int
	// Lean keeps in the report only what a summary needs: Items stays
	// empty and Partitions holds only the partitions with something to
	// say (kept data below the trim, an error); Totals, Objects, Bytes
	// and Done still count every object and partition. The table output,
	// which lists objects only with --verbose, needs no more, and then
	// gc's memory does not grow with the objects or partitions it
	// collects.
	Lean bool
}

// MinBeyondHeadGrace is the least age of an object at or beyond its
// stream's head that gc deletes, whatever --grace says (0s included): a
// live broker appends an object first and publishes the head after, so a
// young object beyond the head may be an append in flight, not a
// leftover. No broker's append takes this long between its PUT and its
// head CAS (docs/design.md, "Leases").
const MinBeyondHeadGrace = 15 * time.Minute

// GCItem is one object gc deletes (or would delete).
type GCItem struct {
	Key       string `json:"key"`
	Size      int64  `json:"size"`
	Category  string `json:"category"`
	Partition string `json:"partition,omitempty"`
}

// GCPartition is the per-partition outcome.
type GCPartition struct {
	Partition string `json:"partition"`
	Trim      int64  `json:"trim"`
	Objects   int    `json:"objects"`
	Bytes     int64  `json:"bytes"`
	Skipped   string `json:"skipped,omitempty"` // why below-trim data was kept
	// Error is why nothing was collected in the partition (a document that
	// does not decode, a head rolled back below the stream's data, an I/O
	// failure); the other partitions are still collected.
	Error string `json:"error,omitempty"`
	// KeptBeyondHead counts objects beyond the head older than --grace
	// but younger than MinBeyondHeadGrace, kept as a broker's append that
	// may still be in flight.
	KeptBeyondHead int `json:"kept_beyond_head"`
	err            error
}

// Err is the partition's failure (nil when it was collected); it wraps
// layout.ErrCorruptDocument or layout.ErrHeadRollback when the store holds wrong
// bytes.
func (p GCPartition) Err() error { return p.err }

// GCReport is the outcome of a gc run.
type GCReport struct {
	DryRun     bool                `json:"dry_run"`
	Items      []GCItem            `json:"items"`
	Partitions []GCPartition       `json:"partitions"`
	Totals     map[string]GCTotals `json:"totals"`
	Objects    int                 `json:"objects"`
	Bytes      int64               `json:"bytes"`
	Errors     []string            `json:"errors"`
	// KeptBeyondHead is the sum of the partitions' KeptBeyondHead.
	KeptBeyondHead int `json:"kept_beyond_head"`

	lean bool // GCOptions.Lean
	done int  // partitions reported (Partitions holds them unless lean)
}

// Done is how many partitions the run reported (collected, or left alone
// with their error), whether or not Partitions lists them (GCOptions.Lean).
func (rep *GCReport) Done() int { return rep.done }

// GCTotals counts one category.
type GCTotals struct {
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// GC deletes garbage: objects of sealed segments wholly below each stream's
// durable trim (only when a valid checkpoint at or above the trim keeps
// what they held), leftovers beyond the head or off the chain older than
// the grace period, stale checkpoints, and old task files. It never deletes
// anything a binding, head, live generation or kept checkpoint references.
// Deletions go objects first, manifests next, checkpoints last, so a killed
// gc leaves only garbage that the next run finds again.
func GC(ctx context.Context, st store.Store, tps []layout.TopicPartition, o GCOptions) (*GCReport, error) {
	rep := &GCReport{DryRun: o.DryRun, Items: []GCItem{}, Partitions: []GCPartition{}, Totals: map[string]GCTotals{}, Errors: []string{}, lean: o.Lean}
	// Partitions --parallel at once, each decided and deleted inside
	// o.Partition (its lease); the report keeps the partitions' order
	// (fleet.Each: each outcome is added as soon as those before it are,
	// and not kept beyond).
	type outcome struct {
		items []GCItem // what was deleted (or would be)
		gp    GCPartition
	}
	err := fleet.Each(ctx, o.Parallel, tps, func(ctx context.Context, _ int, tp layout.TopicPartition) (outcome, error) {
		var out outcome
		out.gp = GCPartition{Partition: tp.String()}
		run := func(ctx context.Context) error {
			items, gp, err := gcPartition(ctx, st, tp, o)
			out.gp = gp
			if err != nil {
				return err
			}
			if o.Decided != nil && !o.DryRun {
				o.Decided(tp)
			}
			var fence func(context.Context, string) error
			if o.Partition != nil {
				fence = o.Fence
			}
			done, err := deleteItems(ctx, st, items, o.DryRun, fence)
			out.items = done
			for _, it := range items {
				out.gp.Objects++
				out.gp.Bytes += it.Size
			}
			if err == nil && !o.DryRun {
				// The proofs of what was collected go with it.
				err = dropProofs(ctx, st, tp, done, o.Now)
			}
			return err
		}
		var err error
		if o.Partition != nil && !o.DryRun {
			err = o.Partition(ctx, tp, run)
		} else {
			err = run(ctx)
		}
		if err != nil {
			err = fmt.Errorf("gc %s: %w", tp, err)
			out.gp.err, out.gp.Error = err, err.Error()
		}
		if o.Progress != nil {
			o.Progress(1)
		}
		return out, ctx.Err()
	}, func(_ int, _ layout.TopicPartition, out outcome) error {
		rep.record(out.items)
		if out.gp.Error != "" {
			rep.Errors = append(rep.Errors, out.gp.Error)
		}
		rep.KeptBeyondHead += out.gp.KeptBeyondHead
		rep.done++
		if !o.Lean || out.gp.Skipped != "" || out.gp.Error != "" {
			rep.Partitions = append(rep.Partitions, out.gp)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	// The streams of bindings deleted on purpose (delete-binding), once
	// their record is older than the grace: each under its partition's
	// lease, as a partition's garbage is.
	deleted, derrs, err := gcDeleted(ctx, st, o)
	if err != nil {
		return rep, err
	}
	rep.Errors = append(rep.Errors, derrs...)
	for _, items := range deleted {
		tp, perr := layout.ParseTopicPartition(items[0].Partition)
		var fence func(context.Context, string) error
		if perr == nil && o.Partition != nil {
			fence = o.Fence // under the partition's lease: prove it before each delete
		}
		run := func(ctx context.Context) error {
			done, err := deleteItems(ctx, st, items, o.DryRun, fence)
			rep.record(done)
			return err
		}
		if perr == nil && o.Partition != nil && !o.DryRun {
			err = o.Partition(ctx, tp, run)
		} else {
			err = run(ctx)
		}
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("gc: deleted stream of %s: %v", items[0].Partition, err))
		}
	}
	tasks, err := st.List(ctx, layout.TasksPrefix)
	if err != nil {
		return rep, fmt.Errorf("gc: list tasks: %w", err)
	}
	// A compaction task of a stream that still exists is its partition's
	// (collected above, under the partition's lease); the sweep here takes
	// the others once old (a deleted stream's).
	var items []GCItem
	live := map[string]bool{}
	for _, in := range tasks {
		// A retention run's progress is its resume point, whatever its
		// age, and so is the demo's record: never garbage
		// (layout.RetentionTasksPrefix, layout.DemoTasksPrefix).
		if !old(in, o) || strings.HasPrefix(in.Key, layout.RetentionTasksPrefix) || strings.HasPrefix(in.Key, layout.DemoTasksPrefix) {
			continue
		}
		if sid, ok := compactTaskStream(in.Key); ok {
			exists, seen := live[sid]
			if !seen {
				_, err := st.Head(ctx, layout.HeadKey(sid))
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					rep.Errors = append(rep.Errors, fmt.Sprintf("gc: task %s: %v", in.Key, err))
					continue
				}
				exists = err == nil
				live[sid] = exists
			}
			if exists {
				continue
			}
		}
		items = append(items, GCItem{Key: in.Key, Size: in.Size, Category: GarbageTask})
	}
	if err := rep.apply(ctx, st, items, o.DryRun); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	// Temp files a killed writer left on file:// (never an object: their
	// names cannot be keys), after the same grace; RemoveStaleTemps never
	// removes one younger than a minute.
	tmp, err := store.RemoveStaleTemps(ctx, st, o.Now, o.Grace, o.DryRun)
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("gc: temp files: %v", err))
	}
	if tmp != nil {
		for _, f := range tmp.Files {
			if !rep.lean {
				rep.Items = append(rep.Items, GCItem{Key: f.Path, Size: f.Size, Category: GarbageTempFile})
			}
			t := rep.Totals[GarbageTempFile]
			t.Objects++
			t.Bytes += f.Size
			rep.Totals[GarbageTempFile] = t
			rep.Objects++
			rep.Bytes += f.Size
		}
	}
	return rep, nil
}

// compactTaskStream is the stream a compaction task key belongs to
// (tasks/compact-<sid>/...).
func compactTaskStream(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, layout.TasksPrefix+"compact-")
	if !ok {
		return "", false
	}
	sid, _, ok := strings.Cut(rest, "/")
	return sid, ok && sid != ""
}

// dropProofs removes the deleted objects' entries from their stream's
// proof ledger (layout.DropProofs; a CAS, not a destructive step).
func dropProofs(ctx context.Context, st store.Store, tp layout.TopicPartition, done []GCItem, now time.Time) error {
	by := map[string][]string{}
	for _, it := range done {
		rest, ok := strings.CutPrefix(it.Key, layout.StreamsPrefix)
		if sid, _, ok2 := strings.Cut(rest, "/"); ok && ok2 {
			by[sid] = append(by[sid], it.Key)
		}
	}
	if now.IsZero() {
		now = time.Now()
	}
	for sid, keys := range by {
		if err := layout.DropProofs(ctx, st, tp, sid, keys, now.UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

func old(in store.ObjectInfo, o GCOptions) bool {
	return !in.Modified.IsZero() && o.Now.Sub(in.Modified) >= o.Grace
}

// apply deletes items and records them in the report.
func (rep *GCReport) apply(ctx context.Context, st store.Store, items []GCItem, dryRun bool) error {
	done, err := deleteItems(ctx, st, items, dryRun, nil)
	rep.record(done)
	return err
}

// deleteItems deletes items in order (none in a dry run) and returns those
// deleted (all of them in a dry run) up to the first failure. fence, when
// set, is called before each delete (it reads no store: GCOptions.Fence).
func deleteItems(ctx context.Context, st store.Store, items []GCItem, dryRun bool, fence func(context.Context, string) error) ([]GCItem, error) {
	for i, it := range items {
		if !dryRun {
			if fence != nil {
				if err := fence(ctx, "gc delete "+it.Key); err != nil {
					return items[:i], err
				}
			}
			if err := st.Delete(ctx, it.Key, store.None()); err != nil && !errors.Is(err, store.ErrNotFound) {
				return items[:i], fmt.Errorf("delete %s: %w", it.Key, err)
			}
		}
	}
	return items, nil
}

// record adds deleted items to the report's list and totals.
func (rep *GCReport) record(items []GCItem) {
	for _, it := range items {
		if !rep.lean {
			rep.Items = append(rep.Items, it)
		}
		t := rep.Totals[it.Category]
		t.Objects++
		t.Bytes += it.Size
		rep.Totals[it.Category] = t
		rep.Objects++
		rep.Bytes += it.Size
	}
}

// gcPartition finds one partition's garbage, in deletion order, by the
// steps of docs/ARCHITECTURE.md ("Trim, retention run, gc"): the health
// gate; the generations (live, below the trim, compacted); the superseded
// views; the checkpoints and the retention floor; what lies below the
// trim; the leftovers off the chain or beyond the head; the compaction
// task.
func gcPartition(ctx context.Context, st store.Store, tp layout.TopicPartition, o GCOptions) ([]GCItem, GCPartition, error) {
	p, err := gcGate(ctx, st, tp, o)
	if err != nil {
		return nil, p.gp, err
	}
	p.generations()
	if err := p.supersededViews(ctx, st); err != nil {
		return nil, p.gp, err
	}
	p.checkpoints(ctx, st)
	p.belowTrimItems()
	p.leftovers()
	return p.items(ctx, st)
}

// gcScan is one partition's garbage collection as it is decided.
type gcScan struct {
	o        GCOptions
	b        *layout.Binding
	h        *layout.Head
	obs      *health.Observed
	gp       GCPartition
	name     string
	modified map[string]store.ObjectInfo // the objects listed, by key

	referenced    map[string]bool // objects a live generation, view or checkpoint needs
	belowTrim     []*layout.Generation
	compacted     []*layout.Generation
	lastSealedEnd int64
	floor         bool // a valid checkpoint at or above the trim keeps what lies below

	dataItems, manifestItems, cpItems, viewItems, viewManifests []GCItem
}

// gcGate loads the binding and passes the health gate: what is garbage
// depends on documents that decode and agree, on a head that was not
// rolled back, and on manifests that name every live object; a partition
// that fails it is refused whole (nothing in it is collected). A partition
// that is only blocked — quarantined coverage whose damage only a deep read
// shows — keeps its garbage rules: the set's members and sources are kept
// for repair.
func gcGate(ctx context.Context, st store.Store, tp layout.TopicPartition, o GCOptions) (*gcScan, error) {
	p := &gcScan{o: o, gp: GCPartition{Partition: tp.String()}, name: tp.String(), referenced: map[string]bool{}, lastSealedEnd: -1}
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		return p, err
	}
	hrep, obs, err := health.Gather(ctx, st, b, health.Prior{})
	if err != nil {
		return p, err
	}
	if len(hrep.Findings) > 0 {
		return p, fmt.Errorf("%w; deleting nothing in this partition: run 'nereusctl verify %s'", hrep.Err(), tp)
	}
	p.b, p.h, p.obs = b, obs.Head, obs
	p.gp.Trim = p.h.Trim
	p.modified = make(map[string]store.ObjectInfo, len(obs.Objects))
	for _, ob := range obs.Objects {
		p.modified[ob.Key] = store.ObjectInfo{Key: ob.Key, Size: ob.Size, ETag: ob.ETag, Modified: ob.Modified}
	}
	return p, nil
}

// generations sorts the manifests (every one decoded: the gate passed):
// COMMITTED ones wholly below the trim, the live ones (their objects
// referenced), the compacted ones.
func (p *gcScan) generations() {
	for _, m := range p.obs.Manifests {
		g := m.G
		if g.Kind == layout.KindTopicCompacted {
			p.compacted = append(p.compacted, g)
			continue
		}
		if g.Kind == layout.KindCommitted {
			p.lastSealedEnd = max(p.lastSealedEnd, g.End)
			if g.End <= p.h.Trim {
				p.belowTrim = append(p.belowTrim, g)
				continue
			}
		}
		for _, ob := range g.Objects {
			p.referenced[ob.Key] = true
		}
	}
}

// supersededViews: the coverage's members (ACTIVE or QUARANTINED) and their
// sources are kept (repair --regenerate needs the sources); so is anything
// newer than the set (a compaction in flight). Older compacted generations
// were superseded, and NTC2 objects no kept generation references are an
// abandoned run's: both garbage once older than the grace.
func (p *gcScan) supersededViews(ctx context.Context, st store.Store) error {
	keepGen := map[int64]bool{}
	maxMember := int64(-1)
	for _, m := range p.b.Coverage.Members {
		keepGen[m.Gen] = true
		maxMember = max(maxMember, m.Gen)
	}
	for _, g := range p.compacted {
		if keepGen[g.Gen] {
			for _, src := range g.Sources {
				keepGen[src.Gen] = true
			}
		}
	}
	genModified := make(map[string]store.ObjectInfo, len(p.obs.GenerationInfos))
	for _, in := range p.obs.GenerationInfos {
		genModified[in.Key] = in
	}
	for _, g := range p.compacted {
		key := layout.GenerationKey(p.b.StreamID, g.Gen)
		if keepGen[g.Gen] || g.Gen > maxMember || !old(genModified[key], p.o) {
			for _, ob := range g.Objects {
				p.referenced[ob.Key] = true
			}
			continue
		}
		p.viewManifests = append(p.viewManifests, GCItem{Key: key, Category: GarbageCompacted, Partition: p.name})
	}
	var views []store.ObjectInfo
	if p.obs.HaveCompacted {
		for _, in := range p.obs.Compacted {
			views = append(views, in)
		}
		sort.Slice(views, func(i, j int) bool { return views[i].Key < views[j].Key })
	} else {
		var err error
		if views, err = st.List(ctx, layout.CompactedPrefix(p.b.StreamID)); err != nil {
			return err
		}
	}
	for _, in := range views {
		if !p.referenced[in.Key] && old(in, p.o) {
			p.viewItems = append(p.viewItems, GCItem{Key: in.Key, Size: in.Size, Category: GarbageCompacted, Partition: p.name})
		}
	}
	return nil
}

// checkpoints: those anchored at or above the trim are kept, with the
// object their anchor names; so are the binding's reference and the
// import's genesis. One valid checkpoint at or above the trim is the
// retention floor (the others need no reading); those anchored below the
// trim are garbage.
func (p *gcScan) checkpoints(ctx context.Context, st store.Store) {
	b, h, objs := p.b, p.h, p.obs.Objects
	for _, in := range p.obs.Checkpoints {
		anchor, _, err := layout.ParseCheckpointKey(in.Key)
		if err != nil {
			continue
		}
		ref := (b.CheckpointRef != nil && b.CheckpointRef.Key == in.Key) || (b.ImportGenesis() != nil && b.ImportGenesis().Key == in.Key)
		if anchor >= h.Trim || ref {
			if anchor >= h.Trim && !p.floor {
				if _, reason, _ := recovery.Check(ctx, st, b, h, recovery.AllObjects(objs), in); reason == "" {
					p.floor = true
				}
			}
			for _, ob := range objs {
				if ob.End == anchor && ob.Base < anchor {
					p.referenced[ob.Key] = true
				}
			}
			continue
		}
		p.cpItems = append(p.cpItems, GCItem{Key: in.Key, Size: in.Size, Category: GarbageCheckpoint, Partition: p.name})
	}
}

// belowTrimItems: the objects and manifests of the segments wholly below
// the trim, only with a retention floor, which keeps the producer state
// those segments held (without one, nothing below the trim and no stale
// checkpoint goes, and the report says why).
func (p *gcScan) belowTrimItems() {
	if len(p.belowTrim) > 0 && !p.floor {
		p.gp.Skipped = fmt.Sprintf("no valid checkpoint anchored at or above the trim %d keeps what the %d segments below it hold; run 'nereusctl checkpoint create %s' first", p.h.Trim, len(p.belowTrim), p.name)
		p.cpItems = nil
		return
	}
	for _, g := range p.belowTrim {
		for _, ob := range g.Objects {
			if p.referenced[ob.Key] {
				continue
			}
			if _, ok := p.modified[ob.Key]; ok {
				p.dataItems = append(p.dataItems, GCItem{Key: ob.Key, Size: ob.Size, Category: GarbageBelowTrim, Partition: p.name})
			}
			p.referenced[ob.Key] = true // handled
		}
		p.manifestItems = append(p.manifestItems, GCItem{Key: layout.GenerationKey(p.b.StreamID, g.Gen), Category: GarbageBelowTrim, Partition: p.name})
	}
}

// leftovers: objects beyond the head, or below it but off the chain and
// in no generation, once older than the grace period (beyond the head,
// never younger than MinBeyondHeadGrace: a live broker's append).
func (p *gcScan) leftovers() {
	objs, h := p.obs.Objects, p.h
	first := stream.FirstOffset(objs, h.Head)
	chain, chainErr := stream.Chain(objs, first, h.Head)
	onChain := map[string]bool{}
	for _, ob := range chain {
		onChain[ob.Key] = true
	}
	for _, ob := range objs {
		in := p.modified[ob.Key]
		switch {
		case p.referenced[ob.Key] || onChain[ob.Key] || !old(in, p.o):
		case (ob.Base >= h.Head || ob.End > h.Head) && !in.Modified.IsZero() && p.o.Now.Sub(in.Modified) < MinBeyondHeadGrace:
			p.gp.KeptBeyondHead++
		case ob.Base >= h.Head || ob.End > h.Head:
			p.dataItems = append(p.dataItems, GCItem{Key: ob.Key, Size: ob.Size, Category: GarbageBeyondHead, Partition: p.name})
		case chainErr == nil && ob.Base >= first && ob.End > p.lastSealedEnd:
			// Off the chain inside the open segment's range: a failed
			// append's leftover.
			p.dataItems = append(p.dataItems, GCItem{Key: ob.Key, Size: ob.Size, Category: GarbageOffChain, Partition: p.name})
		}
	}
}

// items is the garbage in deletion order — data objects, views, manifests,
// view manifests, checkpoints — every key inside the stream's prefix, then
// the stream's compaction task once older than the grace (collected here,
// under the partition's lease, so never from under a running compaction).
func (p *gcScan) items(ctx context.Context, st store.Store) ([]GCItem, GCPartition, error) {
	sort.SliceStable(p.dataItems, func(i, j int) bool { return p.dataItems[i].Key < p.dataItems[j].Key })
	items := append(append(append(append(p.dataItems, p.viewItems...), p.manifestItems...), p.viewManifests...), p.cpItems...)
	for _, it := range items {
		if !strings.HasPrefix(it.Key, layout.StreamPrefix(p.b.StreamID)) {
			return nil, p.gp, fmt.Errorf("gc: refusing to delete %s outside stream %s", it.Key, p.b.StreamID)
		}
	}
	tasks, err := st.List(ctx, compaction.TaskPrefix(p.b.StreamID))
	if err != nil {
		return nil, p.gp, err
	}
	for _, in := range tasks {
		if old(in, p.o) {
			items = append(items, GCItem{Key: in.Key, Size: in.Size, Category: GarbageTask, Partition: p.name})
		}
	}
	return items, p.gp, nil
}
