package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

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

// checkOneTrim: the log start moved exactly once to target, at most one new
// checkpoint, head and binding agree, nothing deleted, replay --compare ok.
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
	if n > 1 {
		t.Fatalf("%s-%d: %d new checkpoints", topic, p, n)
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
			code, _, stderr := cli(t, "file://"+work, []string{"NEREUSCTL_TEST_CRASH_AFTER=" + step}, "trim", "orders-0", "--to", "300")
			if code != 137 || !strings.Contains(stderr, "test crash after step "+step) {
				t.Fatalf("crash run: exit %d, stderr %s", code, stderr)
			}
			if code, out, stderr := cli(t, "file://"+work, nil, "trim", "orders-0", "--to", "300"); code != 0 {
				t.Fatalf("rerun: exit %d\n%s%s", code, out, stderr)
			}
			checkOneTrim(t, st, "orders", 0, before, 300)
		})
	}
}

// TestTrimKilledAtEveryStepS3 is the same harness against versitygw: a
// fresh demo per step under its own prefix, the real trim process killed
// after each step, then rerun.
func TestTrimKilledAtEveryStepS3(t *testing.T) {
	srv := s3server.Start(t)
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
			code, _, stderr := cli(t, url, append(env, "NEREUSCTL_TEST_CRASH_AFTER="+step), "trim", "orders-0", "--to", "300")
			if code != 137 {
				t.Fatalf("crash run: exit %d: %s", code, stderr)
			}
			if code, out, stderr := cli(t, url, env, "trim", "orders-0", "--to", "300"); code != 0 {
				t.Fatalf("rerun: exit %d\n%s%s", code, out, stderr)
			}
			checkOneTrim(t, st, "orders", 0, before, 300)
		})
	}
}

// TestTrimKilledAtRandomTimes sends SIGKILL at random moments.
func TestTrimKilledAtRandomTimes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "base")
	inproc(t, "file://"+dir, "demo", "--records", "1500", "--partitions", "1", "--no-tour")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 6; i++ {
		work := filepath.Join(t.TempDir(), "store")
		if err := os.CopyFS(work, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		st := fileStore(t, work)
		before := snapPart(t, st, "orders", 0)
		c, _, _ := cliProc(t, "file://"+work, nil, "trim", "orders-0", "--to", "250")
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		_ = c.Process.Kill()
		_ = c.Wait()
		if code, out, stderr := cli(t, "file://"+work, nil, "trim", "orders-0", "--to", "250"); code != 0 {
			t.Fatalf("rerun %d: exit %d\n%s%s", i, code, out, stderr)
		}
		checkOneTrim(t, st, "orders", 0, before, 250)
	}
}

// TestRetentionResume kills a retention run part-way and judges the rerun
// as the second source document judges a consumer: it resumes at (or just
// before) the partition it was on, never from the first partition again.
func TestRetentionResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	url := "file://" + dir
	inproc(t, url, "demo", "--records", "6000", "--partitions", "5", "--checkpoints", "1", "--no-tour")
	st := fileStore(t, dir)
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
	args := []string{"retention", "run", "--all", "--yes", "--now", now, "--progress-file", progress}
	code, _, stderr := cli(t, url, []string{"NEREUSCTL_TEST_CRASH_AFTER=head#3"}, args...)
	if code != 137 {
		t.Fatalf("crash run: exit %d: %s", code, stderr)
	}
	var prog retention.Progress
	b, err := os.ReadFile(progress)
	if err != nil || json.Unmarshal(b, &prog) != nil {
		t.Fatalf("progress file: %v", err)
	}
	if prog.Complete {
		t.Fatal("a killed run's progress says complete")
	}
	// orders-0 and orders-1 are done, orders-2 was cut after its head step
	for _, name := range []string{"orders-0", "orders-1", "customers-0", "__consumer_offsets-0"} {
		if prog.Done[name] == nil {
			t.Fatalf("progress lacks %s: %v", name, keys(prog.Done))
		}
	}
	for _, name := range []string{"orders-2", "orders-3", "payments-0"} {
		if prog.Done[name] != nil {
			t.Fatalf("progress has %s, which was not finished", name)
		}
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
	if rep.Summary.Resumed != len(prog.Done) {
		t.Fatalf("resumed %d partitions, progress had %d", rep.Summary.Resumed, len(prog.Done))
	}
	final := orders()
	for p := 0; p < 5; p++ {
		// each partition's head was trimmed exactly once over both runs
		if final[p].headVersion != initial[p].headVersion+1 || final[p].trim != final[p].observed || final[p].trim == 0 {
			t.Fatalf("orders-%d: head version %d -> %d, trim %d, observed %d", p, initial[p].headVersion, final[p].headVersion, final[p].trim, final[p].observed)
		}
		// the resumed run did not touch the partitions already done
		if p < 2 && (final[p].headVersion != mid[p].headVersion || final[p].bindingVersion != mid[p].bindingVersion) {
			t.Fatalf("orders-%d was redone by the resumed run", p)
		}
	}
	if final[2].headVersion != mid[2].headVersion {
		t.Fatal("orders-2's head was trimmed a second time")
	}
	b, _ = os.ReadFile(progress)
	if json.Unmarshal(b, &prog) != nil || !prog.Complete {
		t.Fatal("progress not complete after the resumed run")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRetentionLease: a held lease makes a second run exit 4 naming the
// holder; an expired one is taken over; two concurrent processes: one works,
// the other exits 4.
func TestRetentionLease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	url := "file://" + dir
	inproc(t, url, "demo", "--records", "1500", "--partitions", "1", "--no-tour")
	st := fileStore(t, dir)
	ctx := context.Background()
	l, err := lease.Acquire(ctx, st, retention.LeaseName, "cron@other-host", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "p.json")
	code, _, stderr := cli(t, url, nil, "retention", "run", "--all", "--yes", "--progress-file", prog)
	if code != 4 || !strings.Contains(stderr, "held by cron@other-host until") {
		t.Fatalf("held lease: exit %d: %s", code, stderr)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// an expired lease is taken over
	if _, err := lease.Acquire(ctx, st, retention.LeaseName, "crashed-run", -time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := cli(t, url, nil, "retention", "run", "--all", "--yes", "--progress-file", prog); code != 0 {
		t.Fatalf("expired lease: exit %d\n%s%s", code, out, stderr)
	}
	// two at once: the slow first one holds the lease
	slow, _, _ := cliProc(t, url, nil, "retention", "run", "--all", "--yes", "--progress-file", filepath.Join(t.TempDir(), "a.json"), "--max-requests-per-second", "40")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := st.Head(ctx, layout.LeaseKey(retention.LeaseName)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run never took the lease")
		}
		time.Sleep(5 * time.Millisecond)
	}
	code, _, stderr = cli(t, url, nil, "retention", "run", "--all", "--yes", "--progress-file", filepath.Join(t.TempDir(), "b.json"))
	if code != 4 || !strings.Contains(stderr, "held by") {
		t.Fatalf("concurrent run: exit %d: %s", code, stderr)
	}
	if err := slow.Wait(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if _, err := st.Head(ctx, layout.LeaseKey(retention.LeaseName)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lease not released: %v", err)
	}
}
