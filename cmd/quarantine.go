package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/verify"
)

func newQuarantineCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "quarantine",
		Short:   "Quarantined compacted sets: list them",
		Long:    "Quarantine records say which compacted generation set failed which check; their partitions' coordinators are blocked until repair." + exitStatusHelp(),
		Example: "  nereusctl quarantine list\n  nereusctl quarantine list -o json",
	}
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List every quarantine record: set, member, failed check, expected and found digest, when",
		Long: `List every open quarantine record (archived ones, kept under
quarantine/archive/ after a repair, are not listed).` + exitStatusHelp(),
		Example: "  nereusctl quarantine list",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			recs, err := verify.Records(ctx, st)
			if err != nil {
				return err
			}
			if g.json() {
				return writeJSON(g.stdout, map[string]any{"schema_version": SchemaVersion, "records": nonNil(recs)})
			}
			rows := [][]string{}
			for _, q := range recs {
				when := time.UnixMilli(q.CreatedMs).UTC().Format(time.RFC3339)
				for _, f := range q.Findings {
					rows = append(rows, []string{fmt.Sprintf("%s-%d", q.Topic, q.Partition), q.SetID[:16], fmt.Sprint(f.Gen), f.Object, f.Check, f.Expected, f.Found, when})
				}
			}
			if err := writeTable(g.stdout, []string{"PARTITION", "SET", "GEN", "MEMBER", "CHECK", "EXPECTED", "FOUND", "WHEN"}, rows); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%d quarantine records\n", len(recs))
			return nil
		},
	})
	return c
}
