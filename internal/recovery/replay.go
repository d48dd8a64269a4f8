// Package recovery owns bounded restart replay and NKC1 checkpoint
// management (docs/design.md §5, §6): choosing a checkpoint that does not lead the
// head, verifying it (object, CRCs, root, anchor digest, binding reference),
// hydrating it, replaying the COMMITTED tail, applying the durable trim, and
// creating, listing and verifying checkpoints.
//
// A checkpoint only accelerates: nothing here changes a stream head, a trim
// or coordinator truth. The only mutations are publishing a new checkpoint
// (IfAbsent) and CASing the binding's checkpoint_ref.
package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// MaxCheckpointBytes caps a checkpoint object read from the store.
const MaxCheckpointBytes = 1 << 30

// Reason says why replay did not use a checkpoint.
type Reason string

// Skip reasons for checkpoints replay did not use.
const (
	ReasonLeadsHead      Reason = "leads the head"
	ReasonDigestMismatch Reason = "anchor object digest mismatch"
	ReasonAnchorMissing  Reason = "anchor object missing"
	ReasonCorrupt        Reason = "corrupt checkpoint"
	ReasonObject         Reason = "object check failed"
	ReasonBinding        Reason = "binding reference mismatch"
	ReasonNewerChosen    Reason = "a newer checkpoint was chosen"
	ReasonOlderChosen    Reason = "an older checkpoint is the retention floor"
)

// Candidate is a checkpoint replay considered.
type Candidate struct {
	Key      string    `json:"key"`
	Anchor   int64     `json:"anchor"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	SHA256   string    `json:"sha256,omitempty"` // of the chosen one
	Root     string    `json:"root,omitempty"`   // of the chosen one
	Status   string    `json:"status"`           // chosen, skipped, not-needed
	Reason   Reason    `json:"reason,omitempty"`
	Detail   string    `json:"detail,omitempty"`
}

// TailStats describes what was replayed after the hydrated state.
type TailStats struct {
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Objects int   `json:"objects"`
	Batches int64 `json:"batches"`
	Bytes   int64 `json:"bytes"`

	headObject, headSHA string
	changed             bool // a seal happened without any batch
}

// Result is the outcome of a replay.
type Result struct {
	Binding    *layout.Binding
	Head       layout.Head
	Chosen     *Candidate // nil on a full replay
	Candidates []Candidate
	Tail       TailStats
	State      *state.Partition
	digest     string
	Full       bool
	// Floor: a full replay that started from the oldest valid checkpoint
	// because the objects below the first retained one, all under the
	// durable trim, were removed by gc.
	Floor bool
	// Sources maps every sealed segment's COMMITTED generation still in the
	// state to its manifest digest (the checkpoint's coverage section).
	Sources map[int64]string
	// SameAsChosen: nothing changed the hydrated checkpoint's state (no
	// batch, no seal, no trim), so it is the state at the head.
	SameAsChosen bool
	// Genesis: a full replay that started from the checkpoint anchored at
	// the stream's first offset (the state from before it, e.g. a broker
	// snapshot's producers at import), not from the empty state.
	Genesis bool
	// HeadObject is the object ending at the head and its SHA-256 (the
	// anchor a checkpoint made from this result names); empty for an
	// empty stream.
	HeadObject, HeadObjectSHA256 string
	// Clock is the clock producer expiration was applied at (Options.Clock;
	// unset: none was applied).
	Clock state.Clock
	// CheckpointClock is the clock the chosen checkpoint was made with
	// (unset: it records none, or no checkpoint was chosen).
	CheckpointClock state.Clock
	// StateClock is the canonical expiration clock of the state
	// (state.Horizon): the chosen checkpoint's, moved on by what this
	// replay expired; unset when no expiration shaped it. A checkpoint
	// made from this result records it.
	StateClock    state.Clock
	latestExpired int64 // the latest lastTimestamp this replay expired
	anyExpired    bool
	// Expired lists the producers this replay dropped by expiration, at
	// the checkpoint's load and at the end, ascending.
	Expired []int64
	// Health is the partition's health (internal/health) from what this
	// replay read and the manifests it did not: every reader reports it,
	// every mutating operation refuses a partition it does not pass.
	Health *health.Report
	// manifests are the generation manifests the health check saw (read,
	// or known unchanged from the chosen checkpoint): what a checkpoint
	// made from this result records.
	manifests []health.Manifest
	// known is what the chosen checkpoint recorded of the manifests.
	known map[int64]health.KnownManifest
}

// Options steer a replay.
type Options struct {
	// Full ignores every checkpoint and replays from the first offset.
	Full bool
	// VerifyCRC is kept for compatibility and ignored: every batch CRC-32C
	// a replay applies is checked, always (and every sealed object's size
	// and CRC-32C against its COMMITTED manifest).
	VerifyCRC bool
	// MaxAnchor, when > 0, only considers checkpoints anchored at or below
	// it (benchmarks of tail length; forensics).
	MaxAnchor int64
	// Clock is the clock producer expiration is applied at
	// (ProducerStateManager.isProducerExpired): when a checkpoint is
	// hydrated (loadFromSnapshot drops expired producers) and once more on
	// the state at the head. The zero Clock expires nothing.
	Clock state.Clock
	// AsOfCheckpoint, for a full replay compared with a checkpoint path
	// (replay --compare), also expires producers where that checkpoint
	// was anchored, at the clock it was made with and then at Clock, as
	// the checkpoint path did: both sides then apply the same clocks at
	// the same offsets and their digests compare like for like.
	AsOfCheckpoint *CheckpointClock
	// RequireHealthy makes an unhealthy partition (Result.Health's
	// MutationErr) an error (a *health.Error: corrupt or missing data, or
	// blocked): what every mutating operation replays with, so that
	// nothing is written over a partition verify would fail.
	RequireHealthy bool
	// Log receives the replay's fallbacks at info level: a checkpoint
	// skipped and why, a full replay because none could be used, a full
	// replay that starts from the retention floor. nil logs nothing.
	Log *slog.Logger
}

// expire drops the producers expired at c and notes them.
func (r *Result) expire(part *state.Partition, c state.Clock) {
	gone, latest := part.ExpireProducers(c)
	r.Expired = append(r.Expired, gone...)
	if len(gone) > 0 && (!r.anyExpired || latest > r.latestExpired) {
		r.latestExpired, r.anyExpired = latest, true
	}
}

// CheckpointClock is a checkpoint's anchor and the clock it was made with.
type CheckpointClock struct {
	Anchor int64
	Clock  state.Clock
}

// logFallbacks logs what the replay did instead of the fastest path.
func (r *Result) logFallbacks(log *slog.Logger, full bool) {
	if log == nil {
		return
	}
	name := r.Binding.Name()
	for _, c := range r.Candidates {
		if c.Status == "skipped" {
			log.Info("replay: checkpoint skipped", "partition", name, "checkpoint", c.Key, "anchor", c.Anchor, "reason", c.Reason, "detail", c.Detail)
		}
	}
	switch {
	case r.Floor && r.Chosen != nil:
		log.Info("replay: full replay starts from the retention floor (objects below it were collected)", "partition", name, "checkpoint", r.Chosen.Key, "anchor", r.Chosen.Anchor)
	case !full && r.Chosen == nil:
		log.Info("replay: no usable checkpoint: full replay", "partition", name, "candidates", len(r.Candidates))
	}
}

// HintDataLoss is the operator hint attached to a data-loss error.
const HintDataLoss = "the stream has lost committed data: restore the missing objects from a replica (docs/runbooks/restore-from-replica.md); do not trim, compact or gc this partition until then"

// Replay runs the seven steps of docs/design.md §6 for one binding.
//
// Data loss is never mistaken for gc: objects below the durable trim may be
// gone, but every offset in [trim, head) must be held by the chain of
// objects to the head, whichever path the replay takes (a checkpoint hides
// the objects below its anchor, so they are checked from the listing). A
// hole is a *stream.MissingError (exit 3) naming the missing ranges.
func Replay(ctx context.Context, st store.Store, b *layout.Binding, opt Options) (*Result, error) {
	if err := b.CheckNotBlocked(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	// 1. Read the head and list the stream.
	h, lister, err := openStream(ctx, st, b, opt.Full)
	if err != nil {
		return nil, err
	}
	defer lister.wait()
	r := &replayer{st: st, b: b, h: h, opt: opt, lister: lister, lastGen: -1,
		res: &Result{Binding: b, Head: *h, Full: opt.Full, Sources: map[int64]string{}}}
	// 2-4. Choose, verify and hydrate a checkpoint.
	if err := r.startState(ctx); err != nil {
		return nil, err
	}
	// 5. Replay the COMMITTED tail to the head.
	if err := r.toHead(ctx); err != nil {
		return nil, err
	}
	// 6. Apply the durable trim.
	r.applyTrim()
	res, part := r.res, r.part
	// 7. Report, with the partition's health.
	res.State = part
	res.logFallbacks(opt.Log, opt.Full)
	rep, obs, err := health.Gather(ctx, st, b, health.Prior{Head: h, Lister: lister, ObjectsFrom: lister.ListedFrom(), Manifests: lister.readManifests(), Known: res.known, Skipped: skippedCheckpoints(res.Candidates, b, h)})
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", b.Name(), err)
	}
	res.Health, res.manifests = rep, obs.Manifests
	if opt.RequireHealthy {
		if err := rep.MutationErr(); err != nil {
			return res, err
		}
	}
	// The state digest is computed when asked for (replay, compare,
	// checkpoint create): status, trims and compaction do not need it.
	return res, nil
}

// replayer is one replay under way: the documents it read, the partition
// state it builds, and the result it fills.
type replayer struct {
	st      store.Store
	b       *layout.Binding
	h       *layout.Head
	opt     Options
	lister  *Objects
	res     *Result
	part    *state.Partition // the state being built (nil: none yet)
	lastGen int64            // the newest generation the start state holds
}

// hydrate takes cands[chosen]'s checkpoint (if any) as the start state.
func (r *replayer) hydrate(cands []Candidate, chosen int, cp *nkc1.Checkpoint) {
	r.res.Candidates = cands
	if chosen < 0 {
		return
	}
	c := cands[chosen]
	r.res.Chosen = &c
	r.part = cp.State
	// A checkpoint made before the final time-index entry rule
	// (state.CompleteSealedTimeIndexes) is read as today's rules
	// derive it.
	r.part.CompleteSealedTimeIndexes()
	if cp.Clock != nil {
		r.res.CheckpointClock = *cp.Clock
	}
	// ProducerStateManager.loadFromSnapshot: a producer expired at the
	// clock is not loaded.
	r.res.expire(r.part, r.opt.Clock)
	r.res.HeadObject, r.res.HeadObjectSHA256 = cp.Anchor.ObjectKey, cp.Anchor.ObjectSHA256
	r.res.known = knownManifests(cp)
	_, r.lastGen = r.part.SealedEnd()
	r.lastGen = max(r.lastGen, maxSourceGen(cp.Coverage.Sources))
	for _, s := range cp.Coverage.Sources {
		r.res.Sources[s.Gen] = s.ManifestSHA256
	}
}

// startState is replay's steps 2-4 (docs/design.md §6): choose, verify and
// hydrate a checkpoint, prove [trim, head) complete, and, without a
// checkpoint, start from the retention floor (full), the import's genesis,
// a checkpoint at the first offset, or the empty state.
func (r *replayer) startState(ctx context.Context) error {
	if !r.opt.Full {
		cands, chosen, cp, err := choose(ctx, r.st, r.b, r.h, r.lister, true, r.opt.MaxAnchor)
		if err != nil {
			return err
		}
		r.hydrate(cands, chosen, cp)
	}
	// No hole between the durable trim and the head, on every path.
	if err := checkRetained(ctx, r.lister, r.b, r.h, r.part); err != nil {
		return err
	}
	if r.part == nil {
		all, err := r.lister.All(ctx)
		if err != nil {
			return fmt.Errorf("replay %s: %w", r.b.Name(), err)
		}
		first := stream.FirstOffset(all, r.h.Head)
		if first > r.h.Trim {
			// Not a hole (checkRetained saw none): two objects end at the
			// same offset. Chain names the ambiguity.
			if _, err := stream.Chain(all, r.h.Trim, r.h.Head); err != nil {
				return fmt.Errorf("replay %s: %w", r.b.Name(), err)
			}
			return fmt.Errorf("replay %s: %w: the chain of objects to the head starts at %d, above the durable trim %d", r.b.Name(), stream.ErrMissing, first, r.h.Trim)
		}
		if first > r.h.Start {
			// The objects below the first retained one, all under the
			// durable trim, are gone (gc): what they held lives on only in
			// checkpoints, as a broker keeps it in producer snapshots. A
			// full replay starts from the oldest valid checkpoint, the
			// retention floor, and replays every object from its anchor.
			if r.opt.Full {
				cands, chosen, cp, err := choose(ctx, r.st, r.b, r.h, r.lister, false, 0)
				if err != nil {
					return err
				}
				r.hydrate(cands, chosen, cp)
				r.res.Floor = r.res.Chosen != nil
			}
			if r.part == nil {
				return errkind.Hint(fmt.Errorf("replay %s: %w: the objects for offsets [%d, %d), below the durable trim %d, are missing and no valid checkpoint holds the state they carried", r.b.Name(), stream.ErrMissing, r.h.Start, first, r.h.Trim),
					"restore a checkpoint anchored at or above the trim, or the missing objects, from a replica (docs/runbooks/restore-from-replica.md)")
			}
		} else {
			// The stream's genesis state: a checkpoint anchored at its
			// first offset (import writes one with the producers of the
			// broker's .snapshot file and the leader epochs of its
			// leader-epoch-checkpoint whose batches are gone) holds the
			// state the stream starts from, as a broker's snapshot at its
			// log start does. A full replay starts from it, or from the
			// empty state when there is none. (maxAnchor 0 is no bound.)
			//
			// An import that used a broker snapshot records its genesis in
			// the binding (import.genesis), anchored where Kafka's log
			// loader starts rebuilding the producer state (the snapshot's
			// offset): the broker never replays the segments the snapshot
			// covers, and neither does a full replay.
			if g := r.b.ImportGenesis(); g != nil {
				cands, chosen, cp, err := chooseKey(ctx, r.st, r.b, r.h, r.lister, g.Key, g.SHA256)
				if err != nil {
					return err
				}
				if chosen >= 0 {
					r.hydrate(cands, chosen, cp)
					r.res.Genesis = true
				} else {
					r.res.Candidates = cands
				}
			} else {
				cands, chosen, cp, err := choose(ctx, r.st, r.b, r.h, r.lister, false, max(first, 1))
				if err != nil {
					return err
				}
				if chosen >= 0 && cp.Anchor.Offset == first {
					r.hydrate(cands, chosen, cp)
					r.res.Genesis = true
				}
			}
		}
		if r.part == nil {
			r.part = state.New(first)
		}
	}

	return nil
}

// toHead is replay's step 5: the COMMITTED tail from the start state to
// the head, expiring producers where the checkpoint a full replay mirrors
// was anchored.
func (r *replayer) toHead(ctx context.Context) error {
	objs, err := r.lister.From(ctx, r.part.NextOffset)
	if err != nil {
		return fmt.Errorf("replay %s: %w", r.b.Name(), err)
	}
	ac := r.opt.AsOfCheckpoint
	if r.opt.Full && ac == nil {
		// A full replay expires, where the newest valid checkpoint is
		// anchored, at the clock that checkpoint records, as the
		// checkpoint path's state was: both paths give the same state.
		_, chosen, cp, err := choose(ctx, r.st, r.b, r.h, r.lister, true, r.opt.MaxAnchor)
		if err != nil {
			return err
		}
		if chosen >= 0 && cp.Clock != nil {
			ac = &CheckpointClock{Anchor: cp.Anchor.Offset, Clock: *cp.Clock}
		}
	}
	var at func(end int64)
	if ac != nil && ac.Anchor >= r.part.NextOffset {
		at = func(end int64) {
			if end == ac.Anchor {
				r.part.RemoveExpiredProducers(ac.Clock)
				r.res.expire(r.part, r.opt.Clock)
			}
		}
	}
	if err := replayTail(ctx, r.st, r.lister, r.part, objs, r.h.Head, r.h.LeaderEpochs, r.lastGen, &r.res.Tail, r.res.Sources, at); err != nil {
		return fmt.Errorf("replay %s: %w", r.b.Name(), err)
	}
	if r.res.Tail.headObject != "" {
		r.res.HeadObject, r.res.HeadObjectSHA256 = r.res.Tail.headObject, r.res.Tail.headSHA
	}
	return nil
}

// applyTrim is replay's step 6: the durable trim, producer expiration at
// the command's clock, the state's clock, and the generations still live.
func (r *replayer) applyTrim() {
	startBefore := r.part.LogStart
	r.part.ApplyLogStart(r.h.Trim)
	// Producer expiration at the command's clock, on the state at the head
	// (docs/kafka-retention-rules.md, "Producer expiration").
	r.res.expire(r.part, r.opt.Clock)
	slices.Sort(r.res.Expired)
	r.res.Clock = r.opt.Clock
	r.res.StateClock = r.res.CheckpointClock
	if h := state.Horizon(r.res.latestExpired, r.opt.Clock.ExpirationMs); r.res.anyExpired && h.Set() {
		// The threshold (clock − expiration) the state is expired to: the
		// later of the checkpoint's and this replay's.
		if c := r.res.CheckpointClock; !c.Set() || c.NowMs-c.ExpirationMs < h.NowMs-h.ExpirationMs {
			r.res.StateClock = h
		} else {
			r.res.StateClock = state.Clock{NowMs: c.NowMs - c.ExpirationMs + h.ExpirationMs, ExpirationMs: h.ExpirationMs}
		}
	}
	r.res.SameAsChosen = r.res.Chosen != nil && r.res.Tail.Batches == 0 && !r.res.Tail.changed && r.part.LogStart == startBefore && len(r.res.Expired) == 0
	live := map[int64]bool{}
	for _, sg := range r.part.Segments {
		live[sg.Gen] = true
	}
	for gen := range r.res.Sources {
		if !live[gen] {
			delete(r.res.Sources, gen)
		}
	}
}

// knownManifests is what a checkpoint recorded of the manifests (nil for
// one made before NKC1 section manifests).
func knownManifests(cp *nkc1.Checkpoint) map[int64]health.KnownManifest {
	if cp.Manifests == nil {
		return nil
	}
	out := make(map[int64]health.KnownManifest, len(cp.Manifests))
	for _, m := range cp.Manifests {
		out[m.Gen] = health.KnownManifest{Summary: layout.GenerationSummary{Gen: m.Gen, Kind: m.Kind, Base: m.Base, End: m.End}, Size: m.Size, MD5: m.MD5}
	}
	return out
}

// skippedCheckpoints are the candidates replay skipped because their
// bytes are wrong (health.SkippedCheckpoint.Damaged): corrupt, failing
// their object check or their binding reference, an anchor object whose
// digest differs or that is missing above the trim. A checkpoint leading
// the head is the beyond-head finding's; one whose anchor object was
// collected below the trim is stale, not damaged.
func skippedCheckpoints(cands []Candidate, b *layout.Binding, h *layout.Head) []health.SkippedCheckpoint {
	var out []health.SkippedCheckpoint
	for _, c := range cands {
		if c.Status != "skipped" {
			continue
		}
		damaged := true
		switch c.Reason {
		case ReasonLeadsHead:
			damaged = false
		case ReasonAnchorMissing:
			damaged = c.Anchor > h.Trim || b.CheckpointRef != nil && b.CheckpointRef.Key == c.Key
		}
		out = append(out, health.SkippedCheckpoint{Key: c.Key, Anchor: c.Anchor, Damaged: damaged, Reason: string(c.Reason), Detail: c.Detail})
	}
	return out
}

// checkRetained fails with a *stream.MissingError when an offset in
// [trim, head) is held by no object of the chain to the head. With a
// checkpoint hydrated it lists the objects from the highest object base at
// or below the trim that the checkpoint's state knows (a segment base or an
// offset-index entry: both are objects of the chain), so the listing covers
// the object holding the trim without listing what lies below; only a hole
// found that way is confirmed against the whole listing.
func checkRetained(ctx context.Context, lister *Objects, b *layout.Binding, h *layout.Head, part *state.Partition) error {
	if h.Trim >= h.Head {
		return nil
	}
	var objs []layout.StreamObject
	var err error
	from := int64(-1)
	if part != nil {
		from = listFloor(part, h.Trim)
	}
	if from >= 0 {
		// The range from the trim's object to the head, listed in a few
		// concurrent ranges cut at object bases the checkpoint knows.
		objs, err = lister.FromSplit(ctx, from, knownBases(part, from))
	} else {
		objs, err = lister.All(ctx)
	}
	if err != nil {
		return fmt.Errorf("replay %s: %w", b.Name(), err)
	}
	missing := stream.Missing(objs, h.Trim, h.Head)
	if len(missing) > 0 && from > 0 {
		if objs, err = lister.All(ctx); err != nil {
			return fmt.Errorf("replay %s: %w", b.Name(), err)
		}
		missing = stream.Missing(objs, h.Trim, h.Head)
	}
	if len(missing) == 0 {
		return nil
	}
	return errkind.Hint(fmt.Errorf("replay %s: %w", b.Name(), &stream.MissingError{Ranges: missing, Trim: h.Trim, Head: h.Head}), HintDataLoss)
}

// knownBases are the object bases above from that the hydrated state
// knows (segment bases, offset-index object bases, the anchor), ascending.
func knownBases(part *state.Partition, from int64) []int64 {
	var out []int64
	for _, sg := range part.Segments {
		if sg.Base > from {
			out = append(out, sg.Base)
		}
		for _, x := range sg.OffsetIndex {
			if x.ObjectBase > from {
				out = append(out, x.ObjectBase)
			}
		}
	}
	if part.NextOffset > from {
		out = append(out, part.NextOffset)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listFloor returns the highest offset at or below trim where an object of
// the chain starts, as far as the hydrated state knows (segment bases,
// offset-index object bases, the anchor); -1 when it knows none.
func listFloor(part *state.Partition, trim int64) int64 {
	best := int64(-1)
	for _, sg := range part.Segments {
		if sg.Base <= trim {
			best = max(best, sg.Base)
		}
		for _, x := range sg.OffsetIndex {
			if x.ObjectBase <= trim {
				best = max(best, x.ObjectBase)
			}
		}
	}
	if part.NextOffset <= trim {
		// The anchor is an object boundary too.
		best = max(best, part.NextOffset)
	}
	return best
}

// Digest is the state digest of the replayed state (computed once, on
// first use).
func (r *Result) Digest() string {
	if r.digest == "" {
		r.digest = state.Digest(r.State)
	}
	return r.digest
}

func maxSourceGen(srcs []nkc1.SourceRef) int64 {
	m := int64(-1)
	for _, s := range srcs {
		m = max(m, s.Gen)
	}
	return m
}

// choose lists checkpoints newest first (oldest first for the retention
// floor) and returns the first that passes every check; the others are
// reported with their reason.
func choose(ctx context.Context, st store.Store, b *layout.Binding, h *layout.Head, objs *Objects, newestFirst bool, maxAnchor int64) ([]Candidate, int, *nkc1.Checkpoint, error) {
	infos, err := objs.Checkpoints(ctx)
	if err != nil {
		return nil, -1, nil, fmt.Errorf("replay %s: list checkpoints: %w", b.Name(), err)
	}
	type entry struct {
		info   store.ObjectInfo
		anchor int64
	}
	var es []entry
	for _, in := range infos {
		a, _, err := layout.ParseCheckpointKey(in.Key)
		if err != nil || (maxAnchor > 0 && a > maxAnchor) {
			continue // not a checkpoint name (gc's business), or excluded
		}
		es = append(es, entry{in, a})
	}
	ref := ""
	if b.CheckpointRef != nil {
		ref = b.CheckpointRef.Key
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].anchor != es[j].anchor {
			return (es[i].anchor > es[j].anchor) == newestFirst
		}
		// At one anchor (checkpoints made at different clocks), the one
		// the binding refers to first: the newest create chose it.
		if ri, rj := es[i].info.Key == ref, es[j].info.Key == ref; ri != rj {
			return ri
		}
		return es[i].info.Key > es[j].info.Key
	})
	cands := make([]Candidate, len(es))
	chosen := -1
	var cp *nkc1.Checkpoint
	for i, e := range es {
		cands[i] = Candidate{Key: e.info.Key, Anchor: e.anchor, Size: e.info.Size, Modified: e.info.Modified}
		if chosen >= 0 {
			cands[i].Status, cands[i].Reason = "not-needed", ReasonNewerChosen
			if !newestFirst {
				cands[i].Reason = ReasonOlderChosen
			}
			continue
		}
		c, reason, detail := Check(ctx, st, b, h, objs, e.info)
		if reason != "" {
			cands[i].Status, cands[i].Reason, cands[i].Detail = "skipped", reason, detail
			continue
		}
		cands[i].Status = "chosen"
		cands[i].SHA256, cands[i].Root = c.SHA256, c.Root
		chosen, cp = i, c.Checkpoint
	}
	return cands, chosen, cp, nil
}

// chooseKey is choose for the one checkpoint named key (the binding's
// import genesis): the candidate list holds it alone, chosen when it
// passes every check and has the SHA-256 the binding recorded, skipped
// with the reason otherwise (also when it is not listed).
func chooseKey(ctx context.Context, st store.Store, b *layout.Binding, h *layout.Head, objs *Objects, key, sha string) ([]Candidate, int, *nkc1.Checkpoint, error) {
	infos, err := objs.Checkpoints(ctx)
	if err != nil {
		return nil, -1, nil, fmt.Errorf("replay %s: list checkpoints: %w", b.Name(), err)
	}
	for _, in := range infos {
		if in.Key != key {
			continue
		}
		anchor, _, _ := layout.ParseCheckpointKey(in.Key)
		c := Candidate{Key: in.Key, Anchor: anchor, Size: in.Size, Modified: in.Modified}
		ck, reason, detail := Check(ctx, st, b, h, objs, in)
		if reason == "" && ck.SHA256 != sha {
			reason, detail = ReasonDigestMismatch, fmt.Sprintf("%s has sha256 %s, the binding's import.genesis records %s", key, ck.SHA256, sha)
		}
		if reason != "" {
			c.Status, c.Reason, c.Detail = "skipped", reason, detail
			return []Candidate{c}, -1, nil, nil
		}
		c.Status, c.SHA256, c.Root = "chosen", ck.SHA256, ck.Root
		return []Candidate{c}, 0, ck.Checkpoint, nil
	}
	return []Candidate{{Key: key, Status: "skipped", Reason: ReasonObject, Detail: "the binding's import genesis checkpoint is not in the stream's listing"}}, -1, nil, nil
}

// openStream is replay's first step: the head, checked against the binding,
// and the stream's listing. Reads that do not depend on one another go out
// together (on S3 each round of requests costs the store's latency): the
// checkpoint the binding names is read while the head is (an immutable
// object: no order to keep); the stream's listing follows the head (an
// object below the head is written before the head moves past it), and
// with it the object ranges the checkpoint's state knows and the object its
// anchor names. Everything read ahead is checked where it is used, as if
// read there; what a replay does not use (a checkpoint found damaged, or
// not the newest) only cost a request. full reads no checkpoint ahead. The
// caller waits for the reads ahead (lister.wait) before it returns.
func openStream(ctx context.Context, st store.Store, b *layout.Binding, full bool) (*layout.Head, *Objects, error) {
	lister := NewObjects(st, b.StreamID)
	spec := ""
	if !full && b.CheckpointRef != nil && b.CheckpointRef.Key != "" {
		spec = b.CheckpointRef.Key
		lister.getAhead(ctx, spec, MaxCheckpointBytes)
	}
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		lister.wait()
		return nil, nil, fmt.Errorf("replay %s: read head: %w", b.Name(), err)
	}
	// The binding and the head must agree (observed log start <= trim <=
	// head, coverage within the stream, the checkpoint reference at or
	// below the head) before anything is derived from them.
	if err := layout.CheckInvariants(b, h); err != nil {
		lister.wait()
		return nil, nil, fmt.Errorf("replay %s: %w", b.Name(), err)
	}
	floor, splits := int64(-1), []int64(nil)
	if p := lister.peek(spec); p != nil {
		if _, cp, err := p.checkpoint(); err == nil && cp.Anchor.Offset <= h.Head && cp.Anchor.StreamID == b.StreamID {
			if floor = listFloor(cp.State, h.Trim); floor >= 0 {
				splits = knownBases(cp.State, floor)
			}
			if cp.Anchor.ObjectKey != "" {
				lister.getAhead(ctx, cp.Anchor.ObjectKey, 0)
			}
		}
	}
	if err := lister.PrefetchFrom(ctx, floor, splits); err != nil {
		lister.wait()
		return nil, nil, fmt.Errorf("replay %s: %w", b.Name(), err)
	}
	return h, lister, nil
}

// Check runs the checks of docs/design.md §6 steps 2-3 on one checkpoint object and
// returns the decoded checkpoint, or the reason it cannot be used.
func Check(ctx context.Context, st store.Store, b *layout.Binding, h *layout.Head, objs *Objects, info store.ObjectInfo) (*Checked, Reason, string) {
	anchor, _, err := layout.ParseCheckpointKey(info.Key)
	if err != nil {
		return nil, ReasonCorrupt, err.Error()
	}
	if anchor > h.Head {
		return nil, ReasonLeadsHead, fmt.Sprintf("anchor %d > head %d", anchor, h.Head)
	}
	// The binding's checkpoint may have been read ahead, while the head
	// was (Replay): the same GET, its bytes checked here as any other's.
	p := objs.take(info.Key)
	if p == nil {
		p = &pending{}
		p.data, p.err = store.GetCapped(ctx, st, info.Key, MaxCheckpointBytes)
	}
	data, err := p.data, p.err
	if err != nil {
		return nil, ReasonObject, err.Error()
	}
	if int64(len(data)) != info.Size || (info.ETag != "" && store.ETagOf(data) != info.ETag) {
		return nil, ReasonObject, fmt.Sprintf("GET returned %d bytes with ETag %s, listed as %d bytes with ETag %s", len(data), store.ETagOf(data), info.Size, info.ETag)
	}
	r, cp, err := p.checkpoint()
	if err != nil {
		return nil, ReasonCorrupt, err.Error()
	}
	a := cp.Anchor
	if a.Offset != anchor || a.StreamID != b.StreamID || a.Topic != b.Topic || a.Partition != b.Partition {
		return nil, ReasonBinding, fmt.Sprintf("checkpoint is for stream %s %s-%d anchor %d", a.StreamID, a.Topic, a.Partition, a.Offset)
	}
	if cp.Binding.Key != layout.BindingKey(b.Topic, b.Partition) || cp.Binding.Version > b.Version {
		return nil, ReasonBinding, fmt.Sprintf("made for %s version %d, binding is %s version %d", cp.Binding.Key, cp.Binding.Version, layout.BindingKey(b.Topic, b.Partition), b.Version)
	}
	if cp.State.NextOffset != anchor {
		return nil, ReasonCorrupt, fmt.Sprintf("state ends at %d, anchor is %d", cp.State.NextOffset, anchor)
	}
	if reason, detail := checkAnchorObject(ctx, st, a, objs, h); reason != "" {
		return nil, reason, detail
	}
	return &Checked{Checkpoint: cp, SHA256: store.SHA256Of(data), Root: r.Root()}, "", ""
}

// Checked is a checkpoint that passed every check, with its object digest
// and root.
type Checked struct {
	*nkc1.Checkpoint
	SHA256 string
	Root   string
}

// checkAnchorObject compares the digest of the object ending at the anchor
// with the one the checkpoint recorded (the stable-head anchor).
func checkAnchorObject(ctx context.Context, st store.Store, a nkc1.Anchor, lister *Objects, h *layout.Head) (Reason, string) {
	if a.ObjectKey == "" {
		objs, err := lister.All(ctx)
		if err != nil {
			return ReasonObject, err.Error()
		}
		// Anchored at the stream's first offset: nothing precedes it.
		if a.ObjectSHA256 != "" {
			return ReasonCorrupt, "anchor names a digest but no object"
		}
		if first := stream.FirstOffset(objs, h.Head); first != a.Offset && !(h.Head == a.Offset && len(objs) == 0) {
			return ReasonDigestMismatch, fmt.Sprintf("no anchor object, but the stream starts at %d, not %d", first, a.Offset)
		}
		return "", ""
	}
	base, end, err := layout.ParseObjectKey(a.ObjectKey)
	if err != nil || end != a.Offset || a.ObjectKey != layout.ObjectKey(a.StreamID, base, end) {
		return ReasonCorrupt, fmt.Sprintf("anchor object %q does not end at anchor %d", a.ObjectKey, a.Offset)
	}
	objs, err := lister.From(ctx, base)
	if err != nil {
		return ReasonObject, err.Error()
	}
	chain, err := stream.Chain(objs, base, a.Offset)
	if err != nil || len(chain) != 1 || chain[0].Key != a.ObjectKey {
		return ReasonAnchorMissing, fmt.Sprintf("object %s is not in the stream", a.ObjectKey)
	}
	// The anchor object must also be on the chain to the head: a divergent
	// history may keep the old object beside the new one.
	if a.Offset < h.Head {
		if _, err := stream.Chain(objs, a.Offset, h.Head); err != nil {
			return ReasonDigestMismatch, fmt.Sprintf("anchor %d is not an object boundary on the way to the head: %v", a.Offset, err)
		}
	}
	var data []byte
	if p := lister.take(a.ObjectKey); p != nil {
		data, err = p.data, p.err
	} else {
		data, err = st.Get(ctx, a.ObjectKey, nil)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return ReasonAnchorMissing, err.Error()
		}
		return ReasonObject, err.Error()
	}
	if got := store.SHA256Of(data); got != a.ObjectSHA256 {
		return ReasonDigestMismatch, fmt.Sprintf("%s has sha256 %s, checkpoint recorded %s", a.ObjectKey, got, a.ObjectSHA256)
	}
	return "", ""
}

// replayTail applies every batch of the chain [part.NextOffset, head) and
// seals segments where COMMITTED generations newer than lastGen end. Only
// verified bytes are applied: every batch's CRC-32C is checked before the
// batch reaches the state, and an object a COMMITTED manifest lists must
// have the manifest's size and CRC-32C.
//
// at, when not nil, is called with the state's next offset before the
// first object and after every object.
func replayTail(ctx context.Context, st store.Store, lister *Objects, part *state.Partition, objs []layout.StreamObject, head int64, epochs string, lastGen int64, ts *TailStats, sources map[int64]string, at func(end int64)) error {
	ts.From, ts.To = part.NextOffset, head
	if at == nil {
		at = func(int64) {}
	}
	at(part.NextOffset)
	// The generation manifests after the checkpoint's are read while the
	// tail's first objects are (neither depends on the other); the first
	// object is applied once they are in.
	var seals map[int64]int64
	var digests map[int64]string
	var sealed map[string]sealedRef
	var nexts map[int64]int64
	var empties map[int64][]layout.EmptySegment
	var sealsErr error
	sealsIn := make(chan struct{})
	go func() {
		defer close(sealsIn)
		seals, digests, sealed, nexts, empties, sealsErr = sealsAfter(ctx, st, lister, lastGen)
	}()
	defer func() { <-sealsIn }()
	var chain []layout.StreamObject
	var chainErr error
	if part.NextOffset < head {
		chain, chainErr = stream.Chain(objs, part.NextOffset, head)
	}
	// rolled: the generation whose next_segment_base opened the segment
	// the next batch goes to (-1: none); the batch is checked against it.
	rolled := int64(-1)
	seal := func(gen, end int64) error {
		if err := part.Seal(gen, end); err != nil {
			return err
		}
		sources[gen] = digests[gen]
		delete(seals, end)
		// The Kafka segments after it that hold no batch (an imported
		// .log file the cleaner emptied) are segments of their own.
		for _, e := range empties[gen] {
			if err := part.AddEmptySegment(e.Base, e.End, e.LastModifiedMs); err != nil {
				return fmt.Errorf("generation %d: empty_segments: %w", gen, err)
			}
		}
		// Kafka's next segment starts at the base the generation records
		// (an imported .log file's name), not at its first batch.
		if next, ok := nexts[gen]; ok {
			if err := part.Roll(next); err != nil {
				return fmt.Errorf("generation %d: next_segment_base %d: %w", gen, next, err)
			}
			rolled = gen
		}
		return nil
	}
	// A segment may have been sealed exactly at the hydrated anchor after
	// the checkpoint was made: the broker publishes the generation when it
	// rolls, which is after the last append to the segment.
	begin := func() error {
		<-sealsIn
		if sealsErr != nil {
			return sealsErr
		}
		if gen, ok := seals[part.NextOffset]; ok {
			if err := seal(gen, part.NextOffset); err != nil {
				return err
			}
			ts.changed = true
		}
		return nil
	}
	if part.NextOffset >= head || chainErr != nil || len(chain) > 0 && chain[0].Base != part.NextOffset {
		if err := begin(); err != nil {
			return err
		}
		switch {
		case part.NextOffset >= head:
			return nil
		case chainErr != nil:
			return chainErr
		}
		return fmt.Errorf("%w: the state ends at %d inside object %s", stream.ErrMissing, part.NextOffset, chain[0].Key)
	}
	// The tail is read ahead (stream.ReadChain: the reads in flight sized
	// to the tail, a few buffers reused): nothing keeps an object's bytes
	// once its batches are applied.
	begun := false
	err := stream.ReadChain(ctx, st, chain, func(o layout.StreamObject, data []byte) error {
		if !begun {
			begun = true
			if err := begin(); err != nil {
				return err
			}
		}
		ref, isSealed := sealed[o.Key]
		if isSealed && int64(len(data)) != ref.Size {
			return fmt.Errorf("object %s: %w: %d bytes, its COMMITTED manifest (generation %d) says %d", o.Key, kafka.ErrCorrupt, len(data), ref.gen, ref.Size)
		}
		if o.End == head {
			ts.headObject, ts.headSHA = o.Key, store.SHA256Of(data)
		}
		ts.Objects++
		ts.Bytes += int64(len(data))
		// Leader epochs against the head's record (the open segment is in
		// no manifest: stream.ScanOptions.Epochs).
		if err := stream.ScanObjectWith(o, data, stream.ScanOptions{VerifyCRC: true, Epochs: epochs}, func(bt stream.Batch) error {
			ts.Batches++
			if err := ApplyBatch(part, bt); err != nil {
				if rolled >= 0 {
					return fmt.Errorf("object %s: the segment generation %d says starts at %d (next_segment_base): %w", o.Key, rolled, nexts[rolled], err)
				}
				return err
			}
			rolled = -1
			return nil
		}); err != nil {
			return err
		}
		// The batch CRCs cover all but each batch's offset, length,
		// leader epoch, magic and CRC fields; the manifest's CRC-32C covers
		// every byte.
		if isSealed {
			if got := stream.CRC32C(data); got != ref.CRC32C {
				return fmt.Errorf("object %s: %w: crc32c %08x, its COMMITTED manifest (generation %d) says %08x", o.Key, kafka.ErrCorrupt, got, ref.gen, ref.CRC32C)
			}
		}
		if gen, ok := seals[o.End]; ok {
			if err := seal(gen, o.End); err != nil {
				return err
			}
		}
		at(o.End)
		return nil
	})
	if err != nil {
		return err
	}
	for end, gen := range seals {
		if end <= head && end > ts.From {
			return fmt.Errorf("%w: generation %d ends at %d, which is not an object boundary of the stream", kafka.ErrCorrupt, gen, end)
		}
	}
	return nil
}

// manifestsAtOnce is how many generation manifests a replay reads at once
// (on S3 each is a round trip of its own).
const manifestsAtOnce = 32

// sealedRef is an object as a COMMITTED manifest lists it.
type sealedRef struct {
	layout.ObjectRef
	gen int64
}

// sealsAfter maps the end offset of every COMMITTED generation newer than
// lastGen to its number (and the number to its manifest digest, to its
// next_segment_base and its empty_segments when it records them), and every object those
// generations list to its manifest entry.
func sealsAfter(ctx context.Context, st store.Store, lister *Objects, lastGen int64) (map[int64]int64, map[int64]string, map[string]sealedRef, map[int64]int64, map[int64][]layout.EmptySegment, error) {
	// Only the generations after lastGen: a listing that starts there.
	sid := lister.sid
	after := ""
	if lastGen >= 0 {
		after = layout.GenerationKey(sid, lastGen)
	}
	infos, err := lister.GenerationsAfter(ctx, after)
	if err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("list generations: %w", err)
	}
	out, digests, sealed, nexts, empties := map[int64]int64{}, map[int64]string{}, map[string]sealedRef{}, map[int64]int64{}, map[int64][]layout.EmptySegment{}
	var gens []int64
	for _, in := range infos {
		n, err := layout.ParseGenerationKey(in.Key)
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		if n > lastGen {
			gens = append(gens, n)
		}
	}
	// A few manifests at once (on S3 each is a round trip); the first
	// failure in generation order is the one reported.
	type loaded struct {
		g   *layout.Generation
		sum string
		err error
	}
	got, err := fleet.Map(ctx, manifestsAtOnce, gens, func(ctx context.Context, _ int, n int64) (loaded, error) {
		g, sums, err := layout.LoadGenerationSums(ctx, st, sid, n)
		if err == nil || layout.IsCorrupt(err) || errors.Is(err, store.ErrNotFound) {
			lister.noteManifest(health.Manifest{Gen: n, G: g, SHA256: sums.SHA256, MD5: sums.MD5, Size: sums.Size, Err: err})
		}
		return loaded{g, sums.SHA256, err}, nil
	})
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	for _, l := range got {
		if l.err != nil {
			return nil, nil, nil, nil, nil, l.err
		}
		g, sum := l.g, l.sum
		if g.Kind == layout.KindCommitted {
			out[g.End] = g.Gen
			digests[g.Gen] = sum
			if g.NextSegmentBase != nil {
				nexts[g.Gen] = *g.NextSegmentBase
			}
			if len(g.EmptySegments) > 0 {
				empties[g.Gen] = g.EmptySegments
			}
			for _, ob := range g.Objects {
				sealed[ob.Key] = sealedRef{ob, g.Gen}
			}
		}
	}
	return out, digests, sealed, nexts, empties, nil
}

// ApplyBatch feeds one stored batch to the state, decoding the marker of a
// control batch.
func ApplyBatch(part *state.Partition, bt stream.Batch) error {
	var m state.Marker
	h := bt.Header
	if h.IsControl() && h.ProducerID >= 0 {
		b, err := kafka.DecodeBatch(bt.Raw, kafka.DefaultLimits())
		if err != nil {
			return fmt.Errorf("decode control batch at offset %d in %s: %w", h.BaseOffset, bt.Object.Key, err)
		}
		if len(b.Records) > 0 {
			r := b.Records[0]
			_, t, err := kafka.ParseControlKey(r.Key)
			if err != nil {
				return fmt.Errorf("control record at offset %d in %s: %w", r.Offset, bt.Object.Key, err)
			}
			m = state.Marker{Present: true, Type: t, Timestamp: r.Timestamp}
			if t == kafka.ControlAbort || t == kafka.ControlCommit {
				em, err := kafka.ParseEndTxnMarker(r.Value)
				if err != nil {
					return fmt.Errorf("end-transaction marker at offset %d in %s: %w", r.Offset, bt.Object.Key, err)
				}
				m.CoordinatorEpoch = em.CoordinatorEpoch
			}
		}
	}
	return part.Apply(h, int64(len(bt.Raw)), m, state.Position{ObjectBase: bt.Object.Base, ObjectPos: bt.Pos})
}
