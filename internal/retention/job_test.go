package retention

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

func TestStoreIdentity(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(filepath.Join(d, "nereus-data"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(a, "nereus-data"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	idIn := func(dir, url, ep string) string {
		t.Helper()
		if err := os.Chdir(dir); err != nil {
			t.Fatal(err)
		}
		id, err := StoreIdentity(url, ep)
		if err != nil {
			t.Fatalf("%s in %s: %v", url, dir, err)
		}
		return id
	}
	realA, _ := filepath.EvalSymlinks(filepath.Join(a, "nereus-data"))
	inA := idIn(a, "file://./nereus-data", "")
	inB := idIn(b, "file://./nereus-data", "")
	if inA == inB {
		t.Fatalf("the same relative URL in two folders gives one identity %q", inA)
	}
	if inA != "file://"+realA {
		t.Fatalf("identity %q, want file://%s", inA, realA)
	}
	for _, same := range []string{"file://" + filepath.Join(a, "nereus-data"), "file://" + a + "/./nereus-data/", "file://" + filepath.Join(base, "link")} {
		if got := idIn(b, same, ""); got != inA {
			t.Errorf("%s: identity %q, want %q", same, got, inA)
		}
	}
	s1 := idIn(a, "s3://bucket/prefix/", "")
	if s2 := idIn(a, "s3://bucket/prefix", ""); s1 != s2 {
		t.Errorf("s3 prefix slashes: %q vs %q", s1, s2)
	}
	if s3 := idIn(a, "s3://bucket/prefix", "http://127.0.0.1:7070"); s3 == s1 {
		t.Errorf("another endpoint gives the same identity %q", s3)
	}
	if s4 := idIn(a, "s3://bucket/other", ""); s4 == s1 {
		t.Errorf("another prefix gives the same identity %q", s4)
	}
	if m := idIn(a, "mem://x", ""); m != "mem://x" {
		t.Errorf("mem identity %q", m)
	}
	if DefaultProgressFile(inA) == DefaultProgressFile(inB) {
		t.Error("two stores share a default progress file")
	}
	if _, err := StoreIdentity("nope", ""); err == nil {
		t.Error("a URL without a scheme: want an error")
	}
}

// crashAfterFirstTrim runs a job on st that stops (as a crash would) after
// its first trim is durable, before the progress records it.
func crashAfterFirstTrim(t *testing.T, st store.Store, o JobOptions) {
	t.Helper()
	o.Hooks = Hooks{After: func(step string) error {
		if step == StepBinding {
			return errors.New("crash")
		}
		return nil
	}}
	if _, err := RunJob(context.Background(), st, o); err != nil {
		t.Fatalf("job: %v", err)
	}
	p, err := loadProgress(o.ProgressFile)
	if err != nil || p.Complete {
		t.Fatalf("after the crash: progress %+v, %v", p, err)
	}
}

func jobOptions(t *testing.T, st store.Store, id, progress string) JobOptions {
	t.Helper()
	tps, err := layout.ListBindings(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return JobOptions{Partitions: tps, Selection: "--all ", Now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), NowExplicit: true,
		ProgressFile: progress, StoreID: id, Holder: "test", LeaseTTL: time.Minute}
}

func TestJobResumesOnlyItsOwnStore(t *testing.T) {
	progress := filepath.Join(t.TempDir(), "p.json")
	a, b := demoStore(t), store.NewMem("b")
	if err := copyStore(a, b); err != nil {
		t.Fatal(err)
	}
	oa := jobOptions(t, a, "file:///x/a/nereus-data", progress)
	crashAfterFirstTrim(t, a, oa)

	// Another store, the same progress file: nothing is resumed.
	ob := jobOptions(t, b, "file:///x/b/nereus-data", progress)
	rep, err := RunJob(context.Background(), b, ob)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != 0 || rep.Trimmed != 1 || !strings.Contains(rep.ProgressDiscarded, "another store (file:///x/a/nereus-data)") {
		t.Fatalf("store b: resumed %d, trimmed %d, discarded %q: want 0, 1 and a notice", rep.Resumed, rep.Trimmed, rep.ProgressDiscarded)
	}
	if p, _ := loadProgress(progress); p.Store != ob.StoreID || !p.Complete {
		t.Fatalf("progress now %q complete %v", p.Store, p.Complete)
	}
}

func TestJobStaleProgressNotResumed(t *testing.T) {
	progress := filepath.Join(t.TempDir(), "p.json")
	st := demoStore(t)
	o := jobOptions(t, st, "mem://a", progress)
	crashAfterFirstTrim(t, st, o)
	p, _ := loadProgress(progress)
	done := len(p.Done)
	if done == 0 {
		t.Fatal("no partition recorded before the crash")
	}
	// Fresh: resumed.
	fresh := *p
	// Last written 7 × the TTL ago: stale.
	p.UpdatedMs = time.Now().Add(-7 * o.LeaseTTL).UnixMilli()
	if err := saveProgressAt(progress, p); err != nil {
		t.Fatal(err)
	}
	rep, err := RunJob(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != 0 || !strings.Contains(rep.ProgressDiscarded, "not resumed") {
		t.Fatalf("stale progress: resumed %d, discarded %q", rep.Resumed, rep.ProgressDiscarded)
	}
	// 5 × the TTL: still resumed.
	fresh.Complete = false
	fresh.UpdatedMs = time.Now().Add(-5 * o.LeaseTTL).UnixMilli()
	if err := saveProgressAt(progress, &fresh); err != nil {
		t.Fatal(err)
	}
	rep, err = RunJob(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != done || rep.ProgressDiscarded != "" {
		t.Fatalf("fresh progress: resumed %d of %d, discarded %q", rep.Resumed, done, rep.ProgressDiscarded)
	}
}

func TestJobCorruptProgressAndRestart(t *testing.T) {
	progress := filepath.Join(t.TempDir(), "p.json")
	st := demoStore(t)
	o := jobOptions(t, st, "mem://a", progress)
	for _, bad := range []string{"{", `{"version": 2, "done": {}}`, `{"version": 1}`, `{"version": 1, "done": {}} {}`} {
		if err := os.WriteFile(progress, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		before := snap(t, st, layout.TopicPartition{Topic: "orders", Partition: 0})
		if _, err := RunJob(context.Background(), st, o); !errors.Is(err, ErrProgressCorrupt) {
			t.Fatalf("%q: err %v, want corrupt", bad, err)
		}
		if after := snap(t, st, layout.TopicPartition{Topic: "orders", Partition: 0}); after.head != before.head {
			t.Fatalf("%q: the head changed on a refused run", bad)
		}
	}
	o.Restart = true
	rep, err := RunJob(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ProgressDiscarded == "" || rep.Trimmed != 1 {
		t.Fatalf("restart: discarded %q, trimmed %d", rep.ProgressDiscarded, rep.Trimmed)
	}
}

func TestJobInterruptedReportsDonePartitions(t *testing.T) {
	st := demoStore(t)
	o := jobOptions(t, st, "mem://a", filepath.Join(t.TempDir(), "p.json"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.OnPartition = func(done, total int, r *Result) {
		if done == 2 {
			cancel()
		}
	}
	rep, err := RunJob(ctx, st, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want canceled", err)
	}
	if rep == nil || !rep.Interrupted || len(rep.Partitions) != 2 {
		t.Fatalf("report %+v: want the 2 partitions done, interrupted", rep)
	}
}

func TestJobConfirmFull(t *testing.T) {
	st := demoStore(t)
	o := jobOptions(t, st, "mem://a", filepath.Join(t.TempDir(), "p.json"))
	// The plan-only pass finds the partition whose every record goes and
	// writes nothing.
	before := snap(t, st, layout.TopicPartition{Topic: "orders", Partition: 0})
	po := o
	po.PlanOnly = true
	rep, err := RunJob(context.Background(), st, po)
	if err != nil {
		t.Fatal(err)
	}
	var full []string
	for _, r := range rep.Partitions {
		if r.RemovesEverything() {
			full = append(full, r.Topic)
			if r.Checkpoint != "" {
				t.Errorf("plan only built a checkpoint: %s", r.Checkpoint)
			}
		}
	}
	if strings.Join(full, ",") != "orders" || !rep.DryRun {
		t.Fatalf("plan only: full trims %v (dry run %v)", full, rep.DryRun)
	}
	if after := snap(t, st, layout.TopicPartition{Topic: "orders", Partition: 0}); len(after.objects) != len(before.objects) || after.head != before.head {
		t.Fatal("plan only wrote to the store")
	}
	// Refused by the hook: the partition is not trimmed, the others are.
	o.ConfirmFull = func(r *Result) error { return errors.New("no") }
	rep, err = RunJob(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 1 || rep.Trimmed != 0 {
		t.Fatalf("refused: errors %d, trimmed %d", rep.Errors, rep.Trimmed)
	}
	if after := snap(t, st, layout.TopicPartition{Topic: "orders", Partition: 0}); after.head != before.head {
		t.Fatal("a refused full trim moved the head")
	}
	o.ConfirmFull = func(r *Result) error { return nil }
	if rep, err = RunJob(context.Background(), st, o); err != nil || rep.Trimmed != 1 {
		t.Fatalf("confirmed: %v, trimmed %d", err, rep.Trimmed)
	}
}

// saveProgressAt writes p keeping its UpdatedMs (saveProgress stamps now).
func saveProgressAt(path string, p *Progress) error { return writeProgressRaw(path, p) }

func copyStore(src, dst store.Store) error {
	ctx := context.Background()
	all, err := src.List(ctx, "")
	if err != nil {
		return err
	}
	for _, o := range all {
		data, err := src.Get(ctx, o.Key, nil)
		if err != nil {
			return err
		}
		if _, err := dst.Put(ctx, o.Key, data, store.None()); err != nil {
			return err
		}
	}
	return nil
}
