package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// partitionSel is the TOPIC-PARTITION… | --all selection many commands share.
type partitionSel struct {
	all        bool
	shard      string
	allowEmpty bool
}

func (s *partitionSel) addFlags(c *cobra.Command, withShard bool) {
	c.Flags().BoolVar(&s.all, "all", false, "every partition bound in the store")
	c.Flags().BoolVar(&s.allowEmpty, "allow-empty", false, "with --all: succeed on a store with no bindings (default: exit 1, a mistyped --store finds none)")
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
	if s.allowEmpty && !s.all {
		return nil, exitcode.UsageErr(fmt.Errorf("--allow-empty goes with --all"))
	}
	if s.all {
		tps, err := layout.ListBindings(ctx, st)
		if err != nil {
			return nil, listBindingsErr(st, err)
		}
		if len(tps) == 0 && !s.allowEmpty {
			return nil, errNoBindings(st)
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

// errNoBindings is the failure of --all on a store without bindings: most
// often a mistyped --store or prefix, which must not pass as "all clean".
func errNoBindings(st store.Store) error {
	return exitcode.Wrap(exitcode.Error, fmt.Errorf("no bindings under %s", st),
		"check --store (and its prefix); pass --allow-empty if an empty store is expected")
}

// failures collects per-partition failures of a run over many partitions
// and turns them into one error carrying the worst code.
type failures struct {
	n     int
	code  exitcode.Code
	first error
}

func (f *failures) add(err error) {
	if err == nil {
		return
	}
	f.n++
	f.code = exitcode.Worse(f.code, exitcode.Of(err))
	if f.first == nil {
		f.first = err
	}
}

// err is nil without failures, else "N of TOTAL partitions failed; first:
// …" with the worst code and the first failure's hint.
func (f *failures) err(op string, total int) error {
	if f.n == 0 {
		return nil
	}
	hint := exitcode.HintOf(f.first)
	if hint == "" && f.code == exitcode.Verify {
		hint = "a stored document or object is corrupt; see docs/runbooks/restore-from-replica.md"
	}
	return exitcode.Wrap(f.code, fmt.Errorf("%s: %d of %d partitions failed; first: %w", op, f.n, total, f.first), hint)
}

// loadBinding reads one binding, mapping a missing one to a clear error.
func loadBinding(ctx context.Context, st store.Store, arg string) (*layout.Binding, string, error) {
	tp, err := layout.ParseTopicPartition(arg)
	if err != nil {
		return nil, "", exitcode.UsageErr(fmt.Errorf("partition %q: %w", arg, err))
	}
	b, etag, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		return nil, "", errkind.Hint(fmt.Errorf("load binding %s: %w", tp, err), hintFor(err, tp))
	}
	return b, etag, nil
}

func hintFor(err error, tp layout.TopicPartition) string {
	if isNotFound(err) {
		return fmt.Sprintf("no binding %s in this store; list them with 'nereusctl status' or check --store", tp)
	}
	if layout.IsCorrupt(err) {
		return fmt.Sprintf("the binding document of %s is corrupt; restore it from a replica (docs/runbooks/restore-from-replica.md)", tp)
	}
	return ""
}

// listBindingsErr is the error of a failed listing of the bindings, naming
// the store unless the store's error does already.
func listBindingsErr(st store.Store, err error) error {
	if strings.Contains(err.Error(), st.String()) {
		return err
	}
	return fmt.Errorf("list bindings in %s: %w", st, err)
}
