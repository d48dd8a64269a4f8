package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/cmd"
)

// TestReadmeEverydayCommandsAreSafe: every command of the README's
// "Everyday commands" block, pasted as it is on the demo store, exits 0 and
// leaves the store's documents and objects byte for byte as they were (the
// README says these only read or plan). The two lines that need what a demo
// machine lacks (a Kafka data directory, an S3 endpoint) are the only ones
// left out, by name.
func TestReadmeEverydayCommandsAreSafe(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := everydayCommands(t, string(readme))
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	url := "file://" + storeDir
	inproc(t, url, "demo", "--no-tour", "-q")
	before := treeSums(t, storeDir)
	t.Chdir(dir) // support-bundle writes its file here
	ran, skipped := 0, 0
	for _, line := range lines {
		if strings.Contains(line, "/var/lib/kafka") || strings.Contains(line, "s3://") {
			skipped++
			t.Logf("left out (needs a Kafka data directory or an S3 server): %s", line)
			continue
		}
		var args []string
		for _, f := range strings.Fields(strings.TrimPrefix(line, "nereusctl ")) {
			if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
				continue // an optional flag the README shows as [--flag]
			}
			args = append(args, f)
		}
		var out, errb bytes.Buffer
		if code := cmd.Execute(context.Background(), args, &out, &errb); code != 0 {
			t.Errorf("README line %q: exit %d\n%s%s", line, code, out.String(), errb.String())
		}
		ran++
	}
	if skipped > 2 || ran < 10 {
		t.Fatalf("ran %d README commands, left out %d: the block was not found whole", ran, skipped)
	}
	after := treeSums(t, storeDir)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed or disappeared", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

// everydayCommands returns the nereusctl lines, comments cut, of the first
// sh block under "## Everyday commands".
func everydayCommands(t *testing.T, readme string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "## Everyday commands")
	if !ok {
		t.Fatal(`README.md has no "## Everyday commands" section`)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatal("no sh block under Everyday commands")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the sh block under Everyday commands does not end")
	}
	var out []string
	for _, l := range strings.Split(block, "\n") {
		l, _, _ = strings.Cut(l, " #")
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "nereusctl ") {
			out = append(out, l)
		}
	}
	return out
}
