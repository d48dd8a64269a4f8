package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/retention"
)

type deleteRecordsOptions struct {
	file   string
	dryRun bool
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
line per partition; -o json gives the trim contract.` + exitStatusHelp("1 when any partition reports an error", "2 for a malformed JSON file or a duplicate partition (nothing is changed)"),
		Example: `  nereusctl delete-records --offset-json-file offsets.json --dry-run
  nereusctl delete-records --offset-json-file offsets.json -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.file == "" {
				return exitcode.UsageErr(fmt.Errorf("--offset-json-file is required"))
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
			var rs []*retention.Result
			for _, t := range targets {
				off := t.Offset
				rs = append(rs, retention.RunPartition(ctx, st, retention.Request{TP: t.TP, DeleteRecords: &off, NowMs: time.Now().UnixMilli(), DryRun: o.dryRun, Hooks: crashHooks()}))
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			return renderTrimResults(g, o.dryRun, rs, true)
		},
	}
	c.Flags().StringVar(&o.file, "offset-json-file", "", "Kafka's delete-records JSON file")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the outcome per partition; write nothing")
	return c
}
