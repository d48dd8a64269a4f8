package health_test

import (
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/health"
)

// Every kind of finding gets the hint of its case: the kinds of one group
// share a hint, two groups never do, and each hint names its runbook and
// what it is about.
func TestHintForEachKind(t *testing.T) {
	type kind struct{ scope, check string }
	groups := []struct {
		name    string
		kinds   []kind
		runbook string
		says    string
	}{
		{"damaged compacted set", []kind{{"compacted-coverage", "set-identity"}, {"compacted-coverage", "manifest"}, {"compacted-coverage", "coverage-gap"}, {"compacted-coverage", "size"}, {"compacted-coverage", "etag"}, {"compacted-coverage", "sha256"}, {"compacted-coverage", "crc"}, {"compacted-coverage", "structure"}, {"compacted-coverage", "kind"}, {"compacted-coverage", "head"}}, health.RunbookBlocked, "compacted set is damaged"},
		{"generation manifest", []kind{{"committed", "manifest"}, {"committed", "kind"}, {"committed", "committed-gap"}, {"stream", "kind"}}, health.RunbookRestore, "generation manifest"},
		{"committed objects", []kind{{"committed", "head"}, {"committed", "size"}, {"committed", "etag"}, {"committed", "sha256"}, {"committed", "crc"}, {"committed", "structure"}, {"open-segment", "head"}, {"open-segment", "size"}}, health.RunbookRestore, "committed objects"},
		{"open segment chain", []kind{{"open-segment", "chain"}}, health.RunbookRestore, "open segment"},
		{"binding document", []kind{{"binding", "binding"}}, health.RunbookRestore, "binding document"},
		{"stream head", []kind{{"stream", "stream-head"}, {"stream", "head"}}, health.RunbookRestore, "stream head is missing"},
		{"damaged checkpoint", []kind{{"checkpoint", "checkpoint:structure"}, {"checkpoint", "checkpoint:decode"}, {"checkpoint", "checkpoint:root"}, {"checkpoint", "checkpoint:size"}, {"checkpoint", "checkpoint:etag"}, {"checkpoint", "checkpoint:crc"}, {"checkpoint", "checkpoint:object"}, {"checkpoint", "checkpoint:get"}}, health.RunbookSlowRestart, "damaged checkpoint"},
		{"checkpoint reference", []kind{{"checkpoint", "checkpoint:binding-ref"}}, health.RunbookSlowRestart, "checkpoint_ref"},
		{"checkpoint anchor", []kind{{"checkpoint", "checkpoint:anchor-object"}}, health.RunbookSlowRestart, "anchored on"},
		{"rolled-back head", []kind{{"stream", "beyond-head"}}, health.RunbookUnhealthy, "rolled back"},
		{"invariant", []kind{{"binding", "invariant"}, {"stream", "invariant"}}, health.RunbookUnhealthy, "contradict"},
		{"deleted stream", []kind{{"stream", "deleted-stream"}}, health.RunbookUnhealthy, "recorded as deleted"},
		{"mandatory coverage", []kind{{"compacted-coverage", "mandatory-coverage"}}, health.RunbookBlocked, "mandatory"},
		{"quarantine record", []kind{{"compacted-coverage", "quarantine-record"}, {"store", "quarantine-record"}}, health.RunbookBlocked, "quarantine record"},
		{"orphan stream", []kind{{"store", "orphan-stream"}}, health.RunbookUnhealthy, "no binding references"},
		{"stray key", []kind{{"store", "stray-key"}}, health.RunbookUnhealthy, "no document of its place"},
	}
	owner := map[string]string{}
	for _, g := range groups {
		hint := ""
		for _, k := range g.kinds {
			h := health.HintFor(health.Finding{Scope: k.scope, Check: k.check})
			if hint == "" {
				hint = h
			} else if h != hint {
				t.Errorf("%s/%s: hint %q, want the %s hint %q", k.scope, k.check, h, g.name, hint)
			}
			if !strings.Contains(h, g.runbook) || !strings.Contains(h, g.says) {
				t.Errorf("%s/%s: hint %q, want it to say %q and name %s", k.scope, k.check, h, g.says, g.runbook)
			}
		}
		if o, ok := owner[hint]; ok {
			t.Errorf("%s and %s share the hint %q", o, g.name, hint)
		}
		owner[hint] = g.name
	}
	// Only a damaged compacted set points at quarantine list, and no data
	// finding at the checkpoint runbook.
	for h, g := range owner {
		if strings.Contains(h, "quarantine list") && g != "damaged compacted set" {
			t.Errorf("%s: hint %q points at quarantine list", g, h)
		}
		if strings.Contains(h, health.RunbookSlowRestart) && !strings.Contains(g, "checkpoint") {
			t.Errorf("%s: hint %q points at the checkpoint runbook", g, h)
		}
	}
}

// Hints gives one hint per kind, in order, and says what the run did about
// a damaged compacted set.
func TestHints(t *testing.T) {
	fs := []health.Finding{
		{Scope: "compacted-coverage", Check: "sha256"},
		{Scope: "committed", Check: "manifest"},
		{Scope: "compacted-coverage", Check: "crc"},
		{Scope: "committed", Check: "committed-gap"},
	}
	got := health.Hints(fs, "", map[string]bool{})
	if len(got) != 2 || !strings.Contains(got[0], "compacted set is damaged") || !strings.Contains(got[1], "generation manifest") {
		t.Fatalf("Hints = %q, want the coverage hint then the manifest hint", got)
	}
	ro := health.Hints(fs[:1], health.HintCoverageReadOnly, map[string]bool{})
	if len(ro) != 1 || ro[0] != health.HintCoverageReadOnly || strings.Contains(ro[0], "quarantined now") {
		t.Fatalf("read-only Hints = %q", ro)
	}
	seen := map[string]bool{}
	health.Hints(fs, "", seen)
	if again := health.Hints(fs, "", seen); len(again) != 0 {
		t.Fatalf("Hints repeated %q already given", again)
	}
}
