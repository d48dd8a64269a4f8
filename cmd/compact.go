package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
)

type compactOptions struct {
	sel       partitionSel
	dryRun    bool
	now       string
	maxMemory string
}

func newCompactCmd(g *globals) *cobra.Command {
	o := &compactOptions{}
	c := &cobra.Command{
		Use:   "compact (TOPIC-PARTITION... | --all) [--dry-run] [--now RFC3339] [--max-memory BYTES]",
		Short: "Offline key compaction into an NTC2 view, published as a TOPIC_COMPACTED generation",
		Long: `Compact a partition whose cleanup.policy contains compact (docs/design.md §8):
  1 freeze the closed segments below the LSO (and older than
    min.compaction.lag.ms) after the previous compacted set, the HW, LSO and
    the exact source generations by manifest digest;
  2 scan once for the latest offset per key with a bounded-memory offset map
    (24 bytes per key, like Kafka's cleaner; beyond --max-memory the range is
    cleaned in passes, spilling the view to a local temp file in between);
    aborted transactional data, control records, keyless records and
    tombstones past their delete horizon are dropped;
  3 re-read the exact sources (any change aborts) and emit NTC2 rows;
  4 PUT each object IfAbsent and verify it fully;
  5 publish the TOPIC_COMPACTED generation;
  6 CAS the binding's compacted coverage to the new gap-free set;
  7 from then on readers take the compacted prefix from the view.
A crash at any step leaves a task under tasks/; a rerun resumes it with the
same clock and produces the same bytes, or restarts when a source changed.
Never two active sets. --dry-run reports the plan and sizes, and whether
Kafka's log cleaner would pick the partition now (its dirty ratio against the
topic's min.cleanable.dirty.ratio, 'config set', default 0.5; its
max.compaction.lag.ms), and writes nothing.

--all takes every partition whose cleanup.policy contains compact; a binding
that cannot be read is a row with its error (never silently left out), and
the others are still compacted. The exit status is the worst over the
partitions.` + exitStatusHelp("4 when the partition's coverage is QUARANTINED (repair it first), another compaction won the race, or its lease is held by another job past --lease-wait (the message names the holder)", "3 when a binding, a source or the compacted view is corrupt, or a source changed"),
		Example: `  nereusctl compact customers-0 --dry-run
  nereusctl compact __consumer_offsets-0 --now 2026-11-29T03:00:00Z
  nereusctl compact --all --max-memory 64MiB`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompact(cmd, g, o, args)
		},
	}
	o.sel.addFlags(c, true)
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "report what compaction would do; write nothing")
	c.Flags().StringVar(&o.now, "now", "", "the clock for tombstone delete horizons and min.compaction.lag.ms (RFC3339; default now)")
	c.Flags().StringVar(&o.maxMemory, "max-memory", "256MiB", "offset map budget (24 bytes per key); beyond it compaction runs in passes")
	return c
}

func runCompact(cmd *cobra.Command, g *globals, o *compactOptions, args []string) error {
	ctx := cmd.Context()
	now, _, err := parseNow(o.now)
	if err != nil {
		return err
	}
	maxMem, err := parseBytes(o.maxMemory)
	if err != nil || maxMem < 1024 {
		return exitcode.UsageErr(fmt.Errorf("--max-memory %q: want a size of at least 1KiB, e.g. 64MiB", o.maxMemory))
	}
	st, err := g.mutatingStore(ctx, o.dryRun)
	if err != nil {
		return err
	}
	tps, err := o.sel.resolve(ctx, st, args)
	if err != nil {
		return err
	}
	// With --all only partitions whose cleanup.policy contains compact are
	// compacted; a binding that cannot be read is a failure row, never a
	// silent skip.
	type sel struct {
		tp  layout.TopicPartition
		b   *layout.Binding
		err error
	}
	var todo []sel
	for _, tp := range tps {
		b, _, err := loadBinding(ctx, st, tp.String())
		if err != nil {
			todo = append(todo, sel{tp: tp, err: err})
			continue
		}
		if o.sel.all && !b.Config.HasPolicy("compact") {
			continue
		}
		todo = append(todo, sel{tp: tp, b: b})
	}
	// --parallel partitions at once (fleet.Map: the outcomes in the order
	// selected, one partition's failure never stops the others). A real
	// run holds each partition's lease while it compacts it, so gc (which
	// takes the same lease) cannot collect the new view objects between
	// their PUT and the publish; the binding is re-read under the lease.
	type outcome struct {
		r   *compaction.Result
		err error
	}
	outs, err := fleet.Map(ctx, g.parallel(), todo, func(ctx context.Context, _ int, t sel) (outcome, error) {
		if t.err != nil {
			return outcome{err: t.err}, nil
		}
		if err := ctx.Err(); err != nil {
			return outcome{err: err}, err
		}
		co := compaction.Options{NowMs: now.UnixMilli(), MaxMemory: maxMem, DryRun: o.dryRun, After: compactHooks()}
		if o.dryRun {
			r, err := compaction.Compact(ctx, st, t.b, co)
			return outcome{r: r, err: err}, nil
		}
		var r *compaction.Result
		err := g.withPartition(ctx, st, t.tp, func(ctx context.Context) error {
			b, _, err := loadBinding(ctx, st, t.tp.String())
			if err != nil {
				return err
			}
			fenced := co
			fenced.Fence = lease.Fence // every publish proves the lease
			r, err = compaction.Compact(ctx, st, b, fenced)
			return err
		})
		return outcome{r: r, err: err}, nil
	})
	if err != nil {
		return err
	}
	observeOutcomes(g, outs, func(o outcome) (error, bool) { return compactErr(o.err), o.r != nil && o.r.UpToDate })
	results := []compactPartitionJSON{}
	var fails failures
	var details []string
	rows := [][]string{}
	prog := g.progress("partitions", int64(len(todo)))
	defer prog.done()
	for i, t := range todo {
		prog.add(1)
		tp := t.tp
		entry := compactPartitionJSON{Topic: tp.Topic, Partition: tp.Partition}
		r, err := outs[i].r, outs[i].err
		entry.Result = r
		if err != nil {
			err = compactErr(err)
			entry.Error = err.Error()
			fails.add(err)
			rows = append(rows, []string{tp.String(), "error: " + err.Error(), "", "", "", "", ""})
			results = append(results, entry)
			continue
		}
		results = append(results, entry)
		s := r.Stats
		action := "compacted"
		switch {
		case r.UpToDate:
			action = "up to date: " + r.Reason
		case o.dryRun:
			action = "would compact"
		case r.Resumed:
			action = "compacted (resumed an interrupted task)"
		}
		rangeStr := fmt.Sprintf("[%d, %d)", r.Plan.Base, r.Plan.End)
		rows = append(rows, []string{tp.String(), action, rangeStr, fmt.Sprint(s.RecordsIn), fmt.Sprint(s.RowsOut), fmt.Sprint(s.BytesIn), fmt.Sprint(s.BytesOut)})
		if o.dryRun && r.Due != nil {
			details = append(details, fmt.Sprintf("%s: %s\n", tp, r.Due.Reason))
		}
		if !r.UpToDate {
			details = append(details, fmt.Sprintf("%s: keys %d; tombstones kept %d, dropped %d; aborted records dropped %d; control %d; keyless %d; superseded %d; passes %d; offset map %d bytes; generation %d\n",
				tp, s.Keys, s.TombstonesKept, s.TombstonesDropped, s.AbortedDropped, s.ControlDropped, s.KeylessDropped, s.Superseded, s.Passes, s.MapBytes, r.Gen))
		}
	}
	prog.done()
	if g.json() {
		if err := writeJSON(g.stdout, compactJSON{SchemaVersion: SchemaVersion, DryRun: o.dryRun, Partitions: results}); err != nil {
			return err
		}
	} else {
		if err := writeTable(g.stdout, []string{"PARTITION", "RESULT", "RANGE", "RECORDS IN", "ROWS OUT", "BYTES IN", "BYTES OUT"}, rows); err != nil {
			return err
		}
		for _, d := range details {
			fmt.Fprintln(g.stdout, d)
		}
	}
	if fails.n == 1 && len(todo) == 1 {
		return fails.first
	}
	return fails.err("compact", len(todo))
}

// compactJSON is compact's -o json document (docs/json-output.md).
type compactJSON struct {
	SchemaVersion int                    `json:"schema_version"`
	DryRun        bool                   `json:"dry_run"`
	Partitions    []compactPartitionJSON `json:"partitions"`
}

// compactPartitionJSON is one partition's outcome: the result, or the error.
type compactPartitionJSON struct {
	Topic     string             `json:"topic"`
	Partition int32              `json:"partition"`
	Result    *compaction.Result `json:"result"`
	Error     string             `json:"error,omitempty"`
}

// compactErr gives a compaction failure its exit code: blocked coverage or
// a lost race 4, a partition that is not compacted 2, corruption or a
// changed source 3.
func compactErr(err error) error {
	switch {
	case errors.As(err, new(*exitcode.Err)):
		return err
	case errors.Is(err, compaction.ErrBlocked):
		return exitcode.BlockedErr(err, "repair the quarantined set first: 'nereusctl quarantine list', 'nereusctl repair' ("+exitcode.RunbookBlocked+")")
	case errors.Is(err, compaction.ErrNotCompacted):
		return exitcode.UsageErr(err)
	case exitcode.IsCorruption(err), layout.IsCorrupt(err), errors.Is(err, compaction.ErrSourceChanged):
		return exitcode.VerifyErr(err)
	}
	return err
}

// parseBytes parses sizes like 64MiB, 1GiB, 512KiB, 1000000.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
