package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/status"
)

type statusOptions struct {
	sel   partitionSel
	drawn bool
	clock clockFlags
}

func newStatusCmd(g *globals) *cobra.Command {
	o := &statusOptions{}
	c := &cobra.Command{
		Use:   "status [TOPIC-PARTITION...]",
		Short: "One row per binding: bounds, LSO, checkpoint, coverage, blocked",
		Long: `Show one row per binding: topic-partition, stream, log start, head (HW), LSO,
the checkpoint anchor and its age, the compacted coverage state and whether
the partition's coordinator is blocked by quarantined coverage.

The LSO comes from a restart replay: the newest valid checkpoint plus the
tail after it, so the cost per partition is a few requests plus the tail.
The objects between the durable trim and the head are checked from the
listing: any offset no object holds is data loss, shown in the DATA LOSS
column (data_loss in JSON) with the partition's row still printed.

The CONFIG column is where the partition's topic config snapshot came from
(the binding's config_source, in short form): demo, default (import with no
topic config: retention off), flags (import's --topic-config flags),
file:NAME (a kafka-configs file), set (nereusctl config set); "-" when the
binding names none. JSON has the full config_source.

Under the table a line says what to do next: for each checkpoint replay
skipped as unusable (a restart then replays a longer tail; the reason is
replay's), and for a binding whose log start lags the head's trim (a trim
that stopped after its head step: rerun it). --map draws valid checkpoints
as '|', skipped ones as '?', and the LSO as 'L' even when it falls in the
head's column; each line fits the terminal's width.

With no partitions named and no bindings in the store (most often a
mistyped --store or prefix) status exits 1; --allow-empty accepts an empty
store.` + exitStatusHelp("1 when no partitions are named and the store has no bindings (--allow-empty accepts it)", "3 when any listed partition has missing objects between its trim and head, or corrupt data", "4 when any listed partition is blocked (and none has data loss)"),
		Example: `  nereusctl status
  nereusctl status orders-0 -o json
  nereusctl status --map`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd, g, o, args)
		},
	}
	c.Flags().BoolVar(&o.sel.allowEmpty, "allow-empty", false, "succeed on a store with no bindings (default: exit 1, a mistyped --store finds none)")
	c.Flags().BoolVar(&o.drawn, "map", false, "draw each partition's offset line: log start, compacted coverage, checkpoints, LSO, head")
	o.clock.add(c, true)
	return c
}

func runStatus(cmd *cobra.Command, g *globals, o *statusOptions, args []string) error {
	ctx := cmd.Context()
	// --now: producer expiration and the checkpoint ages (default: now).
	now, clock, err := o.clock.nowAndClock()
	if err != nil {
		return err
	}
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	var tps []layout.TopicPartition
	if len(args) > 0 {
		if o.sel.allowEmpty {
			return exitcode.UsageErr(fmt.Errorf("--allow-empty goes without named partitions (status of every binding)"))
		}
		if tps, err = o.sel.resolve(ctx, st, args); err != nil {
			return err
		}
	} else {
		// Every binding, as --all elsewhere: none is a failure (a
		// mistyped --store) unless --allow-empty.
		all := o.sel
		all.all = true
		if tps, err = all.resolve(ctx, st, nil); err != nil {
			return err
		}
		if tps == nil {
			tps = []layout.TopicPartition{}
		}
	}
	// The partitions' reads are the slow part (on S3 a few round trips
	// each): a bar on a terminal, as verify and retention draw.
	prog := g.progress("partitions", int64(len(tps)))
	rows, err := status.CollectAtProgress(ctx, st, tps, now, clock, g.parallel(), prog.add)
	prog.done()
	if err != nil {
		return err
	}
	// The whole store (no partition named): every stream accounted for,
	// no stray key, every quarantine record readable.
	storeFindings := []health.Finding{}
	if len(args) == 0 {
		if storeFindings, err = status.StoreFindings(ctx, st, rows, g.parallel()); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
	g.observeStatus(rows, storeFindings)
	if o.drawn && !g.json() {
		for _, l := range status.Map(rows, terminalWidth(g.stdout)) {
			fmt.Fprintln(g.stdout, l)
		}
	} else if err := renderStatus(g, rows, storeFindings); err != nil {
		return err
	}
	if !g.json() {
		if notes := statusNotes(rows, storeFindings); len(notes) > 0 {
			fmt.Fprintln(g.stdout)
			for _, n := range notes {
				fmt.Fprintln(g.stdout, n)
			}
		}
	}
	return statusExit(rows, storeFindings)
}

func renderStatus(g *globals, rows []status.Partition, storeFindings []health.Finding) error {
	if g.json() {
		if rows == nil {
			rows = []status.Partition{}
		}
		return writeJSON(g.stdout, statusJSON{SchemaVersion: SchemaVersion, Partitions: rows, StoreFindings: storeFindings})
	}
	headers := []string{"PARTITION", "STREAM", "LOG START", "HEAD", "LSO", "CHECKPOINT", "AGE", "TAIL OBJS", "COVERAGE", "BLOCKED", "CONFIG", "DATA LOSS"}
	if g.wide() {
		headers = append(headers, statusWideHeaders...)
	}
	// tableRows, not writeTable: the rows of a fleet are rendered without
	// tablewriter's working copies (kilobytes a row).
	out := newTableRows(headers...)
	for _, r := range rows {
		if r.Error != "" {
			row := []string{fmt.Sprintf("%s-%d", r.Topic, r.Partition), r.StreamID, "-", "-", "-", "-", "-", "-", "-", "-", shortConfigSource(r.ConfigSource), "error: " + r.Error}
			if g.wide() {
				row = append(row, "-", "-", "-", "-")
			}
			out.add(row...)
			continue
		}
		anchor, age, lso, tail := "-", "-", fmt.Sprint(r.LSO), fmt.Sprint(r.TailObjects)
		if r.CheckpointAnchor != nil {
			anchor = fmt.Sprint(*r.CheckpointAnchor)
		}
		if r.CheckpointAgeSec != nil {
			age = (time.Duration(*r.CheckpointAgeSec) * time.Second).String()
		}
		blocked := "no"
		if r.Blocked {
			blocked = "BLOCKED"
		}
		loss := "-"
		if r.DataLoss != nil {
			parts := make([]string, len(r.DataLoss.Missing))
			for i, m := range r.DataLoss.Missing {
				parts[i] = fmt.Sprintf("[%d, %d)", m[0], m[1])
			}
			loss = "missing " + strings.Join(parts, " ")
			lso, tail = "-", "-"
		}
		row := []string{fmt.Sprintf("%s-%d", r.Topic, r.Partition), r.StreamID, fmt.Sprint(r.LogStart), fmt.Sprint(r.Head), lso, anchor, age, tail, r.Coverage, blocked, shortConfigSource(r.ConfigSource), loss}
		if g.wide() {
			row = append(row, statusWide(r)...)
		}
		out.add(row...)
	}
	return out.render(g.stdout)
}

// findingNote is one health finding as a note line, with its hint.
func findingNote(name string, f health.Finding) string {
	obj := ""
	if f.Object != "" {
		obj = " on " + f.Object
	}
	if name != "" {
		name += ": "
	}
	return fmt.Sprintf("%s%s check failed%s: %s (hint: %s)", name, f.Check, obj, f.Detail, health.HintFor(f))
}

// statusNotes are the lines under the table that say what an operator
// does next: each health finding with its runbook, a checkpoint replay
// skipped (a longer restart), a binding whose log start lags the head's
// trim (an interrupted trim).
func statusNotes(rows []status.Partition, storeFindings []health.Finding) []string {
	var out []string
	for _, f := range storeFindings {
		out = append(out, findingNote("store", f))
	}
	for _, r := range rows {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		if r.Blocked && r.BlockedReason != "" {
			out = append(out, fmt.Sprintf("%s: BLOCKED: %s (hint: %s)", name, r.BlockedReason, health.HintBlocked))
		}
		for _, f := range r.Findings {
			if f.Scope == health.ScopeCheckpoint {
				continue // the skipped-checkpoint note below says it
			}
			out = append(out, findingNote(name, f))
		}
		for _, k := range r.SkippedCheckpoints {
			used := "none: a full replay"
			if r.CheckpointAnchor != nil {
				used = fmt.Sprintf("the one at %d", *r.CheckpointAnchor)
			}
			why := k.Reason
			if k.Detail != "" {
				why += ": " + k.Detail
			}
			out = append(out, fmt.Sprintf("%s: checkpoint at %d skipped as unusable (%s); replay used %s. Create a new one: nereusctl checkpoint create %s (docs/runbooks/broker-restart-is-slow.md)", name, k.Anchor, why, used, name))
		}
		if r.BindingLagsTrim {
			out = append(out, fmt.Sprintf("%s: the binding's log start %d lags the head's trim %d: a trim stopped before its last step. Rerun it: nereusctl trim %s --to %d (docs/runbooks/trim-interrupted.md)", name, r.BindingLogStart, r.LogStart, name, r.LogStart))
		}
	}
	return out
}

// shortConfigSource is a binding's config_source as status's CONFIG column
// shows it: each "+"-joined part shortened (import-default-retention-off:
// default, topic-config-flags: flags, kafka-configs-file:NAME: file:NAME,
// config-set: set); "-" when there is none.
func shortConfigSource(src string) string {
	if src == "" {
		return "-"
	}
	parts := strings.Split(src, "+")
	for i, p := range parts {
		switch {
		case p == retention.SourceImportDefault:
			parts[i] = "default"
		case p == retention.SourceFlags:
			parts[i] = "flags"
		case p == retention.SourceConfigSet:
			parts[i] = "set"
		case strings.HasPrefix(p, retention.SourceFilePrefix):
			parts[i] = "file:" + strings.TrimPrefix(p, retention.SourceFilePrefix)
		}
	}
	return strings.Join(parts, "+")
}

// statusJSON is status's -o json document (docs/json-output.md#status).
type statusJSON struct {
	SchemaVersion int                `json:"schema_version"`
	Partitions    []status.Partition `json:"partitions"`
	// StoreFindings are the store-wide findings (health.Fleet) when every
	// binding was listed: orphan streams, stray keys, unreadable
	// quarantine records.
	StoreFindings []health.Finding `json:"store_findings"`
}

func statusExit(rows []status.Partition, storeFindings []health.Finding) error {
	var blocked, failed, lost, quarantined []string
	for _, f := range storeFindings {
		lost = append(lost, "store: "+f.Check+" check failed on "+f.Object)
	}
	for _, r := range rows {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		switch {
		case r.DataLoss != nil:
			lost = append(lost, name+": "+r.DataLossError().Error())
		case r.Err != nil && exitcode.Of(r.Err) == exitcode.Verify:
			lost = append(lost, name+": "+r.Error)
		case len(r.Findings) > 0:
			lost = append(lost, fmt.Sprintf("%s: %s check failed on %s", name, r.Findings[0].Check, r.Findings[0].Object))
		}
		if r.Blocked {
			blocked = append(blocked, name)
			if r.Coverage == layout.CoverageQuarantined {
				quarantined = append(quarantined, name)
			}
		}
		if r.Error != "" {
			failed = append(failed, name)
		}
	}
	// Data loss and corruption come first: they are the answer an
	// operator must not miss among blocked or unreadable partitions.
	if len(lost) > 0 {
		return exitcode.Wrap(exitcode.Verify, fmt.Errorf("status: %d partition(s) have missing or corrupt data: %s", len(lost), exitcode.List(lost, "; ")),
			statusHint(rows, storeFindings))
	}
	if len(blocked) > 0 {
		why := "quarantined compacted coverage"
		if len(quarantined) < len(blocked) {
			why = "quarantined or missing mandatory compacted coverage"
		}
		return exitcode.BlockedErr(fmt.Errorf("status: %d partition(s) blocked by %s: %s", len(blocked), why, exitcode.List(blocked, ", ")),
			health.HintBlocked)
	}
	if len(failed) > 0 {
		return fmt.Errorf("status: %d partition(s) could not be read: %s", len(failed), exitcode.List(failed, ", "))
	}
	return nil
}

// statusHint is the hint of the first finding (store-wide first), or the
// restore runbook for data loss.
func statusHint(rows []status.Partition, storeFindings []health.Finding) string {
	if len(storeFindings) > 0 {
		return health.HintFor(storeFindings[0])
	}
	for _, r := range rows {
		if r.DataLoss == nil && r.Err == nil && len(r.Findings) > 0 {
			return health.HintFor(r.Findings[0])
		}
		if r.DataLoss != nil || r.Err != nil {
			break
		}
	}
	return "restore the missing or damaged objects from a replica: see docs/runbooks/restore-from-replica.md"
}

// statusWideHeaders are the columns -o wide adds to status's table.
var statusWideHeaders = []string{"COMPACTED", "POLICY", "PRODUCERS", "OPEN TXNS"}

// statusWide is a row's -o wide columns: the compacted coverage's range,
// the cleanup.policy, the producers and open transactions replay found.
func statusWide(r status.Partition) []string {
	cov := "-"
	if r.CoverageEnd > r.CoverageStart {
		cov = fmt.Sprintf("[%d, %d)", r.CoverageStart, r.CoverageEnd)
	}
	return []string{cov, dash(r.CleanupPolicy, ""), fmt.Sprint(r.Producers), fmt.Sprint(r.OpenTxns)}
}
