package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/exitcode"
)

type demoOptions struct {
	demo.Options
	noTour bool
}

func (o *demoOptions) addFlags(c *cobra.Command) {
	d := demo.DefaultOptions()
	c.Flags().IntVar(&o.Partitions, "partitions", d.Partitions, "partitions per user topic")
	c.Flags().IntVar(&o.Records, "records", d.Records, "records across the whole cluster (millions for benchmarks)")
	c.Flags().Int64Var(&o.Seed, "seed", d.Seed, "seed: the same seed writes the same bytes")
	c.Flags().IntVar(&o.Checkpoints, "checkpoints", d.Checkpoints, "NKC1 checkpoints per partition, spread over its life")
	c.Flags().IntVar(&o.BatchRecords, "batch-records", 0, "records per user-topic batch as a busy producer fills them: N/2+1 to N (0: the demo's small batches of up to 10 or 20)")
	c.Flags().BoolVar(&o.noTour, "no-tour", false, "write the cluster and print the summary only")
	c.Flags().StringSliceVar(&o.Topics, "topics", nil, "write only these demo topics ("+strings.Join(demoTopics, ", ")+"); the records are shared among them")
}

// demoTopics are the topics the demo writes (internal/demo's plans).
var demoTopics = []string{"orders", "payments", "customers", "__consumer_offsets", "__transaction_state"}

func (o *demoOptions) validate() error {
	if o.Partitions < 1 || o.Partitions > 40000 {
		// (up to 40,000 a topic: the fleet benchmarks' 100,000 partitions)
		return exitcode.UsageErr(fmt.Errorf("--partitions %d: want 1..40000", o.Partitions))
	}
	if o.Records < 0 {
		return exitcode.UsageErr(fmt.Errorf("--records %d: want >= 0", o.Records))
	}
	if o.BatchRecords < 0 || o.BatchRecords > 10000 {
		return exitcode.UsageErr(fmt.Errorf("--batch-records %d: want 0..10000", o.BatchRecords))
	}
	if o.Checkpoints < 0 || o.Checkpoints > 100 {
		return exitcode.UsageErr(fmt.Errorf("--checkpoints %d: want 0..100", o.Checkpoints))
	}
	for i, t := range o.Topics {
		if !slices.Contains(demoTopics, t) {
			return exitcode.UsageErr(fmt.Errorf("--topics: no demo topic %q: want some of %s", t, strings.Join(demoTopics, ", ")))
		}
		if slices.Contains(o.Topics[:i], t) {
			return exitcode.UsageErr(fmt.Errorf("--topics: %q is named twice (nothing was written)", t))
		}
	}
	return nil
}

func newDemoCmd(g *globals) *cobra.Command {
	o := &demoOptions{}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Write a realistic demo cluster into the store and tour it",
		Long: `Write what a broker would into the store: topics with idempotent producers,
transactional producers with commits and aborts (one still open), a
compacted topic with updates and tombstones, __consumer_offsets with real
OffsetCommit/GroupMetadata records, __transaction_state with real
TransactionLog records, several leader epochs, rolled and sealed segments,
batches in all four codecs, and periodic NKC1 checkpoints.

The result is deterministic for --seed. A store that already holds this demo
is left alone and only toured. The options are recorded in the store first
(tasks/demo/seed-N.json) and the demo marked finished last: an interrupted
demo, rerun, resumes with the options it was started with and ends exactly
as an uninterrupted one (what it wrote already is checked, not written
again). The tour then runs status, checkpoint verify,
replay --compare and trim --dry-run on what was written.` + exitStatusHelp(),
		Example: `  nereusctl demo
  nereusctl --store file:///tmp/big demo --records 1000000 --no-tour`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return runDemo(cmd, g, o)
		},
	}
	o.addFlags(c)
	return c
}

func runDemo(cmd *cobra.Command, g *globals, o *demoOptions) error {
	ctx := cmd.Context()
	g.createStore = true
	st, err := g.mutatingStore(ctx, false)
	if err != nil {
		return err
	}
	start := time.Now()
	prog := g.progress("records", int64(o.Records))
	defer prog.done()
	opts := o.Options
	opts.Progress = prog.add
	opts.Parallel = g.parallel()
	sum, err := demo.Run(ctx, st, opts)
	prog.done()
	if errors.Is(err, demo.ErrDuplicateTopic) {
		return exitcode.UsageErr(err)
	}
	if errors.Is(err, demo.ErrOtherData) {
		return exitcode.Wrap(exitcode.Error, err, "run the demo against an empty store, e.g. --store file:///tmp/nereus-demo")
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	tour := !o.noTour && !g.cfg.Quiet && len(o.Topics) == 0
	if g.json() {
		return writeJSON(g.stdout, demoJSON{SchemaVersion: SchemaVersion, Seconds: elapsed.Seconds(), Demo: sum})
	}
	if sum.Existing {
		touring := "; touring it"
		if !tour {
			touring = ""
		}
		fmt.Fprintf(g.stdout, "The store %s already holds the demo (seed %d)%s.\n", st, sum.Seed, touring)
		if given := changedFlags(cmd, "records", "partitions", "checkpoints", "batch-records", "topics"); len(given) > 0 {
			fmt.Fprintf(g.stdout, "The store is left as it is: %s not applied (give an empty --store to write another demo).\n", strings.Join(given, ", "))
		}
		fmt.Fprintln(g.stdout)
	} else {
		if sum.Resumed {
			fmt.Fprintf(g.stdout, "Resumed the interrupted demo in %s (seed %d) with the options it was started with: --records %d --partitions %d --checkpoints %d --batch-records %d%s.\n",
				st, sum.Seed, sum.Options.Records, sum.Options.Partitions, sum.Options.Checkpoints, sum.Options.BatchRecords, topicsText(sum.Options.Topics))
		}
		fmt.Fprintf(g.stdout, "Wrote the demo cluster into %s in %s: %d partitions, %d records, %d bytes of batches.\n\n",
			st, elapsed.Round(time.Millisecond), len(sum.Partitions), sum.Records, sum.Bytes)
		rows := make([][]string, 0, len(sum.Partitions))
		for _, p := range sum.Partitions {
			rows = append(rows, []string{fmt.Sprintf("%s-%d", p.Topic, p.Partition), p.Kind, fmt.Sprint(p.Records), fmt.Sprint(p.Batches), fmt.Sprint(p.Objects), fmt.Sprint(p.Segments), fmt.Sprint(p.Checkpoints), fmt.Sprint(p.Head)})
		}
		if err := writeTable(g.stdout, []string{"PARTITION", "KIND", "RECORDS", "BATCHES", "OBJECTS", "SEALED", "CHECKPOINTS", "HEAD"}, rows); err != nil {
			return err
		}
	}
	if !tour {
		return nil
	}
	return runTour(cmd, g, sum)
}

func topicsText(ts []string) string {
	if len(ts) == 0 {
		return ""
	}
	return " --topics " + strings.Join(ts, ",")
}

// demoJSON is the -o json output of demo.
type demoJSON struct {
	SchemaVersion int           `json:"schema_version"`
	Seconds       float64       `json:"seconds"`
	Demo          *demo.Summary `json:"demo"`
}

// changedFlags lists "--name VALUE" for each named flag given on the
// command line.
func changedFlags(cmd *cobra.Command, names ...string) []string {
	var out []string
	for _, n := range names {
		if f := cmd.Flags().Lookup(n); f != nil && f.Changed {
			out = append(out, "--"+n+" "+strings.Trim(f.Value.String(), "[]"))
		}
	}
	return out
}
