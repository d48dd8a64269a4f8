// Package health owns the one partition health check (docs/design.md §15):
// is this partition healthy enough to act on, and if not, which findings
// say why. It is the cheap level of `verify`, computed from what a command
// already reads of a partition — the binding, the stream head, the
// stream's listing (objects, generations, checkpoints, compacted views),
// the generation manifests, the compacted coverage and its quarantine
// record, the checkpoints replay skipped — and shared by every command:
// mutating commands refuse a partition whose report is not OK (nothing
// written), readers print what they can and exit with the code verify
// would give. `verify` adds to it what only reading every byte finds.
//
// It only reads; it never decides what to do about a finding.
package health

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Checks, as findings name them (docs/json-output.md, "verify").
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
	// (layout.CheckInvariants, layout.CheckGenerations).
	CheckInvariant = "invariant"
	// CheckMandatoryCoverage: the binding's coverage is NONE but the
	// stream holds TOPIC_COMPACTED generations (compacted-away values
	// would come back); blocked.
	CheckMandatoryCoverage = "mandatory-coverage"
	// CheckQuarantineRecord: the quarantine record of a QUARANTINED set
	// is missing or does not decode.
	CheckQuarantineRecord = "quarantine-record"
	// CheckOrphanStream: a stream that no binding references and that is
	// not recorded as deleted (a lost binding).
	CheckOrphanStream = "orphan-stream"
	// CheckStrayKey: a key under bindings/, quarantine/ or leases/ that is
	// no document of its place (a README, an editor's temp file).
	CheckStrayKey = "stray-key"
	// CheckDeletedStream: a binding references a stream that is recorded
	// as deleted.
	CheckDeletedStream = "deleted-stream"
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
	// the head.
	ScopeOpenSegment = "open-segment"
	// ScopeStore: the store as a whole (orphan streams, stray keys,
	// quarantine records no binding reads).
	ScopeStore = "store"
)

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
	// document: a stored document that does not decode or validate.
	document bool
}

// Kind is what the finding means to the operator: data that is missing
// (a head, an object the manifests or the head promise) or corrupt.
func (f Finding) Kind() errkind.Kind {
	if f.Found == "missing" || f.Check == CheckOrphanStream {
		return errkind.Missing
	}
	return errkind.Corrupt
}

// Report is one partition's health.
type Report struct {
	Partition string    `json:"partition"`
	Findings  []Finding `json:"findings"`
	// Blocked: the partition's coordinator must not be served (QUARANTINED
	// coverage, or mandatory coverage missing).
	Blocked       bool   `json:"blocked"`
	BlockedReason string `json:"blocked_reason,omitempty"`
	// Quarantined are the coverage findings of a set already QUARANTINED:
	// the damage the quarantine record names, which repair mends. They
	// block the partition (Blocked) and are no new finding of it; verify
	// reports them.
	Quarantined []Finding `json:"-"`
}

// OK reports a partition that may be acted on.
func (r *Report) OK() bool { return r == nil || len(r.Findings) == 0 && !r.Blocked }

// Add appends findings, naming the report's partition on each.
func (r *Report) Add(fs ...Finding) {
	for _, f := range fs {
		f.Partition = r.Partition
		r.Findings = append(r.Findings, f)
	}
}

// Err is nil for a healthy partition, else an *Error: corrupt or missing
// data first (exit 3), then blocked (exit 4).
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	return &Error{Report: r}
}

// MutationErr is Err for a command about to write: a damaged checkpoint
// alone does not refuse it (a checkpoint only accelerates a restart, and
// the write publishes a new one: checkpoint create is that finding's
// remedy), every other finding and a blocked partition do.
func (r *Report) MutationErr() error {
	if r == nil {
		return nil
	}
	refuse := &Report{Partition: r.Partition, Blocked: r.Blocked, BlockedReason: r.BlockedReason}
	for _, f := range r.Findings {
		if f.Scope != ScopeCheckpoint {
			refuse.Findings = append(refuse.Findings, f)
		}
	}
	return refuse.Err()
}

// DamageErr is MutationErr without the block: the findings of missing or
// corrupt data a mutation must not write over (not a damaged checkpoint),
// for the one mutation a blocked partition allows, repair.
func (r *Report) DamageErr() error {
	if r == nil {
		return nil
	}
	d := &Report{Partition: r.Partition}
	for _, f := range r.Findings {
		if f.Scope != ScopeCheckpoint {
			d.Findings = append(d.Findings, f)
		}
	}
	return d.Err()
}

// Error is an unhealthy partition, as an error: its kind is the first
// finding's (or Blocked), its message names the partition, the first
// finding's object, check and detail, its hint the runbook.
type Error struct{ Report *Report }

func (e *Error) Error() string {
	r := e.Report
	if len(r.Findings) == 0 {
		return fmt.Sprintf("partition %s is blocked: %s", r.Partition, r.BlockedReason)
	}
	f := r.Findings[0]
	more := ""
	if n := len(r.Findings); n > 1 {
		more = fmt.Sprintf(" (and %d more findings)", n-1)
	}
	obj := ""
	if f.Object != "" {
		obj = " on " + f.Object
	}
	return fmt.Sprintf("partition %s failed its health check: %s check failed%s: %s%s", r.Partition, f.Check, obj, f.Detail, more)
}

// Kind is Missing or Corrupt after the first finding, else Blocked.
func (e *Error) Kind() errkind.Kind {
	if len(e.Report.Findings) == 0 {
		return errkind.Blocked
	}
	k := errkind.Corrupt
	for _, f := range e.Report.Findings {
		if f.Kind() == errkind.Missing {
			k = errkind.Missing
		}
	}
	return k
}

// OperatorHint is the first finding's runbook (HintFor).
func (e *Error) OperatorHint() string {
	if len(e.Report.Findings) == 0 {
		return HintBlocked
	}
	return HintFor(e.Report.Findings[0])
}

// Is makes a health error match the sentinel of what it found, so that
// callers testing for one find it: layout.ErrBlocked when it is only
// blocked, layout.ErrHeadRollback for a beyond-head finding,
// layout.ErrCorruptDocument for a stored document that does not decode.
func (e *Error) Is(target error) bool {
	switch target {
	case layout.ErrBlocked:
		return len(e.Report.Findings) == 0
	case layout.ErrHeadRollback:
		for _, f := range e.Report.Findings {
			if f.Check == CheckBeyondHead {
				return true
			}
		}
	case layout.ErrCorruptDocument:
		for _, f := range e.Report.Findings {
			if f.document {
				return true
			}
		}
	}
	return false
}

// The runbooks (docs/runbooks) the hints point to.
const (
	RunbookRestore     = "docs/runbooks/restore-from-replica.md"
	RunbookSlowRestart = "docs/runbooks/broker-restart-is-slow.md"
	RunbookBlocked     = "docs/runbooks/coordinator-blocked.md"
	RunbookUnhealthy   = "docs/runbooks/partition-unhealthy.md"
)

// HintBlocked is the hint for a blocked partition.
const HintBlocked = "see 'nereusctl quarantine list' and " + RunbookBlocked

// The hints of the finding kinds HintFor tells apart.
const (
	hintCoverage       = "a compacted set is damaged: 'nereusctl verify TOPIC-PARTITION' quarantines it (the coordinator is then blocked), 'nereusctl repair TOPIC-PARTITION --digest sha256:...' mends it (the digests: 'nereusctl quarantine list'); see " + RunbookBlocked
	hintManifest       = "a generation manifest is damaged or missing: restore it from a replica; see " + RunbookRestore
	hintObjects        = "committed objects are missing or damaged: restore them from a replica; see " + RunbookRestore
	hintOpenSegment    = "the open segment's objects do not reach the head back to back (a hole or two chains): restore the missing objects from a replica; see " + RunbookRestore
	hintBinding        = "the binding document does not decode or validate: restore it from a replica; see " + RunbookRestore
	hintStreamHead     = "the stream head is missing or damaged: restore head.json from a replica; see " + RunbookRestore
	hintCheckpoint     = "replay skips a damaged checkpoint (a longer restart): create a new one with 'nereusctl checkpoint create TOPIC-PARTITION', see " + RunbookSlowRestart
	hintCheckpointRef  = "the binding's checkpoint_ref does not match the checkpoint it names: 'nereusctl checkpoint create TOPIC-PARTITION' writes a checkpoint at the head and points the binding at it; see " + RunbookSlowRestart
	hintCheckpointAnch = "the object a checkpoint is anchored on is missing or not the one it recorded: run 'nereusctl verify TOPIC-PARTITION' for the stream's objects, then create a new checkpoint; see " + RunbookSlowRestart
)

// HintCoverageQuarantined is the hint for a damaged compacted set that the
// run (verify) has just quarantined.
const HintCoverageQuarantined = "the damaged compacted set is quarantined now (the coordinator is blocked until repair): repair it with 'nereusctl repair TOPIC-PARTITION --digest sha256:...' (the digests: 'nereusctl quarantine list'); see " + RunbookBlocked

// HintCoverageReadOnly is the hint for a damaged compacted set that a
// read-only verify did not quarantine.
const HintCoverageReadOnly = "a compacted set is damaged (read-only: not quarantined, the coordinator still serves it): run 'nereusctl verify TOPIC-PARTITION' without --read-only to quarantine it, then repair it; see " + RunbookBlocked

// HintFor is the operator hint for one finding, chosen from its check and
// scope: each kind of finding has its own (docs/json-output.md, "verify").
func HintFor(f Finding) string {
	switch f.Check {
	case CheckOrphanStream:
		return "a stream no binding references: restore its binding from a replica, or record the topic as deleted with 'nereusctl delete-binding'; see " + RunbookUnhealthy
	case CheckStrayKey:
		return "a key that is no document of its place: move it out of the store (nereusctl never writes it); see " + RunbookUnhealthy
	case CheckDeletedStream:
		return "the binding references a stream recorded as deleted: see " + RunbookUnhealthy
	case CheckBeyondHead:
		return "the stream head was rolled back below data the stream holds: restore the newest head from a replica before anything trims, compacts or collects; see " + RunbookUnhealthy
	case CheckQuarantineRecord:
		return "the quarantine record is damaged: restore it from a replica; see " + RunbookBlocked
	case CheckMandatoryCoverage:
		return "mandatory compacted coverage is missing: restore the binding's coverage from a replica; see " + RunbookBlocked
	case CheckInvariant:
		return "stored documents contradict each other: restore the binding or head from a replica; see " + RunbookUnhealthy
	case CheckBinding:
		return hintBinding
	case CheckStreamHead:
		return hintStreamHead
	case CheckChain:
		return hintOpenSegment
	case CheckCheckpoint + ":binding-ref":
		return hintCheckpointRef
	case CheckCheckpoint + ":anchor-object":
		return hintCheckpointAnch
	}
	switch {
	case f.Scope == ScopeCoverage:
		return hintCoverage
	case f.Scope == ScopeCheckpoint || strings.HasPrefix(f.Check, CheckCheckpoint+":"):
		return hintCheckpoint
	case f.Check == CheckKind || f.Check == CheckManifest || f.Check == CheckCommittedGap:
		return hintManifest
	case f.Scope == ScopeBinding:
		return hintBinding
	case f.Scope == ScopeStream && f.Check == CheckHead:
		return hintStreamHead
	}
	return hintObjects
}

// Hints joins the hints of findings, one per kind of finding in the order
// of their first appearance ("; "), leaving out those in seen (and adding
// the ones it returns to it). coverage, when not "", replaces the hint of a
// damaged compacted set: what the run did about it (HintCoverageQuarantined,
// HintCoverageReadOnly).
func Hints(fs []Finding, coverage string, seen map[string]bool) []string {
	var out []string
	for _, f := range fs {
		h := HintFor(f)
		if coverage != "" && h == hintCoverage {
			h = coverage
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// Manifest is a generation manifest as read: the document and the SHA-256
// of its bytes, or why it could not be read.
type Manifest struct {
	Gen    int64
	G      *layout.Generation
	SHA256 string
	// MD5 and Size of the bytes read (what a checkpoint records of it).
	MD5  string
	Size int64
	Err  error
	// Summary, when G is nil and Err is nil: the manifest was not read,
	// the listing showed it unchanged since a checkpoint recorded it
	// (Prior.Known), and this is what that checkpoint holds of it.
	Summary *layout.GenerationSummary
}

// SkippedCheckpoint is a checkpoint replay tried and could not use.
type SkippedCheckpoint struct {
	Key    string
	Anchor int64
	// Damaged: the skip means stored bytes are wrong (corrupt, its object
	// check, its anchor object's digest, a binding reference it fails),
	// not that a newer checkpoint exists or that it is stale.
	Damaged bool
	Reason  string
	Detail  string
}

// Observed is what a command read of one partition. Unset parts are not
// checked: the check reports only what the reads can show.
type Observed struct {
	Binding *layout.Binding
	// Head is the stream head; nil when HeadErr says why it is not.
	Head    *layout.Head
	HeadErr error
	// Objects is the stream's object listing from ObjectsFrom on (every
	// object whose base is >= ObjectsFrom; -1: all of them).
	Objects     []layout.StreamObject
	ObjectsFrom int64
	HaveObjects bool
	// Checkpoints is the checkpoints/ listing (HaveCheckpoints when read).
	Checkpoints     []store.ObjectInfo
	HaveCheckpoints bool
	// Manifests are the generations the listing names, each read, and
	// GenerationInfos that listing (sizes and times).
	Manifests       []Manifest
	GenerationInfos []store.ObjectInfo
	HaveManifests   bool
	// Compacted is the listing of compacted/ (size and ETag of the NTC2
	// objects) when read; HaveCompacted.
	Compacted     map[string]store.ObjectInfo
	HaveCompacted bool
	// Quarantine is the QUARANTINED set's record, or why it could not be
	// read (QuarantineErr).
	Quarantine    *layout.Quarantine
	QuarantineErr error
	// Skipped are the checkpoints replay could not use.
	Skipped []SkippedCheckpoint
	// Deleted: the stream is recorded as deleted (layout.Deletion).
	Deleted bool
	// PendingCompaction: an interrupted compaction's task exists
	// (layout.CompactionTaskKey), so a TOPIC_COMPACTED generation over
	// NONE coverage may be its unactivated output.
	PendingCompaction bool
}

// Check computes the partition's health from what was observed.
func Check(o *Observed) *Report {
	b := o.Binding
	rep := &Report{Partition: b.Name(), Findings: []Finding{}}
	h := o.Head
	if h == nil {
		rep.Add(headFinding(b, o.HeadErr))
	}
	if o.Deleted {
		rep.Add(Finding{Scope: ScopeStream, Gen: -1, Object: layout.DeletionKey(b.StreamID), Check: CheckDeletedStream, Detail: fmt.Sprintf("binding %s references stream %s, which is recorded as deleted", b.Name(), b.StreamID)})
	}
	trim := int64(-1)
	if h != nil {
		trim = h.Trim
	}
	gens := map[int64]*layout.Generation{}
	var loaded []*layout.Generation
	if o.HaveManifests {
		var committed []*layout.Generation
		compacted := 0
		for _, m := range o.Manifests {
			if m.Err != nil {
				f := Finding{Scope: ScopeCommitted, Gen: m.Gen, Object: layout.GenerationKey(b.StreamID, m.Gen), Check: CheckManifest, Detail: m.Err.Error(), document: layout.IsCorrupt(m.Err)}
				if errors.Is(m.Err, store.ErrNotFound) {
					f.Expected, f.Found = "present", "missing"
				}
				rep.Add(f)
				continue
			}
			if m.G == nil && m.Summary != nil {
				// Unchanged since a checkpoint recorded it: its summary
				// stands for it (no objects to check against the listing).
				s := m.Summary
				g := &layout.Generation{StreamID: b.StreamID, Gen: s.Gen, Kind: s.Kind, Base: s.Base, End: s.End}
				loaded = append(loaded, g)
				if g.Kind == layout.KindTopicCompacted {
					compacted++
				} else if g.End > trim {
					committed = append(committed, g)
				}
				continue
			}
			gens[m.Gen] = m.G
			loaded = append(loaded, m.G)
			if f, bad := KindFinding(m.G); bad {
				rep.Add(f)
				continue
			}
			if m.G.Kind == layout.KindTopicCompacted {
				compacted++
				continue
			}
			if m.G.End > trim {
				committed = append(committed, m.G)
			}
		}
		rep.Add(CommittedGaps(committed, trim)...)
		if o.HaveObjects {
			rep.Add(committedObjects(o, committed)...)
		}
		if b.Coverage.State == layout.CoverageNone && compacted > 0 && !o.PendingCompaction {
			rep.Blocked = true
			rep.BlockedReason = fmt.Sprintf("mandatory compacted coverage is missing: the binding's coverage is NONE but the stream holds %d TOPIC_COMPACTED generation(s)", compacted)
		}
	}
	if b.Coverage.State == layout.CoverageActive {
		rep.Add(coverage(o, gens)...)
	}
	if b.Coverage.State == layout.CoverageQuarantined {
		for _, f := range coverage(o, gens) {
			f.Partition = rep.Partition
			rep.Quarantined = append(rep.Quarantined, f)
		}
	}
	if b.Coverage.State == layout.CoverageQuarantined {
		rep.Blocked = true
		rep.BlockedReason = "compacted set " + b.Coverage.SetID + " is QUARANTINED"
		if o.QuarantineErr != nil {
			f := Finding{Scope: ScopeCoverage, Gen: -1, Object: layout.QuarantineKey(b.Coverage.SetID), Check: CheckQuarantineRecord, Detail: o.QuarantineErr.Error(), document: layout.IsCorrupt(o.QuarantineErr)}
			if errors.Is(o.QuarantineErr, store.ErrNotFound) {
				f.Expected, f.Found = "present", "missing"
			}
			rep.Add(f)
		}
	}
	if h != nil && o.HaveObjects {
		var cps []store.ObjectInfo
		if o.HaveCheckpoints {
			cps = o.Checkpoints
		}
		rep.Add(BeyondHead(h, o.Objects, loaded, cps)...)
	}
	for _, s := range o.Skipped {
		if s.Damaged {
			rep.Add(Finding{Scope: ScopeCheckpoint, Gen: -1, Object: s.Key, Check: CheckCheckpoint + ":" + checkOfReason(s.Reason), Detail: s.Reason + ": " + s.Detail})
		}
	}
	if h != nil && len(rep.Findings) == 0 {
		if err := layout.CheckInvariants(b, h); err != nil {
			rep.Add(Finding{Scope: ScopeBinding, Gen: -1, Object: layout.BindingKey(b.Topic, b.Partition), Check: CheckInvariant, Detail: err.Error()})
		} else if o.HaveManifests {
			sums := make([]layout.GenerationSummary, len(loaded))
			for i, g := range loaded {
				sums[i] = g.Summary()
			}
			if err := layout.CheckGenerations(b, h, sums); err != nil {
				rep.Add(Finding{Scope: ScopeStream, Gen: -1, Object: layout.GenerationsPrefix(b.StreamID), Check: CheckInvariant, Detail: err.Error()})
			}
		}
	}
	return rep
}

// checkOfReason names the checkpoint check behind a replay skip reason
// (the names `checkpoint verify` gives).
func checkOfReason(reason string) string {
	switch {
	case strings.Contains(reason, "binding"):
		return "binding-ref"
	case strings.Contains(reason, "anchor object"):
		return "anchor-object"
	case strings.Contains(reason, "object check"):
		return "object"
	}
	return "structure"
}

// headFinding is the finding of a head that could not be read.
func headFinding(b *layout.Binding, err error) Finding {
	f := Finding{Scope: ScopeStream, Gen: -1, Object: layout.HeadKey(b.StreamID), Check: CheckStreamHead, document: layout.IsCorrupt(err)}
	if err == nil {
		err = errors.New("the stream head was not read")
	}
	f.Detail = err.Error()
	if errors.Is(err, store.ErrNotFound) {
		f.Expected, f.Found = "present", "missing"
		if !errors.Is(err, layout.ErrHeadMissing) {
			f.Detail = "the stream head is missing: " + err.Error()
		}
	}
	return f
}

// KindFinding checks that a generation's kind fits what it holds: a
// TOPIC_COMPACTED generation is computed from sources and holds NTC2
// objects under compacted/; a COMMITTED one holds batch objects under
// objects/. A COMMITTED manifest whose kind was flipped would otherwise
// drop out of the COMMITTED checks unseen.
func KindFinding(g *layout.Generation) (Finding, bool) {
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

// CommittedGaps checks that the sealed COMMITTED generations above the
// trim tile their range: the first holds the trim, each starts where the
// previous one ended.
func CommittedGaps(gens []*layout.Generation, trim int64) []Finding {
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

// committedObjects checks the objects of the sealed COMMITTED generations
// above the trim against the listing, where the listing covers them: each
// present, with the manifest's size (and ETag, where the listing has one).
func committedObjects(o *Observed, committed []*layout.Generation) []Finding {
	listed := make(map[string]layout.StreamObject, len(o.Objects))
	for _, ob := range o.Objects {
		listed[ob.Key] = ob
	}
	trim := o.Head.Trim
	var fs []Finding
	for _, g := range committed {
		for _, ref := range g.Objects {
			if ref.End <= trim || o.ObjectsFrom >= 0 && ref.Base < o.ObjectsFrom {
				continue
			}
			f := Finding{Scope: ScopeCommitted, Gen: g.Gen, Object: ref.Key}
			ob, ok := listed[ref.Key]
			switch {
			case !ok:
				f.Check, f.Expected, f.Found, f.Detail = CheckHead, "present", "missing", "the object does not exist (not in the stream's listing)"
			case ob.Size >= 0 && ob.Size != ref.Size:
				f.Check, f.Expected, f.Found, f.Detail = CheckSize, fmt.Sprint(ref.Size), fmt.Sprint(ob.Size), "size differs from the manifest"
			case ob.ETag != "" && ob.ETag != ref.ETag:
				f.Check, f.Expected, f.Found, f.Detail = CheckETag, ref.ETag, ob.ETag, "ETag differs from the manifest"
			default:
				continue
			}
			fs = append(fs, f)
		}
	}
	return fs
}

// coverage checks the compacted set's documents (identity, member
// manifests by digest and kind, gap-free from the log start) and, where
// the compacted/ listing was read, that each member object is present
// with its manifest's size and ETag.
func coverage(o *Observed, gens map[int64]*layout.Generation) []Finding {
	b, h := o.Binding, o.Head
	var fs []Finding
	c := b.Coverage
	if got := layout.SetID(c.Members); got != c.SetID {
		fs = append(fs, Finding{Scope: ScopeCoverage, Gen: -1, Check: CheckSetIdentity, Expected: c.SetID, Found: got, Detail: "the members' (gen, manifest sha256) list does not hash to the binding's set_id"})
	}
	sums := map[int64]Manifest{}
	for _, m := range o.Manifests {
		sums[m.Gen] = m
	}
	var members []*layout.Generation
	for _, m := range c.Members {
		key := layout.GenerationKey(b.StreamID, m.Gen)
		got, ok := sums[m.Gen]
		if !o.HaveManifests {
			continue
		}
		if !ok {
			fs = append(fs, Finding{Scope: ScopeCoverage, Gen: m.Gen, Object: key, Check: CheckManifest, Expected: "present", Found: "missing", Detail: "the member's manifest is not in the stream's listing"})
			continue
		}
		if got.Err != nil {
			f := Finding{Scope: ScopeCoverage, Gen: m.Gen, Object: key, Check: CheckManifest, Expected: m.ManifestSHA256, Detail: got.Err.Error(), document: layout.IsCorrupt(got.Err)}
			if errors.Is(got.Err, store.ErrNotFound) {
				f.Found = "missing"
			}
			fs = append(fs, f)
			continue
		}
		if got.SHA256 != m.ManifestSHA256 {
			fs = append(fs, Finding{Scope: ScopeCoverage, Gen: m.Gen, Object: key, Check: CheckManifest, Expected: m.ManifestSHA256, Found: got.SHA256, Detail: "manifest digest differs from the set member's"})
			continue
		}
		if got.G.Kind != layout.KindTopicCompacted {
			fs = append(fs, Finding{Scope: ScopeCoverage, Gen: m.Gen, Object: key, Check: CheckManifest, Detail: "member is a " + got.G.Kind + " generation"})
			continue
		}
		members = append(members, got.G)
	}
	fs = append(fs, CoverageGaps(c, h, members)...)
	if o.HaveCompacted {
		for _, g := range members {
			for _, ref := range g.Objects {
				in, ok := o.Compacted[ref.Key]
				f := Finding{Scope: ScopeCoverage, Gen: g.Gen, Object: ref.Key}
				switch {
				case !ok:
					f.Check, f.Expected, f.Found, f.Detail = CheckHead, "present", "missing", "the object does not exist"
				case in.Size >= 0 && in.Size != ref.Size:
					f.Check, f.Expected, f.Found, f.Detail = CheckSize, fmt.Sprint(ref.Size), fmt.Sprint(in.Size), "size differs from the manifest"
				case in.ETag != "" && in.ETag != ref.ETag:
					f.Check, f.Expected, f.Found, f.Detail = CheckETag, ref.ETag, in.ETag, "ETag differs from the manifest"
				default:
					continue
				}
				fs = append(fs, f)
			}
		}
	}
	return fs
}

// CoverageGaps checks that the member generations cover the coverage's
// range gap-free from the log start (members sorted or not).
func CoverageGaps(c layout.Coverage, h *layout.Head, members []*layout.Generation) []Finding {
	var fs []Finding
	gens := append([]*layout.Generation(nil), members...)
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
	return fs
}

// BeyondHead finds what a stream holds above its head: objects starting
// above it (an append only ever writes at the head, so that is no failed
// append's leftover) or reaching across it without a sibling, generations
// ending above it and checkpoints anchored above it. An object starting
// exactly at the head is what a failed append leaves and is not reported.
// Any of them means the head was rolled back: the data above it is the
// stream's, and nothing may trim, compact or collect on that head.
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
