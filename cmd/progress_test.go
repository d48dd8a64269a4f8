package cmd

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
)

// runTTY runs one command line as Execute does, with stderr a buffer that
// the run takes for a terminal when tty is set (the injectable terminal
// test), over st when st is not nil.
func runTTY(t *testing.T, tty bool, st store.Store, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	old := progressThrottle
	progressThrottle = 0 // draw on every step
	t.Cleanup(func() { progressThrottle = old })
	var out, errb bytes.Buffer
	g := &globals{stderr: &errb, stderrTTY: tty}
	if st != nil {
		g.st = st
		args = append(args, "--store", "mem://"+t.Name())
	}
	code = execute(context.Background(), g, args, &out)
	return out.String(), errb.String(), code
}

// etaRe is the bar's [elapsed:left] time estimate.
var etaRe = regexp.MustCompile(`\[\d+(\.\d+)?[a-zµ]*s?:\d+(\.\d+)?[a-zµ]*s?\]`)

func TestProgressDrawsOnStderrTerminal(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		store bool
		total string // the total the bar names
	}{
		{"demo", []string{"--store", "mem://progress-demo", "demo", "--records", "3000", "--no-tour"}, false, "/3000, "},
		{"checkpoint create", []string{"checkpoint", "create", "--all"}, true, "/9, "},
		{"compact", []string{"compact", "--all"}, true, "/5, "},
		{"gc", []string{"gc", "--dry-run"}, true, "/9, "},
		{"verify deep", []string{"verify", "--all", "--deep"}, true, " kB, "},
		{"verify", []string{"verify", "--all"}, true, "/9, "},
		{"import", []string{"--store", "mem://progress-import", "import", "kafka-log", "../testdata/kafka/kafka-2.7-compacted/__consumer_offsets-17"}, false, "/611 B, "},
		{"retention run", []string{"retention", "run", "--all", "--dry-run"}, true, "/9, "},
		{"status", []string{"status"}, true, "/9, "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st store.Store
			if c.store {
				st = demoMem(t)
			}
			out, errOut, code := runTTY(t, true, st, c.args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			if !strings.Contains(errOut, c.total) {
				t.Errorf("stderr has no bar with the total %q:\n%q", c.total, errOut)
			}
			if !etaRe.MatchString(errOut) {
				t.Errorf("stderr has no time left [elapsed:left]:\n%q", errOut)
			}
			if strings.Contains(out, "\r") || etaRe.MatchString(out) {
				t.Errorf("progress drawn on stdout:\n%q", out)
			}
		})
	}
}

func TestProgressNotDrawn(t *testing.T) {
	cases := []struct {
		name string
		tty  bool
		args []string
	}{
		{"stderr not a terminal", false, nil},
		{"json", true, []string{"-o", "json"}},
		{"quiet", true, []string{"-q"}},
		{"no-progress", true, []string{"--no-progress"}},
		{"no-progress from the environment", true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.name, "environment") {
				t.Setenv("NEREUSCTL_NO_PROGRESS", "true")
			}
			for _, command := range [][]string{{"checkpoint", "create", "--all"}, {"status"}} {
				st := demoMem(t)
				args := append(command, c.args...)
				out, errOut, code := runTTY(t, c.tty, st, args...)
				if code != 0 {
					t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", command, code, out, errOut)
				}
				if errOut != "" {
					t.Errorf("%s: stderr not empty:\n%q", command, errOut)
				}
				if strings.Contains(out, "\r") || etaRe.MatchString(out) {
					t.Errorf("%s: progress on stdout:\n%q", command, out)
				}
			}
		})
	}
}

// The progress API: a nil or undrawn bar does nothing; grow gives a bar
// whose total was unknown its total.
func TestProgressGrowGivesTotal(t *testing.T) {
	old := progressThrottle
	progressThrottle = 0
	defer func() { progressThrottle = old }()
	var errb bytes.Buffer
	g := &globals{stderr: &errb, stderrTTY: true}
	p := g.progress("objects", -1)
	p.grow(40)
	p.add(10)
	time.Sleep(time.Millisecond)
	p.add(10)
	if !strings.Contains(errb.String(), "20/40") {
		t.Errorf("no 20/40 after grow(40) and two add(10):\n%q", errb.String())
	}
	p.done()
	p.done()
	var none *progress
	none.add(1)
	none.grow(1)
	none.done()
}
