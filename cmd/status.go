package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/errkind"
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
	// each): a bar on a terminal, as verify and retention draw. Each row
	// is printed as it and the rows before it are made (statusOut), so
	// that the run holds about --parallel rows, not the store's.
	prog := g.progress("partitions", int64(len(tps)))
	out := newStatusOut(g, o.drawn && !g.json(), len(args) == 0)
	g.observeStatusStart()
	err = status.EachAtProgress(ctx, st, tps, now, clock, g.parallel(), prog.add, func(_ int, r status.Partition) error {
		g.observeStatusRow(r)
		return out.emit(r)
	})
	prog.done()
	if err != nil {
		// The rows so far, then the error: a streamed document is
		// always closed.
		if ferr := out.finish([]health.Finding{}); ferr != nil {
			return ferr
		}
		return err
	}
	// The table's last rows before the store-wide check's listing.
	if err := out.flush(); err != nil {
		return err
	}
	// The whole store (no partition named): every stream accounted for,
	// no stray key, every quarantine record readable.
	storeFindings := []health.Finding{}
	if len(args) == 0 {
		if storeFindings, err = health.Store(ctx, st, out.known, g.parallel()); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
	g.observeStatusStore(storeFindings)
	if err := out.finish(storeFindings); err != nil {
		return err
	}
	return out.exit(storeFindings)
}

// renderStatus prints rows (and the store's findings) as status does.
func renderStatus(g *globals, rows []status.Partition, storeFindings []health.Finding) error {
	out := newStatusOut(g, false, false)
	for _, r := range rows {
		if err := out.emit(r); err != nil {
			return err
		}
	}
	return out.finish(storeFindings)
}

// statusOut prints a status run as its rows are made, in the order
// named, and keeps none of them: under -o json and -o yaml the document
// is written partition by partition, the very bytes writeJSON writes for
// the whole document (statusJSON); the table is written a block of rows
// at a time (tableRows: up to tableBlock partitions it is printed whole).
// It keeps what the end needs: the lines under the table (a row's notes:
// only partitions with something to say), the failing partitions for the
// exit status (ListMax names of each kind and a count), the first
// finding's hint, and, for the store-wide check over every binding, each
// partition's stream ID. --map keeps the rows: the map scales every line
// to the largest head.
type statusOut struct {
	g *globals
	// drawn: --map (the rows are kept in rows and drawn at the end).
	drawn bool
	rows  []status.Partition
	table *tableRows
	doc   docStream
	// known is each partition's stream (every binding listed: the
	// store-wide check's input); nil otherwise.
	known map[layout.TopicPartition]string
	notes []string
	// lost, blocked, failed: the partitions with missing or corrupt
	// data, blocked, unreadable; quarantined counts the blocked whose
	// coverage is quarantined.
	lost, blocked, failed names
	quarantined           int
	// hint is the first row finding's hint when it comes before any row
	// with data loss or an error (hinted: decided).
	hint   string
	hinted bool
}

func newStatusOut(g *globals, drawn, whole bool) *statusOut {
	o := &statusOut{g: g, drawn: drawn, doc: docStream{w: g.stdout, what: "status"}}
	if whole {
		o.known = map[layout.TopicPartition]string{}
	}
	return o
}

// emit prints one row (or keeps it for the map) and keeps its notes and
// its part of the exit status.
func (o *statusOut) emit(r status.Partition) error {
	if o.known != nil {
		o.known[layout.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.StreamID
	}
	o.notes = append(o.notes, statusRowNotes(r)...)
	name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
	switch {
	case r.DataLoss != nil:
		o.lost.add(name + ": " + r.DataLossError().Error())
	case r.Err != nil && exitcode.Of(r.Err) == exitcode.Verify:
		o.lost.add(name + ": " + r.Error)
	case len(r.Findings) > 0:
		o.lost.add(fmt.Sprintf("%s: %s check failed on %s", name, r.Findings[0].Check, r.Findings[0].Object))
	}
	if r.Blocked {
		o.blocked.add(name)
		if r.Coverage == layout.CoverageQuarantined {
			o.quarantined++
		}
	}
	if r.Error != "" {
		o.failed.add(name)
	}
	if !o.hinted {
		switch {
		case r.DataLoss != nil || r.Err != nil:
			o.hinted = true
		case len(r.Findings) > 0:
			o.hint, o.hinted = health.HintFor(r.Findings[0]), true
		}
	}
	switch {
	case o.g.json():
		return o.doc.item(statusJSON{SchemaVersion: SchemaVersion, Partitions: []status.Partition{}, StoreFindings: []health.Finding{}}, r)
	case o.drawn:
		o.rows = append(o.rows, r)
		return nil
	}
	if o.table == nil {
		o.table = newTableRows(o.g.stdout, statusHeaders(o.g)...)
	}
	return o.table.add(statusRow(o.g, r)...)
}

// flush writes the table's rows not yet written (the header alone when
// there are none); nothing under -o json or --map.
func (o *statusOut) flush() error {
	if o.g.json() || o.drawn {
		return nil
	}
	if o.table == nil {
		o.table = newTableRows(o.g.stdout, statusHeaders(o.g)...)
	}
	return o.table.render()
}

// finish writes the rest: the document's end with the store's findings,
// or the table's last rows (the map) and the notes under it.
func (o *statusOut) finish(storeFindings []health.Finding) error {
	if o.g.json() {
		return o.doc.end(statusJSON{SchemaVersion: SchemaVersion, Partitions: []status.Partition{}, StoreFindings: storeFindings})
	}
	w := o.g.stdout
	if o.drawn {
		for _, l := range status.Map(o.rows, terminalWidth(w)) {
			fmt.Fprintln(w, l)
		}
	} else if err := o.flush(); err != nil {
		return err
	}
	if len(storeFindings) > 0 || len(o.notes) > 0 {
		fmt.Fprintln(w)
		for _, f := range storeFindings {
			fmt.Fprintln(w, findingNote("store", f))
		}
		for _, n := range o.notes {
			fmt.Fprintln(w, n)
		}
	}
	return nil
}

func statusHeaders(g *globals) []string {
	headers := []string{"PARTITION", "STREAM", "LOG START", "HEAD", "LSO", "CHECKPOINT", "AGE", "TAIL OBJS", "COVERAGE", "BLOCKED", "CONFIG", "DATA LOSS"}
	if g.wide() {
		headers = append(headers, statusWideHeaders...)
	}
	return headers
}

// statusRow is a partition's table row.
func statusRow(g *globals, r status.Partition) []string {
	if r.Error != "" {
		row := []string{fmt.Sprintf("%s-%d", r.Topic, r.Partition), r.StreamID, "-", "-", "-", "-", "-", "-", "-", "-", shortConfigSource(r.ConfigSource), "error: " + r.Error}
		if g.wide() {
			row = append(row, "-", "-", "-", "-")
		}
		return row
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
	return row
}

// names is a list of partitions for a one-line message (exitcode.List):
// the first ListMax and how many in all.
type names struct {
	first []string
	n     int
}

func (l *names) add(s string) {
	if len(l.first) < exitcode.ListMax {
		l.first = append(l.first, s)
	}
	l.n++
}

// list is exitcode.List over pre and then l's items.
func (l names) list(pre []string, sep string) string {
	items := append(append([]string(nil), pre...), l.first...)
	n := len(pre) + l.n
	if n <= exitcode.ListMax {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:exitcode.ListMax], sep) + sep + "… and " + errkind.Count(n-exitcode.ListMax) + " more"
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

// statusRowNotes are a row's lines under the table that say what an
// operator does next (after the store's findings, findingNote): each
// health finding with its runbook, a checkpoint replay skipped (a longer
// restart), a log start lagging the head's trim (an interrupted trim).
func statusRowNotes(r status.Partition) []string {
	var out []string
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

// exit is the run's exit status: data loss and corruption first, then
// blocked partitions, then unreadable ones.
func (o *statusOut) exit(storeFindings []health.Finding) error {
	var store []string
	for _, f := range storeFindings {
		store = append(store, "store: "+f.Check+" check failed on "+f.Object)
	}
	// Data loss and corruption come first: they are the answer an
	// operator must not miss among blocked or unreadable partitions.
	if n := len(store) + o.lost.n; n > 0 {
		hint := "restore the missing or damaged objects from a replica: see docs/runbooks/restore-from-replica.md"
		switch {
		case len(storeFindings) > 0:
			hint = health.HintFor(storeFindings[0])
		case o.hint != "":
			hint = o.hint
		}
		return exitcode.Wrap(exitcode.Verify, fmt.Errorf("status: %d partition(s) have missing or corrupt data: %s", n, o.lost.list(store, "; ")), hint)
	}
	if o.blocked.n > 0 {
		why := "quarantined compacted coverage"
		if o.quarantined < o.blocked.n {
			why = "quarantined or missing mandatory compacted coverage"
		}
		return exitcode.BlockedErr(fmt.Errorf("status: %d partition(s) blocked by %s: %s", o.blocked.n, why, o.blocked.list(nil, ", ")),
			health.HintBlocked)
	}
	if o.failed.n > 0 {
		return fmt.Errorf("status: %d partition(s) could not be read: %s", o.failed.n, o.failed.list(nil, ", "))
	}
	return nil
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
