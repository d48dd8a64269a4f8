package e2e

import (
	"errors"
	"os/exec"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdExitcode is the script command
//
//	exitcode N PROG [ARGS...]
//
// It runs PROG like exec (its stdout and stderr are then checked with the
// stdout and stderr commands as usual) and fails unless PROG exited with
// exactly code N. `! exec` accepts any non-zero code; scripts assert exit
// codes with this instead (docs/exit-codes.md: 2 usage, 3 verification
// failed, 4 blocked are different answers).
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode (name the code you expect)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil || want < 0 {
		ts.Fatalf("exitcode: %q is not an exit code", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: run %s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with code %d, want %d", args[1], got, want)
	}
}
