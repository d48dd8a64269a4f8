package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
)

func newConfigCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Read and change a binding's topic config snapshot",
		Long: `A binding carries a snapshot of its topic's Kafka config (cleanup.policy,
retention.ms, retention.bytes, segment.bytes, segment.ms, delete.retention.ms,
min.compaction.lag.ms, max.compaction.lag.ms, min.cleanable.dirty.ratio):
retention and compaction plan with it. Kafka's metadata stays the authority; keep the snapshot in step
with 'kafka-configs --alter'. Each binding also records where its config
came from (config_source): import-default-retention-off, topic-config-flags,
kafka-configs-file:NAME, config-set.` + exitStatusHelp(),
		Example: `  nereusctl config get orders
  nereusctl config set orders retention.ms=604800000 --dry-run
  nereusctl config set orders-0 retention.bytes=1073741824 cleanup.policy=delete`,
	}
	c.AddCommand(newConfigGetCmd(g), newConfigSetCmd(g))
	return c
}

func newConfigGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get TOPIC[-PARTITION]",
		Short: "Print the config snapshot of a partition, or of every partition of a topic",
		Long: `Print the binding's config snapshot and its source. TOPIC-PARTITION names one
bound partition; TOPIC alone (or a name that is not a bound partition) every
bound partition of that topic.` + exitStatusHelp("1 no partition of that name or topic is bound"),
		Example: `  nereusctl config get orders
  nereusctl config get orders-0 -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, tps, err := configTargets(ctx, g, args[0])
			if err != nil {
				return err
			}
			out := make([]*retention.ConfigChange, 0, len(tps))
			for _, tp := range tps {
				c, err := retention.GetConfig(ctx, st, tp)
				if err != nil {
					return configErr(err)
				}
				out = append(out, c)
			}
			if g.json() {
				return writeJSON(g.stdout, configDoc{SchemaVersion: SchemaVersion, Partitions: out})
			}
			for _, c := range out {
				fmt.Fprintf(g.stdout, "Configs for partition %s-%d (source: %s):\n", c.Topic, c.Partition, dash(c.ConfigSource, ""))
				for _, k := range retention.TopicConfigKeys() {
					v, _ := retention.TopicConfigValue(c.Config, k)
					fmt.Fprintf(g.stdout, "  %s=%s\n", k, v)
				}
			}
			return nil
		},
	}
}

type configSetOptions struct {
	dryRun bool
}

func newConfigSetCmd(g *globals) *cobra.Command {
	o := &configSetOptions{}
	c := &cobra.Command{
		Use:   "set TOPIC[-PARTITION] KEY=VALUE...",
		Short: "Change the config snapshot of a partition, or of every partition of a topic",
		Long: `Set keys of the binding's config snapshot, with Kafka's names, types and
ranges: cleanup.policy (delete, compact or compact,delete), retention.ms and
retention.bytes (-1: no limit, else >= 0), segment.bytes (an INT, >= 14),
segment.ms and max.compaction.lag.ms (>= 1), delete.retention.ms and
min.compaction.lag.ms (>= 0), min.cleanable.dirty.ratio (a decimal number
from 0 to 1, Kafka's default 0.5: the dirty ratio above which Kafka's log
cleaner picks the partition, shown by 'compact --dry-run'). Every setting is
checked before the store is touched: a bad key or value changes nothing
(exit 2).

Each binding is replaced with a CAS (If-Match on its ETag) and its
config_source becomes config-set. When the binding changed meanwhile (a
trim or checkpoint landed), it is re-read and the change applied once more;
a second lost precondition exits 4 (rerun: setting the same values again is
a no-op). Each binding is written holding its partition's lease (none in a
dry run): a partition another job holds past --lease-wait is exit 4, naming
the holder, and the topic's other partitions are still changed. TOPIC alone
changes every bound partition of the topic. --dry-run prints the change and
writes nothing.

A shorter retention.ms or retention.bytes takes effect at the next
'retention run': run it with --dry-run first.` + exitStatusHelp("1 no partition of that name or topic is bound", "2 an unknown key or a value outside Kafka's type or range (nothing changed)", "4 the binding kept changing under the write, or the partition's lease is held by another job past --lease-wait"),
		Example: `  nereusctl config set orders retention.ms=604800000 --dry-run
  nereusctl config set orders retention.ms=604800000
  nereusctl config set __consumer_offsets-3 min.compaction.lag.ms=0 -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return exitcode.UsageErr(errors.New("want TOPIC[-PARTITION] and at least one KEY=VALUE"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			kvs, err := retention.ParseKV(args[1:])
			if err != nil {
				return configErr(fmt.Errorf("config set %s: %w", args[0], err))
			}
			ctx := cmd.Context()
			if _, err := g.mutatingStore(ctx, o.dryRun); err != nil {
				return err
			}
			st, tps, err := configTargets(ctx, g, args[0])
			if err != nil {
				return err
			}
			out := make([]*retention.ConfigChange, 0, len(tps))
			var failed error
			for _, tp := range tps {
				var c *retention.ConfigChange
				var err error
				if o.dryRun {
					c, err = retention.SetConfig(ctx, st, tp, kvs, true)
				} else {
					// The binding is written holding the partition's
					// lease, as every command that changes a partition.
					err = g.withPartition(ctx, st, tp, func(ctx context.Context) error {
						c, err = retention.SetConfig(ctx, st, tp, kvs, false)
						return err
					})
				}
				if err != nil {
					if ctx.Err() != nil {
						return err
					}
					if failed == nil {
						failed = err
					}
					g.log.Error("config set failed", "partition", tp.String(), "err", err)
					continue
				}
				out = append(out, c)
			}
			failed = configErr(failed)
			if err := renderConfigSet(g, o.dryRun, kvs, out, failed); err != nil {
				return err
			}
			return failed
		},
	}
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the change; write nothing")
	return c
}

// configDoc is the JSON document of config get and config set.
type configDoc struct {
	SchemaVersion int                       `json:"schema_version"`
	DryRun        *bool                     `json:"dry_run,omitempty"`
	Partitions    []*retention.ConfigChange `json:"partitions"`
	// Error is why config set failed for a partition (its rows are left
	// out), as the error document's "error"; absent when it did not.
	Error *errorBody `json:"error,omitempty"`
}

// renderConfigSet prints a row per key compared: the ones that change,
// and the ones already holding the value given (unchanged, the value shown
// as OLD and NEW), so a rerun shows what it compared.
// failed is the run's failure (a partition not written), carried by -o
// json as "error".
func renderConfigSet(g *globals, dryRun bool, kvs []retention.KV, out []*retention.ConfigChange, failed error) error {
	if g.json() {
		return writeJSON(g.stdout, configDoc{SchemaVersion: SchemaVersion, DryRun: &dryRun, Partitions: out, Error: runErrorBody(failed)})
	}
	rows := [][]string{}
	for _, c := range out {
		name := fmt.Sprintf("%s-%d", c.Topic, c.Partition)
		result := "changed"
		if dryRun {
			result = "would change"
		}
		changed := map[string]bool{}
		for _, d := range c.Changes {
			changed[d.Key] = true
			rows = append(rows, []string{name, d.Key, d.Old, d.New, result})
		}
		for _, kv := range kvs {
			if !changed[kv.Key] {
				rows = append(rows, []string{name, kv.Key, kv.Value, kv.Value, "unchanged"})
			}
		}
	}
	if err := writeTable(g.stdout, []string{"PARTITION", "KEY", "OLD", "NEW", "RESULT"}, rows); err != nil {
		return err
	}
	if dryRun {
		fmt.Fprintln(g.stdout, "config set (dry run, nothing changed)")
	}
	return nil
}

func configErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, retention.ErrBadTopicConfig):
		return exitcode.Wrap(exitcode.Usage, err, topicConfigHint)
	case errors.Is(err, retention.ErrNoSuchBinding):
		return exitcode.Wrap(exitcode.Error, err, "see 'nereusctl status' for the bound partitions")
	case errors.Is(err, store.ErrPreconditionFailed):
		return exitcode.BlockedErr(err, "the binding kept changing while it was written (a trim, checkpoint or compaction); rerun the same command")
	}
	return err
}

// configTargets opens the store and resolves TOPIC or TOPIC-PARTITION to
// the bound partitions config get and config set work on.
func configTargets(ctx context.Context, g *globals, target string) (store.Store, []layout.TopicPartition, error) {
	st, err := g.store(ctx)
	if err != nil {
		return nil, nil, err
	}
	tps, err := retention.ResolveConfigTarget(ctx, st, target)
	if err != nil {
		return nil, nil, configErr(err)
	}
	return st, tps, nil
}
