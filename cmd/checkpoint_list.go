package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
)

func newCheckpointListCmd(g *globals) *cobra.Command {
	sel := &partitionSel{}
	c := &cobra.Command{
		Use:   "list (TOPIC-PARTITION... | --all)",
		Short: "List a partition's checkpoints with anchor, size, root, age and validity",
		Long: `List every checkpoint of a partition, newest anchor first, each checked the
way replay checks it (object, CRCs, root, anchor object digest, binding
reference). The one the binding refers to is marked.

With several partitions or --all, up to --parallel partitions are listed
at once and the output is in partition order whatever finishes first; a
partition whose checkpoints cannot be listed is reported with its error and
the others are still listed (the exit status is the worst over them).` + exitStatusHelp(),
		Example: "  nereusctl checkpoint list payments-0\n  nereusctl checkpoint list payments-0 -o json\n  nereusctl checkpoint list --all --parallel 16",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			if len(args) == 1 && !sel.all {
				// One partition: its document, as it always was.
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
				return writeCheckpointTable(g, entries)
			}
			tps, err := sel.resolve(ctx, st, args)
			if err != nil {
				return err
			}
			parts, err := fleet.Map(ctx, g.parallel(), tps, func(ctx context.Context, _ int, tp layout.TopicPartition) (checkpointListPartition, error) {
				p := checkpointListPartition{Topic: tp.Topic, Partition: tp.Partition, Checkpoints: []recovery.Entry{}}
				b, _, err := loadBinding(ctx, st, tp.String())
				if err == nil {
					var entries []recovery.Entry
					if entries, err = recovery.List(ctx, st, b); err == nil {
						if entries != nil {
							p.Checkpoints = entries
						}
						return p, nil
					}
					err = fmt.Errorf("list checkpoints of %s: %w", tp, err)
				}
				p.err, p.Error = err, err.Error()
				return p, nil
			})
			if err != nil {
				return err
			}
			var fails failures
			for _, p := range parts {
				fails.add(p.err)
			}
			if g.json() {
				if err := writeJSON(g.stdout, checkpointListAllJSON{SchemaVersion: SchemaVersion, Partitions: parts}); err != nil {
					return err
				}
			} else {
				var rows [][]string
				for _, p := range parts {
					name := layout.TopicPartition{Topic: p.Topic, Partition: p.Partition}.String()
					if p.err != nil {
						row := []string{name, "-", "-", "-", "-", "ERROR: " + p.Error, ""}
						if g.wide() {
							row = append(row, "-", "-")
						}
						rows = append(rows, row)
						continue
					}
					rows = append(rows, checkpointRows(name, p.Checkpoints, g.wide())...)
				}
				if err := writeTable(g.stdout, append([]string{"PARTITION"}, checkpointHeaders(g.wide())...), rows); err != nil {
					return err
				}
				fmt.Fprintln(g.stdout, "(* = the binding's checkpoint_ref)")
			}
			return fails.err("checkpoint list", len(parts))
		},
	}
	sel.addFlags(c, false)
	return c
}

// writeCheckpointTable writes one partition's checkpoint table.
func writeCheckpointTable(g *globals, entries []recovery.Entry) error {
	rows := checkpointRows("", entries, g.wide())
	for i := range rows {
		rows[i] = rows[i][1:]
	}
	if err := writeTable(g.stdout, checkpointHeaders(g.wide()), rows); err != nil {
		return err
	}
	if len(entries) > 0 {
		fmt.Fprintln(g.stdout, "(* = the binding's checkpoint_ref)")
	}
	return nil
}

// checkpointHeaders are the checkpoint table's columns; -o wide adds
// when each object was written and why an invalid one is.
func checkpointHeaders(wide bool) []string {
	h := []string{"ANCHOR", "SIZE", "ROOT", "AGE", "STATUS", "KEY"}
	if wide {
		h = append(h, "MODIFIED", "DETAIL")
	}
	return h
}

// checkpointRows are the table rows of entries, each led by name (-o
// wide: the whole root, MODIFIED and DETAIL too).
func checkpointRows(name string, entries []recovery.Entry, wide bool) [][]string {
	rows := make([][]string, 0, len(entries))
	now := time.Now()
	for _, e := range entries {
		valid := "valid"
		if !e.Valid {
			valid = "INVALID: " + string(e.Reason)
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
		if len(root) > 16 && !wide {
			root = root[:16]
		}
		row := []string{name, ref + fmt.Sprint(e.Anchor), fmt.Sprint(e.Size), root, age, valid, e.Key}
		if wide {
			mod := "-"
			if !e.Modified.IsZero() {
				mod = e.Modified.UTC().Format(time.RFC3339)
			}
			row = append(row, mod, dash(e.Detail, ""))
		}
		rows = append(rows, row)
	}
	return rows
}

// checkpointListJSON is checkpoint list's -o json document for one
// partition (docs/json-output.md).
type checkpointListJSON struct {
	SchemaVersion int              `json:"schema_version"`
	Topic         string           `json:"topic"`
	Partition     int32            `json:"partition"`
	Checkpoints   []recovery.Entry `json:"checkpoints"`
}

// checkpointListAllJSON is checkpoint list's -o json document for several
// partitions or --all (docs/json-output.md).
type checkpointListAllJSON struct {
	SchemaVersion int                       `json:"schema_version"`
	Partitions    []checkpointListPartition `json:"partitions"`
}

// checkpointListPartition is one partition of checkpointListAllJSON.
type checkpointListPartition struct {
	Topic       string           `json:"topic"`
	Partition   int32            `json:"partition"`
	Checkpoints []recovery.Entry `json:"checkpoints"`
	// Error is why the partition's checkpoints could not be listed.
	Error string `json:"error,omitempty"`
	err   error
}
