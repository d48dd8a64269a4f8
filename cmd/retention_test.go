package cmd

import (
	"bytes"
	"context"
	"errors"

	"regexp"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

func demoMem(t *testing.T) *store.Mem {
	t.Helper()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records, o.Partitions = 1500, 2
	if _, err := demo.Run(context.Background(), st, o); err != nil {
		t.Fatal(err)
	}
	return st
}

// cancelAfterTrim cancels the run's context once the trim of orders-0 is
// complete (its binding's observed_log_start moved), as a SIGINT during
// the run would.
type cancelAfterTrim struct {
	store.Store
	cancel context.CancelFunc
}

func (c *cancelAfterTrim) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	info, err := c.Store.Put(ctx, key, data, g)
	if err == nil && key == layout.BindingKey("orders", 0) && !bytes.Contains(data, []byte(`"observed_log_start": 0,`)) {
		c.cancel()
	}
	return info, err
}

// runWithStore runs the root command with a preset store (what g.store
// returns) and the context given.
func runWithStore(ctx context.Context, t *testing.T, st store.Store, args ...string) (string, string, error) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var out, errb bytes.Buffer
	g := &globals{stdout: &out, stderr: &errb}
	root := newRootCmd(g)
	root.SetArgs(append(args, "--store", "mem://"+t.Name()))
	root.SetOut(&out)
	root.SetErr(&errb)
	g.st = st
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// TestRetentionRunInterruptedPrintsPartial: SIGINT/SIGTERM during a run
// exits 130 and prints the partitions done so far.
func TestRetentionRunInterruptedPrintsPartial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &cancelAfterTrim{Store: demoMem(t), cancel: cancel}
	// One partition at a time: the interrupt lands between partitions.
	out, _, err := runWithStore(ctx, t, st, "retention", "run", "--all", "--yes", "--now", "2027-06-01T00:00:00Z", "--parallel", "1")
	if code := exitcode.Of(err); code != exitcode.Interrupted || !errors.Is(err, context.Canceled) {
		t.Fatalf("exit %d (%v), want 130", code, err)
	}
	if !regexp.MustCompile(`(?m)^orders-0 +0 +\d+ +\d+ +\d+ +trimmed`).MatchString(out) {
		t.Fatalf("the partition trimmed before the interrupt is not in the table:\n%s", out)
	}
	if strings.Contains(out, "orders-1 ") {
		t.Fatalf("a partition not done is in the table:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^retention run: interrupted: 6 partitions done: 1 trimmed, 5 unchanged, 0 errors`).MatchString(out) {
		t.Fatalf("no interrupted summary:\n%s", out)
	}
}

// TestFullTrimPromptsOnTerminal: with a terminal on stdin a trim that
// removes every record asks; y trims, anything else refuses (exit 2).
func TestFullTrimPromptsOnTerminal(t *testing.T) {
	oldTTY, oldIn := stdinIsTerminal, confirmIn
	t.Cleanup(func() { stdinIsTerminal, confirmIn = oldTTY, oldIn })
	stdinIsTerminal = func() bool { return true }
	ctx := context.Background()
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	for _, answer := range []string{"n\n", "", "yes please\n"} {
		st := demoMem(t)
		confirmIn = strings.NewReader(answer)
		_, stderr, err := runWithStore(ctx, t, st, "trim", "orders-0", "--to", "-1")
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(stderr, "Remove them? [y/N] ") {
			t.Fatalf("answer %q: exit %d (%v), stderr %q", answer, exitcode.Of(err), err, stderr)
		}
		if b, _, _ := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition); b.ObservedLogStart != 0 {
			t.Fatalf("answer %q: trimmed anyway", answer)
		}
	}
	st := demoMem(t)
	confirmIn = strings.NewReader("y\n")
	out, stderr, err := runWithStore(ctx, t, st, "trim", "orders-0", "--to", "-1")
	if err != nil || !strings.Contains(stderr, "trim would remove EVERY record of 1 partition(s): orders-0 (log start 0 -> HW ") {
		t.Fatalf("y: %v, stderr %q", err, stderr)
	}
	if !regexp.MustCompile(`(?m)^orders-0: trimmed log start 0 -> (\d+) \(HW \d+\): every record$`).MatchString(out) {
		t.Fatalf("y: output %q", out)
	}
	// retention run asks once for all its partitions, before any trim.
	st = demoMem(t)
	confirmIn = strings.NewReader("y\n")
	out, stderr, err = runWithStore(ctx, t, st, "retention", "run", "--all", "--now", "2027-06-01T00:00:00Z")
	if err != nil || strings.Count(stderr, "[y/N]") != 1 || !strings.Contains(stderr, "2 partition(s): orders-0 ") {
		t.Fatalf("retention run: %v, stderr %q", err, stderr)
	}
	if !strings.Contains(out, "retention run: 9 partitions: 2 trimmed") {
		t.Fatalf("retention run output %q", out)
	}

}
