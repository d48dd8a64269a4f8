package cmd

import (
	"github.com/spf13/cobra"
)

func newLeaseCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "lease",
		Short: "Partition and job leases: list them, break a stuck one",
		Long: `Every command that changes a partition holds its lease,
leases/partitions/<topic>/<p>.json, while it does (docs/design.md,
"Leases"). A holder that dies on another host is waited out until its
lease expires; a lease document that does not decode blocks its partition
until it is broken. 'lease list' shows every lease and its state; 'lease
break' removes an expired, dead or corrupt one (docs/runbooks/leases.md).` + exitStatusHelp(),
		Example: "  nereusctl lease list\n  nereusctl lease break orders-0",
	}
	c.AddCommand(newLeaseListCmd(g), newLeaseBreakCmd(g))
	return c
}
