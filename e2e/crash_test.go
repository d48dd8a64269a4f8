package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

// The crash harness lives in the test binary only (cmd.CrashHooks is nil
// in a release build): with NEREUSCTL_TEST_CRASH_AFTER=STEP the process
// exits with status 137 (as kill -9 would show) right after the trim
// sequence completes STEP (checkpoint, head, verify, binding). STEP#N
// crashes the Nth time the step completes in this process (the Nth
// partition a retention run trims).
//
// With NEREUSCTL_TEST_STOP_AFTER=STEP the process stops itself (SIGSTOP)
// right after STEP, a trim step or a compaction step (frozen, written:
// every view object PUT and verified and nothing published, published,
// activated), holding whatever it holds (its partition lease); the test
// then sees it stopped, runs another job against the store and resumes it
// with SIGCONT.
func init() {
	cmd.CrashHooks = envCrashHooks
	cmd.CompactHooks = envCompactHooks
	cmd.GCHooks = envGCHooks
}

// envGCHooks stops gc (NEREUSCTL_TEST_STOP_AFTER=decided:TOPIC-PARTITION)
// once it has decided that partition's garbage, holding its lease, before
// it deletes any of it.
func envGCHooks() func(tp layout.TopicPartition) {
	if os.Getenv("NEREUSCTL_TEST_STOP_AFTER") == "" {
		return nil
	}
	return func(tp layout.TopicPartition) { stopAfter("decided:" + tp.String()) }
}

// stopAfter stops this process (SIGSTOP) when step is
// NEREUSCTL_TEST_STOP_AFTER's; it goes on where it stopped once continued.
func stopAfter(step string) {
	if want := os.Getenv("NEREUSCTL_TEST_STOP_AFTER"); want != "" && want == step {
		fmt.Fprintf(os.Stderr, "nereusctl: test stop after step %s\n", step)
		stopSelf()
	}
}

func envCompactHooks() func(step string) error {
	if os.Getenv("NEREUSCTL_TEST_STOP_AFTER") == "" {
		return nil
	}
	return func(step string) error {
		stopAfter(step)
		return nil
	}
}

func envCrashHooks() retention.Hooks {
	spec := os.Getenv("NEREUSCTL_TEST_CRASH_AFTER")
	if spec == "" {
		if os.Getenv("NEREUSCTL_TEST_STOP_AFTER") != "" {
			return retention.Hooks{After: func(s string) error { stopAfter(s); return nil }}
		}
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

// cliProc starts this test binary as nereusctl in a subprocess.
func cliProc(t *testing.T, storeURL string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(os.Args[0], args...)
	c.Env = append(append(os.Environ(), "NEREUSCTL_TEST_AS_CLI=1", "NEREUSCTL_STORE="+storeURL, "XDG_CONFIG_HOME="+t.TempDir()), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, &out, &errb
}

// cli runs nereusctl in a subprocess and returns its exit status.
func cli(t *testing.T, storeURL string, env []string, args ...string) (int, string, string) {
	t.Helper()
	c, out, errb := cliProc(t, storeURL, env, args...)
	err := c.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// inproc runs nereusctl in this process (setup steps).
func inproc(t *testing.T, storeURL string, args ...string) string {
	t.Helper()
	t.Setenv("NEREUSCTL_STORE", storeURL)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var out, errb bytes.Buffer
	if code := cmd.Execute(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("nereusctl %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	return out.String()
}

func fileStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

type partSnap struct {
	headVersion, bindingVersion, trim, observed int64
	checkpoints                                 map[string]bool
	objects                                     map[string]bool
}

func snapPart(t *testing.T, st store.Store, topic string, p int32) partSnap {
	t.Helper()
	ctx := context.Background()
	b, _, err := layout.LoadBinding(ctx, st, topic, p)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	s := partSnap{headVersion: h.Version, bindingVersion: b.Version, trim: h.Trim, observed: b.ObservedLogStart, checkpoints: map[string]bool{}, objects: map[string]bool{}}
	cps, _ := st.List(ctx, layout.CheckpointsPrefix(b.StreamID))
	for _, c := range cps {
		s.checkpoints[c.Key] = true
	}
	objs, _ := st.List(ctx, layout.StreamPrefix(b.StreamID))
	for _, o := range objs {
		s.objects[o.Key] = true
	}
	return s
}

// checkOneTrim: the log start moved exactly once to target, exactly one new
// checkpoint (callers pick targets above the newest existing anchor, so the
// pre-trim step must publish one, and a rerun must not publish a second),
// head and binding agree, nothing deleted, replay --compare ok.
func checkOneTrim(t *testing.T, st store.Store, topic string, p int32, before partSnap, target int64) {
	t.Helper()
	after := snapPart(t, st, topic, p)
	if after.trim != target || after.observed != target {
		t.Fatalf("%s-%d: head trim %d, binding observed %d, want both %d", topic, p, after.trim, after.observed, target)
	}
	if after.headVersion != before.headVersion+1 {
		t.Fatalf("%s-%d: head version %d -> %d, want exactly one trim mutation", topic, p, before.headVersion, after.headVersion)
	}
	n := 0
	for k := range after.checkpoints {
		if !before.checkpoints[k] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%s-%d: %d new checkpoints, want exactly one (the pre-trim checkpoint: the target is above every existing anchor)", topic, p, n)
	}
	for k := range before.objects {
		if !after.objects[k] {
			t.Fatalf("%s-%d: %s was deleted", topic, p, k)
		}
	}
	ctx := context.Background()
	b, _, _ := layout.LoadBinding(ctx, st, topic, p)
	a, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() != f.Digest() || a.State.LogStart != target {
		t.Fatalf("%s-%d: replay digest %s, full %s, log start %d", topic, p, a.Digest(), f.Digest(), a.State.LogStart)
	}
}

// The demo's orders-0 (--records 1500 --partitions 1) has checkpoints
// anchored at 223 and 401 and its head at 600: trims to 450 are above every
// existing anchor, so the pre-trim checkpoint step really publishes one.
const (
	trimTarget  = "450"
	trimTargetN = 450
)

// TestTrimKilledAtEveryStep kills a real trim process after each step of the
// durable sequence and reruns it.
func TestTrimKilledAtEveryStep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "base")
	url := "file://" + dir
	inproc(t, url, "demo", "--records", "1500", "--partitions", "1", "--no-tour")
	for _, step := range []string{retention.StepCheckpoint, retention.StepHead, retention.StepVerify, retention.StepBinding} {
		t.Run(step, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "store")
			if err := os.CopyFS(work, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			st := fileStore(t, work)
			before := snapPart(t, st, "orders", 0)
			code, _, stderr := cli(t, "file://"+work, []string{"NEREUSCTL_TEST_CRASH_AFTER=" + step}, "trim", "orders-0", "--to", trimTarget)
			if code != 137 || !strings.Contains(stderr, "test crash after step "+step) {
				t.Fatalf("crash run: exit %d, stderr %s", code, stderr)
			}
			if code, out, stderr := cli(t, "file://"+work, nil, "trim", "orders-0", "--to", trimTarget); code != 0 {
				t.Fatalf("rerun: exit %d\n%s%s", code, out, stderr)
			}
			checkOneTrim(t, st, "orders", 0, before, trimTargetN)
		})
	}
}

// TestTrimKilledAtEveryStepS3 is the same harness against each S3 server
// of the list: a fresh demo per step under its own prefix, the real trim
// process killed after each step, then rerun.
func TestTrimKilledAtEveryStepS3(t *testing.T) {
	s3server.Each(t, testTrimKilledAtEveryStepS3)
}

func testTrimKilledAtEveryStepS3(t *testing.T, impl *s3server.Impl) {
	srv := impl.Start(t)
	env := []string{"NEREUSCTL_S3_ENDPOINT=" + srv.Endpoint, "NEREUSCTL_S3_PATH_STYLE=true"}
	t.Setenv("NEREUSCTL_S3_ENDPOINT", srv.Endpoint)
	t.Setenv("NEREUSCTL_S3_PATH_STYLE", "true")
	for _, step := range []string{retention.StepCheckpoint, retention.StepHead, retention.StepVerify, retention.StepBinding} {
		t.Run(step, func(t *testing.T) {
			url := srv.URL("crash-" + step)
			inproc(t, url, "demo", "--records", "1500", "--partitions", "1", "--no-tour")
			st, err := store.Open(context.Background(), url, store.OpenOptions{S3Endpoint: srv.Endpoint, S3PathStyle: true})
			if err != nil {
				t.Fatal(err)
			}
			before := snapPart(t, st, "orders", 0)
			code, _, stderr := cli(t, url, append(env, "NEREUSCTL_TEST_CRASH_AFTER="+step), "trim", "orders-0", "--to", trimTarget)
			if code != 137 {
				t.Fatalf("crash run: exit %d: %s", code, stderr)
			}
			if code, out, stderr := cli(t, url, env, "trim", "orders-0", "--to", trimTarget); code != 0 {
				t.Fatalf("rerun: exit %d\n%s%s", code, out, stderr)
			}
			checkOneTrim(t, st, "orders", 0, before, trimTargetN)
		})
	}
}

// TestRetentionResume SIGKILLs a parallel retention run part-way, removes
// its local progress file (the rerun is a pod on another node) and judges
// the rerun as the second source document judges a consumer: it resumes
// from the store progress, never from the first partition again, and every
// partition ends trimmed exactly once over both runs.
func TestRetentionResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	url := "file://" + dir
	inproc(t, url, "demo", "--records", "6000", "--partitions", "5", "--checkpoints", "1", "--no-tour")
	st := fileStore(t, dir)
	ctx := context.Background()
	progress := filepath.Join(t.TempDir(), "progress.json")
	now := "2027-06-01T00:00:00Z"
	orders := func() []partSnap {
		var s []partSnap
		for p := int32(0); p < 5; p++ {
			s = append(s, snapPart(t, st, "orders", p))
		}
		return s
	}
	initial := orders()
	args := []string{"retention", "run", "--all", "--yes", "--now", now, "--progress-file", progress, "--parallel", "2"}
	key := layout.RetentionProgressKey("--all ")
	slow, _, errb := cliProc(t, url, nil, append(args, "--max-requests-per-second", "60")...)
	var atKill *layout.RetentionProgress
	deadline := time.Now().Add(60 * time.Second)
	for atKill == nil {
		if p, _, err := layout.LoadRetentionProgress(ctx, st, key); err == nil && p.DoneCount() >= 3 {
			if p.Complete {
				t.Fatal("the run finished before it could be killed")
			}
			if err := slow.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = slow.Wait()
			atKill, _, err = layout.LoadRetentionProgress(ctx, st, key)
			if err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			_ = slow.Process.Kill()
			t.Fatalf("no progress recorded in the store: %s", errb)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if atKill.Complete || atKill.DoneCount() >= atKill.Targets {
		t.Fatalf("killed run's progress: %d of %d done, complete %v", atKill.DoneCount(), atKill.Targets, atKill.Complete)
	}
	// The positions are the selection's order: --all lists orders-0..4
	// after the demo's other topics.
	names := allPartitions(t, st)
	recorded := map[string]bool{}
	for i, name := range names {
		if atKill.IsDone(i) {
			recorded[name] = true
		}
	}
	if len(recorded) != atKill.DoneCount() {
		t.Fatalf("progress at the kill counts %d done, %d positions are: %+v", atKill.DoneCount(), len(recorded), atKill)
	}
	// Another node: no local progress file.
	if err := os.Remove(progress); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	mid := orders()
	code, out, stderr := cli(t, url, nil, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("resumed run: exit %d\n%s%s", code, out, stderr)
	}
	var rep struct {
		Summary retention.JobReport `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Resumed != atKill.DoneCount() || rep.Summary.Resumed == 0 {
		t.Fatalf("resumed %d partitions, the store progress had %d", rep.Summary.Resumed, atKill.DoneCount())
	}
	final := orders()
	for p := 0; p < 5; p++ {
		// each partition's head was trimmed exactly once over both runs
		if final[p].headVersion != initial[p].headVersion+1 || final[p].trim != final[p].observed || final[p].trim == 0 {
			t.Fatalf("orders-%d: head version %d -> %d, trim %d, observed %d", p, initial[p].headVersion, final[p].headVersion, final[p].trim, final[p].observed)
		}
		// the resumed run did not touch the partitions already recorded
		if recorded[fmt.Sprintf("orders-%d", p)] && (final[p].headVersion != mid[p].headVersion || final[p].bindingVersion != mid[p].bindingVersion) {
			t.Fatalf("orders-%d was redone by the resumed run", p)
		}
	}
	if p, _, err := layout.LoadRetentionProgress(ctx, st, key); err != nil || !p.Complete {
		t.Fatalf("store progress not complete after the resumed run: %v", err)
	}
	var prog retention.Progress
	if b, err := os.ReadFile(progress); err != nil || json.Unmarshal(b, &prog) != nil {
		t.Fatalf("local progress (the cache) after the resumed run: %v", err)
	}
	if doc, err := prog.Doc(progress); err != nil || !doc.Complete {
		t.Fatalf("local progress (the cache) not complete after the resumed run: %+v, %v", doc, err)
	}
}

// TestRetentionLease: a partition whose lease another job holds past
// --lease-wait fails alone (exit 4 naming the holder) while the others are
// trimmed; no store-wide lease is taken; an expired partition lease is
// taken over.
func TestRetentionLease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	url := "file://" + dir
	inproc(t, url, "demo", "--records", "1500", "--partitions", "1", "--no-tour")
	st := fileStore(t, dir)
	ctx := context.Background()
	held := layout.TopicPartition{Topic: "orders", Partition: 0}
	l, err := lease.Acquire(ctx, st, lease.PartitionName(held), "cron@other-host", time.Hour, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := snapPart(t, st, "orders", 0)
	prog := filepath.Join(t.TempDir(), "p.json")
	code, out, stderr := cli(t, url, nil, "retention", "run", "--all", "--yes", "--progress-file", prog, "--lease-wait", "0s", "-o", "json")
	if code != 4 || !strings.Contains(stderr, "held by cron@other-host until") {
		t.Fatalf("held lease: exit %d: %s", code, stderr)
	}
	var rep struct {
		Partitions []retention.Result   `json:"partitions"`
		Summary    retention.JobSummary `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Summary.Errors != 1 || len(rep.Partitions) < 2 {
		t.Fatalf("held lease: %d errors of %d partitions, want the held one only", rep.Summary.Errors, len(rep.Partitions))
	}
	for _, r := range rep.Partitions {
		if (r.Error != "") != (r.Topic == held.Topic && r.Partition == held.Partition) {
			t.Fatalf("%s-%d: error %q: want an error for the held partition only", r.Topic, r.Partition, r.Error)
		}
	}
	if after := snapPart(t, st, "orders", 0); after.headVersion != before.headVersion {
		t.Fatal("the held partition was trimmed")
	}
	if _, err := st.Head(ctx, layout.LeaseKey("retention")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a store-wide retention lease: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// an expired lease is taken over
	if _, err := lease.Acquire(ctx, st, lease.PartitionName(held), "crashed-run", -time.Second, nil, nil); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := cli(t, url, nil, "retention", "run", "--all", "--yes", "--progress-file", prog, "--lease-wait", "0s"); code != 0 {
		t.Fatalf("expired lease: exit %d\n%s%s", code, out, stderr)
	}
	if after := snapPart(t, st, "orders", 0); after.headVersion != before.headVersion+1 {
		t.Fatalf("orders-0: head version %d -> %d, want one trim", before.headVersion, after.headVersion)
	}
	if left, _ := st.List(ctx, layout.LeasesPrefix); len(left) != 0 {
		t.Fatalf("leases left: %v", left)
	}
}

// TestTrimLostCheckpointResponse loses the response of the pre-trim
// checkpoint's PUT (the object is written, the caller hears a timeout).
// Without retries the trim fails before touching the head, and a rerun
// finds the checkpoint it wrote and uses it: exactly one new checkpoint,
// one head mutation. With the store's retries the same loss is resolved in
// the run (IfAbsent meets its own bytes: a success).
func TestTrimLostCheckpointResponse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "base")
	inproc(t, "file://"+dir, "demo", "--records", "1500", "--partitions", "1", "--no-tour")
	ctx := context.Background()
	target := int64(trimTargetN)
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	for _, retry := range []bool{false, true} {
		t.Run(map[bool]string{false: "no-retry", true: "retry"}[retry], func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "store")
			if err := os.CopyFS(work, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			base := fileStore(t, work)
			before := snapPart(t, base, "orders", 0)
			b, _, err := layout.LoadBinding(ctx, base, "orders", 0)
			if err != nil {
				t.Fatal(err)
			}
			f := faultstore.New(base)
			f.LoseResponseNth(store.VerbPut, 1, layout.CheckpointsPrefix(b.StreamID))
			var st store.Store = f
			if retry {
				st = store.WithRetry(f, store.RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: 2 * time.Millisecond})
			}
			res := retention.RunPartition(ctx, st, retention.Request{TP: tp, DeleteRecords: &target})
			if f.Fired() != 1 {
				t.Fatalf("%d faults fired, want the checkpoint PUT's lost response", f.Fired())
			}
			mid := snapPart(t, base, "orders", 0)
			newCP := 0
			for k := range mid.checkpoints {
				if !before.checkpoints[k] {
					newCP++
				}
			}
			if newCP != 1 {
				t.Fatalf("%d new checkpoints after the lost response, want the one that landed", newCP)
			}
			if retry {
				if !res.OK() || res.Trim == nil || !res.Trim.HeadMutated {
					t.Fatalf("with retries the trim should succeed in one run: %+v (%v)", res, res.Err)
				}
			} else {
				if res.OK() || !errors.Is(res.Err, faultstore.ErrInjected) {
					t.Fatalf("without retries: result %+v, err %v; want the lost response", res, res.Err)
				}
				if mid.headVersion != before.headVersion || mid.trim != before.trim {
					t.Fatalf("the head changed after a failed checkpoint step: %+v", mid)
				}
				again := retention.RunPartition(ctx, base, retention.Request{TP: tp, DeleteRecords: &target})
				if !again.OK() {
					t.Fatalf("rerun: %s %v", again.ErrorDetail, again.Err)
				}
				if again.Trim == nil || again.Trim.CheckpointPublished || !again.Trim.HeadMutated {
					t.Fatalf("rerun should reuse the landed checkpoint and mutate the head once: %+v", again.Trim)
				}
			}
			checkOneTrim(t, base, "orders", 0, before, target)
		})
	}
}

// storeFingerprint is every object of a file:// store with its SHA-256
// (the store's own .nereus-* files aside). Archived quarantine records
// carry the repair's wall-clock time, so only their keys are compared;
// bindings are compared without their CAS counter (see below).
func storeFingerprint(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".nereus-") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "quarantine/archive/") {
			out[rel] = "(archived record)"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, layout.RetentionTasksPrefix) {
			// A retention run's progress carries its times and holder, and
			// a partition redone after a kill is counted with the outcome
			// of the rerun (unchanged): the selection, the watermark, the
			// partitions done and completion must be equal.
			doc, err := layout.DecodeRetentionProgress(rel, b)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("%s %d %v watermark %d, %d done, failed %v, ahead %v", doc.Selection, doc.Targets, doc.Complete, doc.Watermark, doc.DoneCount(), doc.Failed, doc.Ahead)
			return nil
		}
		if strings.HasPrefix(rel, layout.BindingsPrefix) {
			// A binding's version counts its CASes. An uninterrupted
			// trim CASes it twice (checkpoint_ref with the pre-trim
			// checkpoint, then observed_log_start and checkpoint_ref);
			// a rerun after a kill between the two does the second only.
			// Everything else in it must be equal.
			var doc layout.Binding
			if err := layout.Decode(rel, b, &doc); err != nil {
				return err
			}
			doc.Version = 0
			b = layout.Encode(&doc)
		}
		out[rel] = store.SHA256Of(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fingerprintDiff(want, got map[string]string) []string {
	var d []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			d = append(d, "missing "+k)
		} else if g != v {
			d = append(d, "differs "+k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, "extra "+k)
		}
	}
	sort.Strings(d)
	return d
}

func sameFingerprint(a, b map[string]string) bool { return len(fingerprintDiff(a, b)) == 0 }

// killCase is a command killed at random times by the harness below.
type killCase struct {
	name string
	// base prepares the store every run starts from.
	base func(t *testing.T, dir string)
	// args returns the command line for a run in dir (extra is a fresh
	// temp folder for the run's local files).
	args func(dir, extra string) []string
	// rate is the --max-requests-per-second that slows the killed runs
	// down: the limiter's burst (a second's worth) lets the first
	// requests (mostly reads) through at once and spaces the rest, where
	// the mutations are, so a random kill lands inside the sequence.
	rate string
	// check, when set, checks a converged store further.
	check func(t *testing.T, dir string)
}

// runKillCase kills real nereusctl processes (SIGKILL) at random times,
// reruns the command without a kill, and requires the store to converge
// to exactly what an uninterrupted run leaves. It also requires that a
// meaningful share of the kills landed mid-sequence: the process was alive
// when killed and the store had already changed.
func runKillCase(t *testing.T, kc killCase, kills int, seed uint64) {
	baseDir := filepath.Join(t.TempDir(), "base")
	kc.base(t, baseDir)
	fresh := func() string {
		work := filepath.Join(t.TempDir(), "store")
		if err := os.CopyFS(work, os.DirFS(baseDir)); err != nil {
			t.Fatal(err)
		}
		return work
	}
	initial := storeFingerprint(t, baseDir)

	// The reference: one uninterrupted, equally slowed run. Its duration
	// is the window the kills are drawn from.
	ref := fresh()
	rc, rout, rerr := cliProc(t, "file://"+ref, nil, append(kc.args(ref, t.TempDir()), "--max-requests-per-second", kc.rate)...)
	start := time.Now()
	if err := rc.Wait(); err != nil {
		t.Fatalf("reference run: %v\n%s%s", err, rout, rerr)
	}
	window := time.Since(start)
	want := storeFingerprint(t, ref)
	if sameFingerprint(initial, want) {
		t.Fatal("the reference run changed nothing: nothing to interrupt")
	}
	if kc.check != nil {
		kc.check(t, ref)
	}

	rng := rand.New(rand.NewPCG(seed, 7))
	mid := 0
	for i := range kills {
		work := fresh()
		c, _, _ := cliProc(t, "file://"+work, nil, append(kc.args(work, t.TempDir()), "--max-requests-per-second", kc.rate)...)
		at := time.Duration(rng.Int64N(int64(window)))
		time.Sleep(at)
		_ = c.Process.Signal(syscall.SIGKILL)
		err := c.Wait()
		var ee *exec.ExitError
		alive := false
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				alive = true
			}
		}
		changed := !sameFingerprint(initial, storeFingerprint(t, work))
		if alive && changed {
			mid++
		}
		t.Logf("kill %d at %v of %v: alive %v, store changed %v", i, at.Round(time.Millisecond), window.Round(time.Millisecond), alive, changed)
		if code, out, stderr := cli(t, "file://"+work, nil, kc.args(work, t.TempDir())...); code != 0 {
			t.Fatalf("rerun after kill %d: exit %d\n%s%s", i, code, out, stderr)
		}
		if d := fingerprintDiff(want, storeFingerprint(t, work)); len(d) > 0 {
			var docs strings.Builder
			for _, line := range d {
				if k, ok := strings.CutPrefix(line, "differs "); ok && strings.HasSuffix(k, ".json") {
					a, _ := os.ReadFile(filepath.Join(ref, k))
					b, _ := os.ReadFile(filepath.Join(work, k))
					fmt.Fprintf(&docs, "%s uninterrupted:\n%s\n%s after the kill and rerun:\n%s\n", k, a, k, b)
				}
			}
			t.Fatalf("after kill %d at %v and a rerun the store differs from an uninterrupted run:\n%s\n%s", i, at, strings.Join(d, "\n"), docs.String())
		}
		if kc.check != nil {
			kc.check(t, work)
		}
	}
	if mid*3 < kills {
		t.Fatalf("only %d of %d kills landed mid-sequence (process alive, store changed): the harness is not interrupting anything", mid, kills)
	}
	t.Logf("%d of %d kills landed mid-sequence", mid, kills)
}

func demoBase(args ...string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		inproc(t, "file://"+dir, append([]string{"demo", "--no-tour"}, args...)...)
	}
}

// TestKilledAtRandomTimes: trim, retention run --all, compact, repair,
// checkpoint create and import kafka-log, each SIGKILLed at random moments of a slowed run and
// rerun: every rerun converges to the store an uninterrupted run leaves.
func TestKilledAtRandomTimes(t *testing.T) {
	now := "2027-06-01T00:00:00Z"
	compactNow := demo.CompactNow.UTC().Format(time.RFC3339)
	var replica, digest string // the repair case's intact copy of its base store, the damaged member
	cases := []killCase{{
		name: "trim",
		base: demoBase("--records", "1500", "--partitions", "1"),
		args: func(_, _ string) []string { return []string{"trim", "orders-0", "--to", trimTarget} },
		rate: "20",
		check: func(t *testing.T, dir string) {
			st := fileStore(t, dir)
			if s := snapPart(t, st, "orders", 0); s.trim != trimTargetN || s.observed != trimTargetN {
				t.Fatalf("orders-0: trim %d, observed %d", s.trim, s.observed)
			}
		},
	}, {
		name: "retention-run",
		base: demoBase("--records", "3000", "--partitions", "2", "--checkpoints", "1"),
		args: func(_, extra string) []string {
			return []string{"retention", "run", "--all", "--yes", "--now", now, "--progress-file", filepath.Join(extra, "progress.json")}
		},
		rate: "120",
	}, {
		name: "compact",
		base: func(t *testing.T, dir string) {
			demoBase("--records", "3000", "--partitions", "1")(t, dir)
			uncompact(t, dir, "customers", 0)
		},
		args: func(_, _ string) []string { return []string{"compact", "customers-0", "--now", compactNow} },
		rate: "50",
		check: func(t *testing.T, dir string) {
			b, _, err := layout.LoadBinding(context.Background(), fileStore(t, dir), "customers", 0)
			if err != nil || b.Coverage.State != layout.CoverageActive {
				t.Fatalf("customers-0 coverage after compact: %+v, %v", b.Coverage, err)
			}
		},
	}, {
		name: "repair",
		base: func(t *testing.T, dir string) {
			demoBase("--records", "3000", "--partitions", "1")(t, dir)
			replica = dir + ".replica"
			digest = quarantineMember(t, dir, replica, "__consumer_offsets", 0)
		},
		args: func(_, _ string) []string {
			// (repair --all-from does not converge here: after a kill
			// that restored the member but not the coverage, a rerun
			// finds no differing member and leaves the set QUARANTINED.)
			return []string{"repair", "__consumer_offsets-0", "--digest", digest, "--from", "file://" + replica}
		},
		rate: "30",
		check: func(t *testing.T, dir string) {
			b, _, err := layout.LoadBinding(context.Background(), fileStore(t, dir), "__consumer_offsets", 0)
			if err != nil || b.Coverage.State != layout.CoverageActive {
				t.Fatalf("__consumer_offsets-0 coverage after repair: %+v, %v", b.Coverage, err)
			}
		},
	}, {
		name: "checkpoint-create",
		base: demoBase("--records", "1500", "--partitions", "2"),
		args: func(_, _ string) []string { return []string{"checkpoint", "create", "--all"} },
		rate: "80",
	}, {
		// import kafka-log killed anywhere, also after its stream's
		// generations and before its binding: the rerun finds its own
		// half-written stream (the id derives from the bytes), resumes
		// it and creates the binding; a rerun over the finished import
		// is "already imported" (exit 0) and changes nothing.
		name: "import",
		base: func(t *testing.T, dir string) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		},
		args: func(_, _ string) []string {
			return []string{"import", "kafka-log", filepath.Join("..", "testdata", "kafka", "kafka-2.7-compacted", "__consumer_offsets-39"), "--now", now}
		},
		rate: "8",
		check: func(t *testing.T, dir string) {
			if _, _, err := layout.LoadBinding(context.Background(), fileStore(t, dir), "__consumer_offsets", 39); err != nil {
				t.Fatalf("__consumer_offsets-39 after import: %v", err)
			}
		},
	}}
	for i, kc := range cases {
		t.Run(kc.name, func(t *testing.T) {
			runKillCase(t, kc, 5, uint64(i+1))
		})
	}
}

// uncompact returns a compacted partition to before its compaction: the
// coverage NONE, its TOPIC_COMPACTED manifests and NTC2 objects deleted.
func uncompact(t *testing.T, dir, topic string, p int32) {
	t.Helper()
	ctx := context.Background()
	st := fileStore(t, dir)
	b, etag, err := layout.LoadBinding(ctx, st, topic, p)
	if err != nil {
		t.Fatal(err)
	}
	if b.Coverage.State != layout.CoverageActive {
		t.Fatalf("%s-%d: coverage %s, want ACTIVE to undo", topic, p, b.Coverage.State)
	}
	for _, m := range b.Coverage.Members {
		if err := st.Delete(ctx, layout.GenerationKey(b.StreamID, m.Gen), store.None()); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := st.List(ctx, layout.StreamPrefix(b.StreamID)+"compacted/")
	if err != nil || len(objs) == 0 {
		t.Fatalf("%s-%d: compacted objects: %d, %v", topic, p, len(objs), err)
	}
	for _, o := range objs {
		if err := st.Delete(ctx, o.Key, store.None()); err != nil {
			t.Fatal(err)
		}
	}
	b.Coverage = layout.Coverage{State: layout.CoverageNone}
	b.Version++
	if _, err := layout.Replace(ctx, st, layout.BindingKey(topic, p), b, etag); err != nil {
		t.Fatal(err)
	}
}

// quarantineMember keeps an intact copy of the store in replica, flips
// a byte of one member of topic-p's compacted set, lets verify quarantine
// it, and returns the member's digest (its name).
func quarantineMember(t *testing.T, dir, replica, topic string, p int32) (digest string) {
	t.Helper()
	if err := os.CopyFS(replica, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return damage(t, dir, topic, p)
}

// damage flips a byte of one member object of topic-p's compacted set,
// lets verify quarantine it (exit 3), and returns the member's digest.
func damage(t *testing.T, dir, topic string, p int32) (digest string) {
	t.Helper()
	ctx := context.Background()
	st := fileStore(t, dir)
	b, _, err := layout.LoadBinding(ctx, st, topic, p)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx, layout.StreamPrefix(b.StreamID)+"compacted/")
	if err != nil || len(objs) == 0 {
		t.Fatalf("%s-%d: compacted objects: %d, %v", topic, p, len(objs), err)
	}
	data, err := st.Get(ctx, objs[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if _, err := st.Put(ctx, objs[0].Key, data, store.None()); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	t.Setenv("NEREUSCTL_STORE", "file://"+dir)
	if code := cmd.Execute(ctx, []string{"verify", fmt.Sprintf("%s-%d", topic, p)}, &out, &errb); code != 3 {
		t.Fatalf("verify of the damaged set: exit %d, want 3\n%s%s", code, out.String(), errb.String())
	}
	return "sha256:" + strings.TrimSuffix(filepath.Base(objs[0].Key), ".ntc2")
}

// allPartitions is what --all selects, in its order: every binding.
func allPartitions(t *testing.T, st store.Store) []string {
	t.Helper()
	tps, err := layout.ListBindings(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(tps))
	for i, tp := range tps {
		names[i] = tp.String()
	}
	return names
}
