package cmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/localfile"
	"github.com/nereusctl/nereusctl/internal/retention"
)

func newRetentionCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "retention",
		Short: "Time and size retention: the nightly cron job",
		Long:  "Apply retention.ms and retention.bytes the way Kafka's log manager does, as a resumable, lease-guarded job." + exitStatusHelp(),
		Example: `  nereusctl retention run --all --dry-run
  nereusctl retention run --all --yes --metrics-file /var/lib/node_exporter/textfile/nereus_retention.prom`,
	}
	c.AddCommand(newRetentionRunCmd(g))
	return c
}

type retentionRunOptions struct {
	sel          partitionSel
	dryRun       bool
	yes          bool
	restart      bool
	now          string
	clock        clockFlags
	progressFile string
	metricsFile  string
	leaseTTL     time.Duration
	resumeWithin time.Duration
	progressIntv time.Duration
}

func newRetentionRunCmd(g *globals) *cobra.Command {
	o := &retentionRunOptions{}
	c := &cobra.Command{
		Use:   "run (--all | TOPIC-PARTITION...) [--dry-run] [--now RFC3339]",
		Short: "Plan and apply retention to partitions, resumably",
		Long: `For each partition: replay its state (checkpoint + tail), plan the new log
start with Kafka's rules (log-start breach, retention.bytes, retention.ms;
only when cleanup.policy contains delete; walking whole segments oldest first
and stopping at the first that fails; never past the HW), and run the durable
trim sequence where the log start moves. Physical deletion is left to gc.

Up to --parallel partitions are worked on at once; the output keeps the
order of the selection whatever finishes first, and one partition's failure
never stops the others. Each partition is planned and trimmed under its
partition lease (leases/partitions/<topic>/<p>.json, the one trim and
delete-records take), so two runs, or a run and a trim, on the same
partition exclude each other while disjoint shards (--shard i/n) run at
once. A partition another job holds for longer than --lease-wait fails
alone, naming the holder (exit 4 when that is the worst); --lease-ttl is
how long each partition lease lasts between renewals.

Progress is kept in the store, under tasks/retention/ (one document per
selection: each shard has its own), written at most once a second with
If-Match on what this run last wrote; a partition is recorded only once its
trim is durable (--progress-interval: 0s writes after every partition). A
local file caches it (by default one per store, named
after the store's canonical identity). A killed run, rerun with the same
store and selection from any machine (a pod rescheduled on another node),
resumes where it stopped: the partitions in flight and those finished in
its last second are redone, which is a no-op, and it keeps the first run's
clock. A second live run of the same selection loses the progress write and
stops with exit 4. Progress last written more than --resume-within ago (1h
by default) is not resumed: the run says so on stderr and starts afresh
with a new clock. Corrupt progress is refused (exit 3 for the store
document, naming its key; exit 1 for the local file); --restart discards
both and plans every partition again. --dry-run takes no lease, writes no
progress and changes nothing.

A run that would remove EVERY record of a partition (the log start moves up
to the HW, e.g. a topic idle for longer than retention.ms) needs --yes: on a
terminal it asks (y/N on stdin); otherwise it refuses with exit 2 before
trimming anything. Without --yes the run plans every partition first to
find such trims; cron jobs pass --yes.

--metrics-file writes Prometheus text-format metrics for node_exporter's
textfile collector (atomically); its folder must exist and be writable, which
is checked before any trim. A dry run never writes the metrics file.

SIGINT or SIGTERM stops the run: the partitions in flight are left where
their trim sequence stood (each step is durable, a rerun finishes them), the
partitions done so far are recorded and printed, and the exit status is
130; rerun the same command to resume.` + exitStatusHelp("1 unless every partition succeeded", "2 a trim removing every record of a partition was not confirmed (--yes), or --metrics-file cannot be written", "4 when a partition's lease is held by another job past --lease-wait (that partition only), or another run of the same selection is live"),
		Example: `  nereusctl retention run --all --dry-run
  nereusctl retention run --all --now 2026-11-29T03:00:00Z --dry-run -o json
  nereusctl retention run --all --yes --shard 1/4 --metrics-file /var/lib/node_exporter/textfile/nereus.prom`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRetention(cmd, g, o, args)
		},
	}
	o.sel.addFlags(c, true)
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan for every partition; write nothing")
	c.Flags().BoolVar(&o.yes, "yes", false, "trim partitions whose every record expired without asking (cron jobs)")
	c.Flags().BoolVar(&o.restart, "restart", false, "discard the progress file of an interrupted run and plan every partition again")
	c.Flags().StringVar(&o.now, "now", "", "the time retention.ms and producer expiration are measured against (RFC3339; default: now)")
	o.clock.add(c, false)
	c.Flags().StringVar(&o.progressFile, "progress-file", "", "local progress file (default: under $XDG_STATE_HOME/nereusctl, one per store)")
	c.Flags().StringVar(&o.metricsFile, "metrics-file", "", "write Prometheus text-format metrics to this file (its folder must exist)")
	c.Flags().DurationVar(&o.leaseTTL, "lease-ttl", lease.DefaultTTL, "how long each partition lease lasts between renewals (renewed every third of it)")
	c.Flags().DurationVar(&o.progressIntv, "progress-interval", retention.DefaultFlushEvery, "write finished partitions to the store progress at most this often (0s: after every partition)")
	c.Flags().DurationVar(&o.resumeWithin, "resume-within", retention.DefaultResumeWithin, "resume an interrupted run only if its progress was written less than this long ago")
	return c
}

func runRetention(cmd *cobra.Command, g *globals, o *retentionRunOptions, args []string) error {
	ctx := cmd.Context()
	now, nowExplicit, err := parseNow(o.now)
	if err != nil {
		return err
	}
	clock, err := o.clock.clockAt(now)
	if err != nil {
		return err
	}
	if o.leaseTTL < time.Second {
		return exitcode.UsageErr(fmt.Errorf("--lease-ttl %s: want at least 1s", o.leaseTTL))
	}
	if o.progressIntv < 0 {
		return exitcode.UsageErr(fmt.Errorf("--progress-interval %s: want 0s or more", o.progressIntv))
	}
	if o.resumeWithin <= 0 {
		return exitcode.UsageErr(fmt.Errorf("--resume-within %s: want more than 0s", o.resumeWithin))
	}
	// The metrics file is checked before anything is planned or trimmed:
	// a cron line with a wrong path fails at once, not after the trims.
	if o.metricsFile != "" {
		if err := localfile.CheckWritable(o.metricsFile); err != nil {
			return exitcode.Wrap(exitcode.Usage, fmt.Errorf("retention run: --metrics-file: %w", err),
				"create the folder (node_exporter's textfile directory) or fix the path; nothing was trimmed")
		}
	}
	// So is an explicit progress file (a dry run writes none).
	if o.progressFile != "" && !o.dryRun {
		if err := localfile.CheckWritable(o.progressFile); err != nil {
			return exitcode.Wrap(exitcode.Usage, fmt.Errorf("retention run: --progress-file: %w", err),
				"give a file in an existing, writable folder; nothing was trimmed")
		}
	}
	storeID, err := retention.StoreIdentity(g.cfg.Store, g.cfg.S3Endpoint)
	if err != nil {
		return exitcode.UsageErr(fmt.Errorf("retention run: %w", err))
	}
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	tps, err := o.sel.resolve(ctx, st, args)
	if err != nil {
		return err
	}
	selection := strings.Join(args, " ")
	if o.sel.all {
		selection = "--all " + o.sel.shard
	}
	progress := o.progressFile
	if progress == "" {
		progress = retention.DefaultProgressFile(storeID)
	}
	lo := g.leaseOptions()
	lo.TTL = o.leaseTTL
	opts := retention.JobOptions{
		Partitions: tps, Selection: selection, Now: now, NowExplicit: nowExplicit, DryRun: o.dryRun,
		ProducerIDExpirationMs: clock.ExpirationMs,
		ProgressFile:           progress, StoreID: storeID, Lease: lo, Parallel: g.parallel(), Restart: o.restart,
		ResumeWithin: o.resumeWithin, FlushEvery: o.progressIntv, Hooks: crashHooks(), Log: g.log,
	}
	if !o.dryRun && !o.yes {
		// A first pass finds the partitions whose every record would go,
		// so that they are confirmed (or refused) before anything is
		// trimmed.
		first := opts
		first.PlanOnly = true
		prep, err := retention.RunJob(ctx, st, first)
		if err != nil {
			return err
		}
		var full []string
		for _, r := range prep.Partitions {
			if r.RemovesEverything() {
				full = append(full, fmt.Sprintf("%s-%d (log start %d -> HW %d)", r.Topic, r.Partition, r.CurrentLogStart, r.HW))
			}
		}
		confirmed, err := confirmFull(g, "retention run", full)
		if err != nil {
			return err
		}
		opts.ConfirmFull = confirmed.check
	}
	prog := g.progress("partitions", int64(len(tps)))
	defer prog.done()
	opts.OnPartition = func(done, total int, r *retention.Result) { prog.add(1) }
	rep, err := retention.RunJob(ctx, st, opts)
	prog.done()
	if err != nil {
		if errors.Is(err, retention.ErrProgressCorrupt) {
			code := exitcode.Error
			if exitcode.IsCorruption(err) {
				code = exitcode.Verify // the store document: stored bytes are wrong
			}
			return exitcode.Wrap(code, err, "rerun with --restart to discard the progress (every partition is planned again; trims already done are no-ops)")
		}
		if rep != nil && (rep.Interrupted || errors.Is(err, retention.ErrProgressConflict)) {
			// The partitions done so far, then the interruption.
			if rerr := renderRetention(g, rep); rerr != nil {
				return rerr
			}
		}
		if errors.Is(err, retention.ErrProgressConflict) {
			return exitcode.BlockedErr(err, "another retention run of this selection is live; let it finish (this run's finished partitions are recorded), or rerun later to resume")
		}
		return err
	}
	if rep.ProgressDiscarded != "" {
		fmt.Fprintf(g.stderr, "retention run: %s\n", rep.ProgressDiscarded)
	}
	if o.metricsFile != "" {
		if rep.DryRun {
			fmt.Fprintf(g.stderr, "retention run: dry run: %s not written (a dry run never replaces the metrics of real runs)\n", o.metricsFile)
		} else if err := localfile.WriteAtomic(o.metricsFile, retention.Metrics(rep, time.Now()), 0o644); err != nil {
			return err
		}
	}
	if err := renderRetention(g, rep); err != nil {
		return err
	}
	if rep.Errors > 0 {
		err := fmt.Errorf("retention run: %d of %d partitions failed", rep.Errors, len(rep.Partitions))
		// The worst failure decides: missing or corrupt data (3), then a
		// partition another job holds (4), then the rest.
		for _, want := range []exitcode.Code{exitcode.Verify, exitcode.Blocked} {
			for _, r := range rep.Partitions {
				if r.Err == nil {
					continue
				}
				perr := leaseErr(layout.TopicPartition{Topic: r.Topic, Partition: r.Partition}, r.Err)
				if exitcode.Of(perr) == want {
					return exitcode.Wrap(want, fmt.Errorf("%w; %s-%d: %w", err, r.Topic, r.Partition, r.Err), exitcode.HintOf(perr))
				}
			}
		}
		for _, r := range rep.Partitions {
			if r.Error == retention.ErrNotConfirmed {
				return exitcode.Wrap(exitcode.Usage, err, "a partition not confirmed in the first pass would lose every record; rerun, or pass --yes")
			}
		}
		return err
	}
	return nil
}

// retentionJSON is retention run's -o json document: trim's shape plus
// summary, which holds the counts only (the partitions are listed once, at
// the top level).
type retentionJSON struct {
	trimJSON
	Summary retention.JobSummary `json:"summary"`
}

// renderRetention prints a retention report: the JSON document or the
// table and the summary line (worded as a plan on a dry run).
func renderRetention(g *globals, rep *retention.JobReport) error {
	if g.json() {
		return writeJSON(g.stdout, retentionJSON{
			trimJSON: trimJSON{SchemaVersion: SchemaVersion, DryRun: rep.DryRun, Partitions: nonNil(rep.Partitions)},
			Summary:  rep.JobSummary,
		})
	}
	rows := make([][]string, 0, len(rep.Partitions))
	for _, r := range rep.Partitions {
		result := "unchanged"
		switch {
		case !r.OK():
			result = "error: " + r.Error + ": " + r.ErrorDetail
		case r.Trimmed() && rep.DryRun:
			result = "would trim"
		case r.Trimmed():
			result = "trimmed"
		}
		if r.RemovesEverything() {
			result += " (every record)"
		}
		if r.OK() && r.Plan != nil && r.Plan.OpenSegmentBytes > 0 {
			result += fmt.Sprintf("; open segment's %d bytes freed when it rolls", r.Plan.OpenSegmentBytes)
		}
		garbage := int64(0)
		if r.Plan != nil {
			garbage = r.Plan.GarbageSize
		}
		rows = append(rows, []string{fmt.Sprintf("%s-%d", r.Topic, r.Partition), fmt.Sprint(r.CurrentLogStart), fmt.Sprint(r.NewLogStart), fmt.Sprint(r.HW), fmt.Sprint(garbage), result})
	}
	garbageCol := "GARBAGE BYTES"
	if rep.DryRun {
		garbageCol = "WOULD BE GARBAGE"
	}
	if err := writeTable(g.stdout, []string{"PARTITION", "LOG START", "NEW LOG START", "HW", garbageCol, "RESULT"}, rows); err != nil {
		return err
	}
	switch {
	case rep.Interrupted:
		fmt.Fprintf(g.stdout, "retention run: interrupted: %d partitions done: %d trimmed, %d unchanged, %d errors (%d resumed from an interrupted run); %d bytes made garbage; %.1fs\n",
			len(rep.Partitions), rep.Trimmed, rep.Unchanged, rep.Errors, rep.Resumed, rep.GarbageBytes, rep.Seconds)
	case rep.DryRun:
		fmt.Fprintf(g.stdout, "retention run (dry run, nothing changed): %d partitions: %d would trim, %d unchanged, %d errors; %d bytes would be made garbage; %.1fs\n",
			len(rep.Partitions), rep.Trimmed, rep.Unchanged, rep.Errors, rep.GarbageBytes, rep.Seconds)
	default:
		fmt.Fprintf(g.stdout, "retention run: %d partitions: %d trimmed, %d unchanged, %d errors (%d resumed from an interrupted run); %d bytes made garbage; %.1fs\n",
			len(rep.Partitions), rep.Trimmed, rep.Unchanged, rep.Errors, rep.Resumed, rep.GarbageBytes, rep.Seconds)
	}
	return nil
}
