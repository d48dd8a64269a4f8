package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
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
			digests := memberDigests(cmd.Context(), st, recs)
			repairs := quarantineRepairs(recs, digests)
			if g.json() {
				if err := writeJSON(g.stdout, quarantineListJSON{SchemaVersion: SchemaVersion, Records: recs, Errors: bad, Repairs: repairs}); err != nil {
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
						rows = append(rows, []string{fmt.Sprintf("%s-%d", q.Topic, q.Partition), set, fmt.Sprint(f.Gen), f.Object, f.Check, f.Expected, f.Found, when, dash(digests[f.Object], "")})
						if g.wide() {
							rows[len(rows)-1] = append(rows[len(rows)-1], q.StreamID, dash(f.Detail, ""))
						}
					}
				}
				for _, f := range bad {
					rows = append(rows, []string{"-", "-", "-", f.Key, "error: " + f.Error, "", "", "", "-"})
					if g.wide() {
						rows[len(rows)-1] = append(rows[len(rows)-1], "-", "-")
					}
				}
				headers := []string{"PARTITION", "SET", "GEN", "MEMBER", "CHECK", "EXPECTED", "FOUND", "WHEN", "DIGEST"}
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
				for _, q := range recs {
					for _, f := range q.Findings {
						if _, err := layout.ParseGenerationKey(f.Object); err == nil && digests[f.Object] == "" {
							fmt.Fprintf(g.stdout, "%s-%d: the manifest %s is damaged: restore it from a replica first, then repair with one of its members' digests (nereusctl store cat %s | jq -r '.objects[0].sha256'; docs/runbooks/coordinator-blocked.md, \"A damaged manifest\")\n", q.Topic, q.Partition, f.Object, f.Object)
						}
					}
				}
				if len(repairs) > 0 {
					fmt.Fprintf(g.stdout, "\nTo repair, with the bytes from a replica store (or --from-file PATH of a saved copy, or --regenerate), run:\n")
					for _, r := range repairs {
						fmt.Fprintf(g.stdout, "  %s\n", r.Command)
					}
					fmt.Fprintf(g.stdout, "or every damaged member at once: nereusctl repair --all-from REPLICA-URL\n")
				}
			}
			if fails.n > 0 {
				return exitcode.Wrap(exitcode.Worse(fails.code, exitcode.Error), fmt.Errorf("quarantine list: %d of %d records unreadable; first: %w", fails.n, len(recs)+len(bad), fails.first),
					"a record that does not decode is corrupt; restore it from a replica ("+exitcode.RunbookRestore+"), and verify the partition it names")
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
	Repairs       []quarantineRepair     `json:"repairs"`
}

// quarantineRepair is one member object a quarantine record names, with
// the digest 'repair --digest' takes and the command that repairs it.
type quarantineRepair struct {
	Partition string `json:"partition"`
	SetID     string `json:"set_id"`
	Gen       int64  `json:"gen"`
	Object    string `json:"object"`
	Digest    string `json:"digest"`
	Command   string `json:"command"`
}

// memberDigests maps each member object the records name to
// "sha256:HEX", the digest its generation manifest records (what repair
// --digest takes). An object whose manifest cannot be read, or does not
// list it, has none.
func memberDigests(ctx context.Context, st store.Store, recs []layout.Quarantine) map[string]string {
	out := map[string]string{}
	manifests := map[string]*layout.Generation{}
	for _, q := range recs {
		for _, f := range q.Findings {
			if f.Object == "" || out[f.Object] != "" {
				continue
			}
			mk := layout.GenerationKey(q.StreamID, f.Gen)
			g, seen := manifests[mk]
			if !seen {
				g, _, _ = layout.LoadGeneration(ctx, st, q.StreamID, f.Gen)
				manifests[mk] = g
			}
			if g == nil {
				continue
			}
			for _, o := range g.Objects {
				if o.Key == f.Object {
					out[f.Object] = "sha256:" + o.SHA256
				}
			}
		}
	}
	return out
}

// quarantineRepairs lists each member object with a digest once, in the
// records' order, with its repair command.
func quarantineRepairs(recs []layout.Quarantine, digests map[string]string) []quarantineRepair {
	out := []quarantineRepair{}
	seen := map[string]bool{}
	for _, q := range recs {
		tp := fmt.Sprintf("%s-%d", q.Topic, q.Partition)
		for _, f := range q.Findings {
			d := digests[f.Object]
			if d == "" || seen[f.Object] {
				continue
			}
			seen[f.Object] = true
			out = append(out, quarantineRepair{Partition: tp, SetID: q.SetID, Gen: f.Gen, Object: f.Object, Digest: d,
				Command: fmt.Sprintf("nereusctl repair %s --digest %s --from REPLICA-URL", tp, d)})
		}
	}
	return out
}
