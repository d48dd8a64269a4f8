package cmd

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/store"
)

type leaseBreakOptions struct {
	name string // --name: a job lease by name
}

// leaseBreakJSON is lease break's -o json document (docs/json-output.md):
// the lease as judged, whether it was broken, and the audit fields.
type leaseBreakJSON struct {
	SchemaVersion int         `json:"schema_version"`
	Lease         *lease.Info `json:"lease"`
	Broken        bool        `json:"broken"`
	BrokenBy      string      `json:"broken_by"`
	BrokenAtMs    int64       `json:"broken_at_ms"`
}

func (o *leaseBreakOptions) addFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.name, "name", "", "break the lease of this name (leases/NAME.json: a job lease) instead of a partition's")
}

func (o *leaseBreakOptions) validate(args []string) (string, error) {
	switch {
	case o.name != "" && len(args) > 0:
		return "", exitcode.UsageErr(errors.New("lease break: give TOPIC-PARTITION or --name, not both"))
	case o.name != "":
		if strings.HasPrefix(o.name, "/") || strings.HasSuffix(o.name, "/") {
			return "", exitcode.UsageErr(fmt.Errorf("lease break --name %q: want a lease name such as partitions/orders/0", o.name))
		}
		if err := store.ValidateKey(layout.LeaseKey(o.name)); err != nil {
			return "", exitcode.UsageErr(fmt.Errorf("lease break --name %q: %w", o.name, err))
		}
		return o.name, nil
	case len(args) != 1:
		return "", exitcode.UsageErr(errors.New("lease break: want one TOPIC-PARTITION (or --name NAME)"))
	}
	tp, err := layout.ParseTopicPartition(args[0])
	if err != nil {
		return "", exitcode.UsageErr(fmt.Errorf("lease break %s: %w", args[0], err))
	}
	return lease.PartitionName(tp), nil
}

func newLeaseBreakCmd(g *globals) *cobra.Command {
	o := &leaseBreakOptions{}
	c := &cobra.Command{
		Use:   "break (TOPIC-PARTITION | --name NAME)",
		Short: "Remove a partition's lease that no live job holds: expired, dead or corrupt",
		Long: `Remove the partition's lease when no live job holds it:
an expired lease, one whose holder was a process of this host that no
longer exists, or a lease document that does not decode (which otherwise
blocks the partition for good). A live lease is refused (exit 4, naming its
holder and expiry): stop that job, or wait for its expiry. The delete is
guarded by the ETag of the document judged (If-Match), so a lease renewed
or taken over meanwhile is never broken.

Each break leaves an audit line on stderr (and in the log at warn level):
the lease, its state, the holder it named, and who broke it when; under
-o json the same fields are in the document. Breaking a lease that is
already gone is a no-op (exit 0).` + exitStatusHelp("4 when a live job holds the lease (nothing is changed)"),
		Example: "  nereusctl lease break orders-0\n  nereusctl lease break orders-0 -o json",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := o.validate(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			now := time.Now()
			in, err := lease.Break(ctx, st, name, now)
			if errors.Is(err, lease.ErrLive) {
				return exitcode.BlockedErr(err, "a live job holds this lease: let it finish, or stop it and break the lease once it has expired (docs/runbooks/leases.md)")
			}
			if err != nil {
				return err
			}
			return renderLeaseBreak(g, name, in, now)
		},
	}
	o.addFlags(c)
	return c
}

// renderLeaseBreak prints the outcome and, for a lease broken, the audit
// line (stderr and the log, whatever the output format).
func renderLeaseBreak(g *globals, name string, in *lease.Info, now time.Time) error {
	by := breaker()
	if in != nil {
		g.log.Warn("lease broken", "lease", in.Name, "key", in.Key, "state", in.State, "holder", in.Holder, "expires_ms", in.ExpiresMs, "detail", in.Detail, "broken_by", by, "broken_at", now.UTC().Format(time.RFC3339))
		fmt.Fprintf(g.stderr, "nereusctl: audit: lease %s (%s, holder %q, expires %s) broken by %s at %s\n",
			in.Key, in.State, in.Holder, expiryText(in.ExpiresMs), by, now.UTC().Format(time.RFC3339))
	}
	if g.json() {
		doc := leaseBreakJSON{SchemaVersion: SchemaVersion, Lease: in, Broken: in != nil, BrokenBy: by, BrokenAtMs: now.UnixMilli()}
		if in == nil {
			doc.Lease = &lease.Info{Name: name, Key: layout.LeaseKey(name), State: "absent"}
			if tp, ok := lease.PartitionOf(name); ok {
				doc.Lease.Partition = tp.String()
			}
		}
		return writeJSON(g.stdout, doc)
	}
	if in == nil {
		_, err := fmt.Fprintf(g.stdout, "lease break: no lease %s: %s\n", layout.LeaseKey(name), errNoLease)
		return err
	}
	_, err := fmt.Fprintf(g.stdout, "lease break: broke %s (%s)\n", in.Key, in.State)
	return err
}

func expiryText(ms int64) string {
	if ms == 0 {
		return "unknown"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

// breaker names who broke a lease: this process as a lease holder would
// name it, and the operator's login.
func breaker() string {
	who := os.Getenv("USER")
	if who == "" {
		who = fmt.Sprint(os.Getuid())
	}
	return fmt.Sprintf("%s (user %s)", lease.Holder(), who)
}
