package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the nereusctl version",
		Long:    "Print the version, commit and build date set at release time." + exitStatusHelp(),
		Example: "  nereusctl version\n  nereusctl version -o json",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVersion(g)
		},
	}
}

// runVersion prints the version: `version` and the root's --version.
func runVersion(g *globals) error {
	if g.json() {
		return writeJSON(g.stdout, versionJSON{SchemaVersion: SchemaVersion, Version: Version, Commit: Commit, Date: Date, Go: runtime.Version()})
	}
	_, err := fmt.Fprintf(g.stdout, "nereusctl %s (commit %s, built %s, %s)\n", Version, Commit, Date, runtime.Version())
	return err
}

// versionJSON is the -o json output of version.
type versionJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Version       string `json:"version"`
	Commit        string `json:"commit"`
	Date          string `json:"date"`
	Go            string `json:"go"`
}
