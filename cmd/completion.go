package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
)

// completionShells are the shells `completion` writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

func newCompletionCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script for bash, zsh or fish",
		Long: `Print a shell completion script to stdout. It completes commands, flags and
flag values; the script asks nereusctl itself (the hidden __complete
command) what fits, so it stays right after an upgrade.

  bash  needs the bash-completion package (v2). Load it in the current
        shell with 'source <(nereusctl completion bash)', or install it:
        nereusctl completion bash > /etc/bash_completion.d/nereusctl
  zsh   write it as _nereusctl into a folder of your $fpath, and make sure
        'autoload -U compinit; compinit' runs in ~/.zshrc:
        nereusctl completion zsh > "${fpath[1]}/_nereusctl"
  fish  nereusctl completion fish > ~/.config/fish/completions/nereusctl.fish

Release archives ship the three scripts under completions/. The command
reads no configuration and never opens the store.` + exitStatusHelp(),
		Example: `  source <(nereusctl completion bash)
  nereusctl completion zsh > "${fpath[1]}/_nereusctl"
  nereusctl completion fish > ~/.config/fish/completions/nereusctl.fish`,
		ValidArgs: completionShells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exitcode.UsageErr(fmt.Errorf("accepts 1 arg (bash, zsh or fish), received %d", len(args)))
			}
			return nil
		},
		// Completion needs no config, store or logger: a broken config file
		// must not break the shell.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompletion(cmd.Root(), g, args[0])
		},
	}
	return c
}

// runCompletion writes root's completion script for shell to g.stdout.
func runCompletion(root *cobra.Command, g *globals, shell string) error {
	switch shell {
	case "bash":
		return root.GenBashCompletionV2(g.stdout, true)
	case "zsh":
		return root.GenZshCompletion(g.stdout)
	case "fish":
		return root.GenFishCompletion(g.stdout, true)
	}
	return exitcode.UsageErr(fmt.Errorf("completion %q: want bash, zsh or fish", shell))
}
