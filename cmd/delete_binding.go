package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
)

type deleteBindingOptions struct {
	dryRun bool
	yes    bool
	reason string
	orphan string
}

func newDeleteBindingCmd(g *globals) *cobra.Command {
	o := &deleteBindingOptions{}
	c := &cobra.Command{
		Use:   "delete-binding TOPIC-PARTITION... [--dry-run | --yes]",
		Short: "Record that a partition's topic was deleted and remove its binding",
		Long: `Delete the binding of each named partition on purpose, as after
'kafka-topics --delete': first a deletion record deleted/<stream id>.json
(written once, IfAbsent), then the binding's delete (If-Match). The stream's
objects stay until 'nereusctl gc' collects them after its --grace; from the
record, verify and status tell this deletion from a lost binding (a stream
no binding references and no record names is an orphan-stream finding).

--orphan STREAM_ID records the deletion of a stream whose binding is
already gone (an orphan-stream finding: deleted by hand, or an import that
never made its binding), naming the one partition it belonged to; nothing
else is deleted, and gc collects the stream after --grace.

A rerun after a crash finishes the delete; a rerun after it succeeded
reports the partition as already deleted. Each partition is deleted under
its lease. --dry-run shows what would be recorded and deleted and writes
nothing; without it, --yes is required.` + exitStatusHelp("2 without --yes or --dry-run, or a partition with no binding and no deletion record", "4 when the partition's lease is held by another job, or the binding changed since it was read (rerun)"),
		Example: `  nereusctl delete-binding orders-0 orders-1 --dry-run
  # destructive: the bindings go; gc then deletes the streams after --grace
  nereusctl delete-binding orders-0 orders-1 --yes
  # an orphan stream (its binding already gone) of orders-2
  nereusctl delete-binding orders-2 --orphan s-ed047df868b99f80 --yes`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitcode.UsageErr(fmt.Errorf("name the partitions to delete as TOPIC-PARTITION"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDeleteBinding(cmd.Context(), g, o, args)
		},
	}
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "show what would be recorded and deleted; write nothing")
	c.Flags().BoolVar(&o.yes, "yes", false, "confirm the deletion (required without --dry-run)")
	c.Flags().StringVar(&o.reason, "reason", "topic deleted", "why, as the deletion record keeps it")
	c.Flags().StringVar(&o.orphan, "orphan", "", "record the deletion of this orphan stream (its binding already gone) of the one partition named")
	return c
}

// deleteBindingJSON is delete-binding's -o json document.
type deleteBindingJSON struct {
	SchemaVersion int                              `json:"schema_version"`
	DryRun        bool                             `json:"dry_run"`
	Partitions    []*retention.DeleteBindingResult `json:"partitions"`
}

func runDeleteBinding(ctx context.Context, g *globals, o *deleteBindingOptions, args []string) error {
	if o.dryRun == o.yes {
		return exitcode.UsageErr(fmt.Errorf("delete-binding needs --dry-run or --yes (not both): it deletes bindings"))
	}
	if o.reason == "" {
		return exitcode.UsageErr(fmt.Errorf("--reason is empty"))
	}
	sel := partitionSel{}
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	tps, err := sel.resolve(ctx, st, args)
	if err != nil {
		return err
	}
	var out []*retention.DeleteBindingResult
	if o.orphan != "" {
		if len(tps) != 1 {
			return exitcode.UsageErr(fmt.Errorf("--orphan goes with exactly one TOPIC-PARTITION: the partition the stream belonged to"))
		}
		tps = nil
		var r *retention.DeleteBindingResult
		err := g.withPartition(ctx, st, sel0(args), func(ctx context.Context) error {
			var err error
			r, err = retention.RecordOrphan(ctx, st, o.orphan, sel0(args), o.reason, Version, time.Now(), o.dryRun)
			return err
		})
		if err != nil {
			return err
		}
		out = append(out, r)
	}
	for _, tp := range tps {
		var r *retention.DeleteBindingResult
		run := func(ctx context.Context) error {
			var err error
			r, err = retention.DeleteBinding(ctx, st, tp, o.reason, Version, time.Now(), o.dryRun)
			return err
		}
		if o.dryRun {
			err = run(ctx)
		} else {
			err = g.withPartition(ctx, st, tp, run)
		}
		if err != nil {
			return err
		}
		out = append(out, r)
	}
	if g.json() {
		return writeJSON(g.stdout, deleteBindingJSON{SchemaVersion: SchemaVersion, DryRun: o.dryRun, Partitions: out})
	}
	for _, r := range out {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		switch {
		case r.AlreadyDeleted:
			fmt.Fprintf(g.stdout, "%s: already deleted (stream %s, recorded in %s)\n", name, r.StreamID, r.DeletionKey)
		case r.DryRun:
			fmt.Fprintf(g.stdout, "%s: would record %s and delete %s (dry run: nothing written)\n", name, r.DeletionKey, layout.BindingKey(r.Topic, r.Partition))
		default:
			fmt.Fprintf(g.stdout, "%s: deleted; stream %s recorded in %s (gc collects it after --grace)\n", name, r.StreamID, r.DeletionKey)
		}
	}
	return nil
}

// sel0 is the one partition an --orphan deletion names (resolve checked it).
func sel0(args []string) layout.TopicPartition {
	tp, _ := layout.ParseTopicPartition(args[0])
	return tp
}
