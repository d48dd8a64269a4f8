package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
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
quarantine/archive/ after a repair, are not listed). A record that cannot
be read is listed with its error, never skipped: the exit status is then 3
for a record that does not decode, 1 for another failure.` + exitStatusHelp("3 when a quarantine record is malformed"),
		Example: "  nereusctl quarantine list",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			recs, bad, err := verify.RecordsParallel(ctx, st, g.parallel())
			if err != nil {
				return fmt.Errorf("quarantine list: %w", err)
			}
			var fails failures
			for _, f := range bad {
				fails.add(f.Err())
			}
			if g.json() {
				if err := writeJSON(g.stdout, quarantineListJSON{SchemaVersion: SchemaVersion, Records: recs, Errors: bad}); err != nil {
					return err
				}
			} else {
				rows := [][]string{}
				for _, q := range recs {
					when := time.UnixMilli(q.CreatedMs).UTC().Format(time.RFC3339)
					for _, f := range q.Findings {
						set := q.SetID[:16]
						if g.wide() {
							set = q.SetID
						}
						rows = append(rows, []string{fmt.Sprintf("%s-%d", q.Topic, q.Partition), set, fmt.Sprint(f.Gen), f.Object, f.Check, f.Expected, f.Found, when})
						if g.wide() {
							rows[len(rows)-1] = append(rows[len(rows)-1], q.StreamID, dash(f.Detail, ""))
						}
					}
				}
				for _, f := range bad {
					rows = append(rows, []string{"-", "-", "-", f.Key, "error: " + f.Error, "", "", ""})
					if g.wide() {
						rows[len(rows)-1] = append(rows[len(rows)-1], "-", "-")
					}
				}
				headers := []string{"PARTITION", "SET", "GEN", "MEMBER", "CHECK", "EXPECTED", "FOUND", "WHEN"}
				if g.wide() {
					// the whole set id, the stream, and the finding's detail
					headers = append(headers, "STREAM", "DETAIL")
				}
				if err := writeTable(g.stdout, headers, rows); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "%d quarantine records\n", len(recs))
				if len(bad) > 0 {
					fmt.Fprintf(g.stdout, "%d quarantine records unreadable\n", len(bad))
				}
			}
			if fails.n > 0 {
				return exitcode.Wrap(worse(fails.code, exitcode.Error), fmt.Errorf("quarantine list: %d of %d records unreadable; first: %w", fails.n, len(recs)+len(bad), fails.first),
					"a record that does not decode is corrupt; restore it from a replica, and verify the partition it names")
			}
			return nil
		},
	})
	return c
}

// quarantineListJSON is quarantine list's -o json document
// (docs/json-output.md).
type quarantineListJSON struct {
	SchemaVersion int                    `json:"schema_version"`
	Records       []layout.Quarantine    `json:"records"`
	Errors        []verify.RecordFailure `json:"errors"`
}
