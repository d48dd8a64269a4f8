package recovery

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Objects is a stream's object listing, fetched lazily: a restart replay
// only lists the objects from its checkpoint's anchor object on (S3's
// StartAfter), so its cost follows the tail, not the log.
type Objects struct {
	ctx   context.Context
	st    store.Store
	sid   string
	start int64 // the listing covers bases >= start; -1: everything
	objs  []layout.StreamObject
	ok    bool

	// The stream's checkpoint and generation listings, once listed (or
	// taken from Prefetch's one page), and its compacted views (only from
	// the page).
	ckpts, gens, compacted   []store.ObjectInfo
	ckptsOK, gensOK, viewsOK bool

	// manifests are the generation manifests the replay read, for the
	// health check (which reads the rest).
	mu        sync.Mutex
	manifests map[int64]health.Manifest
}

// Compacted returns the compacted/ listing when the one-page listing
// holds it (health.Lister).
func (o *Objects) Compacted() ([]store.ObjectInfo, bool) { return o.compacted, o.viewsOK }

// ListedFrom is the offset the object listing starts at (-1: the whole
// stream); valid once a listing was taken.
func (o *Objects) ListedFrom() int64 { return o.start }

// noteManifest keeps a manifest the replay read.
func (o *Objects) noteManifest(m health.Manifest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.manifests == nil {
		o.manifests = map[int64]health.Manifest{}
	}
	o.manifests[m.Gen] = m
}

// readManifests are the manifests the replay read.
func (o *Objects) readManifests() map[int64]health.Manifest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.manifests
}

// Prefetch lists the whole stream (checkpoints, generations, head and
// objects) in one request when the store lists in pages (S3) and the
// stream's keys fit one page (store.PageKeys): the checkpoint, generation
// and object listings a replay needs are then taken from it instead of
// three LISTs. It sends nothing on a store that does not page (file://),
// and a stream that does not fit keeps the listings of its parts. Call it
// after the head is read, as the object listing it replaces would be: an
// object below the head is written before the head moves past it.
func (o *Objects) Prefetch() error {
	l, err := layout.ListStream(o.ctx, o.st, o.sid)
	if err != nil {
		return fmt.Errorf("list stream %s: %w", o.sid, err)
	}
	if l == nil {
		return nil
	}
	o.ckpts, o.gens = l.Under(layout.CheckpointsPrefix(o.sid)), l.Under(layout.GenerationsPrefix(o.sid))
	o.compacted = l.Under(layout.CompactedPrefix(o.sid))
	o.ckptsOK, o.gensOK, o.viewsOK = true, true, true
	// A key under objects/ that is no object's name leaves the object
	// listing to All and From, which report it as they always have.
	if objs, err := l.Objects(); err == nil {
		o.objs, o.start, o.ok = objs, -1, true
	}
	return nil
}

// Checkpoints returns the stream's checkpoint listing (listed once).
func (o *Objects) Checkpoints() ([]store.ObjectInfo, error) {
	if !o.ckptsOK {
		infos, err := o.st.List(o.ctx, layout.CheckpointsPrefix(o.sid))
		if err != nil {
			return nil, err
		}
		o.ckpts, o.ckptsOK = infos, true
	}
	return o.ckpts, nil
}

// GenerationsAfter returns the generation manifests whose keys sort after
// after ("" : all), from the prefetched page when there is one.
//
// The whole generations/ listing is taken once and kept: the health check
// needs every generation, the tail only those after its checkpoint's.
func (o *Objects) GenerationsAfter(after string) ([]store.ObjectInfo, error) {
	if !o.gensOK {
		infos, err := o.st.List(o.ctx, layout.GenerationsPrefix(o.sid))
		if err != nil {
			return nil, err
		}
		o.gens, o.gensOK = infos, true
	}
	i := sort.Search(len(o.gens), func(i int) bool { return o.gens[i].Key > after })
	return o.gens[i:], nil
}

// NewObjects lists lazily from st.
func NewObjects(ctx context.Context, st store.Store, sid string) *Objects {
	return &Objects{ctx: ctx, st: st, sid: sid}
}

// AllObjects wraps a complete listing.
func AllObjects(objs []layout.StreamObject) *Objects {
	return &Objects{start: -1, objs: objs, ok: true}
}

// All returns every object of the stream.
func (o *Objects) All() ([]layout.StreamObject, error) {
	if o.ok && o.start < 0 {
		return o.objs, nil
	}
	objs, err := layout.ListObjects(o.ctx, o.st, o.sid)
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	o.objs, o.start, o.ok = objs, -1, true
	return objs, nil
}

// From returns (at least) every object whose base is >= base.
func (o *Objects) From(base int64) ([]layout.StreamObject, error) {
	if o.ok && (o.start < 0 || o.start <= base) {
		return o.objs, nil
	}
	// Keys are <base 20 digits>-<end>.kb: everything after "<base>"
	// has a base >= base.
	infos, err := o.st.ListAfter(o.ctx, layout.ObjectsPrefix(o.sid), layout.ObjectsPrefix(o.sid)+fmt.Sprintf("%020d", base))
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	objs, err := layout.AppendStreamObjects(make([]layout.StreamObject, 0, len(infos)), infos)
	if err != nil {
		return nil, err
	}
	o.objs, o.start, o.ok = objs, base, true
	return objs, nil
}

// maxListRanges bounds how many ranges FromSplit lists at once, and
// listPageKeys is how many keys one S3 LIST page holds: a range is cut
// only where the objects the caller knows fill more than a page.
const (
	maxListRanges = 8
	listPageKeys  = store.PageKeys
)

// FromSplit is From(base), listed as several ranges at once: splits are
// object bases above base that the caller knows (a checkpoint's segment
// bases and offset-index entries), and some of them, spread evenly, cut
// the listing into ranges listed concurrently, one range per page's worth
// (1,000) of known bases, at most maxListRanges. On S3, where pages come
// one after another, a long stream's listing then costs a few rounds of
// requests instead of one per page; a short one stays one LIST. The
// result is exactly From(base)'s.
func (o *Objects) FromSplit(base int64, splits []int64) ([]layout.StreamObject, error) {
	if o.ok && (o.start < 0 || o.start <= base) {
		return o.objs, nil
	}
	var cuts []int64
	for _, s := range splits {
		if s > base && (len(cuts) == 0 || s > cuts[len(cuts)-1]) {
			cuts = append(cuts, s)
		}
	}
	ranges := min(maxListRanges, (len(cuts)+listPageKeys-1)/listPageKeys)
	if ranges <= 1 {
		return o.From(base)
	}
	picked := make([]int64, 0, ranges-1)
	for i := 1; i < ranges; i++ {
		picked = append(picked, cuts[i*len(cuts)/ranges])
	}
	cuts = slices.Compact(picked)
	prefix := layout.ObjectsPrefix(o.sid)
	key := func(b int64) string { return prefix + fmt.Sprintf("%020d", b) }
	starts := append([]int64{base}, cuts...)
	parts, err := fleet.Map(o.ctx, len(starts), starts, func(ctx context.Context, i int, from int64) ([]store.ObjectInfo, error) {
		before := ""
		if i+1 < len(starts) {
			before = key(starts[i+1])
		}
		return store.ListRange(ctx, o.st, prefix, key(from), before)
	})
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	var objs []layout.StreamObject
	for _, infos := range parts {
		if objs, err = layout.AppendStreamObjects(objs, infos); err != nil {
			return nil, err
		}
	}
	o.objs, o.start, o.ok = objs, base, true
	return objs, nil
}
