package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nereusctl/nereusctl/internal/dumplog"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/retention"
)

// completionShells are the shells `completion` writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

func newCompletionCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script for bash, zsh or fish",
		Long: `Print a shell completion script to stdout. It completes commands, flags,
flag values (-o, --log-level, --decoder, --section, --cleanup-policy,
--topic-config and config set keys, --store schemes) and TOPIC-PARTITION
arguments: the partitions bound in the store named by --store (or
NEREUSCTL_STORE, the config file), listed for at most 2 seconds and at most
1000 names, so a slow or large store never hangs the shell. The script asks
nereusctl itself (the hidden __complete command) what fits, so it stays
right after an upgrade.

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

// Bounds of a TOPIC-PARTITION completion: the store is asked for at most
// completionBudget, and at most completionMax names are offered.
var (
	completionBudget = 2 * time.Second
	completionMax    = 1000
)

// flagValueCompletions are the values completed for the flags of these
// names, on every command that has one; a value ending in = or :// is
// completed without a space after it.
func flagValueCompletions() map[string][]string {
	sections := []string{}
	for id := uint16(1); ; id++ {
		name := nkc1.SectionName(id)
		if _, ok := nkc1.SectionByName(name); !ok || strings.HasPrefix(name, "section-") {
			break
		}
		sections = append(sections, name)
	}
	var keys []string
	for _, k := range retention.TopicConfigKeys() {
		keys = append(keys, k+"=")
	}
	return map[string][]string{
		"output":         outputFormats,
		"log-level":      {"debug", "info", "warn", "error"},
		"decoder":        {string(dumplog.DecoderOffsets), string(dumplog.DecoderTxn)},
		"section":        sections,
		"cleanup-policy": {"delete", "compact", "compact,delete"},
		"topic-config":   keys,
		"store":          {"file://", "s3://", "mem://"},
	}
}

// registerCompletions gives every command of the tree its completions:
// the flag values above, and TOPIC-PARTITION arguments from the store.
func registerCompletions(root *cobra.Command, g *globals) {
	values := flagValueCompletions()
	register := func(c *cobra.Command, fs *pflag.FlagSet) {
		fs.VisitAll(func(fl *pflag.Flag) {
			vals, ok := values[fl.Name]
			if !ok {
				return
			}
			_ = c.RegisterFlagCompletionFunc(fl.Name, staticCompletion(vals))
		})
	}
	register(root, root.PersistentFlags())
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root {
			register(c, c.LocalNonPersistentFlags())
		}
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
			switch {
			case strings.Contains(c.Use, "TOPIC[-PARTITION]"):
				c.ValidArgsFunction = g.completePartitions(true, c.Name() == "set")
			case strings.Contains(c.Use, "TOPIC-PARTITION..."):
				c.ValidArgsFunction = g.completePartitions(false, false)
			case strings.Contains(c.Use, "TOPIC-PARTITION"):
				c.ValidArgsFunction = g.completeOnePartition()
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// staticCompletion completes one of vals.
func staticCompletion(vals []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		noSpace := false
		for _, v := range vals {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
				noSpace = noSpace || strings.HasSuffix(v, "=") || strings.HasSuffix(v, "://")
			}
		}
		d := cobra.ShellCompDirectiveNoFileComp
		if noSpace {
			d |= cobra.ShellCompDirectiveNoSpace
		}
		return out, d
	}
}

// completeOnePartition completes the one TOPIC-PARTITION a command takes.
func (g *globals) completeOnePartition() cobra.CompletionFunc {
	many := g.completePartitions(false, false)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return many(cmd, args, toComplete)
	}
}

// completePartitions completes TOPIC-PARTITION arguments (not those given
// already) from the store's bindings; with topics, topic names too (config
// get/set), and with keys, config set's KEY= after the first argument.
func (g *globals) completePartitions(topics, keys bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if keys && len(args) > 0 {
			return staticCompletion(flagValueCompletions()["topic-config"])(cmd, args, toComplete)
		}
		if topics && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, err := g.bindingNames(cmd, toComplete, topics)
		if err != nil {
			cobra.CompDebugln("complete partitions: "+err.Error(), true)
			return nil, cobra.ShellCompDirectiveError
		}
		given := map[string]bool{}
		for _, a := range args {
			given[a] = true
		}
		out := make([]cobra.Completion, 0, len(names))
		for _, n := range names {
			if !given[n] {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// bindingNames lists the partitions (and with topics, the topics) bound in
// the configured store whose names start with prefix: at most
// completionMax, within completionBudget. It logs nothing (the shell's
// line is no place for it) and never creates the store.
func (g *globals) bindingNames(cmd *cobra.Command, prefix string, topics bool) ([]string, error) {
	// The root's hook resolved the configuration for __complete itself,
	// which parses no flags: resolved again, with the flags of the line
	// being completed (--store).
	if err := g.resolve(cmd); err != nil {
		return nil, err
	}
	g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(cmd.Context(), completionBudget)
	defer cancel()
	st, err := g.store(ctx)
	if err != nil {
		return nil, err
	}
	// Every binding whose name starts with prefix lies under the topics
	// that start with prefix's part before its first '-'.
	keyPrefix := layout.BindingsPrefix
	if i := strings.IndexByte(prefix, '-'); i >= 0 {
		keyPrefix += prefix[:i]
	} else {
		keyPrefix += prefix
	}
	infos, err := st.List(ctx, keyPrefix)
	if err != nil {
		return nil, err
	}
	var tps []layout.TopicPartition
	seen := map[string]bool{}
	var out []string
	for _, in := range infos {
		t, p, err := layout.ParseBindingKey(in.Key)
		if err != nil {
			continue
		}
		tp := layout.TopicPartition{Topic: t, Partition: p}
		if strings.HasPrefix(tp.String(), prefix) {
			tps = append(tps, tp)
		}
		if topics && !seen[t] && strings.HasPrefix(t, prefix) {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	for _, tp := range tps {
		out = append(out, tp.String())
	}
	if len(out) > completionMax {
		out = out[:completionMax]
	}
	return out, nil
}
