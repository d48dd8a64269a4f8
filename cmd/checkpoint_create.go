package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

type checkpointCreateOptions struct {
	sel    partitionSel
	dryRun bool
	full   bool
	clock  clockFlags
}

func newCheckpointCreateCmd(g *globals) *cobra.Command {
	o := &checkpointCreateOptions{}
	c := &cobra.Command{
		Use:   "create (TOPIC-PARTITION... | --all) [--dry-run]",
		Short: "Publish a checkpoint anchored at the current head",
		Long: `Hydrate from the newest valid checkpoint, replay the tail to the current
head, publish a new NKC1 checkpoint (IfAbsent) and CAS the binding's
checkpoint_ref to it. With nothing new since the newest checkpoint, no
object is written. --dry-run prints what would be written and writes nothing.

Producers idle for --producer-id-expiration-ms at the --now clock (default:
the wall clock) with no open transaction are dropped, as Kafka's
ProducerStateManager.removeExpiredProducers does; the checkpoint records
that clock (NKC1 section clock, docs/formats/nkc1.md).

--full builds the checkpoint from a full replay instead of the newest
checkpoint: it replaces a checkpoint whose state an older build derived
(replay --compare names one whose segment bases predate the segment base
rule, docs/kafka-retention-rules.md R4), so later checkpoints build on
today's derivation. It costs a full replay.

With --all every partition is tried: one that fails (a binding that does not
decode, a blocked coordinator, corrupt data) is a row with its error and the
others are still done; the exit status is the worst over the partitions.` + exitStatusHelp("3 when a partition's binding, head or data is corrupt", "4 when a partition is blocked (its lease held by another job past --lease-wait, naming the holder)"),
		Example: `  nereusctl checkpoint create payments-0 --dry-run
  nereusctl checkpoint create --all --shard 0/4`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			clock, err := o.clock.clock()
			if err != nil {
				return err
			}
			st, err := g.mutatingStore(ctx, o.dryRun)
			if err != nil {
				return err
			}
			tps, err := o.sel.resolve(ctx, st, args)
			if err != nil {
				return err
			}
			// --parallel partitions at once, each independent of the
			// others (its own binding CAS and IfAbsent checkpoint); the
			// outcomes are reported in the order named. A result keeps
			// its state digest, not its replayed state.
			type outcome struct {
				r      *recovery.CreateResult
				digest string
				err    error
			}
			prog := g.progress("partitions", int64(len(tps)))
			defer prog.done()
			outs, err := fleet.Map(ctx, g.parallel(), tps, func(ctx context.Context, _ int, tp layout.TopicPartition) (outcome, error) {
				defer prog.add(1)
				var r *recovery.CreateResult
				var err error
				if o.dryRun {
					r, err = checkpointCreateOne(ctx, st, tp, clock, o.full, true)
				} else {
					// The partition's lease while its checkpoint is
					// published and its binding CASed (a held one:
					// this partition is exit 4, the others go on).
					err = g.withPartition(ctx, st, tp, func(ctx context.Context) error {
						r, err = checkpointCreateOne(ctx, st, tp, clock, o.full, false)
						return err
					})
				}
				if err != nil {
					return outcome{err: err}, ctx.Err()
				}
				d := r.Replay.Digest()
				r.Replay = nil
				return outcome{r: r, digest: d}, nil
			})
			if err != nil {
				return err
			}
			observeOutcomes(g, outs, func(o outcome) (error, bool) { return o.err, o.r != nil && o.r.Reused })
			prog.done()
			results := []checkpointCreatePartitionJSON{}
			var fails failures
			rows := [][]string{}
			for i, tp := range tps {
				r, err := outs[i].r, outs[i].err
				if err != nil {
					// One partition's failure (a blocked coordinator, a
					// corrupt object, a binding that does not decode)
					// does not stop the others.
					fails.add(err)
					results = append(results, checkpointCreatePartitionJSON{Topic: tp.Topic, Partition: tp.Partition, Error: err.Error()})
					rows = append(rows, []string{tp.String(), "-", "-", "error: " + err.Error(), ""})
					continue
				}
				results = append(results, checkpointCreatePartitionJSON{Topic: tp.Topic, Partition: tp.Partition, Checkpoint: r, StateDigest: outs[i].digest})
				action := "published"
				switch {
				case r.DryRun && r.Reused:
					action = "would reuse (nothing new)"
				case r.DryRun:
					action = "would publish"
				case r.Reused:
					action = "up to date"
				}
				rows = append(rows, []string{tp.String(), fmt.Sprint(r.Anchor), fmt.Sprint(r.Size), action, r.Key})
			}
			var err2 error
			if g.json() {
				err2 = writeJSON(g.stdout, checkpointCreateJSON{SchemaVersion: SchemaVersion, DryRun: o.dryRun, Partitions: results})
			} else {
				err2 = writeTable(g.stdout, []string{"PARTITION", "ANCHOR", "SIZE", "ACTION", "KEY"}, rows)
			}
			if err2 != nil {
				return err2
			}
			return fails.err("checkpoint create", len(tps))
		},
	}
	o.sel.addFlags(c, true)
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print what would be written; write nothing")
	c.Flags().BoolVar(&o.full, "full", false, "build the checkpoint from a full replay, not from the newest checkpoint")
	o.clock.add(c, true)
	return c
}

// checkpointCreateJSON is checkpoint create's -o json document
// (docs/json-output.md).
type checkpointCreateJSON struct {
	SchemaVersion int                             `json:"schema_version"`
	DryRun        bool                            `json:"dry_run"`
	Partitions    []checkpointCreatePartitionJSON `json:"partitions"`
}

// checkpointCreatePartitionJSON is one partition's outcome: the checkpoint
// written (or that would be), or the error.
type checkpointCreatePartitionJSON struct {
	Topic       string                 `json:"topic"`
	Partition   int32                  `json:"partition"`
	Checkpoint  *recovery.CreateResult `json:"checkpoint,omitempty"`
	StateDigest string                 `json:"state_digest,omitempty"`
	Error       string                 `json:"error,omitempty"`
}

func checkpointCreateOne(ctx context.Context, st store.Store, tp layout.TopicPartition, clock state.Clock, full, dryRun bool) (*recovery.CreateResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, etag, err := loadBinding(ctx, st, tp.String())
	if err != nil {
		return nil, err
	}
	if _, _, err := layout.LoadHead(ctx, st, b.StreamID); layout.IsCorrupt(err) {
		return nil, exitcode.VerifyErr(fmt.Errorf("checkpoint create %s: stream head: %w", tp, err))
	}
	create := recovery.CreateAt
	if full {
		create = recovery.CreateFullAt
	}
	r, err := create(ctx, st, b, etag, clock, dryRun)
	if err != nil {
		return nil, fmt.Errorf("checkpoint create %s: %w", tp, err)
	}
	return r, nil
}
