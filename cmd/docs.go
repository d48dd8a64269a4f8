package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/nereusctl/nereusctl/internal/exitcode"
)

// The generated reference lives in DIR/cli (Markdown) and DIR/man (man
// pages, section 1). Only files matching these patterns are generated, so
// only they are replaced.
const (
	docsCLISubdir = "cli"
	docsManSubdir = "man"
	docsMDGlob    = "nereusctl*.md"
	docsManGlob   = "nereusctl*.1"
)

// manDate is the date in every man page's .TH line. It is fixed so that
// regenerating gives identical files (cobra would use the current month);
// move it forward when the command surface changes a lot.
var manDate = time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)

func newGenDocsCmd(g *globals) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "gen-docs [--dir DIR]",
		Short: "Write the CLI reference (Markdown) and the man pages from the command tree",
		Long: `Generate the command reference from the real command tree with cobra/doc:
one Markdown page per command in DIR/cli and one man page (section 1) per
command in DIR/man. Earlier generated files there (nereusctl*.md,
nereusctl*.1) are replaced; nothing else is touched. The output carries no
date or time of generation, so a rerun gives identical files: CI checks the
committed docs with 'go test ./cmd/' and scripts/check-docs.sh.

This command is for maintainers and release builds; it is hidden from help.` + exitStatusHelp(),
		Example: `  nereusctl gen-docs --dir docs
  go run . gen-docs --dir dist-extras`,
		Hidden: true,
		Args:   exactArgs(0),
		// No config, store or logger needed.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := genDocs(dir)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "gen-docs: wrote %d files to %s and %s\n", n,
				filepath.Join(dir, docsCLISubdir), filepath.Join(dir, docsManSubdir))
			return err
		},
	}
	c.Flags().StringVar(&dir, "dir", "docs", "folder to write cli/ and man/ into")
	return c
}

// docsTree builds a fresh command tree for documentation: the same
// constructors Execute uses, with no auto-generated date tags. markdown
// selects how the long help's indented blocks and EXIT STATUS are marked up.
func docsTree(markdown bool) *cobra.Command {
	root := newRootCmd(&globals{stdout: io.Discard, stderr: io.Discard})
	walkCommands(root, func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		c.Long = markupLong(c.Long, markdown)
		if !markdown {
			// the man page writes --flag=DEFAULT for every flag: a
			// required flag shows what to give instead of a default
			c.Flags().VisitAll(func(fl *pflag.Flag) {
				if p := fl.Annotations[flagPlaceholder]; len(p) == 1 {
					fl.DefValue = p[0]
				}
			})
		}
	})
	return root
}

// flagPlaceholder annotates a required flag (it has no default) with what
// its man page shows after --flag= (trim --to=OFFSET).
const flagPlaceholder = "nereusctl/placeholder"

// walkCommands calls fn on c and every command below it.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, fn)
	}
}

// genDocs writes DIR/cli/*.md and DIR/man/*.1 and returns how many files it
// wrote.
func genDocs(dir string) (int, error) {
	cliDir := filepath.Join(dir, docsCLISubdir)
	manDir := filepath.Join(dir, docsManSubdir)
	for _, d := range []struct{ dir, glob string }{{cliDir, docsMDGlob}, {manDir, docsManGlob}} {
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return 0, fmt.Errorf("gen-docs: %w", err)
		}
		old, err := filepath.Glob(filepath.Join(d.dir, d.glob))
		if err != nil {
			return 0, fmt.Errorf("gen-docs: %w", err)
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return 0, fmt.Errorf("gen-docs: remove stale %s: %w", f, err)
			}
		}
	}
	if err := doc.GenMarkdownTree(docsTree(true), cliDir); err != nil {
		return 0, exitcode.Wrap(exitcode.Error, fmt.Errorf("gen-docs: markdown into %s: %w", cliDir, err), "")
	}
	header := &doc.GenManHeader{Section: "1", Date: &manDate, Source: "nereusctl", Manual: "nereusctl manual"}
	if err := doc.GenManTree(docsTree(false), header, manDir); err != nil {
		return 0, fmt.Errorf("gen-docs: man pages into %s: %w", manDir, err)
	}
	n := 0
	for _, d := range []struct{ dir, glob string }{{cliDir, docsMDGlob}, {manDir, docsManGlob}} {
		fs, err := filepath.Glob(filepath.Join(d.dir, d.glob))
		if err != nil {
			return 0, err
		}
		n += len(fs)
	}
	return n, nil
}

// markupLong turns a command's long help, written for a terminal, into
// Markdown that renders the same: runs of indented lines (tables, JSON,
// shell lines) become fenced blocks instead of being reflowed, '<' and '>'
// in prose are escaped, and the EXIT STATUS heading becomes a heading (a
// man page section of its own when markdown is false).
func markupLong(long string, markdown bool) string {
	if long == "" {
		return long
	}
	lines := strings.Split(long, "\n")
	var b strings.Builder
	inBlock := false
	closeBlock := func(blankAfter bool) {
		if inBlock {
			b.WriteString("```\n")
			if blankAfter {
				b.WriteString("\n")
			}
			inBlock = false
		}
	}
	for _, l := range lines {
		indented := strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "\t")
		switch {
		case indented:
			if !inBlock {
				if out := b.String(); out != "" && !strings.HasSuffix(out, "\n\n") {
					b.WriteString("\n")
				}
				b.WriteString("```\n")
				inBlock = true
			}
			b.WriteString(l + "\n")
		case l == "EXIT STATUS":
			closeBlock(true)
			if markdown {
				b.WriteString("#### EXIT STATUS\n\n")
			} else {
				b.WriteString("# EXIT STATUS\n")
			}
		default:
			closeBlock(l != "")
			l = strings.NewReplacer("<", `\<`, ">", `\>`).Replace(l)
			b.WriteString(l + "\n")
		}
	}
	closeBlock(false)
	return strings.TrimRight(b.String(), "\n")
}
