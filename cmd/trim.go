package cmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/timecut"
)

type trimOptions struct {
	to     int64
	before string
	dryRun bool
	yes    bool
	clock  clockFlags
}

func newTrimCmd(g *globals) *cobra.Command {
	o := &trimOptions{}
	c := &cobra.Command{
		Use:   "trim TOPIC-PARTITION (--to OFFSET | --before TIME) [--dry-run]",
		Short: "DeleteRecords for one partition: move the log start, durably",
		Long: `Move a partition's log start to OFFSET, as Kafka's DeleteRecords does: -1
means the HW; an offset below 0 or above the HW is OFFSET_OUT_OF_RANGE; the
topic's cleanup.policy must contain delete (else POLICY_VIOLATION); any
offset works, not only a segment boundary; the log start never moves back.
A consumer group's committed offset is never a floor.

--before TIME (RFC3339, or ms since the epoch) trims by time: the new log
start is the earliest offset whose record timestamp is at or after TIME,
as ListOffsets by timestamp answers it (the HW when every record is
older). The plan's preflight reads the records from the log start to the
HW and reports their timestamps out of order around the cut: records at
or above it older than TIME (kept, although older: a producer's clock
ran behind, or one ran ahead and set the cut early), and how many records
newer than TIME lie before the last older one (what a cut after it would
delete). Run it with --dry-run first.

The durable sequence (docs/design.md §7): publish the pre-trim NKC1 checkpoint, CAS
the stream head's trim, read it back, CAS the binding's observed_log_start
and checkpoint_ref. Physical deletion is left to 'nereusctl gc'. Rerunning
the same trim after a crash or a lost response finishes the sequence with no
second checkpoint and no second head mutation.

--dry-run prints the plan (current and new log start, the segments and bytes
that would become garbage, the checkpoint that would be written, the request
count) and writes nothing.

A trim that removes EVERY record (the new log start is the HW, e.g. --to -1)
needs --yes: on a terminal it asks (y/N on stdin); otherwise it is refused
with exit 2 and nothing is written.` + exitStatusHelp("1 when the request is refused (OFFSET_OUT_OF_RANGE, POLICY_VIOLATION)", "2 a trim removing every record was not confirmed (--yes)", "4 when the partition's lease is held by another job past --lease-wait (the message names the holder; nothing is written)"),
		Example: `  nereusctl trim orders-0 --to 1200 --dry-run
  # destructive: records below 1200 become unreadable
  nereusctl trim orders-0 --to 1200
  # destructive: every record goes (up to the HW)
  nereusctl trim orders-0 --to -1 --yes -o json
  # by time: what a trim before 8 November would delete and keep
  nereusctl trim orders-0 --before 2026-11-08T00:00:00Z --dry-run`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			byTime := cmd.Flags().Changed("before")
			switch {
			case byTime && cmd.Flags().Changed("to"):
				return exitcode.UsageErr(fmt.Errorf("--to and --before: give one (an offset or a time)"))
			case !byTime && !cmd.Flags().Changed("to"):
				return exitcode.UsageErr(fmt.Errorf("--to OFFSET (-1 for the HW) or --before TIME is required"))
			}
			var beforeMs *int64
			if byTime {
				ms, err := parseTimeFlag("before", o.before)
				if err != nil {
					return err
				}
				beforeMs = &ms
			}
			now, clock, err := o.clock.nowAndClock()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := g.mutatingStore(ctx, o.dryRun)
			if err != nil {
				return err
			}
			tp, err := layout.ParseTopicPartition(args[0])
			if err != nil {
				return exitcode.UsageErr(fmt.Errorf("partition %q: %w", args[0], err))
			}
			to := &o.to
			if byTime {
				to = nil
			}
			req := retention.Request{TP: tp, DeleteRecords: to, BeforeMs: beforeMs, NowMs: now.UnixMilli(), Clock: clock, DryRun: o.dryRun, Hooks: crashHooks()}
			if !o.dryRun && !o.yes {
				req.ConfirmFull = func(r *retention.Result) error {
					c, err := confirmFull(g, "trim", []string{fmt.Sprintf("%s-%d (log start %d -> HW %d)", r.Topic, r.Partition, r.CurrentLogStart, r.HW)})
					if err != nil {
						return err
					}
					return c.check(r)
				}
			}
			r := g.trimLeased(ctx, st, req)
			return renderTrimResults(g, o.dryRun, []*retention.Result{r}, false)
		},
	}
	c.Flags().Int64Var(&o.to, "to", 0, "the new log start offset (-1: the HW); this or --before is required")
	// required (or --before), so it has no default to show: the help and
	// man pages would print --to=0 as if 0 were taken when it is left out
	c.Flags().Lookup("to").DefValue = ""
	_ = c.Flags().SetAnnotation("to", flagPlaceholder, []string{"OFFSET"})
	c.Flags().StringVar(&o.before, "before", "", "trim the records before TIME (RFC3339, or ms since the epoch): the new log start is the earliest offset whose record timestamp is at or after it")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan; write nothing")
	c.Flags().BoolVar(&o.yes, "yes", false, "remove every record without asking when the new log start is the HW")
	o.clock.add(c, true)
	return c
}

// confirmIn and stdinIsTerminal are the confirmation prompt's input (tests
// replace them).
var (
	confirmIn       io.Reader = os.Stdin
	stdinIsTerminal           = func() bool { return term.IsTerminal(int(os.Stdin.Fd())) }
)

// fullTrims is the set of confirmed trims that remove every record of a
// partition.
type fullTrims map[string]bool

// check refuses a full trim that was not confirmed (one the first pass did
// not see: the partition changed in between).
func (c fullTrims) check(r *retention.Result) error {
	if c[fmt.Sprintf("%s-%d", r.Topic, r.Partition)] {
		return nil
	}
	return exitcode.Wrap(exitcode.Usage, fmt.Errorf("trim %s-%d would remove every record (log start %d -> HW %d) and was not confirmed", r.Topic, r.Partition, r.CurrentLogStart, r.HW), "pass --yes to remove them")
}

// confirmFull asks, on a terminal, before trims that remove every record of
// the partitions named ("TOPIC-PARTITION (detail)"); without a terminal it
// refuses (exit 2, naming --yes). It returns the confirmed set.
func confirmFull(g *globals, op string, full []string) (fullTrims, error) {
	set := fullTrims{}
	if len(full) == 0 {
		return set, nil
	}
	for _, f := range full {
		name, _, _ := strings.Cut(f, " ")
		set[name] = true
	}
	what := fmt.Sprintf("%s would remove EVERY record of %d partition(s): %s", op, len(full), exitcode.List(full, ", "))
	if !stdinIsTerminal() {
		return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s; refused without --yes (stdin is not a terminal to ask): nothing was trimmed", what),
			"pass --yes to remove them (cron jobs pass --yes), or --dry-run to see the plan")
	}
	fmt.Fprintf(g.stderr, "%s.\nRemove them? [y/N] ", what)
	line, _ := bufio.NewReader(confirmIn).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return set, nil
	}
	return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s: not confirmed: nothing was trimmed", op), "answer y, or pass --yes")
}

// trimJSON is the -o json document of trim, delete-records and (with
// Summary) retention run (docs/json-output.md#trim-delete-records-retention-run).
type trimJSON struct {
	SchemaVersion int                 `json:"schema_version"`
	DryRun        bool                `json:"dry_run"`
	Partitions    []*retention.Result `json:"partitions"`
}

// renderTrimResults prints trim / delete-records results and maps failures
// to the exit status. kafkaStyle prints kafka-delete-records' lines.
func renderTrimResults(g *globals, dryRun bool, rs []*retention.Result, kafkaStyle bool) error {
	if g.json() {
		if err := writeJSON(g.stdout, trimJSON{SchemaVersion: SchemaVersion, DryRun: dryRun, Partitions: nonNil(rs)}); err != nil {
			return err
		}
	} else if kafkaStyle {
		// Kafka's lines for a real run; a dry run says "would" in every
		// line, so that nothing parsing them takes a plan for a deletion.
		if dryRun {
			fmt.Fprintln(g.stdout, "Dry run: records delete operation planned, nothing deleted:")
		} else {
			fmt.Fprintln(g.stdout, "Records delete operation completed:")
		}
		for _, r := range rs {
			if r.OK() && dryRun {
				fmt.Fprintf(g.stdout, "partition: %s-%d\twould_be_low_watermark: %d\n", r.Topic, r.Partition, r.NewLogStart)
			} else if r.OK() {
				fmt.Fprintf(g.stdout, "partition: %s-%d\tlow_watermark: %d\n", r.Topic, r.Partition, r.NewLogStart)
			} else {
				fmt.Fprintf(g.stdout, "partition: %s-%d\terror: %s: %s\n", r.Topic, r.Partition, r.Error, r.ErrorDetail)
			}
		}
	} else {
		for _, r := range rs {
			// -q: a real trim reports only its failures (a dry run is
			// asked for its report).
			if g.cfg.Quiet && !dryRun && r.OK() {
				continue
			}
			renderPlan(g, r, dryRun)
		}
	}
	var failed []string
	var first *retention.Result
	code := exitcode.OK
	for _, r := range rs {
		if !r.OK() {
			failed = append(failed, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
			if first == nil {
				first = r
			}
			c := exitcode.Error
			if r.Err != nil {
				c = exitcode.Of(r.Err)
			}
			code = exitcode.Worse(code, c)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// The exit status is the worst partition's (a held lease, 4, beats a
	// refused offset, 1); the hint is the first failure's.
	err := fmt.Errorf("%d of %d partitions failed (%s); first: %s-%d: %s: %s", len(failed), len(rs), exitcode.List(failed, ", "), first.Topic, first.Partition, first.Error, first.ErrorDetail)
	return exitcode.Wrap(code, err, exitcode.HintOf(first.Err))
}

func renderPlan(g *globals, r *retention.Result, dryRun bool) {
	w := g.stdout
	name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
	if !r.OK() {
		fmt.Fprintf(w, "%s: error: %s: %s\n", name, r.Error, r.ErrorDetail)
		return
	}
	verb, garbage, every := "trimmed", "made garbage for gc", ""
	if dryRun {
		verb, garbage = "would trim", "would make garbage for gc"
	}
	if r.RemovesEverything() {
		every = ": every record"
	}
	switch {
	case r.Trim != nil && r.Trim.AlreadyDone && r.Trim.BindingMutated:
		// The head's trim was durable and the binding lagged it: the
		// rerun finished the interrupted sequence (and says so: "nothing
		// to trim" alone would read as if nothing had been needed). The
		// result reports that trim (from the binding's log start).
		fmt.Fprintf(w, "%s: log start %d, HW %d: nothing to trim; finished the interrupted trim: the binding's log start %d -> %d\n", name, r.NewLogStart, r.HW, r.Trim.CurrentLogStart, r.Trim.NewLogStart)
	case !r.Trimmed():
		fmt.Fprintf(w, "%s: log start %d, HW %d: nothing to trim\n", name, r.CurrentLogStart, r.HW)
	default:
		fmt.Fprintf(w, "%s: %s log start %d -> %d (HW %d)%s\n", name, verb, r.CurrentLogStart, r.NewLogStart, r.HW, every)
	}
	if tc := r.TimeCut; tc != nil {
		renderTimeCut(w, tc, dryRun)
	}
	if p := r.Plan; p != nil && (dryRun || r.Trimmed()) {
		for _, c := range p.Candidates {
			off := "-"
			if c.Offset >= 0 {
				off = fmt.Sprint(c.Offset)
			}
			fmt.Fprintf(w, "  rule %-16s candidate %-8s segments %d, %d bytes\n", c.Rule, off, c.Segments, c.Bytes)
		}
		sealed := len(p.Garbage)
		var open retention.Segment
		for _, s := range p.Garbage {
			if s.Open {
				sealed, open = sealed-1, s
			}
		}
		if sealed > 0 {
			fmt.Fprintf(w, "  %s: %d segments, %d bytes\n", garbage, sealed, p.GarbageSize)
		}
		if open.Open {
			fmt.Fprintf(w, "  open segment [%d, %d): %d bytes below the new log start, freed when the segment rolls (gc collects it once it is sealed)\n", open.Base, open.End, p.OpenSegmentBytes)
		}
	}
	if r.Trimmed() {
		if dryRun {
			fmt.Fprintf(w, "  would write pre-trim checkpoint: %s\n  requests: about %d\n", r.Checkpoint, r.RequestsEstimate)
		} else if t := r.Trim; t != nil {
			fmt.Fprintf(w, "  pre-trim checkpoint: %s (new object: %v); head trim written: %v; binding updated: %v\n", t.Checkpoint, t.CheckpointPublished, t.HeadMutated, t.BindingMutated)
		}
	}
}

// renderTimeCut prints the offset a --before time answered and the
// preflight of the timestamps around it.
func renderTimeCut(w io.Writer, tc *timecut.Cut, dryRun bool) {
	p := tc.Preflight
	if tc.Found {
		fmt.Fprintf(w, "  before %s: the earliest offset at or after it is %d (timestamp %s)\n", msTime(tc.TimeMs), tc.Offset, msTime(*tc.Timestamp))
	} else {
		fmt.Fprintf(w, "  before %s: no record is at or after it: every record is older (up to the HW %d)\n", msTime(tc.TimeMs), tc.Offset)
	}
	verb, keep := "deleted", "kept"
	if dryRun {
		verb, keep = "would be deleted", "would be kept"
	}
	newest := "-"
	if p.NewestDeleted != nil {
		newest = msTime(*p.NewestDeleted)
	}
	fmt.Fprintf(w, "  preflight: %d records below the cut %s, all older than the time (newest %s)\n", p.Deleted, verb, newest)
	if !p.OutOfOrder {
		fmt.Fprintf(w, "  preflight: timestamps in order around the cut: no record above it is older than the time\n")
		return
	}
	fmt.Fprintf(w, "  preflight: OUT OF ORDER: %d records at or above the cut are older than the time and %s (offsets %d to %d, oldest %s)\n",
		p.KeptOlder, keep, *p.FirstKeptOlder, *p.LastKeptOlder, msTime(*p.OldestKept))
	fmt.Fprintf(w, "  preflight: a cut after the last older record (offset %d) would delete %d records newer than the time; a producer's clock may be skewed\n",
		*p.LastKeptOlder+1, p.NewerBeforeLastOlder)
}
