package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
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
  nereusctl retention run --all --metrics-file /var/lib/node_exporter/textfile/nereus_retention.prom`,
	}
	c.AddCommand(newRetentionRunCmd(g))
	return c
}

type retentionRunOptions struct {
	sel          partitionSel
	dryRun       bool
	now          string
	progressFile string
	metricsFile  string
	leaseTTL     time.Duration
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

A lease in the store (leases/retention.json) excludes a concurrent run: a
second run exits 4 saying who holds it and until when. An expired lease, or
one whose holder process died on this host (a killed cron job), is taken
over. Progress is written to a local file atomically after each
partition completes; a killed run, rerun with the same selection, resumes
where it stopped (the partition it was on is redone, which is a no-op) and
keeps the first run's clock. --dry-run takes no lease, writes no progress and
changes nothing.

--metrics-file writes Prometheus text-format metrics for node_exporter's
textfile collector (atomically).` + exitStatusHelp("1 unless every partition succeeded", "4 when another run holds the lease"),
		Example: `  nereusctl retention run --all --dry-run
  nereusctl retention run --all --now 2026-11-29T03:00:00Z -o json
  nereusctl retention run --all --shard 1/4 --metrics-file /var/lib/node_exporter/textfile/nereus.prom`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRetention(cmd, g, o, args)
		},
	}
	o.sel.addFlags(c, true)
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan for every partition; write nothing")
	c.Flags().StringVar(&o.now, "now", "", "the time retention.ms is measured against (RFC3339; default: now)")
	c.Flags().StringVar(&o.progressFile, "progress-file", "", "local progress file (default: under $XDG_STATE_HOME/nereusctl, one per store)")
	c.Flags().StringVar(&o.metricsFile, "metrics-file", "", "write Prometheus text-format metrics to this file")
	c.Flags().DurationVar(&o.leaseTTL, "lease-ttl", 10*time.Minute, "how long the store lease lasts between renewals")
	return c
}

func runRetention(cmd *cobra.Command, g *globals, o *retentionRunOptions, args []string) error {
	ctx := cmd.Context()
	now, nowExplicit := time.Now(), false
	if o.now != "" {
		t, err := time.Parse(time.RFC3339, o.now)
		if err != nil {
			return exitcode.UsageErr(fmt.Errorf("--now %q: want RFC3339, e.g. 2026-11-29T03:00:00Z", o.now))
		}
		now, nowExplicit = t, true
	}
	if o.leaseTTL < time.Second {
		return exitcode.UsageErr(fmt.Errorf("--lease-ttl %s: want at least 1s", o.leaseTTL))
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
		progress = retention.DefaultProgressFile(g.cfg.Store)
	}
	prog := newCountProgress(g, "partitions", int64(len(tps)))
	defer prog.done()
	rep, err := retention.RunJob(ctx, st, retention.JobOptions{
		OnPartition: func(done, total int, r *retention.Result) { prog.add(1) },
		Partitions:  tps, Selection: selection, Now: now, NowExplicit: nowExplicit, DryRun: o.dryRun,
		ProgressFile: progress, StoreName: g.cfg.Store, Holder: lease.Holder(),
		LeaseTTL: o.leaseTTL, Hooks: crashHooks(),
	})
	prog.done()
	if err != nil {
		if he, ok := err.(*lease.HeldError); ok {
			return exitcode.BlockedErr(fmt.Errorf("retention run: %w", he), "another retention run is working on this store; wait for it, or for the lease to expire at "+he.Until.UTC().Format(time.RFC3339))
		}
		return err
	}
	if o.metricsFile != "" {
		if err := localfile.WriteAtomic(o.metricsFile, retention.Metrics(rep, time.Now()), 0o644); err != nil {
			return err
		}
	}
	if g.json() {
		if err := writeJSON(g.stdout, map[string]any{"schema_version": SchemaVersion, "dry_run": rep.DryRun, "partitions": rep.Partitions, "summary": rep}); err != nil {
			return err
		}
	} else {
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
			garbage := int64(0)
			if r.Plan != nil {
				garbage = r.Plan.GarbageSize
			}
			rows = append(rows, []string{fmt.Sprintf("%s-%d", r.Topic, r.Partition), fmt.Sprint(r.CurrentLogStart), fmt.Sprint(r.NewLogStart), fmt.Sprint(r.HW), fmt.Sprint(garbage), result})
		}
		if err := writeTable(g.stdout, []string{"PARTITION", "LOG START", "NEW LOG START", "HW", "GARBAGE BYTES", "RESULT"}, rows); err != nil {
			return err
		}
		fmt.Fprintf(g.stdout, "retention run: %d partitions: %d trimmed, %d unchanged, %d errors (%d resumed from an interrupted run); %d bytes made garbage; %.1fs\n",
			len(rep.Partitions), rep.Trimmed, rep.Unchanged, rep.Errors, rep.Resumed, rep.GarbageBytes, rep.Seconds)
	}
	if rep.Errors > 0 {
		err := fmt.Errorf("retention run: %d of %d partitions failed", rep.Errors, len(rep.Partitions))
		for _, r := range rep.Partitions {
			if r.Err != nil && exitcode.Of(r.Err) == exitcode.Verify {
				// Missing or corrupt data outranks any other failure.
				return exitcode.Wrap(exitcode.Verify, fmt.Errorf("%w; %s-%d: %w", err, r.Topic, r.Partition, r.Err), exitcode.HintOf(r.Err))
			}
		}
		return err
	}
	return nil
}
