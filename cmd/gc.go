package cmd

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
)

type gcOptions struct {
	dryRun  bool
	grace   time.Duration
	verbose bool
	// allowEmpty: a store with no binding and no stream is not an error.
	allowEmpty bool
}

func newGCCmd(g *globals) *cobra.Command {
	o := &gcOptions{}
	c := &cobra.Command{
		Use:   "gc [--dry-run] [--grace DURATION]",
		Short: "Delete garbage objects: below the durable trim, beyond the head, stale checkpoints, old tasks",
		Long: `Physically delete what no reader may use any more:
  below-trim        objects (and manifests) of sealed segments wholly below a
                    stream's durable trim, once a valid checkpoint anchored at
                    or above the trim keeps the state they held
  beyond-head       objects an append wrote whose head CAS never happened
  off-chain         other leftovers of failed appends that no chain uses
  stale-checkpoint  checkpoints anchored below the trim that the binding does
                    not refer to
  superseded-view   compacted generations a newer set replaced (the active
                    set and its sources are kept) and NTC2 objects that no
                    manifest references (abandoned compaction runs)
  task              workflow state under tasks/ (plans, staging)
Leftovers and tasks are deleted only once older than --grace, so work in
progress is never touched; an object at or beyond its stream's head (a
broker's append whose head is not published yet) is never deleted younger
than 15 minutes, whatever --grace says (--grace 0s included), and the report
counts those kept. Each partition is collected holding its partition lease
(docs/design.md, "Leases"; none in a dry run), so a compaction, trim or
repair running on it is never collected under: a partition whose lease
another job holds past --lease-wait is reported blocked (exit 4, naming the
holder) and the others are still collected, --parallel at once.

Nothing a binding, head, live generation or kept checkpoint references is
ever deleted. Deletion order is data objects,
then manifests, then checkpoints: a killed gc leaves only garbage, which the
next run finds again.

A partition gc cannot read safely is left whole and reported with its error
while the others are still collected: a binding, head or generation
manifest that does not decode (a manifest gc cannot read may name live
objects), or a head rolled back below objects, generations or checkpoints
the stream holds (what lies "beyond" such a head is data, not leftovers).
The exit status is the worst over the partitions.` + exitStatusHelp("3 when a partition was left alone because a stored document is malformed or its head lies below its data (the others are still collected)", "4 when a partition's lease is held by another job past --lease-wait (the others are still collected)", "1 when a partition could not be collected for another reason, or the store holds no binding and no stream (a mistyped --store; --allow-empty accepts it)"),
		Example: `  nereusctl gc --dry-run
  nereusctl gc --grace 24h -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.grace < 0 {
				return exitcode.UsageErr(fmt.Errorf("--grace %s: want >= 0", o.grace))
			}
			ctx := cmd.Context()
			st, err := g.mutatingStore(ctx, o.dryRun)
			if err != nil {
				return err
			}
			tps, err := layout.ListBindings(ctx, st)
			if err != nil {
				return fmt.Errorf("gc: %w", listBindingsErr(st, err))
			}
			if len(tps) == 0 && !o.allowEmpty {
				// No binding and no stream (a deleted topic's stream is
				// gc's to collect): a mistyped --store, as for the others.
				streams, err := store.ListDirs(ctx, st, layout.StreamsPrefix)
				if err != nil {
					return fmt.Errorf("gc: list %s in %s: %w", layout.StreamsPrefix, st, err)
				}
				if len(streams) == 0 {
					return errNoBindings(st)
				}
			}
			prog := g.progress("partitions", int64(len(tps)))
			defer prog.done()
			rep, err := retention.GC(ctx, st, tps, retention.GCOptions{
				DryRun: o.dryRun, Grace: o.grace, Now: time.Now(), Parallel: g.parallel(), Progress: prog.add,
				// The table lists objects only with --verbose, and of the
				// partitions only those kept or failed: the report need not
				// hold one entry per object and partition (-o json does).
				Lean: !g.json() && !o.verbose,
				// Each partition's garbage is decided and deleted under
				// its lease (never in a dry run): a compaction between its
				// view PUT and its publish, or a trim, holds it.
				Partition: func(ctx context.Context, tp layout.TopicPartition, fn func(ctx context.Context) error) error {
					return g.withPartition(ctx, st, tp, fn)
				},
				// Each delete proves that lease first: a gc paused past it
				// between its decision and its deletes deletes nothing.
				Fence:   lease.Fence,
				Decided: gcHooks(),
			})
			prog.done()
			if err != nil {
				return err
			}
			g.observeGC(rep)
			if g.json() {
				if err := writeJSON(g.stdout, gcJSON{SchemaVersion: SchemaVersion, GC: rep}); err != nil {
					return err
				}
			} else {
				verb := "deleted"
				if o.dryRun {
					verb = "would delete"
				}
				cats := make([]string, 0, len(rep.Totals))
				for c := range rep.Totals {
					cats = append(cats, c)
				}
				sort.Strings(cats)
				rows := [][]string{}
				for _, c := range cats {
					rows = append(rows, []string{c, fmt.Sprint(rep.Totals[c].Objects), fmt.Sprint(rep.Totals[c].Bytes)})
				}
				if len(rows) > 0 {
					if err := writeTable(g.stdout, []string{"CATEGORY", "OBJECTS", "BYTES"}, rows); err != nil {
						return err
					}
				}
				if o.verbose {
					for _, it := range rep.Items {
						fmt.Fprintf(g.stdout, "%s %s (%s, %d bytes)\n", verb, it.Key, it.Category, it.Size)
					}
				}
				for _, p := range rep.Partitions {
					if p.Skipped != "" {
						fmt.Fprintf(g.stdout, "%s: kept data below the trim: %s\n", p.Partition, p.Skipped)
					}
					if p.Error != "" {
						fmt.Fprintf(g.stdout, "%s: ERROR: nothing collected: %s\n", p.Partition, p.Error)
					}
				}
				if rep.KeptBeyondHead > 0 {
					fmt.Fprintf(g.stdout, "gc: kept %d objects beyond the head younger than %s (a broker's append may still be in flight)\n", rep.KeptBeyondHead, retention.MinBeyondHeadGrace)
				}
				fmt.Fprintf(g.stdout, "gc: %s %d objects, %d bytes\n", verb, rep.Objects, rep.Bytes)
			}
			var fails failures
			for _, p := range rep.Partitions {
				fails.add(p.Err())
			}
			if fails.n > 0 {
				return fails.err("gc", rep.Done())
			}
			if len(rep.Errors) > 0 {
				return fmt.Errorf("gc: %d errors; first: %s", len(rep.Errors), rep.Errors[0])
			}
			return nil
		},
	}
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "list what would be deleted; delete nothing")
	c.Flags().DurationVar(&o.grace, "grace", time.Hour, fmt.Sprintf("leave leftovers and tasks younger than this alone (objects beyond a head: at least %s)", retention.MinBeyondHeadGrace))
	c.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "list every object")
	c.Flags().BoolVar(&o.allowEmpty, "allow-empty", false, "succeed on a store with no bindings and no streams (default: exit 1, a mistyped --store finds none)")
	return c
}

// gcJSON is gc's -o json document (docs/json-output.md).
type gcJSON struct {
	SchemaVersion int                 `json:"schema_version"`
	GC            *retention.GCReport `json:"gc"`
}
