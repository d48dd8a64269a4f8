package cmd

import "github.com/nereusctl/nereusctl/internal/retention"

// CrashHooks, when set, supplies the hooks of the durable trim sequence
// (trim, delete-records, retention run). It is a test-only seam: the crash
// harness (crash_test.go, compiled into the test binary only) sets it to
// stop the process after a chosen step, as a kill -9 would. The released
// binary never sets it, so no flag or environment variable can make
// nereusctl stop in the middle of a sequence.
var CrashHooks func() retention.Hooks

func crashHooks() retention.Hooks {
	if CrashHooks == nil {
		return retention.Hooks{}
	}
	return CrashHooks()
}
