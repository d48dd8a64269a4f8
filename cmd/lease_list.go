package cmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/lease"
)

// leaseListJSON is lease list's -o json document (docs/json-output.md).
type leaseListJSON struct {
	SchemaVersion int           `json:"schema_version"`
	NowMs         int64         `json:"now_ms"`
	Leases        []*lease.Info `json:"leases"`
}

func newLeaseListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every lease: its partition, holder, expiry and state (live, expired, dead, corrupt)",
		Long: `List every lease under leases/ with its holder, acquisition and expiry
times and its state, judged by this host's clock:
  live     not expired: a job holds it (never broken)
  expired  past its expiry: the next job takes it over by itself
  dead     its holder was a process of this host, PID namespace and boot
           that no longer exists: the next job takes it over at once
  corrupt  the document does not decode: it blocks every job on that
           partition until 'nereusctl lease break' removes it
The list writes nothing.` + exitStatusHelp("3 when a lease document is corrupt (it is listed)"),
		Example: "  nereusctl lease list\n  nereusctl lease list -o json",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			now := time.Now()
			ls, err := lease.List(ctx, st, now)
			if err != nil {
				return err
			}
			if err := renderLeaseList(g, now, ls); err != nil {
				return err
			}
			var corrupt []string
			for _, in := range ls {
				if in.State == lease.StateCorrupt {
					corrupt = append(corrupt, in.Key)
				}
			}
			if len(corrupt) > 0 {
				return exitcode.Wrap(exitcode.Verify, fmt.Errorf("lease list: %d lease documents do not decode; first: %s", len(corrupt), corrupt[0]),
					"break each with 'nereusctl lease break TOPIC-PARTITION' (docs/runbooks/leases.md)")
			}
			return nil
		},
	}
}

func renderLeaseList(g *globals, now time.Time, ls []*lease.Info) error {
	if g.json() {
		return writeJSON(g.stdout, leaseListJSON{SchemaVersion: SchemaVersion, NowMs: now.UnixMilli(), Leases: ls})
	}
	if len(ls) == 0 {
		_, err := fmt.Fprintln(g.stdout, "lease list: no leases held")
		return err
	}
	rows := make([][]string, 0, len(ls))
	for _, in := range ls {
		expires, left := "-", "-"
		if in.ExpiresMs != 0 {
			t := time.UnixMilli(in.ExpiresMs)
			expires = t.UTC().Format(time.RFC3339)
			left = t.Sub(now).Round(time.Second).String()
		}
		holder := dash(in.Holder, "")
		if in.State == lease.StateCorrupt {
			holder = in.Detail
		}
		rows = append(rows, []string{dash(in.Partition, ""), in.Name, in.State, holder, expires, left})
	}
	return writeTable(g.stdout, []string{"PARTITION", "LEASE", "STATE", "HOLDER", "EXPIRES", "LEFT"}, rows)
}

// errNoLease: lease break found nothing to break.
var errNoLease = errors.New("no lease")
