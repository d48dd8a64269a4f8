package cmd

import (
	"fmt"
	"os"

	"github.com/nereusctl/nereusctl/internal/retention"
)

// crashHooks wires the crash harness: with NEREUSCTL_TEST_CRASH_AFTER=STEP
// the process exits with status 137 (as kill -9 would show) right after the
// trim sequence completes STEP (checkpoint, head, verify, binding). Tests use
// it to stop a real subprocess at every step boundary; it has no effect
// otherwise.
func crashHooks() retention.Hooks {
	step := os.Getenv("NEREUSCTL_TEST_CRASH_AFTER")
	if step == "" {
		return retention.Hooks{}
	}
	return retention.Hooks{After: func(s string) error {
		if s == step {
			fmt.Fprintf(os.Stderr, "nereusctl: test crash after step %s\n", s)
			os.Exit(137)
		}
		return nil
	}}
}
