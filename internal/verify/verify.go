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
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
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
)

// Scopes of findings.
const (
	ScopeCoverage   = "compacted-coverage"
	ScopeCommitted  = "committed"
	ScopeCheckpoint = "checkpoint"
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
	NowMs        int64
	// Progress is told the bytes hashed (deep) as they go.
	Progress func(n int64)
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
	Blocked     bool      `json:"blocked"`     // the coverage is QUARANTINED now
	Objects     int       `json:"objects_checked"`
	BytesHashed int64     `json:"bytes_hashed"`
}

// target is an object to check against its manifest entry.
type target struct {
	scope string
	gen   int64
	ref   layout.ObjectRef
	ntc2  bool
}

// Partition verifies one binding: its compacted coverage (when not NONE),
// the COMMITTED generations above the trim, and its checkpoints.
func Partition(ctx context.Context, st store.Store, b *layout.Binding, o Options) (*Report, error) {
	rep := &Report{Partition: b.Name(), Coverage: b.Coverage.State, SetID: b.Coverage.SetID, Findings: []Finding{}}
	add := func(f Finding) {
		f.Partition = b.Name()
		rep.Findings = append(rep.Findings, f)
	}
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", b.Name(), err)
	}
	var targets []target
	coverageFindings := 0
	if b.Coverage.State != layout.CoverageNone {
		ts, fs := coverageTargets(ctx, st, b, h)
		for _, f := range fs {
			add(f)
		}
		targets = append(targets, ts...)
	}
	gens, err := layout.ListGenerations(ctx, st, b.StreamID)
	if err != nil {
		return nil, err
	}
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, n)
		if err != nil {
			add(Finding{Scope: ScopeCommitted, Gen: n, Object: layout.GenerationKey(b.StreamID, n), Check: CheckManifest, Detail: err.Error()})
			continue
		}
		if g.Kind != layout.KindCommitted || g.End <= h.Trim {
			continue // below the trim: garbage for gc, not data
		}
		for _, ref := range g.Objects {
			targets = append(targets, target{scope: ScopeCommitted, gen: g.Gen, ref: ref})
		}
	}
	for _, f := range checkObjects(ctx, st, targets, o, rep) {
		add(f)
	}
	for _, f := range rep.Findings {
		if f.Scope == ScopeCoverage {
			coverageFindings++
		}
	}
	crep, err := recovery.Verify(ctx, st, b)
	if err != nil {
		return nil, err
	}
	for _, f := range crep.Findings {
		add(Finding{Scope: ScopeCheckpoint, Gen: -1, Object: f.Key, Check: CheckCheckpoint + ":" + f.Check, Detail: f.Detail})
	}
	if coverageFindings > 0 && b.Coverage.State == layout.CoverageActive && !o.NoQuarantine {
		if err := Quarantine(ctx, st, b, rep.Findings, o.NowMs); err != nil {
			return rep, err
		}
		rep.Quarantined = true
	}
	rep.Blocked = b.Coverage.State == layout.CoverageQuarantined
	rep.Coverage = b.Coverage.State
	return rep, nil
}

// coverageTargets checks the set's documents: identity, manifests, gap-free
// range; and returns the member objects to check.
func coverageTargets(ctx context.Context, st store.Store, b *layout.Binding, h *layout.Head) ([]target, []Finding) {
	var ts []target
	var fs []Finding
	c := b.Coverage
	if got := layout.SetID(c.Members); got != c.SetID {
		fs = append(fs, Finding{Scope: ScopeCoverage, Gen: -1, Check: CheckSetIdentity, Expected: c.SetID, Found: got, Detail: "the members' (gen, manifest sha256) list does not hash to the binding's set_id"})
	}
	var gens []*layout.Generation
	for _, m := range c.Members {
		key := layout.GenerationKey(b.StreamID, m.Gen)
		g, sum, err := layout.LoadGeneration(ctx, st, b.StreamID, m.Gen)
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
		for _, ref := range g.Objects {
			ts = append(ts, target{scope: ScopeCoverage, gen: g.Gen, ref: ref, ntc2: true})
		}
	}
	// Gap-free from the log start to the compacted end.
	sort.Slice(gens, func(i, j int) bool { return gens[i].Base < gens[j].Base })
	at := c.Start
	if c.Start > h.Trim {
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
func checkObjects(ctx context.Context, st store.Store, ts []target, o Options, rep *Report) []Finding {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var mu sync.Mutex
	var out []Finding
	jobs := make(chan target)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range jobs {
				fs, hashed := checkObject(ctx, st, t, o)
				mu.Lock()
				out = append(out, fs...)
				rep.Objects++
				rep.BytesHashed += hashed
				mu.Unlock()
				if o.Progress != nil && hashed > 0 {
					o.Progress(hashed)
				}
			}
		}()
	}
	for _, t := range ts {
		jobs <- t
	}
	close(jobs)
	wg.Wait()
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Check < out[j].Check
	})
	return out
}

func checkObject(ctx context.Context, st store.Store, t target, o Options) ([]Finding, int64) {
	f := func(check, expected, found, detail string) Finding {
		return Finding{Scope: t.scope, Gen: t.gen, Object: t.ref.Key, Check: check, Expected: expected, Found: found, Detail: detail}
	}
	info, err := st.Head(ctx, t.ref.Key)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return []Finding{f(CheckHead, "present", "missing", "the object does not exist")}, 0
		}
		return []Finding{f(CheckHead, "present", "error", err.Error())}, 0
	}
	var fs []Finding
	if info.Size != t.ref.Size {
		fs = append(fs, f(CheckSize, fmt.Sprint(t.ref.Size), fmt.Sprint(info.Size), "size differs from the manifest"))
	}
	if info.ETag != t.ref.ETag {
		fs = append(fs, f(CheckETag, t.ref.ETag, info.ETag, "ETag differs from the manifest"))
	}
	if !o.Deep || !o.Sample.Has(t.ref.Key) {
		return fs, 0
	}
	data, err := st.Get(ctx, t.ref.Key, nil)
	if err != nil {
		return append(fs, f(CheckHead, "readable", "error", err.Error())), 0
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != t.ref.SHA256 {
		fs = append(fs, f(CheckSHA256, "sha256:"+t.ref.SHA256, "sha256:"+got, "content digest differs from the manifest"))
	}
	if t.ntc2 {
		r, err := ntc2.Open(data)
		if err != nil {
			return append(fs, f(CheckStructure, "NTC2", "unreadable", err.Error())), int64(len(data))
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
	return fs, int64(len(data))
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

// Records lists every quarantine record (not the archived ones).
func Records(ctx context.Context, st store.Store) ([]layout.Quarantine, error) {
	infos, err := st.List(ctx, layout.QuarantinePrefix)
	if err != nil {
		return nil, err
	}
	var out []layout.Quarantine
	for _, in := range infos {
		if strings.HasPrefix(in.Key, layout.QuarantinePrefix+"archive/") {
			continue
		}
		var q layout.Quarantine
		if _, err := layout.Load(ctx, st, in.Key, &q); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}
