package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
)

type trimOptions struct {
	to     int64
	dryRun bool
}

func newTrimCmd(g *globals) *cobra.Command {
	o := &trimOptions{}
	c := &cobra.Command{
		Use:   "trim TOPIC-PARTITION --to OFFSET [--dry-run]",
		Short: "DeleteRecords for one partition: move the log start, durably",
		Long: `Move a partition's log start to OFFSET, as Kafka's DeleteRecords does: -1
means the HW; an offset below 0 or above the HW is OFFSET_OUT_OF_RANGE; the
topic's cleanup.policy must contain delete (else POLICY_VIOLATION); any
offset works, not only a segment boundary; the log start never moves back.
A consumer group's committed offset is never a floor.

The durable sequence (docs/design.md §7): publish the pre-trim NKC1 checkpoint, CAS
the stream head's trim, read it back, CAS the binding's observed_log_start
and checkpoint_ref. Physical deletion is left to 'nereusctl gc'. Rerunning
the same trim after a crash or a lost response finishes the sequence with no
second checkpoint and no second head mutation.

--dry-run prints the plan (current and new log start, the segments and bytes
that become garbage, the checkpoint that would be written, the request
count) and writes nothing.` + exitStatusHelp("1 when the request is refused (OFFSET_OUT_OF_RANGE, POLICY_VIOLATION)"),
		Example: `  nereusctl trim orders-0 --to 1200 --dry-run
  nereusctl trim orders-0 --to 1200
  nereusctl trim orders-0 --to -1 -o json     # up to the HW`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("to") {
				return exitcode.UsageErr(fmt.Errorf("--to OFFSET is required (-1 for the HW)"))
			}
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			tp, err := layout.ParseTopicPartition(args[0])
			if err != nil {
				return exitcode.UsageErr(fmt.Errorf("partition %q: %w", args[0], err))
			}
			to := o.to
			r := retention.RunPartition(ctx, st, retention.Request{TP: tp, DeleteRecords: &to, NowMs: time.Now().UnixMilli(), DryRun: o.dryRun, Hooks: crashHooks()})
			return renderTrimResults(g, o.dryRun, []*retention.Result{r}, false)
		},
	}
	c.Flags().Int64Var(&o.to, "to", 0, "the new log start offset (-1: the HW)")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan; write nothing")
	return c
}

// renderTrimResults prints trim / delete-records results and maps failures
// to the exit status. kafkaStyle prints kafka-delete-records' lines.
func renderTrimResults(g *globals, dryRun bool, rs []*retention.Result, kafkaStyle bool) error {
	if g.json() {
		if err := writeJSON(g.stdout, map[string]any{"schema_version": SchemaVersion, "dry_run": dryRun, "partitions": rs}); err != nil {
			return err
		}
	} else if kafkaStyle {
		fmt.Fprintln(g.stdout, "Records delete operation completed:")
		for _, r := range rs {
			if r.OK() {
				fmt.Fprintf(g.stdout, "partition: %s-%d\tlow_watermark: %d\n", r.Topic, r.Partition, r.NewLogStart)
			} else {
				fmt.Fprintf(g.stdout, "partition: %s-%d\terror: %s: %s\n", r.Topic, r.Partition, r.Error, r.ErrorDetail)
			}
		}
	} else {
		for _, r := range rs {
			renderPlan(g, r, dryRun)
		}
	}
	var failed []string
	var first *retention.Result
	for _, r := range rs {
		if !r.OK() {
			failed = append(failed, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
			if first == nil {
				first = r
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	err := fmt.Errorf("%d of %d partitions failed (%s); first: %s-%d: %s: %s", len(failed), len(rs), strings.Join(failed, ", "), first.Topic, first.Partition, first.Error, first.ErrorDetail)
	if first.Err != nil {
		return exitcode.Wrap(exitcode.Of(first.Err), err, exitcode.HintOf(first.Err))
	}
	return err
}

func renderPlan(g *globals, r *retention.Result, dryRun bool) {
	w := g.stdout
	name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
	if !r.OK() {
		fmt.Fprintf(w, "%s: error: %s: %s\n", name, r.Error, r.ErrorDetail)
		return
	}
	verb := "trimmed"
	if dryRun {
		verb = "would trim"
	}
	if !r.Trimmed() {
		fmt.Fprintf(w, "%s: log start %d, HW %d: nothing to trim\n", name, r.CurrentLogStart, r.HW)
	} else {
		fmt.Fprintf(w, "%s: %s log start %d -> %d (HW %d)\n", name, verb, r.CurrentLogStart, r.NewLogStart, r.HW)
	}
	if p := r.Plan; p != nil && (dryRun || r.Trimmed()) {
		for _, c := range p.Candidates {
			off := "-"
			if c.Offset >= 0 {
				off = fmt.Sprint(c.Offset)
			}
			fmt.Fprintf(w, "  rule %-16s candidate %-8s segments %d, %d bytes\n", c.Rule, off, c.Segments, c.Bytes)
		}
		if len(p.Garbage) > 0 {
			fmt.Fprintf(w, "  garbage for gc: %d segments, %d bytes\n", len(p.Garbage), p.GarbageSize)
		}
	}
	if r.Trimmed() {
		if dryRun {
			fmt.Fprintf(w, "  pre-trim checkpoint: %s\n  requests: about %d\n", r.Checkpoint, r.RequestsEstimate)
		} else if t := r.Trim; t != nil {
			fmt.Fprintf(w, "  pre-trim checkpoint: %s (new object: %v); head trim written: %v; binding updated: %v\n", t.Checkpoint, t.CheckpointPublished, t.HeadMutated, t.BindingMutated)
		}
	}
}
