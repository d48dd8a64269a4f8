package cmd

import (
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
)

// CrashHooks, when set, supplies the hooks of the durable trim sequence
// (trim, delete-records, retention run). It is a test-only seam: the crash
// harness (e2e/crash_test.go, compiled into the test binary only) sets it to
// stop the process after a chosen step, as a kill -9 would. The released
// binary never sets it, so no flag or environment variable can make
// nereusctl stop in the middle of a sequence.
var CrashHooks func() retention.Hooks

// CompactHooks is the same test-only seam for compaction: the function it
// returns is called after each compaction step (compaction.StepWritten is
// "every view object PUT and verified, nothing published yet"). The
// released binary never sets it.
var CompactHooks func() func(step string) error

// GCHooks is the same test-only seam for gc: the function it returns is
// called once a partition's garbage is decided, before it is deleted
// (retention.GCOptions.Decided). The released binary never sets it.
var GCHooks func() func(tp layout.TopicPartition)

func gcHooks() func(tp layout.TopicPartition) {
	if GCHooks == nil {
		return nil
	}
	return GCHooks()
}

func crashHooks() retention.Hooks {
	if CrashHooks == nil {
		return retention.Hooks{}
	}
	return CrashHooks()
}

func compactHooks() func(step string) error {
	if CompactHooks == nil {
		return nil
	}
	return CompactHooks()
}
