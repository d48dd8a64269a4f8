package health

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Lister is a stream's listing as a command already holds it (replay's
// recovery.Objects): Gather takes its parts from there instead of listing
// again.
type Lister interface {
	Checkpoints(ctx context.Context) ([]store.ObjectInfo, error)
	GenerationsAfter(ctx context.Context, after string) ([]store.ObjectInfo, error)
	// From returns (at least) every object whose base is >= base.
	From(ctx context.Context, base int64) ([]layout.StreamObject, error)
	// Compacted returns the compacted/ listing when the lister holds it
	// (from a one-page listing of the stream); ok false when it does not.
	Compacted() (infos []store.ObjectInfo, ok bool)
}

// Prior is what the caller has already read of the partition.
type Prior struct {
	// Head, when set, is the head the caller read (HeadErr: why it could
	// not; both unset: Gather reads it).
	Head    *layout.Head
	HeadErr error
	// Lister is the caller's listing of the stream (nil: Gather lists).
	Lister Lister
	// ObjectsFrom is the offset the caller's object listing starts at
	// (an object base at or below the trim, so that it covers the
	// retained range; -1: the whole stream).
	ObjectsFrom int64
	// Manifests the caller read, by generation.
	Manifests map[int64]Manifest
	// Skipped are the checkpoints replay could not use.
	Skipped []SkippedCheckpoint
	// Known are the manifests a checkpoint recorded (NKC1 section
	// manifests): one the listing shows at the recorded size and MD5 is
	// not read again (its summary is the checkpoint's), and a generation
	// older than the newest known one that the checkpoint does not name
	// (below the trim, or a superseded view: garbage for gc) is not read
	// at all. Coverage members are always read.
	Known map[int64]KnownManifest
	// KeysOnly lists the objects without sizes where that is cheaper
	// (file://: no stat per object), for a caller that reads every object
	// anyway (verify --deep): their sizes are then not compared here.
	KeysOnly bool
}

// KnownManifest is what a checkpoint recorded of a manifest.
type KnownManifest struct {
	Summary layout.GenerationSummary
	Size    int64
	MD5     string
}

// manifestReads is how many manifests Gather reads at once.
const manifestReads = 16

// Gather reads what the check needs that prior lacks — the head, the
// stream's listing (one page where the store pages and the stream fits),
// every generation manifest it names, the compacted/ listing and the
// quarantine record when the coverage has a set — and checks it. An error
// is an I/O failure that left the check unfinished; what the store holds
// wrong is a finding.
func Gather(ctx context.Context, st store.Store, b *layout.Binding, prior Prior) (*Report, *Observed, error) {
	o := &Observed{Binding: b, Head: prior.Head, HeadErr: prior.HeadErr, Skipped: prior.Skipped}
	if o.Head == nil && o.HeadErr == nil {
		h, _, err := layout.LoadHead(ctx, st, b.StreamID)
		switch {
		case err == nil:
			o.Head = h
		case layout.IsCorrupt(err), errors.Is(err, store.ErrNotFound):
			o.HeadErr = err
		default:
			return nil, nil, fmt.Errorf("health %s: %w", b.Name(), err)
		}
	}
	if o.Head == nil {
		// No head: nothing else can be placed; the head finding says it.
		return Check(o), o, nil
	}
	lister := prior.Lister
	from := prior.ObjectsFrom
	if lister == nil {
		l, err := listStream(ctx, st, b.StreamID, prior.KeysOnly)
		if err != nil {
			return nil, nil, fmt.Errorf("health %s: %w", b.Name(), err)
		}
		lister, from = l, -1
	}
	objs, err := lister.From(ctx, max(from, 0))
	if err != nil {
		return nil, nil, fmt.Errorf("health %s: list objects: %w", b.Name(), err)
	}
	o.Objects, o.ObjectsFrom, o.HaveObjects = objs, from, true
	if o.Checkpoints, err = lister.Checkpoints(ctx); err != nil {
		return nil, nil, fmt.Errorf("health %s: list checkpoints: %w", b.Name(), err)
	}
	o.HaveCheckpoints = true
	infos, err := lister.GenerationsAfter(ctx, "")
	if err != nil {
		return nil, nil, fmt.Errorf("health %s: list generations: %w", b.Name(), err)
	}
	o.GenerationInfos = infos
	gens, err := layout.GenerationNumbers(infos)
	if err != nil {
		return nil, nil, fmt.Errorf("health %s: %w", b.Name(), err)
	}
	if o.Manifests, err = readManifests(ctx, st, b, infos, gens, prior); err != nil {
		return nil, nil, fmt.Errorf("health %s: %w", b.Name(), err)
	}
	o.HaveManifests = true
	if b.Coverage.State == layout.CoverageNone {
		for _, m := range o.Manifests {
			if m.G != nil && m.G.Kind == layout.KindTopicCompacted {
				// Coverage NONE over a compacted generation: lost coverage
				// (blocked), unless an interrupted compaction's task says
				// the generation is its unactivated output.
				if _, err := st.Head(ctx, layout.CompactionTaskKey(b.StreamID)); err == nil {
					o.PendingCompaction = true
				} else if !errors.Is(err, store.ErrNotFound) {
					return nil, nil, fmt.Errorf("health %s: %w", b.Name(), err)
				}
				break
			}
		}
	}
	// The compacted views: listed for a set's members, taken anyway when
	// the stream's one-page listing holds them (gc wants them).
	if cs, ok := lister.Compacted(); ok || b.Coverage.State != layout.CoverageNone {
		if !ok {
			if cs, err = st.List(ctx, layout.CompactedPrefix(b.StreamID)); err != nil {
				return nil, nil, fmt.Errorf("health %s: list compacted views: %w", b.Name(), err)
			}
		}
		o.Compacted = make(map[string]store.ObjectInfo, len(cs))
		for _, in := range cs {
			o.Compacted[in.Key] = in
		}
		o.HaveCompacted = true
	}
	if b.Coverage.State == layout.CoverageQuarantined {
		var q layout.Quarantine
		if _, err := layout.Load(ctx, st, layout.QuarantineKey(b.Coverage.SetID), &q); err == nil {
			o.Quarantine = &q
		} else if layout.IsCorrupt(err) || errors.Is(err, store.ErrNotFound) {
			o.QuarantineErr = err
		} else {
			return nil, nil, fmt.Errorf("health %s: read quarantine record: %w", b.Name(), err)
		}
	}
	return Check(o), o, nil
}

// readManifests reads the listed generations' manifests that prior has
// neither read nor knows unchanged, several at once; one that is missing
// or does not decode is kept with its error (a finding), any other failure
// is returned.
func readManifests(ctx context.Context, st store.Store, b *layout.Binding, infos []store.ObjectInfo, gens []int64, prior Prior) ([]Manifest, error) {
	members := map[int64]bool{}
	for _, m := range b.Coverage.Members {
		members[m.Gen] = true
	}
	newestKnown := int64(-1)
	for g := range prior.Known {
		newestKnown = max(newestKnown, g)
	}
	out := make([]Manifest, 0, len(gens))
	var todo []int
	for i, g := range gens {
		if m, ok := prior.Manifests[g]; ok {
			out = append(out, m)
			continue
		}
		if k, ok := prior.Known[g]; ok && !members[g] && infos[i].ETag != "" && infos[i].ETag == k.MD5 && infos[i].Size == k.Size {
			s := k.Summary
			out = append(out, Manifest{Gen: g, MD5: k.MD5, Size: k.Size, Summary: &s})
			continue
		}
		if _, ok := prior.Known[g]; !ok && g < newestKnown && !members[g] {
			continue // not in the checkpoint's state: below the trim, or a superseded view
		}
		todo = append(todo, len(out))
		out = append(out, Manifest{Gen: g})
	}
	_, err := fleet.Map(ctx, manifestReads, todo, func(ctx context.Context, _ int, i int) (struct{}, error) {
		n := out[i].Gen
		g, sums, err := layout.LoadGenerationSums(ctx, st, b.StreamID, n)
		if err != nil && !layout.IsCorrupt(err) && !errors.Is(err, store.ErrNotFound) {
			return struct{}{}, err
		}
		out[i] = Manifest{Gen: n, G: g, SHA256: sums.SHA256, MD5: sums.MD5, Size: sums.Size, Err: err}
		return struct{}{}, nil
	})
	return out, err
}

// listed is a whole stream's listing (Gather's own, when the caller has
// none).
type listed struct {
	objs        []layout.StreamObject
	ckpts, gens []store.ObjectInfo
	compacted   []store.ObjectInfo
}

func (l *listed) Checkpoints(context.Context) ([]store.ObjectInfo, error) { return l.ckpts, nil }
func (l *listed) GenerationsAfter(_ context.Context, after string) ([]store.ObjectInfo, error) {
	i := sort.Search(len(l.gens), func(i int) bool { return l.gens[i].Key > after })
	return l.gens[i:], nil
}
func (l *listed) From(context.Context, int64) ([]layout.StreamObject, error) { return l.objs, nil }
func (l *listed) Compacted() ([]store.ObjectInfo, bool)                      { return l.compacted, true }

// listStream lists the whole stream: one page where the store pages and
// the stream fits (layout.ListStream), else its parts, concurrently.
func listStream(ctx context.Context, st store.Store, sid string, keysOnly bool) (*listed, error) {
	page, err := layout.ListStream(ctx, st, sid)
	if err != nil {
		return nil, err
	}
	l := &listed{}
	if page != nil {
		if l.objs, err = page.Objects(); err != nil {
			return nil, err
		}
		l.ckpts = page.Under(layout.CheckpointsPrefix(sid))
		l.gens = page.Under(layout.GenerationsPrefix(sid))
		l.compacted = page.Under(layout.CompactedPrefix(sid))
		return l, nil
	}
	var wg sync.WaitGroup
	var errs [4]error
	wg.Go(func() {
		if !keysOnly {
			l.objs, errs[0] = layout.ListObjects(ctx, st, sid)
			return
		}
		var infos []store.ObjectInfo
		if infos, errs[0] = store.ListKeys(ctx, st, layout.ObjectsPrefix(sid)); errs[0] == nil {
			l.objs, errs[0] = layout.AppendStreamObjects(make([]layout.StreamObject, 0, len(infos)), infos)
		}
	})
	wg.Go(func() { l.ckpts, errs[1] = st.List(ctx, layout.CheckpointsPrefix(sid)) })
	wg.Go(func() { l.gens, errs[2] = store.ListETags(ctx, st, layout.GenerationsPrefix(sid)) })
	wg.Go(func() { l.compacted, errs[3] = st.List(ctx, layout.CompactedPrefix(sid)) })
	wg.Wait()
	return l, errors.Join(errs[:]...)
}
