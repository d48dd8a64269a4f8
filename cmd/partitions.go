package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// partitionSel is the TOPIC-PARTITION… | --all selection many commands share.
type partitionSel struct {
	all   bool
	shard string
}

func (s *partitionSel) addFlags(c *cobra.Command, withShard bool) {
	c.Flags().BoolVar(&s.all, "all", false, "every partition bound in the store")
	if withShard {
		c.Flags().StringVar(&s.shard, "shard", "", "with --all: take only shard i of n (i/n, 0-based), so n workers cover the partitions exactly once")
	}
}

// resolve turns args and --all into partitions, checking that each exists.
func (s *partitionSel) resolve(ctx context.Context, st store.Store, args []string) ([]layout.TopicPartition, error) {
	if s.all == (len(args) > 0) {
		return nil, exitcode.UsageErr(fmt.Errorf("name partitions as TOPIC-PARTITION or give --all (not both)"))
	}
	if s.shard != "" && !s.all {
		return nil, exitcode.UsageErr(fmt.Errorf("--shard goes with --all"))
	}
	if s.all {
		tps, err := layout.ListBindings(ctx, st)
		if err != nil {
			return nil, fmt.Errorf("list bindings in %s: %w", st, err)
		}
		if s.shard != "" {
			i, n, err := layout.ParseShard(s.shard)
			if err != nil {
				return nil, exitcode.UsageErr(err)
			}
			tps = layout.Shard(tps, i, n)
		}
		return tps, nil
	}
	out := make([]layout.TopicPartition, 0, len(args))
	seen := map[layout.TopicPartition]bool{}
	for _, a := range args {
		tp, err := layout.ParseTopicPartition(a)
		if err != nil {
			return nil, exitcode.UsageErr(fmt.Errorf("partition %q: %w", a, err))
		}
		if seen[tp] {
			return nil, exitcode.UsageErr(fmt.Errorf("partition %s named twice", tp))
		}
		seen[tp] = true
		out = append(out, tp)
	}
	return out, nil
}

// loadBinding reads one binding, mapping a missing one to a clear error.
func loadBinding(ctx context.Context, st store.Store, arg string) (*layout.Binding, string, error) {
	tp, err := layout.ParseTopicPartition(arg)
	if err != nil {
		return nil, "", exitcode.UsageErr(fmt.Errorf("partition %q: %w", arg, err))
	}
	b, etag, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		return nil, "", exitcode.Wrap(exitcode.Of(err), fmt.Errorf("load binding %s: %w", tp, err), hintFor(err, tp))
	}
	return b, etag, nil
}

func hintFor(err error, tp layout.TopicPartition) string {
	if isNotFound(err) {
		return fmt.Sprintf("no binding %s in this store; list them with 'nereusctl status' or check --store", tp)
	}
	return ""
}
