// Package repair owns the repair of quarantined compacted coverage by
// digest (docs/design.md §9): take candidate bytes from a local file, a replica
// store or a deterministic regeneration; accept them only if their SHA-256
// is the expected digest and every CRC passes; restore them with a guarded
// write; re-verify the whole set; re-activate the coverage and archive the
// quarantine record.
//
// Wrong bytes change nothing. A crash at any step leaves the set either
// ACTIVE with the right bytes or still QUARANTINED; a rerun finishes.
package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/localfile"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/verify"
)

// ErrWrongBytes: the candidate does not have the expected digest or fails
// a CRC. Nothing was changed.
var ErrWrongBytes = errors.New("candidate bytes refused")

// ErrEncoderMismatch: --regenerate was asked of a generation another NTC2
// encoder wrote; this build cannot reproduce its bytes. Nothing was read
// or changed, and the store is not damaged by it (exit 1).
var ErrEncoderMismatch = compaction.ErrEncoderMismatch

// ErrNotQuarantined: the partition's coverage is not QUARANTINED.
var ErrNotQuarantined = errors.New("coverage is not quarantined")

// ErrUnknownDigest: no member object of the quarantined set has the digest.
var ErrUnknownDigest = errors.New("digest not in the quarantined set")

// Steps, for hooks and the crash harness.
const (
	StepRestored    = "restored"
	StepReactivated = "reactivated"
	StepArchived    = "archived"
)

// Options say where candidate bytes come from.
type Options struct {
	Digest     string // hex SHA-256 of the member to restore
	FromFile   string
	From       store.Store // a replica store holding the same keys
	Regenerate bool
	DryRun     bool
	NowMs      int64
	After      func(step string) error
	// Fence, when set, is called before each write (the restore, the
	// coverage CAS, the archive): it proves the partition lease the
	// repair runs under is still this run's (lease.Fence), so a run paused
	// past its lease writes nothing on what it read before the pause.
	Fence func(ctx context.Context, step string) error
}

func (o Options) fence(ctx context.Context, step string) error {
	if o.Fence == nil {
		return nil
	}
	return o.Fence(ctx, step)
}

// Result says what a repair did.
type Result struct {
	Partition   string           `json:"partition"`
	SetID       string           `json:"set_id"`
	Object      string           `json:"object"`
	Digest      string           `json:"digest"`
	Source      string           `json:"source"`
	Accepted    bool             `json:"accepted"`
	Restored    bool             `json:"restored"`     // bytes were written
	AlreadyGood bool             `json:"already_good"` // the store already held the right bytes
	Reactivated bool             `json:"reactivated"`  // coverage is ACTIVE again
	Remaining   []verify.Finding `json:"remaining"`    // coverage findings left after the repair
	DryRun      bool             `json:"dry_run"`
}

// member finds the set member object with the digest.
func member(ctx context.Context, st store.Store, b *layout.Binding, digest string) (*layout.Generation, layout.ObjectRef, error) {
	for _, m := range b.Coverage.Members {
		g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, m.Gen)
		if err != nil {
			continue
		}
		for _, o := range g.Objects {
			if o.SHA256 == digest {
				return g, o, nil
			}
		}
	}
	return nil, layout.ObjectRef{}, fmt.Errorf("%w: sha256:%s is not the digest of any member object of set %s", ErrUnknownDigest, digest, b.Coverage.SetID)
}

// ParseDigest accepts "sha256:HEX" or "HEX".
func ParseDigest(s string) (string, error) {
	d := strings.TrimPrefix(s, "sha256:")
	if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
		return "", fmt.Errorf("--digest %q: want sha256:<64 lowercase hex digits>", s)
	}
	return d, nil
}

// Repair restores one member object of b's quarantined set.
func Repair(ctx context.Context, st store.Store, b *layout.Binding, o Options) (*Result, error) {
	if o.NowMs == 0 {
		o.NowMs = time.Now().UnixMilli()
	}
	after := func(step string) error {
		if o.After == nil {
			return nil
		}
		return o.After(step)
	}
	res := &Result{Partition: b.Name(), SetID: b.Coverage.SetID, Digest: o.Digest, DryRun: o.DryRun, Remaining: []verify.Finding{}}
	if b.Coverage.State == layout.CoverageActive && !o.DryRun {
		// A repair that crashed after re-activating leaves its record:
		// finish by archiving it once the set verifies clean.
		if _, err := st.Head(ctx, layout.QuarantineKey(b.Coverage.SetID)); err == nil {
			res.Source = "store"
			if p, err := progress(ctx, st, res.SetID); err == nil && p != nil {
				// What the interrupted run recorded before its restore.
				res.Source = p.Source
				if len(p.Restored) > 0 {
					res.Object = p.Restored[len(p.Restored)-1]
				}
			}
			return res, reactivate(ctx, st, b, res, o, after)
		}
	}
	if b.Coverage.State == layout.CoverageActive {
		// A rerun of a finished repair: nothing to do if the member is
		// in the active set with its right bytes.
		if _, ref, err := member(ctx, st, b, o.Digest); err == nil {
			if cur, err := st.Get(ctx, ref.Key, nil); err == nil && store.SHA256Of(cur) == o.Digest {
				res.Object, res.Source, res.AlreadyGood, res.Accepted, res.Reactivated = ref.Key, "store", true, true, true
				return res, nil
			}
		}
	}
	if b.Coverage.State != layout.CoverageQuarantined {
		return res, fmt.Errorf("repair %s: %w (it is %s)", b.Name(), ErrNotQuarantined, b.Coverage.State)
	}
	// The health gate: a repair mends the quarantined set's members (the
	// damage the set's quarantine record names, which the check reports
	// apart); any other finding — a rolled-back head, a damaged manifest, a
	// missing quarantine record — refuses it, nothing written.
	hrep, _, err := health.Gather(ctx, st, b, health.Prior{})
	if err != nil {
		return res, fmt.Errorf("repair %s: %w", b.Name(), err)
	}
	if err := hrep.DamageErr(); err != nil {
		return res, fmt.Errorf("repair %s: refused: %w", b.Name(), err)
	}
	g, ref, err := member(ctx, st, b, o.Digest)
	if err != nil {
		return res, fmt.Errorf("repair %s: %w", b.Name(), err)
	}
	res.Object = ref.Key

	// The store may already hold the right bytes (a rerun after a crash).
	cur, curErr := st.Get(ctx, ref.Key, nil)
	if curErr == nil && store.SHA256Of(cur) == o.Digest {
		res.AlreadyGood, res.Source = true, "store"
		// A run that crashed after its restore recorded where the bytes
		// came from: the audit trail keeps that source, not "store".
		p, err := progress(ctx, st, res.SetID)
		if err != nil {
			return res, fmt.Errorf("repair %s: %w", b.Name(), err)
		}
		if p != nil && contains(p.Restored, ref.Key) {
			res.Source = p.Source
		}
	} else {
		data, src, err := candidate(ctx, st, g, ref, o)
		res.Source = src
		if err != nil {
			return res, fmt.Errorf("repair %s: %w", b.Name(), err)
		}
		if err := accept(data, o.Digest); err != nil {
			return res, fmt.Errorf("repair %s: %s from %s: %w", b.Name(), ref.Key, src, err)
		}
		res.Accepted = true
		if o.DryRun {
			return res, nil
		}
		// Record the source in the quarantine record before the bytes
		// change, so that a rerun after a crash archives the same trail.
		if err := o.fence(ctx, "repair record progress"); err != nil {
			return res, fmt.Errorf("repair %s: %w", b.Name(), err)
		}
		if err := recordProgress(ctx, st, res.SetID, src, ref.Key); err != nil {
			return res, fmt.Errorf("repair %s: %w", b.Name(), err)
		}
		// Guarded restore: IfMatch on the damaged object's ETag, IfAbsent
		// when it is missing.
		guard := store.IfAbsent()
		if curErr == nil {
			info, err := st.Head(ctx, ref.Key)
			if err != nil {
				return res, fmt.Errorf("repair %s: %w", b.Name(), err)
			}
			guard = store.IfMatch(info.ETag)
		} else if !errors.Is(curErr, store.ErrNotFound) {
			return res, fmt.Errorf("repair %s: read %s: %w", b.Name(), ref.Key, curErr)
		}
		if err := o.fence(ctx, "repair restore "+ref.Key); err != nil {
			return res, fmt.Errorf("repair %s: %w", b.Name(), err)
		}
		_, err = st.Put(ctx, ref.Key, data, guard)
		if errors.Is(err, store.ErrPreconditionFailed) {
			// A lost response to our own restore: the stored bytes decide.
			_, err = store.ConfirmIfMatch(ctx, st, ref.Key, data, err)
		}
		if err != nil {
			return res, fmt.Errorf("repair %s: restore %s: %w", b.Name(), ref.Key, err)
		}
		res.Restored = true
	}
	res.Accepted = true
	if o.DryRun {
		return res, nil
	}
	if err := after(StepRestored); err != nil {
		return res, err
	}
	return res, reactivate(ctx, st, b, res, o, after)
}

// reactivate re-verifies the whole set deeply and, when clean, CASes the
// coverage back to ACTIVE and archives the quarantine record.
func reactivate(ctx context.Context, st store.Store, b *layout.Binding, res *Result, o Options, after func(string) error) error {
	rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true, NoQuarantine: true, NowMs: o.NowMs})
	if err != nil {
		return fmt.Errorf("repair %s: re-verify: %w", b.Name(), err)
	}
	for _, f := range rep.Findings {
		if f.Scope == verify.ScopeCoverage {
			res.Remaining = append(res.Remaining, f)
		}
	}
	if len(res.Remaining) > 0 {
		return nil // still QUARANTINED: other members need repair
	}
	for attempt := 0; ; attempt++ {
		cur, etag, err := layout.LoadBinding(ctx, st, b.Topic, b.Partition)
		if err != nil {
			return err
		}
		if cur.Coverage.SetID != res.SetID {
			return fmt.Errorf("repair %s: the coverage moved to set %s meanwhile: %w", b.Name(), cur.Coverage.SetID, store.ErrPreconditionFailed)
		}
		if cur.Coverage.State == layout.CoverageActive {
			*b = *cur
			break
		}
		nb := *cur
		nb.Coverage.State = layout.CoverageActive
		nb.Version++
		if err := o.fence(ctx, "repair reactivate coverage"); err != nil {
			return fmt.Errorf("repair %s: %w", b.Name(), err)
		}
		_, err = layout.Replace(ctx, st, layout.BindingKey(b.Topic, b.Partition), &nb, etag)
		if err == nil {
			*b = nb
			break
		}
		if !errors.Is(err, store.ErrPreconditionFailed) || attempt > 3 {
			return fmt.Errorf("repair %s: reactivate coverage: %w", b.Name(), err)
		}
	}
	res.Reactivated = true
	if err := after(StepReactivated); err != nil {
		return err
	}
	if err := o.fence(ctx, "repair archive"); err != nil {
		return fmt.Errorf("repair %s: %w", b.Name(), err)
	}
	if err := archive(ctx, st, res, o.NowMs); err != nil {
		return err
	}
	return after(StepArchived)
}

// archive moves the quarantine record under quarantine/archive/ with what
// the repair did.
func archive(ctx context.Context, st store.Store, res *Result, nowMs int64) error {
	key := layout.QuarantineKey(res.SetID)
	var q layout.Quarantine
	etag, err := layout.Load(ctx, st, key, &q)
	if errors.Is(err, store.ErrNotFound) {
		return nil // archived by an earlier run
	}
	if err != nil {
		return fmt.Errorf("archive quarantine record %s: %w", key, err)
	}
	q.Repair = &layout.RepairRecord{RepairedMs: nowMs, Source: res.Source, Restored: []string{res.Object}}
	if p := q.InProgress; p != nil {
		// Every restore of this repair, with the source recorded before it.
		restored := append([]string(nil), p.Restored...)
		if res.Object != "" && !contains(restored, res.Object) {
			restored = append(restored, res.Object)
		}
		q.Repair.Source, q.Repair.Restored = p.Source, restored
		q.InProgress = nil
	}
	if _, err := layout.Create(ctx, st, layout.QuarantineArchiveKey(res.SetID, q.CreatedMs), &q); err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("archive quarantine record %s: %w", key, err)
	}
	if err := st.Delete(ctx, key, store.IfMatch(etag)); err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("archive quarantine record %s: %w", key, err)
	}
	return nil
}

// progress returns the repair under way recorded in the set's open
// quarantine record (nil when there is none, or no record).
func progress(ctx context.Context, st store.Store, setID string) (*layout.RepairProgress, error) {
	var q layout.Quarantine
	key := layout.QuarantineKey(setID)
	if _, err := layout.Load(ctx, st, key, &q); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("read quarantine record %s: %w", key, err)
	}
	return q.InProgress, nil
}

// recordProgress CASes (If-Match) the source and the object about to be
// restored into the set's open quarantine record. Several restores of one
// set from different sources are joined with "; ". A set without an open
// record (none was written) has nothing to record into.
func recordProgress(ctx context.Context, st store.Store, setID, source, object string) error {
	key := layout.QuarantineKey(setID)
	for attempt := 0; ; attempt++ {
		var q layout.Quarantine
		etag, err := layout.Load(ctx, st, key, &q)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read quarantine record %s: %w", key, err)
		}
		changed := false
		p := q.InProgress
		if p == nil {
			p, changed = &layout.RepairProgress{Source: source, Restored: []string{}}, true
		}
		if !contains(strings.Split(p.Source, "; "), source) {
			p.Source, changed = p.Source+"; "+source, true
		}
		if !contains(p.Restored, object) {
			p.Restored, changed = append(p.Restored, object), true
		}
		if !changed {
			return nil
		}
		q.InProgress = p
		if _, err = layout.Replace(ctx, st, key, &q, etag); err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) || attempt >= 3 {
			return fmt.Errorf("record repair in quarantine record %s: %w", key, err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// candidate fetches the bytes offered for ref.
func candidate(ctx context.Context, st store.Store, g *layout.Generation, ref layout.ObjectRef, o Options) ([]byte, string, error) {
	switch {
	case o.FromFile != "":
		// Never blocks on a FIFO or other special file (ReadInput).
		b, err := localfile.ReadInput(o.FromFile, 1<<30)
		return b, "file " + o.FromFile, err
	case o.From != nil:
		b, err := o.From.Get(ctx, ref.Key, nil)
		return b, "replica " + o.From.String(), err
	case o.Regenerate:
		var found []byte
		err := compaction.Regenerate(ctx, st, g, 0, func(r layout.ObjectRef, data []byte) {
			if r.SHA256 == ref.SHA256 {
				found = bytes.Clone(data) // data is reused for the next object
			}
		})
		if err != nil {
			return nil, "regenerate", err
		}
		if found == nil {
			why := ", although this build's encoder is the one the manifest records (" + g.Compaction.Encoder + ")"
			if g.Compaction.Encoder == "" {
				why = "; the manifest does not record the encoder that wrote it (written before nereusctl recorded encoders), so this build's (" + ntc2.EncoderIdentity() + ") may not be that one"
			}
			return nil, "regenerate", fmt.Errorf("%w: regenerating generation %d produced no object with sha256 %s%s", ErrWrongBytes, g.Gen, ref.SHA256, why)
		}
		return found, "regenerate", nil
	}
	return nil, "", errors.New("no source: give --from-file, --from or --regenerate")
}

// EncoderMismatchHint is the operator hint for an ErrEncoderMismatch: both
// identities and the sources that still work ("" for other errors).
func EncoderMismatchHint(err error) string {
	var e *compaction.EncoderMismatchError
	if !errors.As(err, &e) {
		return ""
	}
	return fmt.Sprintf("nothing was changed. Generation %d's objects were written by the encoder %q; this nereusctl writes %q, so --regenerate cannot give the same bytes. "+
		"Take them from a replica store (--from URL) or a saved copy of the object (--from-file PATH), or run --regenerate with a nereusctl build whose encoder is %q (docs/runbooks/coordinator-blocked.md)",
		e.Gen, e.Recorded, e.Running, e.Recorded)
}

// accept checks the candidate's digest and every CRC.
func accept(data []byte, digest string) error {
	if got := store.SHA256Of(data); got != digest {
		return fmt.Errorf("%w: sha256 %s, expected %s", ErrWrongBytes, got, digest)
	}
	r, err := ntc2.Open(data)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWrongBytes, err)
	}
	if fs := r.Verify(); len(fs) > 0 {
		return fmt.Errorf("%w: %s check failed: %s", ErrWrongBytes, fs[0].Check, fs[0].Detail)
	}
	return nil
}

// QuarantinedPartitions lists the partitions that have an open quarantine
// record, sorted by topic and partition, each once.
func QuarantinedPartitions(ctx context.Context, st store.Store) ([]layout.TopicPartition, error) {
	recs, err := verify.Records(ctx, st)
	if err != nil {
		return nil, err
	}
	seen := map[layout.TopicPartition]bool{}
	var tps []layout.TopicPartition
	for _, q := range recs {
		tp := layout.TopicPartition{Topic: q.Topic, Partition: q.Partition}
		if !seen[tp] {
			seen[tp] = true
			tps = append(tps, tp)
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	return tps, nil
}

// AllFromPartition repairs every damaged member of tp's quarantined set
// from the replica (nothing when its coverage is not QUARANTINED), or,
// when every member holds its bytes already, finishes the interrupted
// repair (re-verify, re-activate, archive). It takes no lease: the caller
// holds tp's. Of o, DryRun, NowMs, After and Fence apply to each repair.
func AllFromPartition(ctx context.Context, st, replica store.Store, tp layout.TopicPartition, o Options) ([]*Result, error) {
	each := func(digest string) Options {
		return Options{Digest: digest, From: replica, DryRun: o.DryRun, NowMs: o.NowMs, After: o.After, Fence: o.Fence}
	}
	var out []*Result
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		return out, fmt.Errorf("repair %s: %w", tp, err)
	}
	if b.Coverage.State != layout.CoverageQuarantined {
		return out, nil
	}
	damaged, first := 0, ""
	for _, m := range b.Coverage.Members {
		g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, m.Gen)
		if err != nil {
			// A member manifest that cannot be read is not repaired
			// from here: say so rather than skip it.
			return out, fmt.Errorf("repair %s: member generation %d: %w", b.Name(), m.Gen, err)
		}
		for _, ref := range g.Objects {
			if first == "" {
				first = ref.SHA256
			}
			cur, err := st.Get(ctx, ref.Key, nil)
			if err == nil && store.SHA256Of(cur) == ref.SHA256 {
				continue
			}
			damaged++
			r, err := Repair(ctx, st, b, each(ref.SHA256))
			if r != nil {
				out = append(out, r)
			}
			if err != nil {
				return out, err
			}
		}
	}
	if damaged == 0 && first != "" {
		// Every member already holds its bytes: an interrupted repair
		// restored them and stopped before re-activating the coverage.
		// Finish it (re-verify, re-activate, archive the record).
		r, err := Repair(ctx, st, b, each(first))
		if r != nil {
			out = append(out, r)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
