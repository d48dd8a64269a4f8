package retention

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/localfile"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// JobOptions configure a retention run.
type JobOptions struct {
	// ProducerIDExpirationMs, when > 0, expires producers at Now
	// (producer.id.expiration.ms) in every partition's replay.
	ProducerIDExpirationMs int64

	Partitions  []layout.TopicPartition
	Selection   string // how the partitions were chosen, e.g. "--all --shard 0/2"
	Now         time.Time
	NowExplicit bool
	DryRun      bool
	// PlanOnly plans every partition and stops (a dry run that builds no
	// checkpoint to name): the first pass that finds full trims.
	PlanOnly     bool
	ProgressFile string
	// StoreID is the store's canonical identity (StoreIdentity), never the
	// raw URL: a progress file is resumed only by a run on the same store.
	StoreID string
	// Lease is how each partition's lease is taken while it is planned and
	// trimmed (its holder, TTL, wait and logger). A dry run takes none.
	Lease lease.Options
	// Parallel bounds the partitions in flight (fleet.Map; < 1 means 1).
	Parallel int
	// Restart discards the progress (store and local) instead of resuming.
	Restart bool
	// ResumeWithin: an interrupted run's progress last written longer ago
	// than this is not resumed (DefaultResumeWithin when 0).
	ResumeWithin time.Duration
	// FlushEvery: finished partitions are written to the store progress
	// at most this often (0: after every partition), and always at the
	// end; cmd passes DefaultFlushEvery unless told otherwise.
	FlushEvery time.Duration
	// Hooks reach every partition's trim sequence (crash harness).
	Hooks Hooks
	// ConfirmFull is asked before a trim that removes every record of a
	// partition (see Request.ConfirmFull).
	ConfirmFull func(r *Result) error
	// OnPartition is called after each partition (progress display), one
	// call at a time, in the order the partitions finish.
	OnPartition func(done, total int, r *Result)
	// Emit, when set, receives every finished partition in the order of
	// Partitions, one call at a time, as soon as every partition before it
	// has been emitted (fleet.Each), and the report's Partitions stays
	// empty: the caller streams its output, and the run keeps no
	// partition's result once emitted, so its memory follows Parallel, not
	// the number of partitions. An error from Emit (the output cannot be
	// written) stops the run like a cancellation.
	Emit func(r *Result) error
	// Log receives the progress writes at debug level; nil logs nothing.
	Log *slog.Logger
}

// Progress is the local progress file of a retention run: a cache of the
// store progress, rewritten atomically after it (at-least-once: a
// partition is counted done only once its trim sequence is durable).
// Version 2 holds the store document as written (Doc reads it), so it is
// as small as that document and bounded by the run's window, not by the
// number of partitions; a version 1 file, written by an older nereusctl
// (the partitions' names and a record per done partition), is still read
// for a resume.
type Progress struct {
	Version int `json:"version"`
	// Store is the store's canonical identity (StoreIdentity).
	Store string `json:"store"`
	// Progress is the store progress document this file caches, strict
	// and self-digesting (layout.RetentionProgress).
	Progress json.RawMessage `json:"progress"`
}

// Doc decodes the store progress document the file holds.
func (p *Progress) Doc(path string) (*layout.RetentionProgress, error) {
	return layout.DecodeRetentionProgress("progress file "+path, p.Progress)
}

// progressV1 is the local progress file older nereusctl wrote.
type progressV1 struct {
	Version   int                `json:"version"`
	Store     string             `json:"store"`
	Selection string             `json:"selection"`
	Targets   []string           `json:"partitions"`
	NowMs     int64              `json:"now_ms"`
	StartedMs int64              `json:"started_ms"`
	UpdatedMs int64              `json:"updated_ms"`
	Done      map[string]*Result `json:"done"`
	Complete  bool               `json:"complete"`
}

// DefaultResumeWithin: an interrupted run's progress is resumed only if it
// was last written less than this long ago (--resume-within). A retry of
// a killed run (the next cron attempt, a rescheduled pod) comes well
// within it; progress older than that belongs to an earlier run (last
// night's), whose clock would make this run plan against a stale time, so
// the run starts afresh and says so (docs/runbooks/trim-interrupted.md).
const DefaultResumeWithin = time.Hour

// DefaultFlushEvery is how often, at most, finished partitions are written
// to the store progress: one PUT a second however many partitions finish
// in it (a killed run redoes at most that second's partitions, as no-ops).
const DefaultFlushEvery = time.Second

// ErrProgressCorrupt reports progress (the local file or the store
// document) that cannot be read as such; the run refuses it rather than
// guessing (--restart discards it).
var ErrProgressCorrupt = errors.New("progress is corrupt")

// ErrProgressConflict reports a store progress document written by someone
// else since this run read or wrote it: another run of the same selection
// is live (exit 4). The run stops; its finished partitions stay durable.
var ErrProgressConflict = errors.New("another run of this selection wrote its progress")

// JobReport is the outcome of a retention run: its partitions (none when
// JobOptions.Emit streamed them) and the summary of them.
type JobReport struct {
	JobSummary
	Partitions []*Result `json:"partitions"`
}

// Finished is how many partitions the run reported: trimmed, unchanged
// and failed (resumed ones included).
func (s *JobSummary) Finished() int { return s.Trimmed + s.Unchanged + s.Errors }

// JobSummary is a retention run's counts and circumstances (the summary of
// `retention run -o json`).
type JobSummary struct {
	DryRun bool  `json:"dry_run"`
	NowMs  int64 `json:"now_ms"`
	// Resumed counts partitions taken from an interrupted run's progress.
	Resumed      int     `json:"resumed"`
	Trimmed      int     `json:"trimmed"`
	Unchanged    int     `json:"unchanged"`
	Errors       int     `json:"errors"`
	GarbageBytes int64   `json:"garbage_bytes"`
	Seconds      float64 `json:"seconds"`
	ProgressFile string  `json:"progress_file,omitempty"`
	// ProgressKey is the store progress document of this selection.
	ProgressKey string `json:"progress_key,omitempty"`
	// ProgressDiscarded says why existing progress was not resumed ("" when
	// none was discarded): --restart, or it was stale.
	ProgressDiscarded string `json:"progress_discarded,omitempty"`
	// Interrupted: the run stopped on SIGINT/SIGTERM; Partitions holds
	// the partitions done so far.
	Interrupted bool `json:"interrupted,omitempty"`
}

// DefaultProgressFile is the progress file for a store, under the local
// state directory; storeID is the store's canonical identity
// (StoreIdentity), so two stores never share one.
func DefaultProgressFile(storeID string) string {
	sum := sha256.Sum256([]byte(storeID))
	return filepath.Join(localfile.StateDir(), "retention-"+hex.EncodeToString(sum[:6])+".json")
}

// jobItem is one partition's outcome in a run.
type jobItem struct {
	r *Result
	// resumed: the interrupted run this one resumes did the partition; it
	// is counted in the summary (from the progress) and not listed.
	resumed bool
	// interrupted: the run was interrupted after this partition's head
	// CAS (the trim is durable) and before its binding step.
	interrupted bool
}

// RunJob is the retention cron job: resume an interrupted run of the same
// selection (from the store progress; the local file is a cache), then
// plan and trim up to o.Parallel partitions at once, each under its
// partition lease, recording finished ones in the store progress. Results
// are in the order of o.Partitions whatever finishes first; a partition's
// failure (a lease another job holds past the wait included) is its own
// result and never stops the others. A dry run takes no lease and writes
// no progress. Partitions resumed from an interrupted run are not listed:
// the progress keeps no record of each (it is a watermark and a window),
// so the summary counts them (Resumed, and in Trimmed, Unchanged and
// GarbageBytes).
func RunJob(ctx context.Context, st store.Store, o JobOptions) (*JobReport, error) {
	start := time.Now()
	if o.PlanOnly {
		o.DryRun = true
	}
	rep := &JobReport{JobSummary: JobSummary{DryRun: o.DryRun}, Partitions: []*Result{}}
	targets := make([]string, len(o.Partitions))
	for i, tp := range o.Partitions {
		targets[i] = tp.String()
	}
	now := o.Now
	var rec *recorder
	if !o.DryRun {
		var err error
		var discarded string
		rec, discarded, err = openProgress(ctx, st, o, targets, start)
		if err != nil {
			return nil, err
		}
		now = time.UnixMilli(rec.doc.NowMs)
		rep.ProgressDiscarded = discarded
		rep.ProgressFile, rep.ProgressKey = o.ProgressFile, rec.key
		rep.Resumed, rep.Trimmed, rep.Unchanged, rep.GarbageBytes = rec.prior.Trimmed+rec.prior.Unchanged, rec.prior.Trimmed, rec.prior.Unchanged, rec.prior.GarbageBytes
	}
	rep.NowMs = now.UnixMilli()
	var (
		mu       sync.Mutex
		finished int
	)
	all := true
	err := fleet.Each(ctx, o.Parallel, o.Partitions, func(ctx context.Context, i int, tp layout.TopicPartition) (*jobItem, error) {
		var it *jobItem
		if resumed, err := rec.resumed(ctx, i); err != nil {
			return nil, err
		} else if resumed {
			it = &jobItem{resumed: true}
		} else {
			var clock state.Clock
			if o.ProducerIDExpirationMs > 0 {
				clock = state.Clock{NowMs: now.UnixMilli(), ExpirationMs: o.ProducerIDExpirationMs}
			}
			req := Request{TP: tp, Retention: true, NowMs: now.UnixMilli(), Clock: clock, DryRun: o.DryRun, PlanOnly: o.PlanOnly, Hooks: o.Hooks, ConfirmFull: o.ConfirmFull}
			r := runLeased(ctx, st, o, req)
			if r.Err != nil && ctx.Err() != nil {
				if r.Trim != nil && r.Trim.HeadMutated {
					// Interrupted after its head CAS: the trim is durable
					// and made its garbage, so it is reported trimmed. It
					// is not recorded done: the rerun finishes its binding
					// step (and reports it again, as a trim it finished).
					r.Error, r.ErrorDetail, r.Err = "", "", nil
					return &jobItem{r: r, interrupted: true}, ctx.Err()
				}
				// The partition it was on is redone by the rerun (a no-op
				// where its trim landed): only finished ones are reported.
				return nil, ctx.Err()
			}
			it = &jobItem{r: r}
			if rec != nil {
				var garbage int64
				if r.Trimmed() && r.Plan != nil {
					garbage = r.Plan.GarbageSize
				}
				if err := rec.record(ctx, i, r.OK(), r.Trimmed(), garbage); err != nil {
					return it, err
				}
			}
		}
		if o.OnPartition != nil {
			mu.Lock()
			finished++
			o.OnPartition(finished, len(o.Partitions), it.r)
			mu.Unlock()
		}
		return it, nil
	}, func(_ int, _ layout.TopicPartition, it *jobItem) error {
		if it == nil {
			all = false
			return nil
		}
		if it.resumed {
			return nil // counted from the progress
		}
		if it.interrupted {
			all = false
		}
		rep.count(it.r)
		if o.Emit != nil {
			return o.Emit(it.r)
		}
		rep.Partitions = append(rep.Partitions, it.r)
		return nil
	})
	all = all && err == nil
	if rec != nil {
		// What finished is durable: record it even when the run was cut
		// short (the context may be done, the write must not be).
		if ferr := rec.flush(context.WithoutCancel(ctx), all && rep.Errors == 0); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return rep.interrupted(start), ctx.Err()
		}
		rep.Seconds = time.Since(start).Seconds()
		return rep, err
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// runLeased runs one partition of the job: under its partition lease
// unless the run is dry (RunPartition itself never takes it: trim and
// delete-records take it in cmd). A lease another job holds past the wait,
// one lost while working, or one that could not be released is the
// partition's failure: its trim, if it landed, is redone as a no-op.
func runLeased(ctx context.Context, st store.Store, o JobOptions, req Request) *Result {
	if req.DryRun {
		return RunPartition(ctx, st, req)
	}
	var r *Result
	req.Hooks.Fence = lease.Fence // each write of the sequence proves the lease
	err := lease.WithPartition(ctx, st, req.TP, o.Lease, func(ctx context.Context) error {
		r = RunPartition(ctx, st, req)
		return nil
	})
	if err == nil {
		return r
	}
	if r == nil {
		r = &Result{Topic: req.TP.Topic, Partition: req.TP.Partition}
	}
	err = fmt.Errorf("retention run %s: partition lease: %w", req.TP, err)
	r.Error, r.ErrorDetail, r.Err = "ERROR", err.Error(), err
	return r
}

// recorder keeps a run's progress: the store document (authority for a
// resume) and the local file (a cache of it, written from it). Finished
// partitions are written at most every FlushEvery, store first. What it
// keeps follows the run's window, not the number of partitions: the
// watermark, the done positions past it (at most the window: fleet.Each
// starts position i only once i-window has finished), the failed ones
// behind it, and counts.
type recorder struct {
	st         store.Store
	key, file  string
	store      string // the local file's store identity
	flushEvery time.Duration
	log        *slog.Logger
	window     int

	mu sync.Mutex // guards doc, failedAhead, dirty, lastFlush
	// doc is the progress as this run has it: Failed and Ahead are
	// changed in place, so a write copies them.
	doc         layout.RetentionProgress
	failedAhead map[int]bool // failed positions past the watermark
	dirty       bool
	lastFlush   time.Time

	flushMu sync.Mutex // one write at a time, in order; guards etag
	etag    string     // of the store document; "" when absent

	// prior is the interrupted run's progress this one resumes (its
	// counts are the report's resumed ones), read-only once opened; nil
	// Legacy and zero counts when nothing is resumed.
	prior layout.RetentionProgress
	// legacy: the prior progress had the old shape; its records by
	// position (recorded into doc as the run passes them).
	legacy map[int]layout.RetentionDone
}

// resumed reports whether position i was done by the interrupted run this
// one resumes. A partition the old-shape progress names is recorded into
// this run's progress here, as the run passes it.
func (rc *recorder) resumed(ctx context.Context, i int) (bool, error) {
	if rc == nil {
		return false, nil
	}
	if rc.prior.Legacy != nil {
		d, ok := rc.legacy[i]
		if !ok {
			return false, nil
		}
		return true, rc.record(ctx, i, true, d.NewLogStart > d.LogStart, d.GarbageBytes)
	}
	return rc.prior.IsDone(i), nil
}

// record notes the partition at position i finished: done (its trim
// sequence is durable; trimmed, with the garbage its trim made) or
// failed (a resume redoes it). It advances the watermark over the
// finished positions and writes the progress if the last write is at
// least FlushEvery old.
func (rc *recorder) record(ctx context.Context, i int, ok, trimmed bool, garbage int64) error {
	rc.mu.Lock()
	p := &rc.doc
	switch {
	case i < p.Watermark:
		// A failed partition the resumed run listed, redone.
		if k, found := slices.BinarySearch(p.Failed, i); found && ok {
			p.Failed = slices.Delete(p.Failed, k, k+1)
			rc.count(trimmed, garbage)
		}
	case i >= p.Watermark+rc.window:
		// Past the window: the watermark is held back (by more failures
		// than a document lists, or a partition interrupted). Not
		// recorded; a resume redoes it, as a no-op.
	case ok:
		k, _ := slices.BinarySearch(p.Ahead, i)
		p.Ahead = slices.Insert(p.Ahead, k, i)
		rc.count(trimmed, garbage)
	default:
		rc.failedAhead[i] = true
	}
	for {
		if len(p.Ahead) > 0 && p.Ahead[0] == p.Watermark {
			p.Ahead = slices.Delete(p.Ahead, 0, 1)
		} else if rc.failedAhead[p.Watermark] && len(p.Failed) < layout.MaxRetentionFailed {
			delete(rc.failedAhead, p.Watermark)
			p.Failed = append(p.Failed, p.Watermark)
		} else {
			break
		}
		p.Watermark++
	}
	rc.dirty = true
	due := time.Since(rc.lastFlush) >= rc.flushEvery
	rc.mu.Unlock()
	if !due {
		return nil
	}
	return rc.flush(ctx, false)
}

// count adds a done partition to the progress's counts (rc.mu held).
func (rc *recorder) count(trimmed bool, garbage int64) {
	if trimmed {
		rc.doc.Trimmed++
		rc.doc.GarbageBytes += garbage
	} else {
		rc.doc.Unchanged++
	}
}

// flush writes the progress: the store document with If-Match on the ETag
// this run last wrote (IfAbsent for a new one), then the local file. A
// lost precondition is ErrProgressConflict.
func (rc *recorder) flush(ctx context.Context, complete bool) error {
	rc.flushMu.Lock()
	defer rc.flushMu.Unlock()
	rc.mu.Lock()
	if !rc.dirty && !complete {
		rc.mu.Unlock()
		return nil
	}
	now := time.Now()
	rc.doc.UpdatedMs = now.UnixMilli()
	rc.doc.Complete = complete && rc.doc.Watermark == rc.doc.Targets && len(rc.doc.Failed) == 0
	doc := rc.doc
	doc.Failed, doc.Ahead = slices.Clone(rc.doc.Failed), slices.Clone(rc.doc.Ahead)
	rc.dirty, rc.lastFlush = false, now
	rc.mu.Unlock()
	body := layout.Encode(&doc)
	var err error
	if rc.etag == "" {
		_, err = layout.Create(ctx, rc.st, rc.key, &doc)
	} else {
		_, err = layout.Replace(ctx, rc.st, rc.key, &doc, rc.etag)
	}
	if err != nil {
		// Not written: the next flush (the one at the end of the run
		// included) writes these partitions again.
		rc.mu.Lock()
		rc.dirty = true
		rc.mu.Unlock()
	}
	if errors.Is(err, store.ErrPreconditionFailed) {
		who := "another process"
		if cur, _, lerr := layout.LoadRetentionProgress(ctx, rc.st, rc.key); lerr == nil {
			who = cur.Holder
		}
		return fmt.Errorf("retention run: write progress %s: %w since this run read it (last written by %s)", rc.key, ErrProgressConflict, who)
	}
	if err != nil {
		return fmt.Errorf("retention run: write progress %s: %w", rc.key, err)
	}
	// The ETag a later Load reports (what If-Match compares), whatever
	// spelling the backend's PUT response used.
	rc.etag = store.ETagOf(body)
	if rc.log != nil {
		rc.log.Debug("retention progress written", "key", rc.key, "watermark", doc.Watermark, "done", doc.DoneCount(), "bytes", len(body), "complete", doc.Complete)
	}
	local, err := json.MarshalIndent(&Progress{Version: 2, Store: rc.store, Progress: bytes.TrimSpace(body)}, "", "  ")
	if err != nil {
		return err
	}
	if err := localfile.WriteAtomic(rc.file, append(local, '\n'), 0o644); err != nil {
		return fmt.Errorf("retention run: write progress file %s: %w", rc.file, err)
	}
	return nil
}

// openProgress finds the progress this run resumes (the store document of
// its selection; the local file only where the store has none, as an older
// nereusctl left it or the store document was removed), or starts afresh,
// and writes the run's first progress before any partition is touched. It
// returns why existing progress was discarded, if it was. Progress of the
// old shape (a record per partition, in the store or a version 1 local
// file) is resumed too: its partitions are recorded into the new shape as
// the run passes them.
func openProgress(ctx context.Context, st store.Store, o JobOptions, targets []string, start time.Time) (*recorder, string, error) {
	sum := sha256.Sum256([]byte(strings.Join(targets, "\n")))
	rc := &recorder{
		st: st, key: layout.RetentionProgressKey(o.Selection), file: o.ProgressFile, store: o.StoreID, log: o.Log,
		flushEvery: o.FlushEvery, window: fleet.Window(o.Parallel), failedAhead: map[int]bool{},
	}
	within := o.ResumeWithin
	if within <= 0 {
		within = DefaultResumeWithin
	}
	fresh := layout.RetentionProgress{
		Selection: o.Selection, Targets: len(targets), TargetsSHA256: hex.EncodeToString(sum[:]),
		NowMs: o.Now.UnixMilli(), StartedMs: start.UnixMilli(), UpdatedMs: start.UnixMilli(),
		Holder: o.Lease.Holder, Failed: []int{}, Ahead: []int{},
	}
	if fresh.Holder == "" {
		fresh.Holder = lease.Holder()
	}
	rc.doc = fresh
	var discarded string
	if o.Restart {
		var gone []string
		if err := os.Remove(o.ProgressFile); err == nil {
			gone = append(gone, "the progress file")
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("retention run: remove progress file %s: %w", o.ProgressFile, err)
		}
		if _, err := st.Head(ctx, rc.key); err == nil {
			if err := st.Delete(ctx, rc.key, store.None()); err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, "", fmt.Errorf("retention run: remove progress %s: %w", rc.key, err)
			}
			gone = append(gone, "the store progress "+rc.key)
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, "", fmt.Errorf("retention run: read progress %s: %w", rc.key, err)
		}
		if len(gone) > 0 {
			discarded = "--restart: " + strings.Join(gone, " and ") + " discarded"
		}
		rc.dirty = true
		return rc, discarded, rc.flush(ctx, false)
	}
	sdoc, etag, err := layout.LoadRetentionProgress(ctx, st, rc.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		sdoc = nil
	case err != nil && (errors.Is(err, layout.ErrCorruptDocument) || errors.Is(err, layout.ErrLegacyDocument) || errors.Is(err, store.ErrTooLarge)):
		return nil, "", fmt.Errorf("retention run: read progress %s: %w: %w", rc.key, ErrProgressCorrupt, err)
	case err != nil:
		return nil, "", fmt.Errorf("retention run: read progress %s: %w", rc.key, err)
	}
	rc.etag = etag
	what := rc.key
	if sdoc == nil {
		what = "progress file " + o.ProgressFile
		localStore, ldoc, err := loadProgress(o.ProgressFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, "", fmt.Errorf("retention run: read progress file %s: %w", o.ProgressFile, err)
		case !ldoc.Complete && localStore != o.StoreID:
			// Another store's interrupted run (or a file written before
			// progress was keyed on the store's identity): never resumed here.
			discarded = fmt.Sprintf("progress file %s holds an interrupted run of another store (%s): not resumed; this run plans every partition", o.ProgressFile, localStore)
		default:
			sdoc = ldoc
		}
	}
	if sdoc != nil && !sdoc.Complete && sdoc.Selection == o.Selection && (!o.NowExplicit || sdoc.NowMs == o.Now.UnixMilli()) &&
		sdoc.TargetsSHA256 == fresh.TargetsSHA256 && sdoc.Targets == fresh.Targets {
		// (Otherwise another run's progress: finished, another clock or
		// set of partitions: replaced, never resumed.)
		if age := start.Sub(time.UnixMilli(sdoc.UpdatedMs)); age > within {
			discarded = fmt.Sprintf("the interrupted run's progress (%s) was last written %s ago, more than --resume-within %s: not resumed; this run plans every partition with a new clock",
				what, age.Round(time.Second), within)
		} else {
			rc.resume(sdoc, targets)
		}
	}
	rc.dirty = true
	return rc, discarded, rc.flush(ctx, false)
}

// resume takes up the interrupted run's progress p: its clock, so the plan
// does not shift under the partitions already done, and what it did.
func (rc *recorder) resume(p *layout.RetentionProgress, targets []string) {
	rc.doc.NowMs, rc.doc.StartedMs = p.NowMs, p.StartedMs
	if p.Legacy == nil {
		holder := rc.doc.Holder
		rc.doc = *p
		rc.doc.Holder = holder
		rc.doc.Failed, rc.doc.Ahead = slices.Clone(p.Failed), slices.Clone(p.Ahead)
		rc.prior = *p
		return
	}
	// The old shape: a record per partition, by name.
	byName := make(map[string]layout.RetentionDone, len(p.Legacy))
	for _, d := range p.Legacy {
		byName[d.Partition] = d
	}
	rc.legacy = make(map[int]layout.RetentionDone, len(p.Legacy))
	rc.prior = layout.RetentionProgress{Legacy: p.Legacy}
	for i, name := range targets {
		d, ok := byName[name]
		if !ok {
			continue
		}
		rc.legacy[i] = d
		if d.NewLogStart > d.LogStart {
			rc.prior.Trimmed++
			rc.prior.GarbageBytes += d.GarbageBytes
		} else {
			rc.prior.Unchanged++
		}
	}
}

// interrupted marks a report cut short by SIGINT/SIGTERM.
func (rep *JobReport) interrupted(start time.Time) *JobReport {
	rep.Interrupted = true
	rep.Seconds = time.Since(start).Seconds()
	return rep
}

// count adds a partition's outcome to the summary.
func (rep *JobReport) count(r *Result) {
	switch {
	case !r.OK():
		rep.Errors++
	case r.Trimmed():
		rep.Trimmed++
		if r.Plan != nil {
			rep.GarbageBytes += r.Plan.GarbageSize
		}
	default:
		rep.Unchanged++
	}
}

// maxProgressFileBytes caps the local progress file (a version 1 file
// held a line per partition: far above a fleet's).
const maxProgressFileBytes = 1 << 30

// loadProgress reads the local progress file: the store identity it was
// written for and the progress it holds (version 1 files converted to a
// progress of the old shape, Legacy set).
func loadProgress(path string) (string, *layout.RetentionProgress, error) {
	b, err := localfile.ReadInput(path, maxProgressFileBytes)
	if err != nil {
		return "", nil, err
	}
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", nil, fmt.Errorf("%w: %s", ErrProgressCorrupt, layout.PlainJSONError(err))
	}
	switch v.Version {
	case 2:
		var p Progress
		if err := decodeOne(b, &p); err != nil {
			return "", nil, err
		}
		doc, err := p.Doc(path)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrProgressCorrupt, err)
		}
		return p.Store, doc, nil
	case 1:
		var p progressV1
		if err := decodeOne(b, &p); err != nil {
			return "", nil, err
		}
		if p.Done == nil {
			return "", nil, fmt.Errorf("%w: version 1 with no done list", ErrProgressCorrupt)
		}
		sum := sha256.Sum256([]byte(strings.Join(p.Targets, "\n")))
		doc := &layout.RetentionProgress{Selection: p.Selection, Targets: len(p.Targets), TargetsSHA256: hex.EncodeToString(sum[:]),
			NowMs: p.NowMs, StartedMs: p.StartedMs, UpdatedMs: p.UpdatedMs, Complete: p.Complete, Legacy: []layout.RetentionDone{}}
		if doc.UpdatedMs == 0 {
			doc.UpdatedMs = doc.StartedMs // written before updated_ms existed
		}
		for _, name := range p.Targets {
			r := p.Done[name]
			if r == nil {
				continue
			}
			d := layout.RetentionDone{Partition: name, LogStart: r.CurrentLogStart, NewLogStart: max(r.NewLogStart, r.CurrentLogStart), HW: max(r.HW, r.NewLogStart, r.CurrentLogStart)}
			if r.Trimmed() && r.Plan != nil {
				d.GarbageBytes = r.Plan.GarbageSize
			}
			doc.Legacy = append(doc.Legacy, d)
		}
		return p.Store, doc, nil
	default:
		return "", nil, fmt.Errorf("%w: version %d: want 2 (or 1, written by an older nereusctl)", ErrProgressCorrupt, v.Version)
	}
}

// decodeOne decodes one JSON document, refusing trailing data.
func decodeOne(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s", ErrProgressCorrupt, layout.PlainJSONError(err))
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the document", ErrProgressCorrupt)
	}
	return nil
}
