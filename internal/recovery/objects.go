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
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Objects is a stream's object listing, fetched lazily: a restart replay
// only lists the objects from its checkpoint's anchor object on (S3's
// StartAfter), so its cost follows the tail, not the log.
type Objects struct {
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

	// ahead are the GETs issued before their result is needed (the
	// binding's checkpoint while the head is read, the anchor object while
	// the stream is listed), each taken once; aheadWG waits for them.
	ahead   map[string]*pending
	aheadWG sync.WaitGroup
}

// pending is a GET issued ahead of its use; a checkpoint's bytes are
// decoded once, on first need.
type pending struct {
	done chan struct{}
	data []byte
	err  error

	once sync.Once
	r    *nkc1.Reader
	cp   *nkc1.Checkpoint
	derr error
}

// checkpoint decodes the bytes as an NKC1 checkpoint (once).
func (p *pending) checkpoint() (*nkc1.Reader, *nkc1.Checkpoint, error) {
	p.once.Do(func() {
		if p.err != nil {
			p.derr = p.err
			return
		}
		if p.r, p.derr = nkc1.Open(p.data); p.derr == nil {
			p.cp, p.derr = p.r.Checkpoint()
		}
	})
	return p.r, p.cp, p.derr
}

// getAhead starts a GET of key (GetCapped at max bytes; max <= 0: a plain
// GET) unless one was started. The GET is the one Check or the anchor
// check would send later: issued early, it costs no round trip of its own.
func (o *Objects) getAhead(ctx context.Context, key string, max int64) {
	if o.st == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ahead == nil {
		o.ahead = map[string]*pending{}
	}
	if _, ok := o.ahead[key]; ok {
		return
	}
	p := &pending{done: make(chan struct{})}
	o.ahead[key] = p
	o.aheadWG.Add(1)
	go func() {
		defer o.aheadWG.Done()
		defer close(p.done)
		if max > 0 {
			p.data, p.err = store.GetCapped(ctx, o.st, key, max)
		} else {
			p.data, p.err = o.st.Get(ctx, key, nil)
		}
	}()
}

// peek waits for the GET of key issued ahead and returns it (still there
// for take); nil when none was issued.
func (o *Objects) peek(key string) *pending {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	p := o.ahead[key]
	o.mu.Unlock()
	if p != nil {
		<-p.done
	}
	return p
}

// take is peek, and the GET is forgotten: the caller's use is its only
// one, later reads of key go to the store.
func (o *Objects) take(key string) *pending {
	p := o.peek(key)
	if p != nil {
		o.mu.Lock()
		delete(o.ahead, key)
		o.mu.Unlock()
	}
	return p
}

// wait returns once every GET issued ahead has returned.
func (o *Objects) wait() { o.aheadWG.Wait() }

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
func (o *Objects) Prefetch(ctx context.Context) error { return o.PrefetchFrom(ctx, -1, nil) }

// PrefetchFrom is Prefetch that, when the splits (object bases above from
// that the caller knows: a checkpoint's) say the objects from from on
// fill more than a page, also lists them (FromSplit) at the same time as
// the stream's first page: a long stream then costs one round of
// requests for its whole listing, not a page after a page. Of a first
// page that did not hold the whole stream, the parts it holds whole (the
// checkpoints, compacted views and generations, which sort before the
// objects) are kept.
func (o *Objects) PrefetchFrom(ctx context.Context, from int64, splits []int64) error {
	var ranged []layout.StreamObject
	var rangedErr error
	var wg sync.WaitGroup
	if from >= 0 && len(splits) > rangeKeys {
		wg.Go(func() { ranged, rangedErr = o.listSplit(ctx, from, splits) })
	}
	l, err := layout.ListStreamPage(ctx, o.st, o.sid)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("list stream %s: %w", o.sid, err)
	}
	if l != nil {
		if p := layout.CheckpointsPrefix(o.sid); l.Covers(p) {
			o.ckpts, o.ckptsOK = l.Under(p), true
		}
		if p := layout.GenerationsPrefix(o.sid); l.Covers(p) {
			o.gens, o.gensOK = l.Under(p), true
		}
		if p := layout.CompactedPrefix(o.sid); l.Covers(p) {
			o.compacted, o.viewsOK = l.Under(p), true
		}
		// A key under objects/ that is no object's name leaves the
		// object listing to All and From, which report it as they
		// always have.
		if l.Complete() {
			if objs, err := l.Objects(); err == nil {
				o.objs, o.start, o.ok = objs, -1, true
				return nil
			}
		}
	}
	if rangedErr == nil && ranged != nil {
		o.objs, o.start, o.ok = ranged, from, true
	}
	return nil
}

// Checkpoints returns the stream's checkpoint listing (listed once).
func (o *Objects) Checkpoints(ctx context.Context) ([]store.ObjectInfo, error) {
	if !o.ckptsOK {
		infos, err := o.st.List(ctx, layout.CheckpointsPrefix(o.sid))
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
func (o *Objects) GenerationsAfter(ctx context.Context, after string) ([]store.ObjectInfo, error) {
	if !o.gensOK {
		infos, err := store.ListETags(ctx, o.st, layout.GenerationsPrefix(o.sid))
		if err != nil {
			return nil, err
		}
		o.gens, o.gensOK = infos, true
	}
	i := sort.Search(len(o.gens), func(i int) bool { return o.gens[i].Key > after })
	return o.gens[i:], nil
}

// NewObjects lists lazily from st.
func NewObjects(st store.Store, sid string) *Objects {
	return &Objects{st: st, sid: sid}
}

// AllObjects wraps a complete listing.
func AllObjects(objs []layout.StreamObject) *Objects {
	return &Objects{start: -1, objs: objs, ok: true}
}

// All returns every object of the stream.
func (o *Objects) All(ctx context.Context) ([]layout.StreamObject, error) {
	if o.ok && o.start < 0 {
		return o.objs, nil
	}
	objs, err := layout.ListObjects(ctx, o.st, o.sid)
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	o.objs, o.start, o.ok = objs, -1, true
	return objs, nil
}

// From returns (at least) every object whose base is >= base.
func (o *Objects) From(ctx context.Context, base int64) ([]layout.StreamObject, error) {
	if o.ok && (o.start < 0 || o.start <= base) {
		return o.objs, nil
	}
	// Keys are <base 20 digits>-<end>.kb: everything after "<base>"
	// has a base >= base.
	infos, err := o.st.ListAfter(ctx, layout.ObjectsPrefix(o.sid), layout.ObjectsPrefix(o.sid)+fmt.Sprintf("%020d", base))
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
// rangeKeys is how many known object bases one range holds: fewer than a
// LIST page (store.PageKeys), as a checkpoint's state does not know every
// object's base (an offset-index entry covers index.interval.bytes), so
// that a range is most often one page and the whole listing one round.
const (
	maxListRanges = 32
	rangeKeys     = 600
)

// FromSplit is From(base), listed as several ranges at once: splits are
// object bases above base that the caller knows (a checkpoint's segment
// bases and offset-index entries), and some of them, spread evenly, cut
// the listing into ranges listed concurrently, one range per page's worth
// (rangeKeys) of known bases, at most maxListRanges. On S3, where pages
// come one after another, a long stream's listing then costs about one
// round of requests instead of one per page; a short one stays one LIST.
// The result is exactly From(base)'s.
func (o *Objects) FromSplit(ctx context.Context, base int64, splits []int64) ([]layout.StreamObject, error) {
	if o.ok && (o.start < 0 || o.start <= base) {
		return o.objs, nil
	}
	objs, err := o.listSplit(ctx, base, splits)
	if err != nil {
		return nil, err
	}
	o.objs, o.start, o.ok = objs, base, true
	return objs, nil
}

// listSplit lists the objects whose base is >= base as FromSplit does,
// keeping nothing.
func (o *Objects) listSplit(ctx context.Context, base int64, splits []int64) ([]layout.StreamObject, error) {
	var cuts []int64
	for _, s := range splits {
		if s > base && (len(cuts) == 0 || s > cuts[len(cuts)-1]) {
			cuts = append(cuts, s)
		}
	}
	ranges := min(maxListRanges, (len(cuts)+rangeKeys-1)/rangeKeys)
	if ranges <= 1 {
		infos, err := o.st.ListAfter(ctx, layout.ObjectsPrefix(o.sid), layout.ObjectsPrefix(o.sid)+fmt.Sprintf("%020d", base))
		if err != nil {
			return nil, fmt.Errorf("list objects: %w", err)
		}
		return layout.AppendStreamObjects(make([]layout.StreamObject, 0, len(infos)), infos)
	}
	picked := make([]int64, 0, ranges-1)
	for i := 1; i < ranges; i++ {
		picked = append(picked, cuts[i*len(cuts)/ranges])
	}
	cuts = slices.Compact(picked)
	prefix := layout.ObjectsPrefix(o.sid)
	key := func(b int64) string { return prefix + fmt.Sprintf("%020d", b) }
	starts := append([]int64{base}, cuts...)
	parts, err := fleet.Map(ctx, len(starts), starts, func(ctx context.Context, i int, from int64) ([]store.ObjectInfo, error) {
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
	return objs, nil
}
