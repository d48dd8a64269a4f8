package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/retention"
)

type deleteRecordsOptions struct {
	file   string
	dryRun bool
	yes    bool
	clock  clockFlags
}

func newDeleteRecordsCmd(g *globals) *cobra.Command {
	o := &deleteRecordsOptions{}
	c := &cobra.Command{
		Use:   "delete-records --offset-json-file FILE [--dry-run]",
		Short: "DeleteRecords from kafka-delete-records.sh's JSON, with the durable trim sequence",
		Long: `Read Kafka's delete-records JSON and trim every partition it names, exactly
as 'nereusctl trim' does (same rules, same durable sequence):

  {"partitions": [{"topic": "orders", "partition": 0, "offset": 1200}], "version": 1}

Every field is required, the version must be 1, and duplicate partitions are
an error (nothing is trimmed then). The output matches kafka-delete-records:
one 'partition: T-P<TAB>low_watermark: N' or 'partition: T-P<TAB>error: ...'
line per partition; -o json gives the trim contract. A dry run prints
'Dry run: records delete operation planned, nothing deleted:' and
'partition: T-P<TAB>would_be_low_watermark: N' lines instead.

When any partition would lose EVERY record (offset -1, or the HW), the
command needs --yes: on a terminal it asks (y/N on stdin) before trimming
anything; otherwise it is refused with exit 2 and nothing is trimmed.` + exitStatusHelp("1 when any partition reports an error", "2 for a malformed JSON file or a duplicate partition, or a trim removing every record not confirmed (--yes) (nothing is changed)"),
		Example: `  nereusctl delete-records --offset-json-file offsets.json --dry-run
  # destructive: the records below each offset become unreadable
  nereusctl delete-records --offset-json-file offsets.json -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.file == "" {
				return exitcode.UsageErr(fmt.Errorf("--offset-json-file is required"))
			}
			now, _, err := parseNow(o.clock.now)
			if err != nil {
				return err
			}
			clock, err := o.clock.clockAt(now)
			if err != nil {
				return err
			}
			data, err := readCappedFile(o.file, retention.MaxOffsetJSONBytes)
			if err != nil {
				return exitcode.UsageErr(err)
			}
			targets, err := retention.ParseOffsetJSON(data)
			if err != nil {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s: %w", o.file, err), "see 'nereusctl delete-records --help' for the format")
			}
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			nowMs := now.UnixMilli()
			var confirmed fullTrims
			if !o.dryRun && !o.yes {
				// Plan every partition first: trims that remove every
				// record are confirmed (or refused) before any is done.
				var full []string
				for _, t := range targets {
					off := t.Offset
					r := retention.RunPartition(ctx, st, retention.Request{TP: t.TP, DeleteRecords: &off, NowMs: nowMs, Clock: clock, PlanOnly: true})
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if r.RemovesEverything() {
						full = append(full, fmt.Sprintf("%s-%d (log start %d -> HW %d)", r.Topic, r.Partition, r.CurrentLogStart, r.HW))
					}
				}
				if confirmed, err = confirmFull(g, "delete-records", full); err != nil {
					return err
				}
			}
			var rs []*retention.Result
			for _, t := range targets {
				off := t.Offset
				req := retention.Request{TP: t.TP, DeleteRecords: &off, NowMs: nowMs, Clock: clock, DryRun: o.dryRun, Hooks: crashHooks()}
				if confirmed != nil {
					req.ConfirmFull = confirmed.check
				}
				rs = append(rs, retention.RunPartition(ctx, st, req))
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			return renderTrimResults(g, o.dryRun, rs, true)
		},
	}
	c.Flags().StringVar(&o.file, "offset-json-file", "", "Kafka's delete-records JSON file")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the outcome per partition; write nothing")
	c.Flags().BoolVar(&o.yes, "yes", false, "trim partitions whose every record goes (offset -1 or the HW) without asking")
	o.clock.add(c, true)
	return c
}
