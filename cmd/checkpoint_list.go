package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/recovery"
)

func newCheckpointListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list TOPIC-PARTITION",
		Short: "List a partition's checkpoints with anchor, size, root, age and validity",
		Long: `List every checkpoint of a partition, newest anchor first, each checked the
way replay checks it (object, CRCs, root, anchor object digest, binding
reference). The one the binding refers to is marked.` + exitStatusHelp(),
		Example: "  nereusctl checkpoint list payments-0\n  nereusctl checkpoint list payments-0 -o json",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			b, _, err := loadBinding(ctx, st, args[0])
			if err != nil {
				return err
			}
			entries, err := recovery.List(ctx, st, b)
			if err != nil {
				return fmt.Errorf("list checkpoints of %s: %w", b.Name(), err)
			}
			if g.json() {
				if entries == nil {
					entries = []recovery.Entry{}
				}
				return writeJSON(g.stdout, checkpointListJSON{SchemaVersion: SchemaVersion, Topic: b.Topic, Partition: b.Partition, Checkpoints: entries})
			}
			rows := make([][]string, 0, len(entries))
			now := time.Now()
			for _, e := range entries {
				valid := "valid"
				if !e.Valid {
					valid = "INVALID: " + e.Reason
				}
				ref := ""
				if e.Referenced {
					ref = "*"
				}
				age := "-"
				if !e.Modified.IsZero() {
					age = now.Sub(e.Modified).Round(time.Second).String()
				}
				root := e.Root
				if len(root) > 16 && !g.wide() {
					root = root[:16]
				}
				rows = append(rows, []string{ref + fmt.Sprint(e.Anchor), fmt.Sprint(e.Size), root, age, valid, e.Key})
				if g.wide() {
					// the whole root, when the object was written, and why
					// an invalid one is
					mod := "-"
					if !e.Modified.IsZero() {
						mod = e.Modified.UTC().Format(time.RFC3339)
					}
					rows[len(rows)-1] = append(rows[len(rows)-1], mod, dash(e.Detail, ""))
				}
			}
			headers := []string{"ANCHOR", "SIZE", "ROOT", "AGE", "STATUS", "KEY"}
			if g.wide() {
				headers = append(headers, "MODIFIED", "DETAIL")
			}
			if err := writeTable(g.stdout, headers, rows); err != nil {
				return err
			}
			if len(entries) > 0 {
				fmt.Fprintln(g.stdout, "(* = the binding's checkpoint_ref)")
			}
			return nil
		},
	}
}

// checkpointListJSON is checkpoint list's -o json document
// (docs/json-output.md).
type checkpointListJSON struct {
	SchemaVersion int              `json:"schema_version"`
	Topic         string           `json:"topic"`
	Partition     int32            `json:"partition"`
	Checkpoints   []recovery.Entry `json:"checkpoints"`
}
