package retention

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	Partitions   []layout.TopicPartition
	Selection    string // how the partitions were chosen, e.g. "--all --shard 0/2"
	Now          time.Time
	NowExplicit  bool
	DryRun       bool
	ProgressFile string
	StoreName    string
	Holder       string
	LeaseTTL     time.Duration
	// Hooks reach every partition's trim sequence (crash harness).
	Hooks Hooks
	// OnPartition is called after each partition (progress display).
	OnPartition func(done, total int, r *Result)
}

// Progress is the local progress file of a retention run, rewritten
// atomically after each partition completes (at-least-once: a partition is
// recorded only once its trim sequence is durable).
type Progress struct {
	Version   int                `json:"version"`
	Store     string             `json:"store"`
	Selection string             `json:"selection"`
	Targets   []string           `json:"partitions"`
	NowMs     int64              `json:"now_ms"`
	StartedMs int64              `json:"started_ms"`
	Done      map[string]*Result `json:"done"`
	Complete  bool               `json:"complete"`
}

// JobReport is the outcome of a retention run.
type JobReport struct {
	DryRun     bool      `json:"dry_run"`
	NowMs      int64     `json:"now_ms"`
	Partitions []*Result `json:"partitions"`
	// Resumed counts partitions taken from an interrupted run's progress.
	Resumed      int     `json:"resumed"`
	Trimmed      int     `json:"trimmed"`
	Unchanged    int     `json:"unchanged"`
	Errors       int     `json:"errors"`
	GarbageBytes int64   `json:"garbage_bytes"`
	Seconds      float64 `json:"seconds"`
	ProgressFile string  `json:"progress_file,omitempty"`
}

// DefaultProgressFile is the progress file for a store, under the local
// state directory.
func DefaultProgressFile(storeName string) string {
	sum := sha256.Sum256([]byte(storeName))
	return filepath.Join(localfile.StateDir(), "retention-"+hex.EncodeToString(sum[:6])+".json")
}

// RunJob is the retention cron job: take the lease, resume an interrupted
// run of the same selection, plan and trim each partition, record progress
// after each, and release the lease. A dry run takes no lease and writes no
// progress.
func RunJob(ctx context.Context, st store.Store, o JobOptions) (*JobReport, error) {
	start := time.Now()
	rep := &JobReport{DryRun: o.DryRun, Partitions: []*Result{}}
	targets := make([]string, len(o.Partitions))
	for i, tp := range o.Partitions {
		targets[i] = tp.String()
	}
	now := o.Now
	prog := &Progress{Version: 1, Store: o.StoreName, Selection: o.Selection, Targets: targets, Done: map[string]*Result{}}

	var l *lease.Lease
	if !o.DryRun {
		var err error
		l, err = lease.Acquire(ctx, st, LeaseName, o.Holder, o.LeaseTTL, nil)
		if err != nil {
			return nil, err
		}
		defer l.Release(context.WithoutCancel(ctx))
		if old, err := loadProgress(o.ProgressFile); err == nil && !old.Complete && old.Store == o.StoreName &&
			old.Selection == o.Selection && strings.Join(old.Targets, ",") == strings.Join(targets, ",") &&
			(!o.NowExplicit || old.NowMs == now.UnixMilli()) {
			// Resume: same store and selection; keep the run's clock so the
			// plan does not shift under the partitions already done.
			prog = old
			now = time.UnixMilli(old.NowMs)
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read progress file %s: %w", o.ProgressFile, err)
		}
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
			return rep, err
		}
		if r, ok := prog.Done[tp.String()]; ok {
			rep.Resumed++
			rep.add(r)
			continue
		}
		if l != nil && time.Until(l.Expires()) < o.LeaseTTL/2 {
			if err := l.Renew(ctx); err != nil {
				return rep, err
			}
		}
		r := RunPartition(ctx, st, Request{TP: tp, Retention: true, NowMs: now.UnixMilli(), DryRun: o.DryRun, Hooks: o.Hooks})
		if r.Err != nil && ctx.Err() != nil {
			return rep, ctx.Err()
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
		return nil, fmt.Errorf("malformed progress file: %w", err)
	}
	if p.Version != 1 || p.Done == nil {
		return nil, fmt.Errorf("progress file version %d: want 1", p.Version)
	}
	return &p, nil
}

func saveProgress(path string, p *Progress) error {
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
