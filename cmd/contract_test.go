package cmd

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
)

// TestRetentionRunListsPartitionsOnce: retention run -o json lists its
// partitions once, at the top level; summary holds the counts only.
func TestRetentionRunListsPartitionsOnce(t *testing.T) {
	for _, dry := range []bool{true, false} {
		st := demoMem(t)
		args := []string{"retention", "run", "--all", "--yes", "--now", "2027-06-01T00:00:00Z", "-o", "json"}
		if dry {
			args = append(args, "--dry-run")
		}
		out, stderr, err := runWithStore(context.Background(), t, st, args...)
		if err != nil {
			t.Fatalf("retention run (dry run %v): %v\n%s", dry, err, stderr)
		}
		var doc struct {
			Partitions []map[string]any `json:"partitions"`
			Summary    map[string]any   `json:"summary"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		tps, err := layout.ListBindings(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Partitions) != len(tps) || len(tps) == 0 {
			t.Fatalf("dry run %v: %d partitions at the top level, want one per binding: %d", dry, len(doc.Partitions), len(tps))
		}
		keys := make([]string, 0, len(doc.Summary))
		for k := range doc.Summary {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := "dry_run,errors,garbage_bytes,now_ms,progress_file,progress_key,resumed,seconds,trimmed,unchanged"
		if dry {
			want = "dry_run,errors,garbage_bytes,now_ms,resumed,seconds,trimmed,unchanged"
		}
		if got := strings.Join(keys, ","); got != want {
			t.Errorf("dry run %v: summary keys %s, want the counts only: %s", dry, got, want)
		}
		if n := doc.Summary["trimmed"].(float64) + doc.Summary["unchanged"].(float64) + doc.Summary["errors"].(float64); int(n) != len(doc.Partitions) {
			t.Errorf("dry run %v: trimmed+unchanged+errors = %v, %d partitions", dry, n, len(doc.Partitions))
		}
	}
}
