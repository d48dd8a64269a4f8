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

	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Checks and scopes, as findings name them: health's (the cheap level
// every command shares) and those only reading every byte finds.
const (
	CheckSetIdentity  = health.CheckSetIdentity
	CheckManifest     = health.CheckManifest
	CheckCoverageGap  = health.CheckCoverageGap
	CheckHead         = health.CheckHead
	CheckSize         = health.CheckSize
	CheckETag         = health.CheckETag
	CheckSHA256       = health.CheckSHA256
	CheckCRC          = health.CheckCRC
	CheckStructure    = health.CheckStructure
	CheckCheckpoint   = health.CheckCheckpoint
	CheckBinding      = health.CheckBinding
	CheckStreamHead   = health.CheckStreamHead
	CheckKind         = health.CheckKind
	CheckCommittedGap = health.CheckCommittedGap
	CheckBeyondHead   = health.CheckBeyondHead
	CheckChain        = health.CheckChain
	CheckInvariant    = health.CheckInvariant

	ScopeCoverage    = health.ScopeCoverage
	ScopeCommitted   = health.ScopeCommitted
	ScopeCheckpoint  = health.ScopeCheckpoint
	ScopeBinding     = health.ScopeBinding
	ScopeStream      = health.ScopeStream
	ScopeOpenSegment = health.ScopeOpenSegment
	ScopeStore       = health.ScopeStore
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

	// Incremental (with Deep) reads only the immutable objects the proof
	// ledger holds no proof of, or whose proof is ReverifyAfter old or
	// older (default DefaultReverifyAfter), oldest proof first; the others
	// get the default level's checks.
	Incremental   bool
	ReverifyAfter time.Duration
	// Budget bounds the objects and bytes a deep run reads (shared by
	// every partition of the run); nil: no bound.
	Budget *Budget
	// WriteLedger writes the proofs of a deep run to the partition's
	// proof ledger (a CAS): verify's, never repair's re-verification.
	WriteLedger bool
	// Build is the nereusctl version the proofs name.
	Build string
	// MaxAge > 0 asks for a freshness verdict: a partition whose
	// immutable objects are not all proved within it has a proof:stale
	// finding. Without Deep the run reads no object bytes: the
	// documents, the listings and the ledger only (no object checks, no
	// checkpoint reads).
	MaxAge time.Duration
	// Plan reads no object bytes and writes nothing: the report's Plan
	// says what a run with these options would read.
	Plan bool
}

// Plan is what a run would read of one partition (Options.Plan).
type Plan struct {
	// Objects and Bytes would be read whole (hashed, or at the default
	// level the checkpoints); Left are the due objects the budget would
	// leave (LeftBytes).
	Objects   int   `json:"objects"`
	Bytes     int64 `json:"bytes"`
	Left      int   `json:"left"`
	LeftBytes int64 `json:"left_bytes"`
	// Requests are the store requests the run would send: one GET per
	// object read (ReadRequests), a HEAD per object checked whose size
	// and ETag the listing does not give (CheckRequests), and the
	// documents and listings, counted while planning (DocumentRequests).
	Requests         int64 `json:"requests"`
	ReadRequests     int64 `json:"read_requests"`
	CheckRequests    int64 `json:"check_requests"`
	DocumentRequests int64 `json:"document_requests"`
}

// Finding is one failed check (health.Finding).
type Finding = health.Finding

// ntc2Finding is the finding of an NTC2 object's own check: crc and sha256
// keep their names, the rest are structure findings whose detail names
// the NTC2 check; the block, when there is one, leads the detail ("block
// 3: …"; a whole-object check names none).
func ntc2Finding(f func(check, expected, found, detail string) Finding, x ntc2.Finding) Finding {
	check := CheckStructure
	switch x.Check {
	case ntc2.CheckCRC:
		check = CheckCRC
	case ntc2.CheckSHA256:
		check = CheckSHA256
	}
	detail := x.Detail
	if check == CheckStructure && x.Check != ntc2.CheckStructure {
		detail = x.Check + ": " + detail
	}
	if x.Block >= 0 {
		detail = fmt.Sprintf("block %d: %s", x.Block, detail)
	}
	return f(check, "", "", detail)
}

// Report is one partition's outcome.
type Report struct {
	Partition string `json:"partition"`
	// StreamID is the stream the binding references ("" when the binding
	// could not be read).
	StreamID    string    `json:"stream_id,omitempty"`
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
	// Proof is the partition's proof ledger and what the run did with it
	// (deep runs, freshness verdicts and plans).
	Proof *ProofReport `json:"proof,omitempty"`
	// Plan is what the run would read (Options.Plan).
	Plan *Plan `json:"plan,omitempty"`
	err  error
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
	if o.Plan {
		// The plan counts the requests its own reads take: the run's
		// documents and listings.
		c := store.NewCounter(st)
		r := named(ctx, c, tp, o)
		if r.Plan != nil {
			r.Plan.DocumentRequests = c.Total()
			r.Plan.Requests = r.Plan.ReadRequests + r.Plan.CheckRequests + r.Plan.DocumentRequests
		}
		return r
	}
	return named(ctx, st, tp, o)
}

func named(ctx context.Context, st store.Store, tp layout.TopicPartition, o Options) *Report {
	rep := &Report{Partition: tp.String(), Findings: []Finding{}}
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		if layout.IsCorrupt(err) {
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
	// provedMs is its valid proof's time in the ledger (0: none).
	provedMs int64
}

// Partition verifies one binding: the partition's health (health.Gather:
// the head, the stream's listing, every generation manifest, the
// compacted coverage and its quarantine record), then each object against
// its manifest (HEAD, size, ETag; with Deep every byte: SHA-256 and every
// CRC), with Deep the open segment, and the checkpoints. A stored
// document that does not decode is a finding; an error is an I/O failure
// (the report so far is returned with it).
func Partition(ctx context.Context, st store.Store, b *layout.Binding, o Options) (*Report, error) {
	rep := &Report{Partition: b.Name(), StreamID: b.StreamID, Coverage: b.Coverage.State, SetID: b.Coverage.SetID, Findings: []Finding{}}
	if o.Plan || (o.MaxAge > 0 && !o.Deep) {
		o.ReadOnly, o.WriteLedger = true, false // nothing is read that could quarantine
	}
	hrep, obs, err := health.Gather(ctx, st, b, health.Prior{KeysOnly: o.Deep && !o.Incremental && !o.Plan})
	if err != nil {
		return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
	}
	rep.Findings = append(rep.Findings, hrep.Findings...)
	rep.Findings = append(rep.Findings, hrep.Quarantined...)
	rep.Blocked, rep.BlockedReason = hrep.Blocked, hrep.BlockedReason
	h := obs.Head
	seen := map[string]bool{}
	for _, f := range rep.Findings {
		seen[f.Object+"\x00"+f.Check] = true
	}
	add := func(f Finding) {
		if f.Object != "" && seen[f.Object+"\x00"+f.Check] {
			return // health named it already (from the listing)
		}
		f.Partition = b.Name()
		rep.Findings = append(rep.Findings, f)
	}
	if h != nil {
		var targets []target
		var committed []*layout.Generation
		members := map[int64]bool{}
		for _, m := range b.Coverage.Members {
			members[m.Gen] = true
		}
		for _, m := range obs.Manifests {
			g := m.G
			if g == nil {
				continue
			}
			if _, bad := health.KindFinding(g); bad {
				continue
			}
			switch {
			case g.Kind == layout.KindTopicCompacted:
				if b.Coverage.State != layout.CoverageNone && members[g.Gen] && memberDigestOK(b, m) {
					for i := range g.Objects {
						targets = append(targets, target{scope: ScopeCoverage, gen: g.Gen, ref: &g.Objects[i], ntc2: true})
					}
				}
			case g.End > h.Trim:
				committed = append(committed, g)
				for i := range g.Objects {
					targets = append(targets, target{scope: ScopeCommitted, gen: g.Gen, ref: &g.Objects[i]})
				}
			}
		}
		from, chain, chainErr := openChain(h, obs.Objects, committed)
		// The proof ledger: read by deep runs, freshness verdicts and
		// plans; one that does not decode is a finding and proves nothing.
		var ps *proofState
		var live []immutable
		if o.Deep || o.MaxAge > 0 || o.Plan {
			var lf *Finding
			if ps, lf, err = loadProofs(ctx, st, b, o); err != nil {
				return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
			}
			if lf != nil {
				add(*lf)
			}
			rep.Proof = ps.rep
			for i := range targets {
				t := &targets[i]
				t.provedMs = ps.provedAt(t.ref.Key, t.ref.Size, t.ref.SHA256)
				live = append(live, immutable{key: t.ref.Key, size: t.ref.Size, sha256: t.ref.SHA256, provedMs: t.provedMs})
			}
			if chainErr == nil {
				for _, ob := range chain {
					size := ob.Size
					if size <= 0 && o.Deep && !o.Incremental {
						size = -1 // a listing without sizes
					}
					live = append(live, immutable{key: ob.Key, size: size, provedMs: ps.provedAt(ob.Key, size, "")})
				}
			}
			for _, in := range obs.Checkpoints {
				live = append(live, immutable{key: in.Key, size: in.Size, provedMs: ps.provedAt(in.Key, in.Size, "")})
			}
			sortByProof(targets, func(t target) (int64, string) { return t.provedMs, t.ref.Key })
		}
		if o.Plan || (o.MaxAge > 0 && !o.Deep) {
			if o.Plan {
				rep.Plan = plan(ps, targets, chain, obs.Checkpoints, listingOf(obs), o)
			}
			if f := ps.freshness(b, live); f != nil {
				add(*f)
			}
			rep.Coverage = b.Coverage.State
			return rep, nil
		}
		listed := listingOf(obs)
		for _, f := range checkObjects(ctx, st, targets, listed, o, ps, rep) {
			add(f)
		}
		if o.Deep {
			for _, f := range openSegment(ctx, st, h, from, chain, chainErr, o, ps, rep) {
				add(f)
			}
		}
		// The checkpoints are checked against the same head and listings
		// as everything above: one listing of the objects per partition.
		// A deep run reads those its ledger does not prove fresh (and
		// its budget admits), proved by the bytes recovery reads.
		ckpts, bb, vst := obs.Checkpoints, b, st
		var capt *capture
		if ps != nil {
			ckpts = dueCheckpoints(ps, obs.Checkpoints)
			capt = &capture{Store: st, prefix: layout.CheckpointsPrefix(b.StreamID), sums: map[string]capturedSum{}}
			vst = capt
			if ref := b.CheckpointRef; ref != nil && !hasKey(ckpts, ref.Key) {
				// The referenced checkpoint is not read this run: its
				// presence from the listing, its digest from its proof.
				c := *b
				c.CheckpointRef = nil
				bb = &c
				if f := refFromProof(ps, ref, obs.Checkpoints); f != nil {
					add(*f)
				}
			}
		}
		crep, err := recovery.VerifyListed(ctx, vst, bb, h, obs.Objects, ckpts)
		if err != nil {
			return rep, fmt.Errorf("verify %s: checkpoints: %w", b.Name(), err)
		}
		bad := map[string]bool{}
		for _, f := range crep.Findings {
			bad[f.Key] = true
			add(Finding{Scope: ScopeCheckpoint, Gen: -1, Object: f.Key, Check: CheckCheckpoint + ":" + string(f.Check), Detail: f.Detail})
		}
		if ps != nil {
			for _, in := range ckpts {
				sum, read := capt.sums[in.Key]
				switch {
				case bad[in.Key]:
					ps.failed(in.Key)
				case read:
					ps.provedSum(in.Key, sum.size, sum.sha256)
				}
			}
			if o.WriteLedger {
				if err := ps.save(ctx, st, b, live); err != nil {
					return rep, fmt.Errorf("verify %s: %w", b.Name(), err)
				}
			}
			if f := ps.freshness(b, live); f != nil {
				add(*f)
			}
		}
	}
	coverageFindings := 0
	for _, f := range rep.Findings {
		if f.Scope == ScopeCoverage {
			coverageFindings++
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
			rep.Blocked = true
			rep.BlockedReason = "compacted set " + b.Coverage.SetID + " is QUARANTINED"
		}
	}
	rep.Coverage = b.Coverage.State
	return rep, nil
}

// memberDigestOK reports whether the manifest read is the coverage
// member's (its digest the set records): only then are its objects the
// set's to check (health names the other case).
func memberDigestOK(b *layout.Binding, m health.Manifest) bool {
	for _, mm := range b.Coverage.Members {
		if mm.Gen == m.Gen {
			return mm.ManifestSHA256 == m.SHA256
		}
	}
	return false
}

// listingOf is the stream's listing as health took it, for the object
// checks: the size and ETag of every object and view it lists.
type streamListing struct {
	infos map[string]store.ObjectInfo
}

func listingOf(o *health.Observed) *streamListing {
	l := &streamListing{infos: make(map[string]store.ObjectInfo, len(o.Objects)+len(o.Compacted))}
	for _, ob := range o.Objects {
		l.infos[ob.Key] = store.ObjectInfo{Key: ob.Key, Size: ob.Size, ETag: ob.ETag}
	}
	for k, in := range o.Compacted {
		l.infos[k] = in
	}
	return l
}

// openChain is the open segment: the chain of objects above the last sealed
// COMMITTED generation (in no manifest yet) up to the head, from from on.
func openChain(h *layout.Head, objs []layout.StreamObject, committed []*layout.Generation) (int64, []layout.StreamObject, error) {
	from := max(h.Start, h.Trim)
	for _, g := range committed {
		from = max(from, g.End)
	}
	if from >= h.Head {
		return from, nil, nil
	}
	chain, err := stream.Chain(objs, from, h.Head)
	return from, chain, err
}

// openSegment checks the open segment's objects (openChain): they must
// reach the head back to back, and each must hold batches that pass their
// CRC inside the object's range. With a ledger (ps) it reads those due
// within the budget, oldest proof first, and proves them.
func openSegment(ctx context.Context, st store.Store, h *layout.Head, from int64, chain []layout.StreamObject, chainErr error, o Options, ps *proofState, rep *Report) []Finding {
	if chainErr != nil {
		return []Finding{{Scope: ScopeOpenSegment, Gen: -1, Check: CheckChain, Expected: fmt.Sprintf("[%d, %d) back to back", from, h.Head), Detail: chainErr.Error()}}
	}
	if len(chain) == 0 {
		return nil
	}
	order := chain
	if ps != nil {
		order = append([]layout.StreamObject(nil), chain...)
		sortByProof(order, func(ob layout.StreamObject) (int64, string) {
			return ps.provedAt(ob.Key, sizeOrUnknown(ob.Size), ""), ob.Key
		})
	}
	if o.Total != nil {
		// The sizes the listing knows of the due objects (store.ListKeys
		// on file:// knows none: those are counted in as they are read).
		var n int64
		for _, ob := range chain {
			if o.Sample.Has(ob.Key) && ob.Size > 0 && (ps == nil || ps.due(ps.provedAt(ob.Key, sizeOrUnknown(ob.Size), ""))) {
				n += ob.Size
			}
		}
		o.Total(n)
	}
	var fs []Finding
	var buf []byte // one read buffer, reused object after object
	for _, ob := range order {
		if ps != nil {
			if !ps.gate(ob.Key, sizeOrUnknown(ob.Size), ps.provedAt(ob.Key, sizeOrUnknown(ob.Size), ""), true) {
				continue
			}
		} else if !o.Sample.Has(ob.Key) {
			continue
		}
		data, err := stream.ReadObjectInto(ctx, st, ob, buf[:0])
		rep.Objects++
		if err != nil {
			fs = append(fs, Finding{Scope: ScopeOpenSegment, Gen: -1, Object: ob.Key, Check: CheckHead, Expected: "readable", Found: "error", Detail: err.Error()})
			if ps != nil {
				ps.failed(ob.Key)
			}
			continue
		}
		if cap(data) > cap(buf) {
			buf = data
		}
		rep.BytesHashed += int64(len(data))
		if ob.Size <= 0 {
			if o.Total != nil {
				o.Total(int64(len(data)))
			}
			o.Budget.add(int64(len(data)))
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
			if ps != nil {
				ps.failed(ob.Key)
			}
			continue
		}
		if ps != nil {
			ps.proved(ob.Key, data)
		}
	}
	return fs
}

// sizeOrUnknown is a listed size, -1 where the listing gave none.
func sizeOrUnknown(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// dueCheckpoints are the listed checkpoints a deep run reads: due (every
// one, or with Incremental those its ledger does not prove fresh) and
// within the budget, oldest proof first. The sample does not thin them:
// a checkpoint is what a restart reads.
func dueCheckpoints(ps *proofState, infos []store.ObjectInfo) []store.ObjectInfo {
	order := append([]store.ObjectInfo(nil), infos...)
	sortByProof(order, func(in store.ObjectInfo) (int64, string) { return ps.provedAt(in.Key, in.Size, ""), in.Key })
	var out []store.ObjectInfo
	for _, in := range order {
		if ps.gate(in.Key, in.Size, ps.provedAt(in.Key, in.Size, ""), false) {
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func hasKey(infos []store.ObjectInfo, key string) bool {
	for _, in := range infos {
		if in.Key == key {
			return true
		}
	}
	return false
}

// refFromProof checks the binding's checkpoint_ref without reading the
// checkpoint: it is listed, and its proof (when it has one) records the
// digest the binding does.
func refFromProof(ps *proofState, ref *layout.CheckpointRef, infos []store.ObjectInfo) *Finding {
	f := func(detail string) *Finding {
		return &Finding{Scope: ScopeCheckpoint, Gen: -1, Object: ref.Key, Check: CheckCheckpoint + ":binding-ref", Detail: detail}
	}
	for _, in := range infos {
		if in.Key != ref.Key {
			continue
		}
		if p, ok := ps.index[ref.Key]; ok && ps.provedAt(in.Key, in.Size, "") > 0 && p.SHA256 != ref.SHA256 {
			return f(fmt.Sprintf("binding records sha256 %s, the object's proof %s", ref.SHA256, p.SHA256))
		}
		return nil
	}
	return f("the binding's checkpoint_ref names a checkpoint that does not exist")
}

// plan is what a run with o would read of the partition, from the
// ledger and the listings (Options.Plan).
func plan(ps *proofState, ts []target, chain []layout.StreamObject, ckpts []store.ObjectInfo, listed *streamListing, o Options) *Plan {
	p := &Plan{}
	read := func(size int64) {
		p.Objects++
		p.Bytes += max(size, 0)
		p.ReadRequests++
	}
	left0, left0b := ps.rep.Left, ps.rep.LeftBytes
	for _, t := range ts {
		if o.Deep && ps.gate(t.ref.Key, t.ref.Size, t.provedMs, true) {
			read(t.ref.Size)
			continue
		}
		if _, _, ok := fromListing(listed, t.ref.Key); !ok {
			p.CheckRequests++
		}
	}
	if o.Deep {
		for _, ob := range chain {
			if ps.gate(ob.Key, sizeOrUnknown(ob.Size), ps.provedAt(ob.Key, sizeOrUnknown(ob.Size), ""), true) {
				read(ob.Size)
			}
		}
		for _, in := range dueCheckpoints(ps, ckpts) {
			read(in.Size)
		}
	} else if o.MaxAge <= 0 {
		for _, in := range ckpts {
			read(in.Size)
		}
	}
	p.Left, p.LeftBytes = ps.rep.Left-left0, ps.rep.LeftBytes-left0b
	// The plan hashed nothing: the counts are what the run would do.
	ps.rep.Hashed, ps.rep.HashedBytes = 0, 0
	return p
}

// checkObjects checks each target: HEAD, size and ETag always; with Deep
// (and inside the sample, and with a ledger those due within the budget,
// oldest proof first) every byte: SHA-256 and every CRC, in parallel.
func checkObjects(ctx context.Context, st store.Store, ts []target, listed *streamListing, o Options, ps *proofState, rep *Report) []Finding {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if o.Total != nil && o.Deep {
		// The due objects' bytes (a budget may stop short of them).
		var n int64
		for _, t := range ts {
			if o.Sample.Has(t.ref.Key) && (ps == nil || ps.due(t.provedMs)) {
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
			fs, hashed, buf = checkObject(ctx, st, ts[i], listed, o, ps, buf)
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

// fromListing is what the stream's listing says of key (its size and
// ETag) in place of a HEAD, and whether it lists the key at all. ok is
// false without a listing, or where it has no ETag for the key (file://
// lists without digests): HEAD is asked then.
func fromListing(listed *streamListing, key string) (info store.ObjectInfo, found, ok bool) {
	if listed == nil {
		return store.ObjectInfo{}, false, false
	}
	info, found = listed.infos[key]
	if !found || info.ETag == "" {
		return store.ObjectInfo{}, false, false
	}
	return info, found, true
}

// checkObject checks one target. With Deep (inside the sample) it reads
// the object and its size in one step (store.GetSizedInto: one open on
// file://, and no digest computed by the store) into buf, which it
// returns (grown) for the next object.
func checkObject(ctx context.Context, st store.Store, t target, listed *streamListing, o Options, ps *proofState, buf []byte) ([]Finding, int64, []byte) {
	fs, n, buf, deep := checkObjectBytes(ctx, st, t, listed, o, ps, buf)
	if deep && ps != nil {
		if len(fs) == 0 {
			// Clean, and every byte was read: the manifest's SHA-256 is
			// the bytes'.
			ps.provedSum(t.ref.Key, t.ref.Size, t.ref.SHA256)
		} else {
			ps.failed(t.ref.Key)
		}
	}
	return fs, n, buf
}

// checkObjectBytes is checkObject's checks; deep reports whether every
// byte was read.
func checkObjectBytes(ctx context.Context, st store.Store, t target, listed *streamListing, o Options, ps *proofState, buf []byte) ([]Finding, int64, []byte, bool) {
	f := func(check, expected, found, detail string) Finding {
		return Finding{Scope: t.scope, Gen: t.gen, Object: t.ref.Key, Check: check, Expected: expected, Found: found, Detail: detail}
	}
	deep := o.Deep && o.Sample.Has(t.ref.Key)
	if deep && ps != nil {
		deep = ps.gate(t.ref.Key, t.ref.Size, t.provedMs, true)
	}
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
			return []Finding{f(CheckHead, "present", "missing", "the object does not exist")}, 0, buf, deep
		}
		return []Finding{f(CheckHead, "present", "error", err.Error())}, 0, buf, deep
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
		return fs, 0, buf, false
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
			return append(fs, f(CheckStructure, "NTC2", "unreadable", err.Error())), int64(len(data)), buf, true
		}
		for _, x := range r.Verify() {
			fs = append(fs, ntc2Finding(f, x))
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
	return fs, int64(len(data)), buf, true
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
