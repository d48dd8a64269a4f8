package cmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
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
clock; the partitions it resumes are not listed again, only counted in the
summary (the progress is a watermark and the window past it, not a record
per partition). A second live run of the same selection loses the progress write and
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

--metrics-file writes the run's Prometheus metrics for node_exporter's
textfile collector (atomically), --push-gateway pushes them; the file's
folder must exist and be writable, which is checked before any trim. A dry
run writes and pushes no metrics (docs/deploy/README.md, "Metrics").

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
	if o.progressIntv < 0 {
		return exitcode.UsageErr(fmt.Errorf("--progress-interval %s: want 0s or more", o.progressIntv))
	}
	if o.resumeWithin <= 0 {
		return exitcode.UsageErr(fmt.Errorf("--resume-within %s: want more than 0s", o.resumeWithin))
	}
	// An explicit progress file is checked before anything is planned or
	// trimmed (a dry run writes none), as --metrics-file is (startMetrics).
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
	st, err := g.mutatingStore(ctx, o.dryRun)
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
	opts := retention.JobOptions{
		Partitions: tps, Selection: selection, Now: now, NowExplicit: nowExplicit, DryRun: o.dryRun,
		ProducerIDExpirationMs: clock.ExpirationMs,
		ProgressFile:           progress, StoreID: storeID, Lease: lo, Parallel: g.parallel(), Restart: o.restart,
		ResumeWithin: o.resumeWithin, FlushEvery: o.progressIntv, Hooks: crashHooks(), Log: g.log,
	}
	if !o.dryRun && !o.yes {
		// A first pass finds the partitions whose every record would go,
		// so that they are confirmed (or refused) before anything is
		// trimmed; it keeps only their names.
		first := opts
		first.PlanOnly = true
		var full []string
		first.Emit = func(r *retention.Result) error {
			if r.RemovesEverything() {
				full = append(full, fmt.Sprintf("%s-%d (log start %d -> HW %d)", r.Topic, r.Partition, r.CurrentLogStart, r.HW))
			}
			return nil
		}
		if _, err := retention.RunJob(ctx, st, first); err != nil {
			return err
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
	out := newRetentionOut(g, o.dryRun)
	opts.Emit = g.countRetention(out.emit)
	rep, err := retention.RunJob(ctx, st, opts)
	prog.done()
	if rep != nil {
		g.observeRetention(rep)
	}
	if err != nil {
		if errors.Is(err, retention.ErrProgressCorrupt) {
			code := exitcode.Error
			if exitcode.IsCorruption(err) {
				code = exitcode.Verify // the store document: stored bytes are wrong
			}
			return exitcode.Wrap(code, err, "rerun with --restart to discard the progress (every partition is planned again; trims already done are no-ops)")
		}
		if rep != nil && !out.doc.failed && (rep.Interrupted || errors.Is(err, retention.ErrProgressConflict) || out.n > 0) {
			// The partitions done so far, then the error (a streamed
			// document is always closed).
			if rerr := out.finish(rep); rerr != nil {
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
	if err := out.finish(rep); err != nil {
		return err
	}
	if rep.Errors > 0 {
		err := fmt.Errorf("retention run: %d of %d partitions failed", rep.Errors, rep.Finished())
		// The worst failure decides: missing or corrupt data (3), then a
		// partition another job holds (4), then the rest.
		for _, want := range []exitcode.Code{exitcode.Verify, exitcode.Blocked} {
			if r := out.worst[want]; r != nil {
				perr := leaseErr(layout.TopicPartition{Topic: r.Topic, Partition: r.Partition}, r.Err)
				return exitcode.Wrap(want, fmt.Errorf("%w; %s-%d: %w", err, r.Topic, r.Partition, r.Err), exitcode.HintOf(perr))
			}
		}
		if out.notConfirmed {
			return exitcode.Wrap(exitcode.Usage, err, "a partition not confirmed in the first pass would lose every record; rerun, or pass --yes")
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

// retentionOut prints a retention run as its partitions finish, in the
// selection's order (retention.JobOptions.Emit), so that the run keeps no
// partition's result: under -o json and -o yaml the document is written
// partition by partition, the very bytes writeJSON writes for the whole
// report (retentionJSON); the table is written a block of rows at a time
// (tableRows: a run of up to tableBlock partitions prints it whole at the
// end). For the exit status it keeps the first partition failing with
// each code that outranks a plain failure.
type retentionOut struct {
	g      *globals
	dryRun bool
	// n counts the partitions emitted (table or document).
	n            int
	doc          docStream // -o json and yaml
	rows         *tableRows
	worst        map[exitcode.Code]*retention.Result
	notConfirmed bool
}

// The members the streamed documents are cut at: the whole document
// rendered with no partitions has this where the partitions go.
const (
	emptyPartitionsJSON = `"partitions": []`
	emptyPartitionsYAML = "partitions: []\n"
)

// newRetentionOut prints a retention run (a dry run: dryRun) to g's stdout.
func newRetentionOut(g *globals, dryRun bool) *retentionOut {
	return &retentionOut{g: g, dryRun: dryRun, doc: docStream{w: g.stdout, what: "retention run"}}
}

// empty is the document of sum with no partitions.
func (o *retentionOut) empty(sum retention.JobSummary) retentionJSON {
	return retentionJSON{
		trimJSON: trimJSON{SchemaVersion: SchemaVersion, DryRun: o.dryRun, Partitions: []*retention.Result{}},
		Summary:  sum,
	}
}

// emit takes one finished partition (retention.JobOptions.Emit).
func (o *retentionOut) emit(r *retention.Result) error {
	o.n++
	if r.Err != nil {
		code := exitcode.Of(leaseErr(layout.TopicPartition{Topic: r.Topic, Partition: r.Partition}, r.Err))
		if (code == exitcode.Verify || code == exitcode.Blocked) && o.worst[code] == nil {
			if o.worst == nil {
				o.worst = map[exitcode.Code]*retention.Result{}
			}
			o.worst[code] = r
		}
	}
	if r.Error == retention.ErrNotConfirmed {
		o.notConfirmed = true
	}
	if !o.g.json() {
		if o.rows == nil {
			o.rows = newTableRows(o.g.stdout, retentionHeaders(o.dryRun)...)
		}
		return o.rows.add(retentionRow(r, o.dryRun)...)
	}
	return o.doc.item(o.empty(retention.JobSummary{}), r)
}

// finish writes the rest of the output: the document's end with the
// summary, or the table and the summary line (worded as a plan on a dry
// run).
func (o *retentionOut) finish(rep *retention.JobReport) error {
	if o.g.json() {
		return o.doc.end(o.empty(rep.JobSummary))
	}
	if o.rows == nil {
		o.rows = newTableRows(o.g.stdout, retentionHeaders(rep.DryRun)...)
	}
	if err := o.rows.render(); err != nil {
		return err
	}
	w := o.g.stdout
	switch {
	case rep.Interrupted:
		fmt.Fprintf(w, "retention run: interrupted: %d partitions done: %d trimmed, %d unchanged, %d errors (%d resumed from an interrupted run); %d bytes made garbage; %.1fs\n",
			rep.Finished(), rep.Trimmed, rep.Unchanged, rep.Errors, rep.Resumed, rep.GarbageBytes, rep.Seconds)
	case rep.DryRun:
		fmt.Fprintf(w, "retention run (dry run, nothing changed): %d partitions: %d would trim, %d unchanged, %d errors; %d bytes would be made garbage; %.1fs\n",
			rep.Finished(), rep.Trimmed, rep.Unchanged, rep.Errors, rep.GarbageBytes, rep.Seconds)
	default:
		fmt.Fprintf(w, "retention run: %d partitions: %d trimmed, %d unchanged, %d errors (%d resumed from an interrupted run); %d bytes made garbage; %.1fs\n",
			rep.Finished(), rep.Trimmed, rep.Unchanged, rep.Errors, rep.Resumed, rep.GarbageBytes, rep.Seconds)
	}
	return nil
}

func retentionHeaders(dryRun bool) []string {
	garbageCol := "GARBAGE BYTES"
	if dryRun {
		garbageCol = "WOULD BE GARBAGE"
	}
	return []string{"PARTITION", "LOG START", "NEW LOG START", "HW", garbageCol, "RESULT"}
}

// retentionRow is a partition's table row.
func retentionRow(r *retention.Result, dryRun bool) []string {
	result := "unchanged"
	switch {
	case !r.OK():
		result = "error: " + r.Error + ": " + r.ErrorDetail
	case r.Trimmed() && dryRun:
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
	return []string{fmt.Sprintf("%s-%d", r.Topic, r.Partition), fmt.Sprint(r.CurrentLogStart), fmt.Sprint(r.NewLogStart), fmt.Sprint(r.HW), fmt.Sprint(garbage), result}
}
