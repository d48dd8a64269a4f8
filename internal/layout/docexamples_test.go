package layout

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestLayoutDocExamples: every whole document shown in docs/layout.md
// decodes strictly, digest included, so the examples stay true.
func TestLayoutDocExamples(t *testing.T) {
	raw, err := os.ReadFile("../../docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	kinds := []struct {
		marker string
		fresh  func() interface{ Validate() error }
	}{
		{`"probed_ms"`, func() interface{ Validate() error } { return &StoreProbe{} }},
		{`"topic_id"`, func() interface{ Validate() error } { return &Binding{} }},
		{`"epoch"`, func() interface{ Validate() error } { return &Head{} }},
		{`"kind"`, func() interface{ Validate() error } { return &Generation{} }},
		{`"findings"`, func() interface{ Validate() error } { return &Quarantine{} }},
		{`"targets_sha256"`, func() interface{ Validate() error } { return &RetentionProgress{} }},
		{`"proofs"`, func() interface{ Validate() error } { return &ProofLedger{} }},
		{`"holder"`, func() interface{ Validate() error } { return &Lease{} }},
	}
	seen := 0
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		block := m[1]
		if !strings.HasPrefix(block, "{") {
			continue // a fragment
		}
		found := false
		for _, k := range kinds {
			if strings.Contains(block, k.marker) {
				found = true
				if err := Decode("docs/layout.md example", []byte(block), k.fresh()); err != nil {
					t.Errorf("example %.60q: %v", block, err)
				}
				break
			}
		}
		if !found {
			t.Errorf("example of no known kind: %.60q", block)
		}
		seen++
	}
	if seen != len(kinds) {
		t.Fatalf("%d whole examples, want %d", seen, len(kinds))
	}
}
