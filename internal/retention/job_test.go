package retention

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
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
	_, p, err := loadProgress(o.ProgressFile)
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
		ProgressFile: progress, StoreID: id, Lease: lease.Options{Holder: "test", TTL: time.Minute}, Parallel: 4}
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
	if s, p, err := loadProgress(progress); err != nil || s != ob.StoreID || !p.Complete {
		t.Fatalf("progress now %q complete %v (%v)", s, p != nil && p.Complete, err)
	}
}

// TestJobStaleProgressNotResumed: the store progress of an interrupted run
// is resumed while it was written less than --resume-within ago, and
// discarded (a new clock, every partition planned) once older.
func TestJobStaleProgressNotResumed(t *testing.T) {
	progress := filepath.Join(t.TempDir(), "p.json")
	st := demoStore(t)
	o := jobOptions(t, st, "mem://a", progress)
	o.ResumeWithin = time.Hour
	crashAfterFirstTrim(t, st, o)
	ctx := context.Background()
	key := layout.RetentionProgressKey(o.Selection)
	p, _, err := layout.LoadRetentionProgress(ctx, st, key)
	if err != nil {
		t.Fatal(err)
	}
	done := p.DoneCount()
	if done == 0 || p.Complete {
		t.Fatalf("store progress after the crash: %d done, complete %v", done, p.Complete)
	}
	// The local cache is gone (another node): only the store decides.
	if err := os.Remove(progress); err != nil {
		t.Fatal(err)
	}
	put := func(age time.Duration) {
		t.Helper()
		q := *p
		q.StartedMs = time.Now().Add(-age - time.Minute).UnixMilli()
		q.UpdatedMs = time.Now().Add(-age).UnixMilli()
		if _, err := st.Put(ctx, key, layout.Encode(&q), store.None()); err != nil {
			t.Fatal(err)
		}
	}
	// Last written 61 minutes ago: stale.
	put(61 * time.Minute)
	rep, err := RunJob(ctx, st, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != 0 || !strings.Contains(rep.ProgressDiscarded, "more than --resume-within 1h0m0s: not resumed") {
		t.Fatalf("stale progress: resumed %d, discarded %q", rep.Resumed, rep.ProgressDiscarded)
	}
	// 59 minutes: resumed, from the store alone.
	put(59 * time.Minute)
	rep, err = RunJob(ctx, st, o)
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
	o.Parallel = 1 // one at a time: the cancel lands between partitions
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

// inFlight is a store that makes every head.json GET last a while and
// records how many partitions read their head at once.
type inFlight struct {
	store.Store
	mu       sync.Mutex
	now, max int
}

func (s *inFlight) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	if strings.HasSuffix(key, "/head.json") {
		s.mu.Lock()
		s.now++
		s.max = max(s.max, s.now)
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		defer func() { s.mu.Lock(); s.now--; s.mu.Unlock() }()
	}
	return s.Store.Get(ctx, key, r)
}

// TestJobParallelPartitionLeases: a run works on Parallel partitions at
// once, each under its partition lease; the results keep the selection's
// order; a partition whose lease another job holds past the wait fails
// alone (a held-lease error, its head untouched, not recorded) while the
// others are trimmed and recorded; no store-wide lease is taken and no
// partition lease is left behind; the rerun resumes the others and trims
// the one that was held.
func TestJobParallelPartitionLeases(t *testing.T) {
	mem := store.NewMem(t.Name())
	do := demo.DefaultOptions()
	do.Records, do.Partitions = 3000, 4
	if _, err := demo.Run(context.Background(), mem, do); err != nil {
		t.Fatal(err)
	}
	st := &inFlight{Store: mem}
	ctx := context.Background()
	o := jobOptions(t, st, "mem://a", filepath.Join(t.TempDir(), "p.json"))
	o.Parallel = 4
	held := layout.TopicPartition{Topic: "orders", Partition: 1}
	other, err := lease.Acquire(ctx, st, lease.PartitionName(held), "other-job", time.Hour, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := snap(t, st, held)
	rep, err := RunJob(ctx, st, o)
	if err != nil {
		t.Fatal(err)
	}
	if st.max < 2 {
		t.Fatalf("at most %d partitions in flight with --parallel 4", st.max)
	}
	if len(rep.Partitions) != len(o.Partitions) {
		t.Fatalf("%d results for %d partitions", len(rep.Partitions), len(o.Partitions))
	}
	for i, r := range rep.Partitions {
		tp := layout.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		if tp != o.Partitions[i] {
			t.Fatalf("result %d is %s, want %s: not in the selection's order", i, tp, o.Partitions[i])
		}
		if tp == held {
			if r.OK() || !errors.Is(r.Err, lease.ErrHeld) || !strings.Contains(r.ErrorDetail, "other-job") {
				t.Fatalf("%s (held): error %q %v, want a held lease naming other-job", tp, r.Error, r.Err)
			}
			continue
		}
		if !r.OK() {
			t.Fatalf("%s failed: %v", tp, r.Err)
		}
	}
	if rep.Errors != 1 || rep.Trimmed == 0 {
		t.Fatalf("errors %d, trimmed %d: want the held partition alone failed", rep.Errors, rep.Trimmed)
	}
	if after := snap(t, st, held); after.head.Version != before.head.Version {
		t.Fatal("the held partition's head changed")
	}
	leases, err := st.List(ctx, layout.LeasesPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 1 || leases[0].Key != layout.LeaseKey(lease.PartitionName(held)) {
		t.Fatalf("leases left: %v, want only the other job's", leases)
	}
	p, _, err := layout.LoadRetentionProgress(ctx, st, rep.ProgressKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.Complete || p.DoneCount() != len(o.Partitions)-1 || len(p.Failed) != 1 {
		t.Fatalf("store progress: %d done, failed %v (complete %v), want %d and the held one", p.DoneCount(), p.Failed, p.Complete, len(o.Partitions)-1)
	}
	for i, tp := range o.Partitions {
		if tp == held && p.IsDone(i) {
			t.Fatal("the held partition is recorded as done")
		}
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err = RunJob(ctx, st, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != len(o.Partitions)-1 || rep.Errors != 0 {
		t.Fatalf("rerun: resumed %d, errors %d", rep.Resumed, rep.Errors)
	}
	if after := snap(t, st, held); after.head.Version != before.head.Version+1 {
		t.Fatalf("the held partition: head version %d -> %d, want one trim", before.head.Version, after.head.Version)
	}
}

// TestGCKeepsRetentionProgress: gc deletes old tasks but never a retention
// run's store progress, however old (it is the run's resume point).
func TestGCKeepsRetentionProgress(t *testing.T) {
	st := demoStore(t)
	ctx := context.Background()
	o := jobOptions(t, st, "mem://a", filepath.Join(t.TempDir(), "p.json"))
	crashAfterFirstTrim(t, st, o)
	key := layout.RetentionProgressKey(o.Selection)
	other := layout.TaskPrefix("compact-x") + "task.json"
	if _, err := st.Put(ctx, other, []byte("{}"), store.None()); err != nil {
		t.Fatal(err)
	}
	tps, _ := layout.ListBindings(ctx, st)
	if _, err := GC(ctx, st, tps, GCOptions{Grace: 0, Now: time.Now().Add(48 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Head(ctx, other); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an old compaction task survived gc: %v", err)
	}
	if _, _, err := layout.LoadRetentionProgress(ctx, st, key); err != nil {
		t.Fatalf("gc removed or damaged the retention progress %s: %v", key, err)
	}
}

// TestJobProgressConflict: a store progress rewritten behind a live run's
// back (another run of the same selection) makes the run's next progress
// write lose its precondition: the run stops with ErrProgressConflict,
// naming the other writer, and does not overwrite it.
func TestJobProgressConflict(t *testing.T) {
	st := demoStore(t)
	ctx := context.Background()
	o := jobOptions(t, st, "mem://a", filepath.Join(t.TempDir(), "p.json"))
	o.Parallel = 1
	key := layout.RetentionProgressKey(o.Selection)
	var theirs []byte
	o.OnPartition = func(done, total int, r *Result) {
		if done != 1 {
			return
		}
		p, _, err := layout.LoadRetentionProgress(ctx, st, key)
		if err != nil {
			t.Error(err)
			return
		}
		p.Holder = "other-run"
		p.UpdatedMs++
		theirs = layout.Encode(p)
		if _, err := st.Put(ctx, key, theirs, store.None()); err != nil {
			t.Error(err)
		}
	}
	rep, err := RunJob(ctx, st, o)
	if !errors.Is(err, ErrProgressConflict) || !strings.Contains(err.Error(), "last written by other-run") {
		t.Fatalf("err %v, want a progress conflict naming other-run", err)
	}
	if rep == nil || len(rep.Partitions) >= len(o.Partitions) {
		t.Fatalf("report %+v: want the run stopped early", rep)
	}
	got, err := st.Get(ctx, key, nil)
	if err != nil || !bytes.Equal(got, theirs) {
		t.Fatalf("the other run's progress was overwritten (%v)", err)
	}
}

// failProgressPut fails the nth PUT of a retention progress document
// (the write does not land).
type failProgressPut struct {
	store.Store
	n, seen int
}

func (s *failProgressPut) Put(ctx context.Context, k string, d []byte, g store.Guard) (store.ObjectInfo, error) {
	if strings.HasPrefix(k, layout.RetentionTasksPrefix) {
		if s.seen++; s.seen == s.n {
			return store.ObjectInfo{}, errors.New("injected: connection reset")
		}
	}
	return s.Store.Put(ctx, k, d, g)
}

// TestJobProgressWriteFailureRecordsAtTheEnd: a progress write that fails
// stops the run, and the partitions it would have recorded (their trims are
// durable) are written by the run's last write, not lost.
func TestJobProgressWriteFailureRecordsAtTheEnd(t *testing.T) {
	st := &failProgressPut{Store: demoStore(t), n: 2}
	ctx := context.Background()
	o := jobOptions(t, st, "mem://a", filepath.Join(t.TempDir(), "p.json"))
	o.Parallel = 1
	rep, err := RunJob(ctx, st, o)
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("err %v, want the injected write failure", err)
	}
	if rep == nil || len(rep.Partitions) == 0 {
		t.Fatalf("report %+v: want the partition finished before the failure", rep)
	}
	p, _, err := layout.LoadRetentionProgress(ctx, st, layout.RetentionProgressKey(o.Selection))
	if err != nil {
		t.Fatal(err)
	}
	if p.DoneCount() != len(rep.Partitions) || p.Complete {
		t.Fatalf("store progress: %d done (complete %v), the run finished %d", p.DoneCount(), p.Complete, len(rep.Partitions))
	}
}

// TestJobRestartWritesFreshProgressFirst: --restart discards the store
// progress and writes the new run's (nothing done) before any partition is
// recorded.
func TestJobRestartWritesFreshProgressFirst(t *testing.T) {
	st := demoStore(t)
	ctx := context.Background()
	o := jobOptions(t, st, "mem://a", filepath.Join(t.TempDir(), "p.json"))
	crashAfterFirstTrim(t, st, o)
	key := layout.RetentionProgressKey(o.Selection)
	old, _, err := layout.LoadRetentionProgress(ctx, st, key)
	if err != nil || old.DoneCount() == 0 {
		t.Fatalf("the interrupted run's progress: %+v, %v", old, err)
	}
	o.Restart, o.Parallel, o.FlushEvery = true, 1, time.Hour
	var seen *layout.RetentionProgress
	var seenErr error
	o.OnPartition = func(done, total int, r *Result) {
		if done == 1 {
			seen, _, seenErr = layout.LoadRetentionProgress(ctx, st, key)
		}
	}
	rep, err := RunJob(ctx, st, o)
	if err != nil || !strings.Contains(rep.ProgressDiscarded, "the store progress "+key) {
		t.Fatalf("err %v, report %+v", err, rep)
	}
	if seenErr != nil || seen.DoneCount() != 0 || seen.StartedMs == old.StartedMs {
		t.Fatalf("after --restart, at the first partition: progress %+v, %v: want the new run's, nothing done", seen, seenErr)
	}
}
