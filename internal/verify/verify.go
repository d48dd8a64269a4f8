// Package verify owns verification of what readers depend on (docs/design.md §9):
// the activation constraint of a binding's compacted coverage (per member
// object HEAD, size, ETag, every block CRC-32C and the full SHA-256; the
// generation-set identity; gap-free coverage from the log start), COMMITTED
// objects against their generation manifests, and checkpoints (through
// package recovery). A finding on ACTIVE coverage quarantines the set:
// a quarantine record (IfAbsent) and a CAS of the coverage state to
// QUARANTINED, which blocks the partition's coordinator until repair.
//
// Verification only reads, except for that quarantine step.
package verify

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Checks, as findings name them.
const (
	CheckSetIdentity = "set-identity"
	CheckManifest    = "manifest"
	CheckCoverageGap = "coverage-gap"
	CheckHead        = "head"
	CheckSize        = "size"
	CheckETag        = "etag"
	CheckSHA256      = "sha256"
	CheckCRC         = "crc"
	CheckStructure   = "structure"
	CheckCheckpoint  = "checkpoint"
	// CheckBinding: the binding document does not decode or validate.
	CheckBinding = "binding"
	// CheckStreamHead: the stream head document is missing or malformed.
	CheckStreamHead = "stream-head"
	// CheckKind: a generation's kind does not fit what it holds (a
	// TOPIC_COMPACTED manifest without sources or over COMMITTED objects,
	// a COMMITTED one over NTC2 objects).
	CheckKind = "kind"
	// CheckCommittedGap: the sealed COMMITTED generations above the trim
	// do not tile their range back to back.
	CheckCommittedGap = "committed-gap"
	// CheckBeyondHead: the stream holds objects, generations or
	// checkpoints above its head (a rolled-back head).
	CheckBeyondHead = "beyond-head"
	// CheckChain: the open segment's objects do not reach the head back to
	// back (a hole, or two overlapping chains).
	CheckChain = "chain"
	// CheckInvariant: documents that each decode contradict one another
	// (layout.CheckInvariants, layout.CheckGenerations): e.g. an observed
	// log start above the head's trim, coverage outside the stream,
	// generations that overlap.
	CheckInvariant = "invariant"
)

// Scopes of findings.
const (
	ScopeCoverage   = "compacted-coverage"
	ScopeCommitted  = "committed"
	ScopeCheckpoint = "checkpoint"
	// ScopeBinding: the binding document itself.
	ScopeBinding = "binding"
	// ScopeStream: the stream's head against what the stream holds.
	ScopeStream = "stream"
	// ScopeOpenSegment: the objects above the last sealed generation, up to
	// the head (checked with --deep).
	ScopeOpenSegment = "open-segment"
)

// Sample selects a deterministic 1/T slice of the objects (N in [0, T)),
// like restic's --read-data-subset: T nightly runs cover everything once.
type Sample struct{ N, T int }

// ParseSample parses "n/t".
func ParseSample(s string) (*Sample, error) {
	a, b, ok := strings.Cut(s, "/")
	n, err1 := strconv.Atoi(a)
	t, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || t < 1 || n < 0 || n >= t {
		return nil, fmt.Errorf("--sample %q: want n/t with 0 <= n < t", s)
	}
	return &Sample{N: n, T: t}, nil
}

// Has reports whether key is in the slice.
func (s *Sample) Has(key string) bool {
	if s == nil {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64()%uint64(s.T)) == s.N
}

// Options steer a verification.
type Options struct {
	// Deep reads and hashes every byte (CRCs and SHA-256); the default
	// checks HEAD, size and ETag and the documents.
	Deep   bool
	Sample *Sample
	// Workers hash objects in parallel (default: the number of cores).
	Workers int
	// NoQuarantine reports findings without quarantining (repair's
	// re-verification).
	NoQuarantine bool
	// ReadOnly writes nothing at all (no quarantine record, no coverage
	// CAS); the report says what would have been quarantined.
	ReadOnly bool
	NowMs    int64
	// Progress is told the bytes hashed (deep) as they go.
	Progress func(n int64)
	// Total is told, before they are hashed, the bytes a deep check will
	// hash (from the manifests' object sizes and the open segment's
	// listing), so that progress has a total.
	Total func(n int64)
}

// Finding is one failed check.
type Finding struct {
	Partition string `json:"partition"`
	Scope     string `json:"scope"`
	Gen       int64  `json:"gen"`
	Object    string `json:"object,omitempty"`
	Check     string `json:"check"`
	Expected  string `json:"expected,omitempty"`
	Found     string `json:"found,omitempty"`
	Detail    string `json:"detail"`
}

// Report is one partition's outcome.
type Report struct {
	Partition   string    `json:"partition"`
	Coverage    string    `json:"coverage"`
	SetID       string    `json:"set_id,omitempty"`
	Findings    []Finding `json:"findings"`
	Quarantined bool      `json:"quarantined"` // this run quarantined the set
	// WouldQuarantine: the coverage findings would have quarantined the
	// set, but the run was read-only (or repair's re-verification).
	WouldQuarantine bool `json:"would_quarantine"`
	Blocked         bool `json:"blocked"` // the coverage is QUARANTINED now, or mandatory coverage is missing
	// BlockedReason says why the partition is blocked.
	BlockedReason string `json:"blocked_reason,omitempty"`
	Objects       int    `json:"objects_checked"`
	BytesHashed   int64  `json:"bytes_hashed"`
	// Error is why the partition could not be (fully) verified when that
	// is not a finding (an I/O failure); the findings so far are kept.
	Error string `json:"error,omitempty"`
	err   error
}

// Err is the failure behind Error (nil when the partition was verified).
func (r *Report) Err() error { return r.err }

// fail records a failure that stops the partition's verification.
func (r *Report) fail(err error) *Report {
	r.err = err
	r.Error = err.Error()
	return r
}

// Named verifies one partition by name: a binding that cannot be read is
// reported, never returned as an error, so that a run over many partitions
// checks every one. A malformed binding is a finding (corruption); any
// other failure fills Error.
func Named(ctx context.Context, st store.Store, tp layout.TopicPartition, o Options) *Report {
	rep := &Report{Partition: tp.String(), Findings: []Finding{}}
	b, _, err := LoadBinding(ctx, st, tp)
	if err != nil {
		if IsMalformed(err) {
			rep.Findings = append(rep.Findings, Finding{Partition: tp.String(), Scope: ScopeBinding, Gen: -1, Object: layout.BindingKey(tp.Topic, tp.Partition), Check: CheckBinding, Detail: err.Error()})
			return rep
		}
		return rep.fail(fmt.Errorf("verify %s: load binding: %w", tp, err))
	}
	r, err := Partition(ctx, st, b, o)
	if err != nil {
		if r == nil {
			return rep.fail(err)
		}
		return r.fail(err)
	}
	return r
}

// target is an object to check against its manifest entry.
type target struct {
	scope string
	gen   int64
	ref   *layout.ObjectRef // in its generation's manifest, which outlives the check
	ntc2  bool
}

// Partition verifies one binding: its compacted coverage (when not NONE),
// the COMMITTED generations above the trim, the generations' kinds, the
// head against what the stream holds, with Deep the open segment, and its
// checkpoints. A stored document that does not decode is a finding; an
// error is an I/O failure (the report so far is returned with it).
func Partition(ctx context.Context, st store.Store, b *layout.Binding, o Options) (*Report, error) {
	rep := &Report{Partition: b.Name(), Coverage: b.Coverage.State, SetID: b.Coverage.SetID, Findings: []Finding{}}
	add := func(f Finding) {
		f.Partition = b.Name()
		rep.Findings = append(rep.Findings, f)
	}
	h, _, err := LoadHead(ctx, st, b.StreamID)
	switch {
	case err == nil:
	case IsMalformed(err):
		add(Finding{Scope: ScopeStream, Gen: -1, Object: layout.HeadKey(b.StreamID), Check: CheckStreamHead, Detail: err.Error()})
		h = nil
	case errors.Is(err, store.ErrNotFound):
		add(Finding{Scope: ScopeStream, Gen: -1, Object: layout.HeadKey(b.StreamID), Check: CheckStreamHead, Expected: "present", Found: "missing", Detail: "the stream head is missing: " + err.Error()})
		h = nil
	default:
		return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
	}
	// The whole stream in one LIST where the store pages and the stream
	// fits (layout.ListStream): generations, objects, checkpoints and the
	// listed size and ETag of every object, so no HEAD per object either.
	var listed *layout.StreamListing
	if h != nil {
		if listed, err = layout.ListStream(ctx, st, b.StreamID); err != nil {
			return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
		}
	}
	// Each manifest is read once: the coverage members are generations
	// the walk below reads too.
	type loadedGen struct {
		g   *layout.Generation
		sum string
		err error
	}
	manifests := map[int64]loadedGen{}
	loadGen := func(n int64) (*layout.Generation, string, error) {
		l, ok := manifests[n]
		if !ok {
			l.g, l.sum, l.err = LoadGeneration(ctx, st, b.StreamID, n)
			manifests[n] = l
		}
		return l.g, l.sum, l.err
	}
	var targets []target
	if b.Coverage.State != layout.CoverageNone {
		ts, fs := coverageTargets(b, h, loadGen)
		for _, f := range fs {
			add(f)
		}
		targets = append(targets, ts...)
	}
	var gens []int64
	if listed != nil {
		gens, err = listed.Generations()
	} else {
		gens, err = layout.ListGenerations(ctx, st, b.StreamID)
	}
	if err != nil {
		return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
	}
	trim := int64(-1)
	if h != nil {
		trim = h.Trim
	}
	var loaded, committed []*layout.Generation
	compactedGens := 0
	for _, n := range gens {
		g, _, err := loadGen(n)
		if err != nil {
			if !IsMalformed(err) && !errors.Is(err, store.ErrNotFound) {
				return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
			}
			add(Finding{Scope: ScopeCommitted, Gen: n, Object: layout.GenerationKey(b.StreamID, n), Check: CheckManifest, Detail: err.Error()})
			continue
		}
		loaded = append(loaded, g)
		if f, bad := kindFinding(g); bad {
			add(f)
			continue
		}
		if g.Kind == layout.KindTopicCompacted {
			compactedGens++
			continue
		}
		if g.End <= trim {
			continue // below the trim: garbage for gc, not data
		}
		committed = append(committed, g)
		for i := range g.Objects {
			targets = append(targets, target{scope: ScopeCommitted, gen: g.Gen, ref: &g.Objects[i]})
		}
	}
	for _, f := range committedGaps(committed, trim) {
		add(f)
	}
	if b.Coverage.State == layout.CoverageNone && compactedGens > 0 {
		// A stream that holds compacted generations had coverage once:
		// with NONE, readers would fall back to COMMITTED data that
		// compaction superseded (compacted-away values come back).
		rep.Blocked = true
		rep.BlockedReason = fmt.Sprintf("mandatory compacted coverage is missing: the binding's coverage is NONE but the stream holds %d TOPIC_COMPACTED generation(s)", compactedGens)
	}
	var objs []layout.StreamObject
	var cps []store.ObjectInfo
	if h != nil {
		// Keys only (a file:// listing then stats no object): nothing
		// below needs a listed size but the open segment's progress total,
		// and a checked object's size is the one its read returns.
		var infos []store.ObjectInfo
		if listed != nil {
			infos = listed.Under(layout.ObjectsPrefix(b.StreamID))
		} else {
			infos, err = store.ListKeys(ctx, st, layout.ObjectsPrefix(b.StreamID))
		}
		if err == nil {
			objs, err = layout.AppendStreamObjects(make([]layout.StreamObject, 0, len(infos)), infos)
		}
		if err != nil {
			return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
		}
		if listed != nil {
			cps = listed.Under(layout.CheckpointsPrefix(b.StreamID))
		} else if cps, err = st.List(ctx, layout.CheckpointsPrefix(b.StreamID)); err != nil {
			return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
		}
		for _, f := range BeyondHead(h, objs, loaded, cps) {
			add(f)
		}
	}
	for _, f := range checkObjects(ctx, st, targets, listed, o, rep) {
		add(f)
	}
	if o.Deep && h != nil {
		for _, f := range openSegment(ctx, st, h, objs, committed, o, rep) {
			add(f)
		}
	}
	if h != nil && len(rep.Findings) == 0 {
		// The cross-document invariants, on a partition whose documents
		// and objects each passed (a finding above already names what a
		// violation here would repeat).
		if err := layout.CheckInvariants(b, h); err != nil {
			add(Finding{Scope: ScopeBinding, Gen: -1, Object: layout.BindingKey(b.Topic, b.Partition), Check: CheckInvariant, Detail: err.Error()})
		} else {
			sums := make([]layout.GenerationSummary, len(loaded))
			for i, g := range loaded {
				sums[i] = g.Summary()
			}
			if err := layout.CheckGenerations(b, h, sums); err != nil {
				add(Finding{Scope: ScopeStream, Gen: -1, Object: layout.GenerationsPrefix(b.StreamID), Check: CheckInvariant, Detail: err.Error()})
			}
		}
	}
	coverageFindings := 0
	for _, f := range rep.Findings {
		if f.Scope == ScopeCoverage {
			coverageFindings++
		}
	}
	if h != nil {
		// The checkpoints are checked against the same head and listings
		// as everything above: one listing of the objects per partition.
		crep, err := recovery.VerifyListed(ctx, st, b, h, objs, cps)
		if err != nil {
			return rep, fmt.Errorf("verify %s: checkpoints: %w", b.Name(), err)
		}
		for _, f := range crep.Findings {
			add(Finding{Scope: ScopeCheckpoint, Gen: -1, Object: f.Key, Check: CheckCheckpoint + ":" + f.Check, Detail: f.Detail})
		}
	}
	if coverageFindings > 0 && b.Coverage.State == layout.CoverageActive {
		if o.NoQuarantine || o.ReadOnly {
			rep.WouldQuarantine = true
		} else {
			if err := Quarantine(ctx, st, b, rep.Findings, o.NowMs); err != nil {
				return rep, err
			}
			rep.Quarantined = true
		}
	}
	if b.Coverage.State == layout.CoverageQuarantined {
		rep.Blocked = true
		rep.BlockedReason = "compacted set " + b.Coverage.SetID + " is QUARANTINED"
	}
	rep.Coverage = b.Coverage.State
	return rep, nil
}

// kindFinding checks that a generation's kind fits what it holds: a
// TOPIC_COMPACTED generation is computed from sources and holds NTC2
// objects under compacted/; a COMMITTED one holds batch objects under
// objects/. A COMMITTED manifest whose kind was flipped would otherwise
// drop out of the COMMITTED checks unseen.
func kindFinding(g *layout.Generation) (Finding, bool) {
	key := layout.GenerationKey(g.StreamID, g.Gen)
	f := Finding{Scope: ScopeCommitted, Gen: g.Gen, Object: key, Check: CheckKind, Expected: g.Kind}
	if g.Kind == layout.KindTopicCompacted {
		if len(g.Sources) == 0 {
			f.Found = "no sources"
			f.Detail = fmt.Sprintf("TOPIC_COMPACTED generation %d [%d, %d) names no sources (a COMMITTED manifest with its kind changed?)", g.Gen, g.Base, g.End)
			return f, true
		}
	}
	for _, ref := range g.Objects {
		inObjects := strings.HasPrefix(ref.Key, layout.ObjectsPrefix(g.StreamID))
		if g.Kind == layout.KindTopicCompacted && inObjects || g.Kind == layout.KindCommitted && !inObjects {
			f.Found = ref.Key
			f.Detail = fmt.Sprintf("%s generation %d [%d, %d) holds %s, not an object of its kind", g.Kind, g.Gen, g.Base, g.End, ref.Key)
			return f, true
		}
	}
	return Finding{}, false
}

// committedGaps checks that the sealed COMMITTED generations above the trim
// tile their range: the first holds the trim, each starts where the
// previous one ended.
func committedGaps(gens []*layout.Generation, trim int64) []Finding {
	gs := append([]*layout.Generation(nil), gens...)
	sort.Slice(gs, func(i, j int) bool { return gs[i].Base < gs[j].Base })
	var fs []Finding
	for i, g := range gs {
		want := trim
		if i > 0 {
			want = gs[i-1].End
		} else if trim < 0 || g.Base <= trim {
			continue
		}
		if g.Base != want {
			what := "gap"
			if g.Base < want {
				what = "overlap"
			}
			fs = append(fs, Finding{Scope: ScopeCommitted, Gen: g.Gen, Object: layout.GenerationKey(g.StreamID, g.Gen), Check: CheckCommittedGap, Expected: fmt.Sprint(want), Found: fmt.Sprint(g.Base),
				Detail: fmt.Sprintf("sealed COMMITTED generations have a %s: generation %d starts at %d, the previous range ends at %d", what, g.Gen, g.Base, want)})
		}
	}
	return fs
}

// BeyondHead finds what a stream holds above its head: objects starting
// above it (an append only ever writes at the head, so that is no failed
// append's leftover) or reaching across it without a sibling, generations
// ending above it and checkpoints anchored above it. An object starting
// exactly at the head is what a failed append leaves and is not reported. Any of them means the head was rolled back: the data above it
// is the stream's, and gc must not collect it.
func BeyondHead(h *layout.Head, objs []layout.StreamObject, gens []*layout.Generation, checkpoints []store.ObjectInfo) []Finding {
	var fs []Finding
	f := func(gen int64, key, found, detail string) {
		fs = append(fs, Finding{Scope: ScopeStream, Gen: gen, Object: key, Check: CheckBeyondHead, Expected: fmt.Sprintf("<= %d", h.Head), Found: found, Detail: detail})
	}
	// An append that lost its head CAS leaves an object starting where the
	// winner's object starts (both wrote at the head they read); one
	// reaching across the head with no such sibling was below the head.
	sibling := map[int64]bool{}
	for _, o := range objs {
		if o.End <= h.Head {
			sibling[o.Base] = true
		}
	}
	for _, o := range objs {
		switch {
		case o.Base > h.Head:
			f(-1, o.Key, fmt.Sprint(o.Base), fmt.Sprintf("object [%d, %d) starts above the head %d", o.Base, o.End, h.Head))
		case o.Base < h.Head && o.End > h.Head && !sibling[o.Base]:
			f(-1, o.Key, fmt.Sprint(o.End), fmt.Sprintf("object [%d, %d) reaches across the head %d and is no failed append's leftover (no object of the chain starts at %d)", o.Base, o.End, h.Head, o.Base))
		}
	}
	for _, g := range gens {
		if g.End > h.Head {
			f(g.Gen, layout.GenerationKey(g.StreamID, g.Gen), fmt.Sprint(g.End), fmt.Sprintf("%s generation %d [%d, %d) ends above the head %d", g.Kind, g.Gen, g.Base, g.End, h.Head))
		}
	}
	for _, in := range checkpoints {
		anchor, _, err := layout.ParseCheckpointKey(in.Key)
		if err == nil && anchor > h.Head {
			f(-1, in.Key, fmt.Sprint(anchor), fmt.Sprintf("checkpoint anchored at %d, above the head %d", anchor, h.Head))
		}
	}
	return fs
}

// openSegment checks the objects above the last sealed COMMITTED generation
// (in no manifest yet): they must reach the head back to back, and each
// must hold batches that pass their CRC inside the object's range.
func openSegment(ctx context.Context, st store.Store, h *layout.Head, objs []layout.StreamObject, committed []*layout.Generation, o Options, rep *Report) []Finding {
	from := max(h.Start, h.Trim)
	for _, g := range committed {
		from = max(from, g.End)
	}
	if from >= h.Head {
		return nil
	}
	chain, err := stream.Chain(objs, from, h.Head)
	if err != nil {
		return []Finding{{Scope: ScopeOpenSegment, Gen: -1, Check: CheckChain, Expected: fmt.Sprintf("[%d, %d) back to back", from, h.Head), Detail: err.Error()}}
	}
	if o.Total != nil {
		// The sizes the listing knows (store.ListKeys on file:// knows
		// none: those are counted in as they are read).
		var n int64
		for _, ob := range chain {
			if o.Sample.Has(ob.Key) && ob.Size > 0 {
				n += ob.Size
			}
		}
		o.Total(n)
	}
	var fs []Finding
	var buf []byte // one read buffer, reused object after object
	for _, ob := range chain {
		if !o.Sample.Has(ob.Key) {
			continue
		}
		data, err := stream.ReadObjectInto(ctx, st, ob, buf[:0])
		rep.Objects++
		if err != nil {
			fs = append(fs, Finding{Scope: ScopeOpenSegment, Gen: -1, Object: ob.Key, Check: CheckHead, Expected: "readable", Found: "error", Detail: err.Error()})
			continue
		}
		if cap(data) > cap(buf) {
			buf = data
		}
		rep.BytesHashed += int64(len(data))
		if o.Total != nil && ob.Size < 0 {
			o.Total(int64(len(data)))
		}
		if o.Progress != nil {
			o.Progress(int64(len(data)))
		}
		if err := stream.ScanObjectWith(ob, data, stream.ScanOptions{VerifyCRC: true, Epochs: h.LeaderEpochs}, func(stream.Batch) error { return nil }); err != nil {
			check := CheckStructure
			if errors.Is(err, kafka.ErrCRC) {
				check = CheckCRC
			}
			fs = append(fs, Finding{Scope: ScopeOpenSegment, Gen: -1, Object: ob.Key, Check: check, Detail: err.Error()})
		}
	}
	return fs
}

// coverageTargets checks the set's documents: identity, manifests, gap-free
// range; and returns the member objects to check.
func coverageTargets(b *layout.Binding, h *layout.Head, loadGen func(int64) (*layout.Generation, string, error)) ([]target, []Finding) {
	var ts []target
	var fs []Finding
	c := b.Coverage
	if got := layout.SetID(c.Members); got != c.SetID {
		fs = append(fs, Finding{Scope: ScopeCoverage, Gen: -1, Check: CheckSetIdentity, Expected: c.SetID, Found: got, Detail: "the members' (gen, manifest sha256) list does not hash to the binding's set_id"})
	}
	var gens []*layout.Generation
	for _, m := range c.Members {
		key := layout.GenerationKey(b.StreamID, m.Gen)
		g, sum, err := loadGen(m.Gen)
		if err != nil {
			fs = append(fs, Finding{Scope: ScopeCoverage, Gen: m.Gen, Object: key, Check: CheckManifest, Expected: m.ManifestSHA256, Detail: err.Error()})
			continue
		}
		if sum != m.ManifestSHA256 {
			fs = append(fs, Finding{Scope: ScopeCoverage, Gen: m.Gen, Object: key, Check: CheckManifest, Expected: m.ManifestSHA256, Found: sum, Detail: "manifest digest differs from the set member's"})
			continue
		}
		if g.Kind != layout.KindTopicCompacted {
			fs = append(fs, Finding{Scope: ScopeCoverage, Gen: m.Gen, Object: key, Check: CheckManifest, Detail: "member is a " + g.Kind + " generation"})
			continue
		}
		gens = append(gens, g)
		for i := range g.Objects {
			ts = append(ts, target{scope: ScopeCoverage, gen: g.Gen, ref: &g.Objects[i], ntc2: true})
		}
	}
	// Gap-free from the log start to the compacted end.
	sort.Slice(gens, func(i, j int) bool { return gens[i].Base < gens[j].Base })
	at := c.Start
	if h != nil && c.Start > h.Trim {
		fs = append(fs, Finding{Scope: ScopeCoverage, Gen: -1, Check: CheckCoverageGap, Expected: fmt.Sprint(h.Trim), Found: fmt.Sprint(c.Start), Detail: fmt.Sprintf("coverage starts at %d, above the log start %d", c.Start, h.Trim)})
	}
	for _, g := range gens {
		if g.Base > at {
			fs = append(fs, Finding{Scope: ScopeCoverage, Gen: g.Gen, Check: CheckCoverageGap, Expected: fmt.Sprint(at), Found: fmt.Sprint(g.Base), Detail: fmt.Sprintf("gap [%d, %d) before generation %d", at, g.Base, g.Gen)})
		}
		for _, ref := range g.Objects {
			if ref.Base > at {
				fs = append(fs, Finding{Scope: ScopeCoverage, Gen: g.Gen, Object: ref.Key, Check: CheckCoverageGap, Expected: fmt.Sprint(at), Found: fmt.Sprint(ref.Base), Detail: fmt.Sprintf("gap [%d, %d) before object %s", at, ref.Base, ref.Key)})
			}
			at = max(at, ref.End)
		}
		at = max(at, g.End)
	}
	if len(gens) > 0 && at < c.End {
		fs = append(fs, Finding{Scope: ScopeCoverage, Gen: -1, Check: CheckCoverageGap, Expected: fmt.Sprint(c.End), Found: fmt.Sprint(at), Detail: fmt.Sprintf("members end at %d, coverage claims %d", at, c.End)})
	}
	return ts, fs
}

// checkObjects checks each target: HEAD, size and ETag always; with Deep
// (and inside the sample) every byte: SHA-256 and every CRC, in parallel.
func checkObjects(ctx context.Context, st store.Store, ts []target, listed *layout.StreamListing, o Options, rep *Report) []Finding {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if o.Total != nil && o.Deep {
		var n int64
		for _, t := range ts {
			if o.Sample.Has(t.ref.Key) {
				n += t.ref.Size
			}
		}
		o.Total(n)
	}
	// Each worker takes the next target by index (no channel hand-off
	// per object) and keeps its findings and counts until the end; one
	// worker runs in this goroutine.
	workers = min(workers, len(ts))
	type tally struct {
		fs      []Finding
		objects int
		hashed  int64
	}
	tallies := make([]tally, workers)
	var next atomic.Int64
	work := func(w *tally) {
		var buf []byte // one read buffer per worker, reused object after object
		for {
			i := next.Add(1) - 1
			if i >= int64(len(ts)) {
				return
			}
			var fs []Finding
			var hashed int64
			fs, hashed, buf = checkObject(ctx, st, ts[i], listed, o, buf)
			w.fs = append(w.fs, fs...)
			w.objects++
			w.hashed += hashed
			if o.Progress != nil && hashed > 0 {
				o.Progress(hashed)
			}
		}
	}
	if workers == 1 {
		work(&tallies[0])
	} else {
		var wg sync.WaitGroup
		for i := range tallies {
			wg.Go(func() { work(&tallies[i]) })
		}
		wg.Wait()
	}
	var out []Finding
	for _, w := range tallies {
		out = append(out, w.fs...)
		rep.Objects += w.objects
		rep.BytesHashed += w.hashed
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Check < out[j].Check
	})
	return out
}

// fromListing is what a complete stream listing says of key (its size
// and ETag) in place of a HEAD, and whether it lists the key at all. ok is
// false without a listing, or where it has no ETag for the key: HEAD is
// asked then.
func fromListing(listed *layout.StreamListing, key string) (info store.ObjectInfo, found, ok bool) {
	if listed == nil {
		return store.ObjectInfo{}, false, false
	}
	info, found = listed.Info(key)
	if found && info.ETag == "" {
		return store.ObjectInfo{}, false, false
	}
	return info, found, true
}

// checkObject checks one target. With Deep (inside the sample) it reads
// the object and its size in one step (store.GetSizedInto: one open on
// file://, and no digest computed by the store) into buf, which it
// returns (grown) for the next object.
func checkObject(ctx context.Context, st store.Store, t target, listed *layout.StreamListing, o Options, buf []byte) ([]Finding, int64, []byte) {
	f := func(check, expected, found, detail string) Finding {
		return Finding{Scope: t.scope, Gen: t.gen, Object: t.ref.Key, Check: check, Expected: expected, Found: found, Detail: detail}
	}
	deep := o.Deep && o.Sample.Has(t.ref.Key)
	var info store.ObjectInfo
	var data []byte
	var err error
	if deep {
		// The size, and the ETag where the store has it without hashing;
		// the digests are taken here, once, from the bytes read.
		data, info, err = store.GetSizedInto(ctx, st, t.ref.Key, buf[:0])
		if err == nil && cap(data) > cap(buf) {
			buf = data
		}
	} else if in, found, ok := fromListing(listed, t.ref.Key); ok {
		info = in
		if !found {
			err = fmt.Errorf("%s: %w (not in the stream's listing)", t.ref.Key, store.ErrNotFound)
		}
	} else {
		info, err = st.Head(ctx, t.ref.Key)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return []Finding{f(CheckHead, "present", "missing", "the object does not exist")}, 0, buf
		}
		return []Finding{f(CheckHead, "present", "error", err.Error())}, 0, buf
	}
	etagOK := info.ETag == t.ref.ETag
	if deep && info.ETag == "" {
		// file://'s ETag, the MD5 of the bytes, from the bytes read (the
		// hex compared on the stack: a string only for a finding).
		var h [2 * md5.Size]byte
		sum := md5.Sum(data)
		hex.Encode(h[:], sum[:])
		if etagOK = string(h[:]) == t.ref.ETag; !etagOK {
			info.ETag = string(h[:])
		}
	}
	var fs []Finding
	if info.Size != t.ref.Size {
		fs = append(fs, f(CheckSize, fmt.Sprint(t.ref.Size), fmt.Sprint(info.Size), "size differs from the manifest"))
	}
	if !etagOK {
		fs = append(fs, f(CheckETag, t.ref.ETag, info.ETag, "ETag differs from the manifest"))
	}
	if !deep {
		return fs, 0, buf
	}
	var h [2 * sha256.Size]byte
	sum := sha256.Sum256(data)
	hex.Encode(h[:], sum[:])
	if string(h[:]) != t.ref.SHA256 {
		fs = append(fs, f(CheckSHA256, "sha256:"+t.ref.SHA256, "sha256:"+string(h[:]), "content digest differs from the manifest"))
	}
	if t.ntc2 {
		r, err := ntc2.Open(data)
		if err != nil {
			return append(fs, f(CheckStructure, "NTC2", "unreadable", err.Error())), int64(len(data)), buf
		}
		for _, x := range r.Verify() {
			check := CheckStructure
			if x.Check == "crc" {
				check = CheckCRC
			}
			fs = append(fs, f(check, "", "", fmt.Sprintf("block %d: %s: %s", x.Block, x.Check, x.Detail)))
		}
	} else {
		sc := kafka.NewScannerVerify(data)
		for sc.Next() {
		}
		if err := sc.Err(); err != nil {
			check := CheckStructure
			if errors.Is(err, kafka.ErrCRC) {
				check = CheckCRC
			}
			fs = append(fs, f(check, "", "", err.Error()))
		}
	}
	return fs, int64(len(data)), buf
}

// Quarantine writes the quarantine record (IfAbsent; an existing record for
// the set stays) and CASes the coverage state to QUARANTINED.
func Quarantine(ctx context.Context, st store.Store, b *layout.Binding, findings []Finding, nowMs int64) error {
	if nowMs == 0 {
		nowMs = time.Now().UnixMilli()
	}
	q := &layout.Quarantine{SetID: b.Coverage.SetID, Topic: b.Topic, Partition: b.Partition, StreamID: b.StreamID, CreatedMs: nowMs}
	for _, f := range findings {
		if f.Scope == ScopeCoverage {
			q.Findings = append(q.Findings, layout.QuarantineFinding{Gen: f.Gen, Object: f.Object, Check: f.Check, Expected: f.Expected, Found: f.Found, Detail: f.Detail})
		}
	}
	if _, err := layout.Create(ctx, st, layout.QuarantineKey(q.SetID), q); err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("quarantine %s: write record: %w", b.Name(), err)
	}
	for attempt := 0; attempt < 4; attempt++ {
		cur, etag, err := layout.LoadBinding(ctx, st, b.Topic, b.Partition)
		if err != nil {
			return fmt.Errorf("quarantine %s: %w", b.Name(), err)
		}
		if cur.Coverage.SetID != q.SetID {
			return fmt.Errorf("quarantine %s: the coverage moved to set %s meanwhile: %w", b.Name(), cur.Coverage.SetID, store.ErrPreconditionFailed)
		}
		if cur.Coverage.State == layout.CoverageQuarantined {
			*b = *cur
			return nil
		}
		nb := *cur
		nb.Coverage.State = layout.CoverageQuarantined
		nb.Version++
		if _, err := layout.Replace(ctx, st, layout.BindingKey(b.Topic, b.Partition), &nb, etag); err == nil {
			*b = nb
			return nil
		} else if !errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("quarantine %s: CAS coverage: %w", b.Name(), err)
		}
	}
	return fmt.Errorf("quarantine %s: the binding keeps changing: %w", b.Name(), store.ErrPreconditionFailed)
}

// Records lists every quarantine record (not the archived ones); the first
// record that cannot be read fails the listing.
func Records(ctx context.Context, st store.Store) ([]layout.Quarantine, error) {
	recs, bad, err := RecordsAll(ctx, st)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, bad[0].Err()
	}
	return recs, nil
}

// RecordFailure is a quarantine record that could not be read.
type RecordFailure struct {
	Key   string `json:"key"`
	Error string `json:"error"`
	err   error
}

// Err is the failure (ErrMalformed when the record does not decode).
func (f RecordFailure) Err() error { return f.err }

// RecordsAll lists every quarantine record (not the archived ones); a
// record that cannot be read is returned as a failure and the others are
// still listed. The error is the listing's own. It reads one record at a
// time; RecordsParallel reads several at once.
func RecordsAll(ctx context.Context, st store.Store) ([]layout.Quarantine, []RecordFailure, error) {
	return RecordsParallel(ctx, st, 1)
}
