package recovery

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// CreateResult is the outcome of a checkpoint create.
type CreateResult struct {
	Key       string  `json:"key"`
	Root      string  `json:"root"`
	SHA256    string  `json:"sha256"`
	Anchor    int64   `json:"anchor"`
	Size      int64   `json:"size"`
	Published bool    `json:"published"` // a new object was written
	Reused    bool    `json:"reused"`    // an existing checkpoint already anchored at the head
	RefUpdate bool    `json:"binding_updated"`
	DryRun    bool    `json:"dry_run"`
	Replay    *Result `json:"-"`
}

// BuildFrom encodes the checkpoint of an existing replay result.
func BuildFrom(ctx context.Context, st store.Store, b *layout.Binding, res *Result) (*Result, *nkc1.Checkpoint, []byte, string, error) {
	cp, err := checkpointOf(ctx, st, b, res)
	if err != nil {
		return nil, nil, nil, "", err
	}
	data, root, err := nkc1.Encode(cp)
	if err != nil {
		return nil, nil, nil, "", fmt.Errorf("encode checkpoint for %s: %w", b.Name(), err)
	}
	return res, cp, data, root, nil
}

// checkpointOf assembles the checkpoint of a replay result at its head.
func checkpointOf(ctx context.Context, st store.Store, b *layout.Binding, res *Result) (*nkc1.Checkpoint, error) {
	h := res.Head
	a := nkc1.Anchor{
		StreamID: b.StreamID, TopicID: b.TopicID, Topic: b.Topic, Partition: b.Partition,
		Offset: h.Head, HeadEpoch: h.Epoch, LogStart: res.State.LogStart,
	}
	a.ObjectKey, a.ObjectSHA256 = res.HeadObject, res.HeadObjectSHA256
	if a.ObjectKey == "" && h.Head > res.State.LogStart {
		// Not met by the replay (a full replay of an empty tail): find the
		// object ending at the head.
		objs, err := layout.ListObjects(ctx, st, b.StreamID)
		if err != nil {
			return nil, err
		}
		if first := stream.FirstOffset(objs, h.Head); first < h.Head {
			chain, err := stream.Chain(objs, first, h.Head)
			if err != nil {
				return nil, err
			}
			last := chain[len(chain)-1]
			data, err := stream.ReadObject(ctx, st, last)
			if err != nil {
				return nil, fmt.Errorf("read anchor object %s: %w", last.Key, err)
			}
			// Its digest goes into the checkpoint: only verified bytes.
			if err := stream.ScanObjectWith(last, data, stream.ScanOptions{VerifyCRC: true, Epochs: h.LeaderEpochs}, func(stream.Batch) error { return nil }); err != nil {
				return nil, fmt.Errorf("read anchor object %s: %w", last.Key, err)
			}
			a.ObjectKey, a.ObjectSHA256 = last.Key, store.SHA256Of(data)
		}
	}
	srcs := make([]nkc1.SourceRef, 0, len(res.Sources))
	for gen, sum := range res.Sources {
		srcs = append(srcs, nkc1.SourceRef{Gen: gen, ManifestSHA256: sum})
	}
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].Gen < srcs[j].Gen })
	var clock *state.Clock
	if res.StateClock.Set() {
		c := res.StateClock
		clock = &c
	}
	return &nkc1.Checkpoint{
		Clock:     clock,
		Anchor:    a,
		State:     res.State,
		Coverage:  nkc1.Coverage{LogStart: res.State.LogStart, Anchor: h.Head, Sources: srcs},
		Binding:   nkc1.BindingRef{Key: layout.BindingKey(b.Topic, b.Partition), Version: b.Version},
		Manifests: manifestRefs(res),
	}, nil
}

// manifestRefs are the manifests a checkpoint made from res records (NKC1
// section manifests): every live one the replay and its health check saw,
// the sealed COMMITTED generations the state holds and every
// TOPIC_COMPACTED one, with the size and MD5 of their bytes, so that a
// later restart's health check reads none of them again while the
// listing shows them unchanged. A manifest the check neither read nor
// knew (none, on a healthy partition) is left out, and is read then.
func manifestRefs(res *Result) []nkc1.ManifestRef {
	out := []nkc1.ManifestRef{}
	for _, m := range res.manifests {
		var s layout.GenerationSummary
		switch {
		case m.Err != nil:
			continue
		case m.G != nil:
			s = m.G.Summary()
		case m.Summary != nil:
			s = *m.Summary
		default:
			continue
		}
		if _, live := res.Sources[s.Gen]; !live && s.Kind != layout.KindTopicCompacted {
			continue // below the trim: garbage for gc
		}
		if m.Size <= 0 || len(m.MD5) != 32 {
			continue
		}
		out = append(out, nkc1.ManifestRef{Gen: s.Gen, Kind: s.Kind, Base: s.Base, End: s.End, Size: m.Size, MD5: m.MD5})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gen < out[j].Gen })
	return out
}

// Create makes a checkpoint anchored at the current head and points the
// binding at it. With nothing new since the newest valid checkpoint (same
// anchor, same state digest) it writes no object and only makes sure the
// binding refers to that checkpoint. dryRun writes nothing.
func Create(ctx context.Context, st store.Store, b *layout.Binding, bindingETag string, dryRun bool) (*CreateResult, error) {
	return CreateAt(ctx, st, b, bindingETag, state.Clock{}, dryRun)
}

// CreateAt is Create with producer expiration at clock: the checkpoint
// holds the state at that clock and records it (NKC1 section clock).
func CreateAt(ctx context.Context, st store.Store, b *layout.Binding, bindingETag string, clock state.Clock, dryRun bool) (*CreateResult, error) {
	res, err := Replay(ctx, st, b, Options{Clock: clock, RequireHealthy: true})
	if err != nil {
		return nil, err
	}
	return CreateFrom(ctx, st, b, bindingETag, res, dryRun)
}

// CreateFullAt is CreateAt from a full replay instead of the newest
// checkpoint: it publishes today's derivation of the log, so that a
// checkpoint whose state an older build derived (replay --compare names
// one whose segment bases predate the segment base rule) stops being the
// base later checkpoints are built on. Costs a full replay.
func CreateFullAt(ctx context.Context, st store.Store, b *layout.Binding, bindingETag string, clock state.Clock, dryRun bool) (*CreateResult, error) {
	res, err := Replay(ctx, st, b, Options{Full: true, Clock: clock, RequireHealthy: true})
	if err != nil {
		return nil, err
	}
	return CreateFrom(ctx, st, b, bindingETag, res, dryRun)
}

// CreateFrom is Create with the replay already done (res must be a replay
// of b at the current head).
func CreateFrom(ctx context.Context, st store.Store, b *layout.Binding, bindingETag string, res *Result, dryRun bool) (*CreateResult, error) {
	if c := res.Chosen; c != nil && res.SameAsChosen {
		// Nothing new since the chosen checkpoint: it is the state at the
		// head already. No object is written (and none is encoded).
		out := &CreateResult{Anchor: c.Anchor, Root: c.Root, Key: c.Key, Size: c.Size, SHA256: c.SHA256, Reused: true, DryRun: dryRun, Replay: res}
		if dryRun {
			return out, nil
		}
		return out, pointBinding(ctx, st, b, bindingETag, out)
	}
	_, _, data, root, err := BuildFrom(ctx, st, b, res)
	if err != nil {
		return nil, err
	}
	out := &CreateResult{Anchor: res.Head.Head, Root: root, DryRun: dryRun, Replay: res}
	out.Key = layout.CheckpointKey(b.StreamID, res.Head.Head, root)
	out.Size = int64(len(data))
	out.SHA256 = store.SHA256Of(data)
	if dryRun {
		return out, nil
	}
	if _, err := st.Put(ctx, out.Key, data, store.IfAbsent()); err != nil {
		// The same state at the same anchor was published before (a
		// checkpoint's bytes depend on its state only): reuse it when the
		// object there is these bytes.
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("publish checkpoint %s: %w", out.Key, err)
		}
		have, gerr := store.GetCapped(ctx, st, out.Key, MaxCheckpointBytes)
		if gerr != nil || store.SHA256Of(have) != out.SHA256 {
			return nil, fmt.Errorf("publish checkpoint %s: %w (and the object there is not these bytes)", out.Key, err)
		}
		out.Reused = true
		return out, pointBinding(ctx, st, b, bindingETag, out)
	}
	out.Published = true
	return out, pointBinding(ctx, st, b, bindingETag, out)
}

// pointBinding CASes the binding's checkpoint_ref to the checkpoint unless it
// already points there or at a newer anchor. A lost precondition re-reads
// the binding once and tries again.
func pointBinding(ctx context.Context, st store.Store, b *layout.Binding, etag string, c *CreateResult) error {
	for attempt := 0; ; attempt++ {
		if r := b.CheckpointRef; r != nil && (r.Key == c.Key || r.Anchor > c.Anchor) {
			return nil
		}
		nb := *b
		nb.CheckpointRef = &layout.CheckpointRef{Key: c.Key, SHA256: c.SHA256, Anchor: c.Anchor}
		nb.Version++
		_, err := layout.Replace(ctx, st, layout.BindingKey(b.Topic, b.Partition), &nb, etag)
		if err == nil {
			*b = nb
			c.RefUpdate = true
			return nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) || attempt > 0 {
			return fmt.Errorf("point binding %s at checkpoint %s: %w", b.Name(), c.Key, err)
		}
		fresh, fetag, lerr := layout.LoadBinding(ctx, st, b.Topic, b.Partition)
		if lerr != nil {
			return fmt.Errorf("point binding %s at checkpoint %s: %w", b.Name(), c.Key, lerr)
		}
		*b, etag = *fresh, fetag
	}
}

// Entry is one checkpoint object as listed.
type Entry struct {
	Key        string    `json:"key"`
	Anchor     int64     `json:"anchor"`
	Size       int64     `json:"size"`
	Root       string    `json:"root"`
	Modified   time.Time `json:"modified"`
	Referenced bool      `json:"referenced"` // the binding's checkpoint_ref
	Valid      bool      `json:"valid"`
	Reason     Reason    `json:"reason,omitempty"`
	Detail     string    `json:"detail,omitempty"`
}

// List returns every checkpoint of a binding, newest anchor first, each
// checked as replay would check it.
func List(ctx context.Context, st store.Store, b *layout.Binding) ([]Entry, error) {
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return nil, err
	}
	lister, _, infos, err := listObjectsAndCheckpoints(ctx, st, b.StreamID)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, in := range infos {
		e := Entry{Key: in.Key, Size: in.Size, Modified: in.Modified}
		anchor, r12, err := layout.ParseCheckpointKey(in.Key)
		if err != nil {
			e.Reason, e.Detail = ReasonCorrupt, err.Error()
			out = append(out, e)
			continue
		}
		e.Anchor, e.Root = anchor, r12
		e.Referenced = b.CheckpointRef != nil && b.CheckpointRef.Key == in.Key
		cp, reason, detail := Check(ctx, st, b, h, lister, in)
		e.Valid, e.Reason, e.Detail = reason == "", reason, detail
		if cp != nil && cp.Root != "" {
			e.Root = cp.Root
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Anchor > out[j].Anchor })
	return out, nil
}

// VerifyCheck names what a checkpoint verify finding failed
// (docs/json-output.md, "checkpoint verify"; health reports it as
// checkpoint:<check>).
type VerifyCheck string

// The checks of checkpoint verify. A section's own checks (crc, sha256,
// structure, …) are nkc1's, carried as they are.
const (
	CheckName         VerifyCheck = "name"          // the key is not a checkpoint key
	CheckHead         VerifyCheck = "head"          // HEAD of the object failed
	CheckGet          VerifyCheck = "get"           // GET of the object failed
	CheckSize         VerifyCheck = "size"          // HEAD or listing size against the bytes
	CheckETag         VerifyCheck = "etag"          // HEAD or listing ETag against the bytes
	CheckStructure    VerifyCheck = "structure"     // the footer or table does not parse
	CheckDecode       VerifyCheck = "decode"        // the sections do not decode or agree
	CheckRoot         VerifyCheck = "root"          // the root does not match the key's
	CheckBindingRef   VerifyCheck = "binding-ref"   // the binding's checkpoint_ref or the checkpoint's binding
	CheckAnchor       VerifyCheck = "anchor"        // the anchor against the key or the head
	CheckAnchorObject VerifyCheck = "anchor-object" // the anchor object's digest against the stream
)

// Finding is one failed check of checkpoint verify.
type Finding struct {
	Partition string      `json:"partition"`
	Key       string      `json:"key"`
	Check     VerifyCheck `json:"check"`
	Detail    string      `json:"detail"`
}

// VerifyReport is the outcome of verifying a binding's checkpoints.
type VerifyReport struct {
	Partition   string    `json:"partition"`
	Checkpoints int       `json:"checkpoints"`
	Findings    []Finding `json:"findings"`
}

// listObjectsAndCheckpoints lists a stream's objects (all of them) and
// its checkpoints, from its one LIST page where it fits
// (Objects.Prefetch); the returned Objects holds the complete listing.
func listObjectsAndCheckpoints(ctx context.Context, st store.Store, sid string) (*Objects, []layout.StreamObject, []store.ObjectInfo, error) {
	lister := NewObjects(st, sid)
	if err := lister.Prefetch(ctx); err != nil {
		return nil, nil, nil, err
	}
	objs, err := lister.All(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	infos, err := lister.Checkpoints(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return lister, objs, infos, nil
}

// VerifyListed is Verify over the head, the stream's objects and the
// checkpoint listing the caller already read (verify --all reads them once
// for all its checks instead of listing the objects twice).
func VerifyListed(ctx context.Context, st store.Store, b *layout.Binding, h *layout.Head, objs []layout.StreamObject, infos []store.ObjectInfo) (*VerifyReport, error) {
	rep := &VerifyReport{Partition: b.Name(), Findings: []Finding{}}
	add := func(key string, check VerifyCheck, detail string) {
		rep.Findings = append(rep.Findings, Finding{Partition: b.Name(), Key: key, Check: check, Detail: detail})
	}
	refFound := false
	var mu sync.Mutex
	lister := AllObjects(objs)
	check := func(in store.ObjectInfo) {
		var local []Finding
		add := func(key string, check VerifyCheck, detail string) {
			local = append(local, Finding{Partition: b.Name(), Key: key, Check: check, Detail: detail})
		}
		defer func() {
			mu.Lock()
			rep.Findings = append(rep.Findings, local...)
			mu.Unlock()
		}()
		anchor, r12, err := layout.ParseCheckpointKey(in.Key)
		if err != nil {
			add(in.Key, CheckName, err.Error())
			return
		}
		// The size and ETag the bytes must have: the listing's where it
		// has an ETag (S3, mem://), else HEAD's.
		hd, says := in, "the listing says"
		if hd.ETag == "" {
			if hd, err = st.Head(ctx, in.Key); err != nil {
				add(in.Key, CheckHead, err.Error())
				return
			}
			says = "HEAD says"
		}
		data, err := store.GetCapped(ctx, st, in.Key, MaxCheckpointBytes)
		if err != nil {
			add(in.Key, CheckGet, err.Error())
			return
		}
		if hd.Size != int64(len(data)) {
			add(in.Key, CheckSize, fmt.Sprintf("%s %d bytes, GET returned %d", says, hd.Size, len(data)))
		}
		if et := store.ETagOf(data); hd.ETag != et {
			add(in.Key, CheckETag, fmt.Sprintf("%s %s, bytes hash to %s", says, hd.ETag, et))
		}
		r, err := nkc1.Open(data)
		if err != nil {
			add(in.Key, CheckStructure, err.Error())
			return
		}
		// One decode checks the root and every section's CRC and digest;
		// only a failure needs the full list of findings.
		cp, decodeErr := r.Checkpoint()
		if decodeErr != nil {
			fs := r.Verify()
			for _, f := range fs {
				add(in.Key, VerifyCheck(f.Check), fmt.Sprintf("section %s: %s", f.Section, f.Detail))
			}
			if len(fs) == 0 {
				add(in.Key, CheckDecode, decodeErr.Error())
			}
		}
		if len(r.Root()) < 12 || r.Root()[:12] != r12 {
			add(in.Key, CheckRoot, fmt.Sprintf("root %s does not match the name's %s", r.Root(), r12))
		}
		if b.CheckpointRef != nil && b.CheckpointRef.Key == in.Key {
			mu.Lock()
			refFound = true
			mu.Unlock()
			if s := store.SHA256Of(data); s != b.CheckpointRef.SHA256 {
				add(in.Key, CheckBindingRef, fmt.Sprintf("binding records sha256 %s, object has %s", b.CheckpointRef.SHA256, s))
			}
			if b.CheckpointRef.Anchor != anchor {
				add(in.Key, CheckBindingRef, fmt.Sprintf("binding records anchor %d, name says %d", b.CheckpointRef.Anchor, anchor))
			}
		}
		if decodeErr != nil {
			return
		}
		if cp.Anchor.Offset != anchor {
			add(in.Key, CheckAnchor, fmt.Sprintf("anchor section says %d, name says %d", cp.Anchor.Offset, anchor))
		}
		if cp.Anchor.StreamID != b.StreamID || cp.Anchor.Topic != b.Topic || cp.Anchor.Partition != b.Partition ||
			cp.Binding.Key != layout.BindingKey(b.Topic, b.Partition) || cp.Binding.Version > b.Version {
			add(in.Key, CheckBindingRef, fmt.Sprintf("made for %s (stream %s, version %d), binding is stream %s version %d", cp.Binding.Key, cp.Anchor.StreamID, cp.Binding.Version, b.StreamID, b.Version))
		}
		if anchor > h.Head {
			add(in.Key, CheckAnchor, fmt.Sprintf("anchor %d leads the head %d", anchor, h.Head))
		} else if reason, detail := checkAnchorObject(ctx, st, cp.Anchor, lister, h); reason != "" {
			if reason == ReasonAnchorMissing && anchor <= h.Trim && !(b.CheckpointRef != nil && b.CheckpointRef.Key == in.Key) {
				// Stale: its anchor object was collected below the trim.
				return
			}
			add(in.Key, CheckAnchorObject, string(reason)+": "+detail)
		}
	}
	// Checkpoints are independent: verify them on every core.
	jobs := make(chan store.ObjectInfo)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range jobs {
				check(in)
			}
		}()
	}
	for _, in := range infos {
		rep.Checkpoints++
		jobs <- in
	}
	close(jobs)
	wg.Wait()
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		if rep.Findings[i].Key != rep.Findings[j].Key {
			return rep.Findings[i].Key < rep.Findings[j].Key
		}
		return rep.Findings[i].Check < rep.Findings[j].Check
	})
	if b.CheckpointRef != nil && !refFound {
		add(b.CheckpointRef.Key, "binding-ref", "the binding's checkpoint_ref names a checkpoint that does not exist")
	}
	return rep, nil
}
