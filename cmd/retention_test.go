package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"regexp"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
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

// cancelAfterHeadTrim cancels the run's context once orders-0's head CAS
// moved its trim (step 2 of the sequence, before the binding step), as a
// SIGINT there would.
type cancelAfterHeadTrim struct {
	store.Store
	head   string
	cancel context.CancelFunc
}

func (c *cancelAfterHeadTrim) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	info, err := c.Store.Put(ctx, key, data, g)
	if err == nil && key == c.head && !bytes.Contains(data, []byte(`"trim": 0,`)) {
		c.cancel()
	}
	return info, err
}

// TestRetentionRunInterruptedAfterTheHeadCAS: interrupted between a
// trim's head CAS and its binding step, the run reports that partition
// trimmed with its garbage (the trim is durable), and the resumed run
// finishes its binding and reports it trimmed again with the same
// garbage, never "unchanged". Before, the summary said 0 trimmed and the
// resumed run called it unchanged: the garbage was counted nowhere.
func TestRetentionRunInterruptedAfterTheHeadCAS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := demoMem(t)
	b, _, err := layout.LoadBinding(ctx, mem, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	st := &cancelAfterHeadTrim{Store: mem, head: layout.HeadKey(b.StreamID), cancel: cancel}
	args := []string{"retention", "run", "orders-0", "orders-1", "--yes", "--now", "2027-06-01T00:00:00Z", "--parallel", "1", "-o", "json"}
	run := func(ctx context.Context, st store.Store) (retentionDoc, error) {
		out, errb, err := runWithStore(ctx, t, st, args...)
		var doc retentionDoc
		if jerr := json.Unmarshal([]byte(out), &doc); jerr != nil {
			t.Fatalf("output: %v\n%s%s", jerr, out, errb)
		}
		return doc, err
	}
	doc, err := run(ctx, st)
	if code := exitcode.Of(err); code != exitcode.Interrupted {
		t.Fatalf("exit %d (%v), want 130", code, err)
	}
	if doc.Trimmed != 1 || doc.GarbageBytes <= 0 || len(doc.Partitions) != 1 || doc.Partitions[0].Partition != 0 || doc.Partitions[0].NewLogStart <= doc.Partitions[0].CurrentLogStart {
		t.Fatalf("interrupted after the head CAS: %+v, want orders-0 trimmed with its garbage", doc)
	}
	garbage := doc.GarbageBytes
	if nb, _, _ := layout.LoadBinding(context.Background(), mem, "orders", 0); nb.ObservedLogStart != 0 {
		t.Fatalf("the binding step ran: observed_log_start %d", nb.ObservedLogStart)
	}

	doc, err = run(context.Background(), mem)
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	var orders0 *retention.Result
	for _, p := range doc.Partitions {
		if p.Topic == "orders" && p.Partition == 0 {
			orders0 = p
		}
	}
	if orders0 == nil || !orders0.Trimmed() || orders0.Plan == nil || orders0.Plan.GarbageSize != garbage || doc.Trimmed != 2 || doc.Unchanged != 0 {
		t.Fatalf("resumed run: %+v, orders-0 %+v (plan %+v), want it trimmed with garbage %d: the interrupted trim is not accounted", doc.JobSummary, orders0, orders0.Plan, garbage)
	}
	nb, _, err := layout.LoadBinding(context.Background(), mem, "orders", 0)
	if err != nil || nb.ObservedLogStart != orders0.NewLogStart {
		t.Fatalf("resumed run left the binding at %d, want %d (%v)", nb.ObservedLogStart, orders0.NewLogStart, err)
	}
}

// retentionDoc is the part of retention run's JSON document the tests
// read.
type retentionDoc struct {
	retention.JobSummary `json:"summary"`
	Partitions           []*retention.Result `json:"partitions"`
}
