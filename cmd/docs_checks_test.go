package cmd

import (
	"os"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/recovery"
)

// Every check a finding can name is in docs/json-output.md: the health
// checks, and each checkpoint check as verify names it (checkpoint:CHECK).
func TestJSONOutputNamesEveryCheck(t *testing.T) {
	doc, err := os.ReadFile("../docs/json-output.md")
	if err != nil {
		t.Fatal(err)
	}
	checks := []string{
		health.CheckSetIdentity, health.CheckManifest, health.CheckCoverageGap, health.CheckHead,
		health.CheckSize, health.CheckETag, health.CheckSHA256, health.CheckCRC, health.CheckStructure,
		health.CheckBinding, health.CheckStreamHead, health.CheckKind, health.CheckCommittedGap,
		health.CheckBeyondHead, health.CheckChain, health.CheckInvariant, health.CheckMandatoryCoverage,
		health.CheckQuarantineRecord, health.CheckOrphanStream, health.CheckStrayKey, health.CheckDeletedStream,
	}
	// checkpoint verify's checks, nkc1's (a section's), and health's for a
	// checkpoint replay skipped over its object check (checkOfReason)
	cp := []string{nkc1.CheckCRC, nkc1.CheckSHA256, "object"}
	for _, c := range []recovery.VerifyCheck{recovery.CheckName, recovery.CheckHead, recovery.CheckGet, recovery.CheckSize, recovery.CheckETag, recovery.CheckStructure, recovery.CheckDecode, recovery.CheckRoot, recovery.CheckBindingRef, recovery.CheckAnchor, recovery.CheckAnchorObject} {
		cp = append(cp, string(c))
	}
	for _, c := range cp {
		checks = append(checks, health.CheckCheckpoint+":"+c)
	}
	for _, c := range checks {
		if !strings.Contains(string(doc), "`"+c+"`") {
			t.Errorf("docs/json-output.md does not name the check `%s`", c)
		}
	}
}

// A required flag shows no default in its man page: trim --to=OFFSET, not
// --to=0 (docs_test keeps the page what gen-docs writes).
func TestManRequiredFlagHasNoDefault(t *testing.T) {
	page, err := os.ReadFile("../docs/man/nereusctl-trim.1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), `\fB--to\fP=0`) || !strings.Contains(string(page), `\fB--to\fP=OFFSET`) {
		t.Errorf("docs/man/nereusctl-trim.1 shows --to with a default; want --to=OFFSET")
	}
}

// Every JSON schema says at its top level that consumers should expect new
// keys (additionalProperties true), as docs/json-output.md promises.
func TestJSONSchemasSayNewKeysMayAppear(t *testing.T) {
	for name, s := range rawJSONSchemas(t) {
		if v, ok := s["additionalProperties"].(bool); !ok || !v {
			t.Errorf("docs/json-schemas/%s.schema.json: want \"additionalProperties\": true at the top level, got %v", name, s["additionalProperties"])
		}
	}
}
