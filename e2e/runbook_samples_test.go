package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestRunbookSamples: a runbook's sample output is today's. Each want file
// of a testscript that checks it against a real run (cmp) must appear in
// the runbook line by line (trailing blanks aside, the lines of an indented
// block unindented).
func TestRunbookSamples(t *testing.T) {
	for _, c := range []struct{ script, runbook string }{
		{"surface_runbook_samples.txtar", "coordinator-blocked.md"},
		{"surface_restore_file.txtar", "restore-from-replica.md"},
	} {
		ar, err := txtar.ParseFile(filepath.Join("..", "testdata", "script", c.script))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := os.ReadFile(filepath.Join("..", "docs", "runbooks", c.runbook))
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(string(doc), "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		wants := 0
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want-") {
				continue
			}
			wants++
			for _, l := range strings.Split(strings.TrimRight(string(f.Data), "\n"), "\n") {
				if !lines[strings.TrimSpace(l)] {
					t.Errorf("docs/runbooks/%s does not show the line of %s (%s), as nereusctl prints it today:\n%s", c.runbook, f.Name, c.script, l)
				}
			}
		}
		if wants == 0 {
			t.Errorf("%s has no want- file", c.script)
		}
	}
}

// The exit tables of retention-did-not-free-space.md cover 3, which
// retention run, gc and checkpoint create give for missing or corrupt data
// (docs/exit-codes.md): the per-code table has a row for it, the
// per-command table a column.
func TestRetentionRunbookExitTables(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "runbooks", "retention-did-not-free-space.md"))
	if err != nil {
		t.Fatal(err)
	}
	row, column := false, false
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| 3 |") {
			row = true
		}
		if strings.HasPrefix(l, "| command |") && strings.Contains(l, "| 3 |") {
			column = true
		}
	}
	if !row || !column {
		t.Errorf("retention-did-not-free-space.md: exit 3 has a row %v, a column %v; want both", row, column)
	}
}
