package cmd

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/nereusctl/nereusctl/internal/retention"
)

// crashHooks wires the crash harness: with NEREUSCTL_TEST_CRASH_AFTER=STEP
// the process exits with status 137 (as kill -9 would show) right after the
// trim sequence completes STEP (checkpoint, head, verify, binding). Tests use
// it to stop a real subprocess at every step boundary; it has no effect
// otherwise.
//
// STEP#N crashes at the Nth time the step completes in this process (the
// Nth partition a retention run trims).
func crashHooks() retention.Hooks {
	spec := os.Getenv("NEREUSCTL_TEST_CRASH_AFTER")
	if spec == "" {
		return retention.Hooks{}
	}
	step, nth := spec, 1
	if i := strings.IndexByte(spec, '#'); i >= 0 {
		step = spec[:i]
		if n, err := strconv.Atoi(spec[i+1:]); err == nil && n > 0 {
			nth = n
		}
	}
	seen := 0
	return retention.Hooks{After: func(s string) error {
		if s == step {
			if seen++; seen == nth {
				fmt.Fprintf(os.Stderr, "nereusctl: test crash after step %s (#%d)\n", s, nth)
				os.Exit(137)
			}
		}
		return nil
	}}
}
