// Package promtool runs Prometheus's promtool (github.com/prometheus/
// prometheus/cmd/promtool, Version) for tests: `check metrics` on an
// exposition, `check rules` and `test rules` on rule files.
//
// The binary is taken from $PROMTOOL, then PATH, then $(go env
// GOPATH)/bin. When it is missing, tests skip loudly, except under CI (CI
// set and not "false" or "0"), where they fail: .ci/run installs it.
package promtool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Version is the Prometheus release CI installs promtool from.
const Version = "v0.316.0"

// Install is the command that installs promtool.
const Install = "go install github.com/prometheus/prometheus/cmd/promtool@" + Version

// Binary finds the promtool executable.
func Binary() (string, error) {
	if p := os.Getenv("PROMTOOL"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$PROMTOOL=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "promtool")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("promtool not found in $PROMTOOL, PATH or $(go env GOPATH)/bin")
}

func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "false" && v != "0"
}

// Require returns the promtool binary, skipping t loudly without one
// (failing it under CI).
func Require(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if inCI() {
			t.Fatalf("promtool checks must run in CI: %v (install with: %s)", err, Install)
		}
		t.Skipf("SKIPPING PROMTOOL CHECKS: %v; install with: %s", err, Install)
	}
	return bin
}

// Run runs promtool with args and stdin, returning its combined output.
func Run(bin string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// CheckMetrics runs `promtool check metrics` on an exposition in the text
// format: an error with promtool's output when it finds a problem (lint
// warnings included: promtool exits non-zero on them).
func CheckMetrics(bin string, exposition []byte) error {
	out, err := Run(bin, exposition, "check", "metrics")
	if err != nil {
		return fmt.Errorf("promtool check metrics: %w\n%s", err, out)
	}
	return nil
}
