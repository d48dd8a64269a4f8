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
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/localfile"
	"github.com/nereusctl/nereusctl/internal/store"
)

// LeaseName is the store lease that excludes concurrent retention runs.
const LeaseName = "retention"

// JobOptions configure a retention run.
type JobOptions struct {
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
	StoreID  string
	Holder   string
	LeaseTTL time.Duration
	// Restart discards the progress file instead of resuming from it.
	Restart bool
	// StaleAfter: an interrupted run's progress last written longer ago
	// than this is not resumed (default StaleProgressFactor × LeaseTTL).
	StaleAfter time.Duration
	// Hooks reach every partition's trim sequence (crash harness).
	Hooks Hooks
	// ConfirmFull is asked before a trim that removes every record of a
	// partition (see Request.ConfirmFull).
	ConfirmFull func(r *Result) error
	// OnPartition is called after each partition (progress display).
	OnPartition func(done, total int, r *Result)
	// Log receives the run's lease life at info level; nil logs nothing.
	Log *slog.Logger
}

// Progress is the local progress file of a retention run, rewritten
// atomically after each partition completes (at-least-once: a partition is
// recorded only once its trim sequence is durable).
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

// StaleProgressFactor: an interrupted run's progress is resumed only if
// it was last written less than StaleProgressFactor × the lease TTL ago
// (an hour with the default 10-minute TTL). A retry of a killed run comes
// well within that (its lease expires after one TTL); a progress file older
// than that belongs to an earlier run (last night's), whose clock would
// make this run plan against a stale time, so the run starts afresh and
// says so (docs/runbooks/trim-interrupted.md).
const StaleProgressFactor = 6

// ErrProgressCorrupt reports a progress file that cannot be read as one;
// the run refuses it rather than guessing (--restart discards it).
var ErrProgressCorrupt = errors.New("progress file is corrupt")

// JobReport is the outcome of a retention run: its partitions and the
// summary of them.
type JobReport struct {
	JobSummary
	Partitions []*Result `json:"partitions"`
}

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
	// ProgressDiscarded says why an existing progress file was not
	// resumed ("" when none was discarded): --restart, or it was stale.
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

// RunJob is the retention cron job: take the lease, resume an interrupted
// run of the same selection, plan and trim each partition, record progress
// after each, and release the lease. A dry run takes no lease and writes no
// progress.
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
	prog := &Progress{Version: 1, Store: o.StoreID, Selection: o.Selection, Targets: targets, Done: map[string]*Result{}}

	var l *lease.Lease
	if !o.DryRun {
		var err error
		l, err = lease.AcquireLogged(ctx, st, LeaseName, o.Holder, o.LeaseTTL, nil, o.Log)
		if err != nil {
			return nil, err
		}
		defer l.Release(context.WithoutCancel(ctx))
		old, discarded, err := resumable(o, targets, start)
		if err != nil {
			return nil, err
		}
		if old != nil {
			// Resume: same store and selection; keep the run's clock so the
			// plan does not shift under the partitions already done.
			prog = old
			now = time.UnixMilli(old.NowMs)
		}
		rep.ProgressDiscarded = discarded
		rep.ProgressFile = o.ProgressFile
	}
	if prog.NowMs == 0 {
		prog.NowMs, prog.StartedMs = now.UnixMilli(), start.UnixMilli()
	}
	rep.NowMs = now.UnixMilli()
	if !o.DryRun {
		if err := saveProgress(o.ProgressFile, prog); err != nil {
			return nil, err
		}
	}
	for i, tp := range o.Partitions {
		if err := ctx.Err(); err != nil {
			return rep.interrupted(start), err
		}
		if r, ok := prog.Done[tp.String()]; ok {
			rep.Resumed++
			rep.add(r)
			continue
		}
		if l != nil && time.Until(l.Expires()) < o.LeaseTTL/2 {
			if err := l.Renew(ctx); err != nil {
				if ctx.Err() != nil {
					return rep.interrupted(start), ctx.Err()
				}
				return rep, err
			}
		}
		r := RunPartition(ctx, st, Request{TP: tp, Retention: true, NowMs: now.UnixMilli(), DryRun: o.DryRun, PlanOnly: o.PlanOnly, Hooks: o.Hooks, ConfirmFull: o.ConfirmFull})
		if r.Err != nil && ctx.Err() != nil {
			// The partition it was on is redone by the rerun (a no-op
			// where its trim landed): only finished ones are reported.
			return rep.interrupted(start), ctx.Err()
		}
		rep.add(r)
		if !o.DryRun && r.OK() {
			prog.Done[tp.String()] = r
			if err := saveProgress(o.ProgressFile, prog); err != nil {
				return rep, err
			}
		}
		if o.OnPartition != nil {
			o.OnPartition(i+1, len(o.Partitions), r)
		}
	}
	if !o.DryRun && rep.Errors == 0 {
		prog.Complete = true
		if err := saveProgress(o.ProgressFile, prog); err != nil {
			return rep, err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// resumable returns the progress of an interrupted run this run resumes,
// or nil to start afresh, and why an existing file was discarded.
func resumable(o JobOptions, targets []string, start time.Time) (*Progress, string, error) {
	if o.Restart {
		if err := os.Remove(o.ProgressFile); err == nil {
			return nil, "--restart: the progress file was discarded", nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("retention run: remove progress file %s: %w", o.ProgressFile, err)
		}
		return nil, "", nil
	}
	old, err := loadProgress(o.ProgressFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("retention run: read progress file %s: %w", o.ProgressFile, err)
	}
	if !old.Complete && old.Store != o.StoreID {
		// Another store's interrupted run (or a file written before
		// progress was keyed on the store's identity): never resumed here.
		return nil, fmt.Sprintf("progress file %s holds an interrupted run of another store (%s): not resumed; this run plans every partition", o.ProgressFile, old.Store), nil
	}
	if old.Complete || old.Selection != o.Selection ||
		strings.Join(old.Targets, ",") != strings.Join(targets, ",") ||
		(o.NowExplicit && old.NowMs != o.Now.UnixMilli()) {
		// Another run's progress (finished, another store, selection or
		// clock): it is replaced, never resumed.
		return nil, "", nil
	}
	stale := o.StaleAfter
	if stale <= 0 {
		stale = StaleProgressFactor * o.LeaseTTL
	}
	written := old.UpdatedMs
	if written == 0 {
		written = old.StartedMs
	}
	if age := start.Sub(time.UnixMilli(written)); age > stale {
		return nil, fmt.Sprintf("the interrupted run's progress was last written %s ago, more than %s (%d × --lease-ttl): not resumed; this run plans every partition with a new clock",
			age.Round(time.Second), stale, StaleProgressFactor), nil
	}
	return old, "", nil
}

// interrupted marks a report cut short by SIGINT/SIGTERM.
func (rep *JobReport) interrupted(start time.Time) *JobReport {
	rep.Interrupted = true
	rep.Seconds = time.Since(start).Seconds()
	return rep
}

func (rep *JobReport) add(r *Result) {
	rep.Partitions = append(rep.Partitions, r)
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

func loadProgress(path string) (*Progress, error) {
	b, err := os.ReadFile(path)
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

func saveProgress(path string, p *Progress) error {
	p.UpdatedMs = time.Now().UnixMilli()
	return writeProgressRaw(path, p)
}

func writeProgressRaw(path string, p *Progress) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return localfile.WriteAtomic(path, append(b, '\n'), 0o644)
}

// Metrics renders a retention report in the Prometheus text format for
// node_exporter's textfile collector.
func Metrics(rep *JobReport, finished time.Time) []byte {
	var b strings.Builder
	gauge := func(name, help string, lines ...string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		for _, l := range lines {
			fmt.Fprintf(&b, "%s%s\n", name, l)
		}
	}
	dry := "false"
	if rep.DryRun {
		dry = "true"
	}
	gauge("nereusctl_retention_partitions", "Partitions of the last retention run by result.",
		fmt.Sprintf(`{result="trimmed",dry_run="%s"} %d`, dry, rep.Trimmed),
		fmt.Sprintf(`{result="unchanged",dry_run="%s"} %d`, dry, rep.Unchanged),
		fmt.Sprintf(`{result="error",dry_run="%s"} %d`, dry, rep.Errors))
	gauge("nereusctl_retention_garbage_bytes", "Bytes of whole segments the last retention run made garbage for gc.", fmt.Sprintf(" %d", rep.GarbageBytes))
	gauge("nereusctl_retention_errors", "Partitions that failed in the last retention run.", fmt.Sprintf(" %d", rep.Errors))
	gauge("nereusctl_retention_duration_seconds", "Wall time of the last retention run.", fmt.Sprintf(" %g", rep.Seconds))
	gauge("nereusctl_retention_last_run_timestamp_seconds", "When the last retention run finished.", fmt.Sprintf(" %d", finished.Unix()))
	if rep.Errors == 0 {
		gauge("nereusctl_retention_last_success_timestamp_seconds", "When the last fully successful retention run finished.", fmt.Sprintf(" %d", finished.Unix()))
	}
	return []byte(b.String())
}
