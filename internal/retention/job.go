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
// store progress (layout.RetentionProgress), rewritten atomically whenever
// the store progress is (at-least-once: a partition is recorded only once
// its trim sequence is durable). Each finished partition is the record the
// store progress holds (log starts, HW, garbage bytes) in the shape of a
// Result; a file written by an older nereusctl, which held every
// partition's whole result, is read the same way.
type Progress struct {
	Version int `json:"version"`
	// Store is the store's canonical identity (StoreIdentity).
	Store     string   `json:"store"`
	Selection string   `json:"selection"`
	Targets   []string `json:"partitions"`
	NowMs     int64    `json:"now_ms"`
	StartedMs int64    `json:"started_ms"`
	// UpdatedMs is when the file was last written (0 in files written
	// before it existed: StartedMs is used then).
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
	r       *Result
	resumed bool
	// garbage is a resumed partition's garbage when r has no plan (taken
	// from the store progress, not the local cache).
	garbage int64
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
// no progress.
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
	}
	rep.NowMs = now.UnixMilli()
	var (
		mu       sync.Mutex
		finished int
	)
	all := true
	err := fleet.Each(ctx, o.Parallel, o.Partitions, func(ctx context.Context, _ int, tp layout.TopicPartition) (*jobItem, error) {
		it := rec.resumed(tp)
		if it == nil {
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
			if rec != nil && r.OK() {
				if err := rec.record(ctx, tp, r); err != nil {
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
		if it.interrupted {
			all = false
		}
		if it.resumed {
			rep.Resumed++
		}
		rep.count(it.r)
		rep.GarbageBytes += it.garbage
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
// partitions are written at most every FlushEvery, store first. Per
// partition it keeps only the store document's record.
type recorder struct {
	st         store.Store
	key, file  string
	flushEvery time.Duration
	log        *slog.Logger

	mu        sync.Mutex // guards doc, dirty, lastFlush
	doc       layout.RetentionProgress
	local     Progress // the local file's header (Done is written from doc)
	dirty     bool
	lastFlush time.Time

	flushMu sync.Mutex // one write at a time, in order; guards etag
	etag    string     // of the store document; "" when absent

	// from is what the interrupted run finished (read-only once opened).
	from map[string]*jobItem
}

// resumed is tp's outcome in the interrupted run this one resumes, or nil.
func (rc *recorder) resumed(tp layout.TopicPartition) *jobItem {
	if rc == nil {
		return nil
	}
	return rc.from[tp.String()]
}

// record notes a partition whose trim sequence is durable, and writes the
// progress if the last write is at least FlushEvery old.
func (rc *recorder) record(ctx context.Context, tp layout.TopicPartition, r *Result) error {
	rc.mu.Lock()
	d := layout.RetentionDone{Partition: tp.String(), LogStart: r.CurrentLogStart, NewLogStart: r.NewLogStart, HW: r.HW}
	if r.Trimmed() && r.Plan != nil {
		d.GarbageBytes = r.Plan.GarbageSize
	}
	if d.NewLogStart < d.LogStart {
		d.NewLogStart = d.LogStart
	}
	rc.doc.Done = append(rc.doc.Done, d)
	rc.dirty = true
	due := time.Since(rc.lastFlush) >= rc.flushEvery
	rc.mu.Unlock()
	if !due {
		return nil
	}
	return rc.flush(ctx, false)
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
	rc.doc.UpdatedMs, rc.local.UpdatedMs = now.UnixMilli(), now.UnixMilli()
	rc.doc.Complete, rc.local.Complete = complete, complete
	doc, local := rc.doc, rc.local
	// The records so far, without a copy: record only appends, past
	// this length, and never changes one in place.
	doc.Done = rc.doc.Done[:len(rc.doc.Done):len(rc.doc.Done)]
	rc.dirty, rc.lastFlush = false, now
	rc.mu.Unlock()
	localBytes, err := encodeLocal(&local, doc.Done)
	if err != nil {
		return err
	}
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
	rc.etag = store.ETagOf(layout.Encode(&doc))
	if rc.log != nil {
		rc.log.Debug("retention progress written", "key", rc.key, "done", len(doc.Done), "complete", complete)
	}
	if err := localfile.WriteAtomic(rc.file, append(localBytes, '\n'), 0o644); err != nil {
		return fmt.Errorf("retention run: write progress file %s: %w", rc.file, err)
	}
	return nil
}

// openProgress finds the progress this run resumes (the store document of
// its selection; the local file only where the store has none, as an older
// nereusctl left it), or starts afresh, and writes the run's first
// progress before any partition is touched. It returns why existing
// progress was discarded, if it was.
func openProgress(ctx context.Context, st store.Store, o JobOptions, targets []string, start time.Time) (*recorder, string, error) {
	sum := sha256.Sum256([]byte(strings.Join(targets, "\n")))
	rc := &recorder{
		st: st, key: layout.RetentionProgressKey(o.Selection), file: o.ProgressFile, log: o.Log,
		flushEvery: o.FlushEvery, from: map[string]*jobItem{},
	}
	within := o.ResumeWithin
	if within <= 0 {
		within = DefaultResumeWithin
	}
	fresh := layout.RetentionProgress{
		Selection: o.Selection, Targets: len(targets), TargetsSHA256: hex.EncodeToString(sum[:]),
		NowMs: o.Now.UnixMilli(), StartedMs: start.UnixMilli(), UpdatedMs: start.UnixMilli(),
		Holder: o.Lease.Holder, Done: []layout.RetentionDone{},
	}
	if fresh.Holder == "" {
		fresh.Holder = lease.Holder()
	}
	rc.doc = fresh
	rc.local = Progress{Version: 1, Store: o.StoreID, Selection: o.Selection, Targets: targets, NowMs: fresh.NowMs, StartedMs: fresh.StartedMs}
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
	local, err := loadProgress(o.ProgressFile)
	if errors.Is(err, os.ErrNotExist) {
		local = nil
	} else if err != nil {
		return nil, "", fmt.Errorf("retention run: read progress file %s: %w", o.ProgressFile, err)
	}
	same := func(sel string, complete bool, nowMs int64) bool {
		return !complete && sel == o.Selection && (!o.NowExplicit || nowMs == o.Now.UnixMilli())
	}
	stale := func(what string, writtenMs int64) string {
		if age := start.Sub(time.UnixMilli(writtenMs)); age > within {
			return fmt.Sprintf("the interrupted run's progress (%s) was last written %s ago, more than --resume-within %s: not resumed; this run plans every partition with a new clock",
				what, age.Round(time.Second), within)
		}
		return ""
	}
	switch {
	case sdoc != nil:
		if !same(sdoc.Selection, sdoc.Complete, sdoc.NowMs) || sdoc.TargetsSHA256 != fresh.TargetsSHA256 {
			// Another run's progress (finished, another clock or set of
			// partitions): replaced, never resumed.
			break
		}
		if discarded = stale(rc.key, sdoc.UpdatedMs); discarded != "" {
			break
		}
		// Resume: keep the run's clock so the plan does not shift under
		// the partitions already done, each reported from its record
		// (the local cache holds no more than the store document).
		rc.doc = *sdoc
		rc.doc.Holder = fresh.Holder
		rc.local.NowMs, rc.local.StartedMs = sdoc.NowMs, sdoc.StartedMs
		for _, d := range sdoc.Done {
			rc.from[d.Partition] = resumedItem(d)
		}
	case local != nil:
		if !local.Complete && local.Store != o.StoreID {
			// Another store's interrupted run (or a file written before
			// progress was keyed on the store's identity): never resumed here.
			discarded = fmt.Sprintf("progress file %s holds an interrupted run of another store (%s): not resumed; this run plans every partition", o.ProgressFile, local.Store)
			break
		}
		if !same(local.Selection, local.Complete, local.NowMs) || strings.Join(local.Targets, ",") != strings.Join(targets, ",") {
			break
		}
		written := local.UpdatedMs
		if written == 0 {
			written = local.StartedMs
		}
		if discarded = stale("progress file "+o.ProgressFile, written); discarded != "" {
			break
		}
		// A run by an older nereusctl kept its progress only here: resume
		// it, and from now on in the store too.
		rc.doc.NowMs, rc.doc.StartedMs = local.NowMs, local.StartedMs
		rc.local.NowMs, rc.local.StartedMs = local.NowMs, local.StartedMs
		for _, name := range targets {
			r := local.Done[name]
			if r == nil {
				continue
			}
			d := layout.RetentionDone{Partition: name, LogStart: r.CurrentLogStart, NewLogStart: max(r.NewLogStart, r.CurrentLogStart), HW: max(r.HW, r.NewLogStart, r.CurrentLogStart)}
			if r.Trimmed() && r.Plan != nil {
				d.GarbageBytes = r.Plan.GarbageSize
			}
			rc.from[name] = resumedItem(d)
			rc.doc.Done = append(rc.doc.Done, d)
		}
	}
	rc.dirty = true
	return rc, discarded, rc.flush(ctx, false)
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

// resumedItem is a partition an interrupted run finished, reported from
// its progress record: log starts, HW and the garbage its trim made.
func resumedItem(d layout.RetentionDone) *jobItem {
	tp, _ := layout.ParseTopicPartition(d.Partition)
	return &jobItem{
		r:       &Result{Topic: tp.Topic, Partition: tp.Partition, CurrentLogStart: d.LogStart, NewLogStart: d.NewLogStart, HW: d.HW},
		resumed: true, garbage: d.GarbageBytes,
	}
}

// encodeLocal is the local progress file: p's header, and as Done the
// store document's records, each in the shape of a Result (its garbage
// bytes, where the trim made any, in a plan holding only them), encoded
// one at a time rather than as a map of them all.
func encodeLocal(p *Progress, done []layout.RetentionDone) ([]byte, error) {
	head := *p
	head.Done = map[string]*Result{}
	b, err := json.MarshalIndent(&head, "", "  ")
	if err != nil {
		return nil, err
	}
	// The header ends with "done": {}, then "complete" (the last
	// occurrence: nothing after it is a string); the records go between
	// the braces.
	at := bytes.LastIndex(b, []byte(`"done": {}`))
	if at < 0 {
		return nil, errors.New("retention run: encode progress file: no done member")
	}
	at += len(`"done": {`)
	var out bytes.Buffer
	out.Grow(len(b) + len(done)*160)
	out.Write(b[:at])
	for i, d := range done {
		tp, err := layout.ParseTopicPartition(d.Partition)
		if err != nil {
			return nil, err
		}
		r := Result{Topic: tp.Topic, Partition: tp.Partition, CurrentLogStart: d.LogStart, NewLogStart: d.NewLogStart, HW: d.HW}
		if d.GarbageBytes > 0 {
			r.Plan = &Plan{CurrentLogStart: d.LogStart, HW: d.HW, NewLogStart: d.NewLogStart, Candidates: []Candidate{}, Garbage: []Segment{}, GarbageSize: d.GarbageBytes}
		}
		key, _ := json.Marshal(d.Partition)
		val, err := json.Marshal(&r)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString("\n    ")
		out.Write(key)
		out.WriteString(": ")
		out.Write(val)
	}
	if len(done) > 0 {
		out.WriteString("\n  ")
	}
	out.Write(b[at:])
	return out.Bytes(), nil
}

// maxProgressFileBytes caps the local progress file (one line per
// partition: far above a fleet's).
const maxProgressFileBytes = 1 << 30

func loadProgress(path string) (*Progress, error) {
	b, err := localfile.ReadInput(path, maxProgressFileBytes)
	if err != nil {
		return nil, err
	}
	var p Progress
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrProgressCorrupt, layout.PlainJSONError(err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the document", ErrProgressCorrupt)
	}
	if p.Version != 1 || p.Done == nil {
		return nil, fmt.Errorf("%w: version %d or no done list: want version 1", ErrProgressCorrupt, p.Version)
	}
	return &p, nil
}
