package cmd

import "github.com/spf13/cobra"

func newCheckpointCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "checkpoint",
		Short: "NKC1 recovery checkpoints: list, inspect, verify, create",
		Long: `NKC1 checkpoints hold a partition's derived broker state at an anchor offset
so that a restart replays only the tail. They are immutable and only
accelerate: a checkpoint never changes a head, a trim or coordinator truth.` + exitStatusHelp(),
		Example: `  nereusctl checkpoint list payments-0
  nereusctl checkpoint verify --all
  nereusctl checkpoint create payments-0 --dry-run`,
	}
	c.AddCommand(newCheckpointListCmd(g), newCheckpointInspectCmd(g), newCheckpointVerifyCmd(g), newCheckpointCreateCmd(g))
	return c
}
