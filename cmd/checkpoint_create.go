package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/recovery"
)

type checkpointCreateOptions struct {
	sel    partitionSel
	dryRun bool
}

func newCheckpointCreateCmd(g *globals) *cobra.Command {
	o := &checkpointCreateOptions{}
	c := &cobra.Command{
		Use:   "create (TOPIC-PARTITION... | --all) [--dry-run]",
		Short: "Publish a checkpoint anchored at the current head",
		Long: `Hydrate from the newest valid checkpoint, replay the tail to the current
head, publish a new NKC1 checkpoint (IfAbsent) and CAS the binding's
checkpoint_ref to it. With nothing new since the newest checkpoint, no
object is written. --dry-run prints what would be written and writes nothing.` + exitStatusHelp(),
		Example: `  nereusctl checkpoint create payments-0 --dry-run
  nereusctl checkpoint create --all --shard 0/4`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			tps, err := o.sel.resolve(ctx, st, args)
			if err != nil {
				return err
			}
			var results []map[string]any
			var failed []error
			rows := [][]string{}
			for _, tp := range tps {
				b, etag, err := loadBinding(ctx, st, tp.String())
				if err != nil {
					return err
				}
				r, err := recovery.Create(ctx, st, b, etag, o.dryRun)
				if err != nil {
					// One partition's failure (a blocked coordinator, a
					// corrupt object) does not stop the others.
					err = fmt.Errorf("checkpoint create %s: %w", tp, err)
					failed = append(failed, err)
					results = append(results, map[string]any{"topic": tp.Topic, "partition": tp.Partition, "error": err.Error()})
					rows = append(rows, []string{tp.String(), "-", "-", "error: " + err.Error(), ""})
					continue
				}
				results = append(results, map[string]any{"topic": tp.Topic, "partition": tp.Partition, "checkpoint": r, "state_digest": r.Replay.Digest()})
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
				err2 = writeJSON(g.stdout, map[string]any{"schema_version": SchemaVersion, "dry_run": o.dryRun, "partitions": nonNil(results)})
			} else {
				err2 = writeTable(g.stdout, []string{"PARTITION", "ANCHOR", "SIZE", "ACTION", "KEY"}, rows)
			}
			if err2 != nil {
				return err2
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d partitions failed; first: %w", len(failed), len(tps), failed[0])
			}
			return nil
		},
	}
	o.sel.addFlags(c, true)
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print what would be written; write nothing")
	return c
}
