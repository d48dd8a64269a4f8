package cmd

import "github.com/spf13/cobra"

// addCommands registers the operation commands on root.
func addCommands(root *cobra.Command, g *globals) {
	root.AddCommand(
		newDemoCmd(g),
		newStatusCmd(g),
		newReplayCmd(g),
		newCheckpointCmd(g),
		newDumpCmd(g),
		newImportCmd(g),
		newTrimCmd(g),
		newDeleteRecordsCmd(g),
		newDeleteBindingCmd(g),
		newRetentionCmd(g),
		newConfigCmd(g),
		newGCCmd(g),
		newCompletionCmd(g),
		newGenDocsCmd(g),
		newCompactCmd(g),
		newVerifyCmd(g),
		newQuarantineCmd(g),
		newRepairCmd(g),
		newLeaseCmd(g),
		newExplainCmd(g),
		newSupportBundleCmd(g),
	)
}
