package cmd

import "github.com/spf13/cobra"

// addCommands registers the operation commands on root.
func addCommands(root *cobra.Command, g *globals) {
	root.AddCommand(
		newDemoCmd(g),
		newStatusCmd(g),
		newReplayCmd(g),
		newCheckpointCmd(g),
	)
}
