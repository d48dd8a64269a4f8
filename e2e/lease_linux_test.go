//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
)

// waitStopped waits until process pid is stopped (state T in
// /proc/PID/stat): it reached its NEREUSCTL_TEST_STOP_AFTER step.
func waitStopped(t *testing.T, c *exec.Cmd, out, errb fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid))
		if err != nil {
			t.Fatalf("process %d: %v\n%s%s", c.Process.Pid, err, out, errb)
		}
		// pid (comm) STATE ...: the state follows the last ')'.
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 {
			switch f[0] {
			case "T", "t":
				return
			case "Z":
				t.Fatalf("process %d exited before its stop step\n%s%s", c.Process.Pid, out, errb)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = c.Process.Kill()
	t.Fatalf("process %d never reached its stop step\n%s%s", c.Process.Pid, out, errb)
}

// exitOf is a finished process's exit status.
func exitOf(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// compactBase is a demo store whose customers-0 is to be compacted again.
func compactBase(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	demoBase("--records", "3000", "--partitions", "2")(t, dir)
	uncompact(t, dir, "customers", 0)
	return dir
}

// checkCoverageWhole requires topic-p's ACTIVE coverage's every member
// object to exist and `verify --deep` to be clean.
func checkCoverageWhole(t *testing.T, dir, topic string, p int32) {
	t.Helper()
	ctx := context.Background()
	st := fileStore(t, dir)
	b, _, err := layout.LoadBinding(ctx, st, topic, p)
	if err != nil {
		t.Fatal(err)
	}
	if b.Coverage.State != layout.CoverageActive || len(b.Coverage.Members) == 0 {
		t.Fatalf("%s-%d coverage %s with %d members, want ACTIVE", topic, p, b.Coverage.State, len(b.Coverage.Members))
	}
	for _, m := range b.Coverage.Members {
		g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, m.Gen)
		if err != nil {
			t.Fatalf("member generation %d: %v", m.Gen, err)
		}
		for _, ob := range g.Objects {
			if _, err := st.Head(ctx, ob.Key); err != nil {
				t.Fatalf("member %d's object %s: %v (the published coverage names a deleted object)", m.Gen, ob.Key, err)
			}
		}
	}
	if code, out, errb := cli(t, "file://"+dir, nil, "verify", fmt.Sprintf("%s-%d", topic, p), "--deep"); code != 0 {
		t.Fatalf("verify --deep %s-%d: exit %d\n%s%s", topic, p, code, out, errb)
	}
}

// TestGCNeverRacesCompaction: a compaction stopped (SIGSTOP) after its
// NTC2 objects are PUT and verified and before their generation is
// published holds the partition lease, so `gc --grace 0s` run meanwhile
// is blocked on that partition (exit 4, naming the compaction as the
// holder) and deletes none of the new objects, while it still collects the
// others; resumed, the compaction publishes coverage whose every member
// exists and `verify --deep` is clean. Before partition leases, gc deleted
// the unreferenced new objects and compact exited 0 with ACTIVE coverage
// whose only member was gone.
func TestGCNeverRacesCompaction(t *testing.T) {
	dir := compactBase(t)
	url := "file://" + dir
	compactNow := demo.CompactNow.UTC().Format(time.RFC3339)
	c, out, errb := cliProc(t, url, []string{"NEREUSCTL_TEST_STOP_AFTER=written"}, "compact", "customers-0", "--now", compactNow)
	waitStopped(t, c, out, errb)
	defer func() { _ = c.Process.Signal(syscall.SIGCONT) }()

	ctx := context.Background()
	st := fileStore(t, dir)
	b, _, err := layout.LoadBinding(ctx, st, "customers", 0)
	if err != nil {
		t.Fatal(err)
	}
	staged, err := st.List(ctx, layout.StreamPrefix(b.StreamID)+"compacted/")
	if err != nil || len(staged) == 0 {
		t.Fatalf("the stopped compaction staged %d objects (%v), want some", len(staged), err)
	}

	code, gout, gerr := cli(t, url, nil, "gc", "--grace", "0s", "--lease-wait", "200ms", "-v")
	if code != 4 {
		t.Fatalf("gc --grace 0s during the compaction: exit %d, want 4 (blocked on customers-0)\n%s%s", code, gout, gerr)
	}
	holder := fmt.Sprintf("/pid-%d/", c.Process.Pid)
	if !strings.Contains(gout+gerr, "customers-0") || !strings.Contains(gout+gerr, "is held by") || !strings.Contains(gout+gerr, holder) {
		t.Fatalf("gc's report does not name customers-0 held by the compaction (%s):\n%s%s", holder, gout, gerr)
	}
	if !strings.Contains(gout, "gc: deleted ") {
		t.Fatalf("gc did not finish the other partitions:\n%s%s", gout, gerr)
	}
	for _, in := range staged {
		if _, err := st.Head(ctx, in.Key); err != nil {
			t.Fatalf("gc deleted %s, a view object the compaction is about to publish: %v", in.Key, err)
		}
	}
	if strings.Contains(gout, layout.StreamPrefix(b.StreamID)) {
		t.Fatalf("gc touched the leased partition's stream:\n%s", gout)
	}

	if err := c.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, c.Wait()); code != 0 {
		t.Fatalf("compact after SIGCONT: exit %d\n%s%s", code, out, errb)
	}
	checkCoverageWhole(t, dir, "customers", 0)
	// A gc now collects nothing the coverage uses.
	if code, gout, gerr := cli(t, url, nil, "gc", "--grace", "0s"); code != 0 {
		t.Fatalf("gc after the compaction: exit %d\n%s%s", code, gout, gerr)
	}
	checkCoverageWhole(t, dir, "customers", 0)
}

// killedCompaction is a demo store whose customers-0 a compaction staged
// NTC2 objects for and was killed (SIGKILL after its PUTs, before its
// publish): the store, the view's prefix and the staged objects.
func killedCompaction(t *testing.T) (string, store.Store, string, []store.ObjectInfo) {
	t.Helper()
	dir := compactBase(t)
	st := fileStore(t, dir)
	b, _, err := layout.LoadBinding(context.Background(), st, "customers", 0)
	if err != nil {
		t.Fatal(err)
	}
	prefix := layout.StreamPrefix(b.StreamID) + "compacted/"
	c, out, errb := cliProc(t, "file://"+dir, []string{"NEREUSCTL_TEST_STOP_AFTER=written"}, "compact", "customers-0", "--now", demo.CompactNow.UTC().Format(time.RFC3339))
	waitStopped(t, c, out, errb)
	_ = c.Process.Kill()
	t.Logf("compaction killed: %v\n%s%s", c.Wait(), out, errb)
	staged, err := st.List(context.Background(), prefix)
	if err != nil || len(staged) == 0 {
		t.Fatalf("the killed compaction staged %d objects (%v)", len(staged), err)
	}
	return dir, st, prefix, staged
}

// TestCompactRerunRefreshesItsObjects: a compaction killed after it staged
// its NTC2 objects leaves them unreferenced; hours later (their mtime is
// older than gc's default grace) a rerun produces the same content-
// addressed objects. The rerun must restart their age: stopped between its
// PUTs and its publish, a gc that ignores leases (the library, no lease
// callback) with the default 1h grace must not collect them, while the
// same gc past the grace would. Before, the rerun's IfAbsent PUT found the
// old bytes and left their mtime alone.
func TestCompactRerunRefreshesItsObjects(t *testing.T) {
	dir, st, prefix, staged := killedCompaction(t)
	url := "file://" + dir
	compactNow := demo.CompactNow.UTC().Format(time.RFC3339)
	ctx := context.Background()
	old := time.Now().Add(-3 * time.Hour)
	for _, in := range staged {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(in.Key)), old, old); err != nil {
			t.Fatal(err)
		}
	}

	// The rerun, stopped between its PUTs and its publish.
	c, out, errb := cliProc(t, url, []string{"NEREUSCTL_TEST_STOP_AFTER=written"}, "compact", "customers-0", "--now", compactNow)
	waitStopped(t, c, out, errb)
	defer func() { _ = c.Process.Signal(syscall.SIGCONT) }()
	again, err := st.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range again {
		if time.Since(in.Modified) > time.Hour {
			t.Fatalf("%s: the rerun re-referenced it but its age still counts from %s (gc's grace would collect it)", in.Key, in.Modified.UTC().Format(time.RFC3339))
		}
	}
	// gc without the lease (the library, no partition callback: the
	// rerun's lease does not stop it), default 1h grace: only the age of
	// the refreshed objects keeps them. It does consider them: the same
	// gc an hour and a minute later collects every one.
	tp := layout.TopicPartition{Topic: "customers", Partition: 0}
	rep, err := retention.GC(ctx, st, []layout.TopicPartition{tp}, retention.GCOptions{Grace: time.Hour, Now: time.Now()})
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("gc: %v %v", err, rep.Errors)
	}
	for _, in := range staged {
		if _, err := st.Head(ctx, in.Key); err != nil {
			t.Fatalf("%s collected by gc with the default grace: %v (its age was not restarted by the rerun)", in.Key, err)
		}
	}
	later, err := retention.GC(ctx, st, []layout.TopicPartition{tp}, retention.GCOptions{Grace: time.Hour, Now: time.Now().Add(time.Hour + time.Minute), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	would := map[string]bool{}
	for _, it := range later.Items {
		would[it.Key] = true
	}
	for _, in := range staged {
		if !would[in.Key] {
			t.Fatalf("gc past the grace would not collect %s: the check above proves nothing", in.Key)
		}
	}
	if err := c.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, c.Wait()); code != 0 {
		t.Fatalf("compact rerun: exit %d\n%s%s", code, out, errb)
	}
	checkCoverageWhole(t, dir, "customers", 0)
}

// holdLease takes tp's partition lease in st as another job would, for an
// hour; released when the test ends.
func holdLease(t *testing.T, st store.Store, topic string, p int32) {
	t.Helper()
	ctx := context.Background()
	l, err := lease.Acquire(ctx, st, lease.PartitionName(layout.TopicPartition{Topic: topic, Partition: p}), "other-job@elsewhere", time.Hour, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
}

// TestHeldLeaseBlocksEveryMutatingCommand: with orders-0's and
// customers-0's leases held by another job, every mutating command waits
// --lease-wait and reports exit 4 for that partition, naming the holder,
// while its other partitions are changed; the held partitions are left
// untouched and a dry run takes no lease.
func TestHeldLeaseBlocksEveryMutatingCommand(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base")
	demoBase("--records", "3000", "--partitions", "2")(t, base)
	unheld := func(t *testing.T) (string, store.Store) {
		dir := filepath.Join(t.TempDir(), "store")
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		return dir, fileStore(t, dir)
	}
	hold := func(t *testing.T, st store.Store) {
		holdLease(t, st, "orders", 0)
		holdLease(t, st, "customers", 0)
	}
	fresh := func(t *testing.T) (string, store.Store) {
		dir, st := unheld(t)
		hold(t, st)
		return dir, st
	}
	blocked := func(t *testing.T, code int, out, errb, name string) {
		t.Helper()
		if code != 4 {
			t.Fatalf("exit %d, want 4 (%s blocked)\n%s%s", code, name, out, errb)
		}
		if !strings.Contains(out+errb, "held by other-job@elsewhere") || !strings.Contains(out+errb, name) {
			t.Fatalf("the output does not name %s held by other-job@elsewhere:\n%s%s", name, out, errb)
		}
	}
	wait := []string{"--lease-wait", "200ms"}
	ctx := context.Background()

	t.Run("trim", func(t *testing.T) {
		dir, st := fresh(t)
		before := snapPart(t, st, "orders", 0)
		start := time.Now()
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"trim", "orders-0", "--to", "300"}, wait...)...)
		blocked(t, code, out, errb, "orders-0")
		if time.Since(start) < 200*time.Millisecond {
			t.Fatalf("trim gave up after %v, before --lease-wait", time.Since(start))
		}
		if s := snapPart(t, st, "orders", 0); s.trim != before.trim || s.headVersion != before.headVersion || s.bindingVersion != before.bindingVersion {
			t.Fatalf("the held partition changed: %+v -> %+v", before, s)
		}
		if code, out, errb := cli(t, "file://"+dir, nil, "trim", "orders-0", "--to", "300", "--dry-run", "--lease-wait", "0s"); code != 0 {
			t.Fatalf("trim --dry-run on a held partition: exit %d (a dry run takes no lease)\n%s%s", code, out, errb)
		}
		if code, out, errb := cli(t, "file://"+dir, nil, append([]string{"trim", "orders-1", "--to", "300"}, wait...)...); code != 0 {
			t.Fatalf("trim of the free orders-1: exit %d\n%s%s", code, out, errb)
		}
	})
	t.Run("delete-records", func(t *testing.T) {
		dir, st := fresh(t)
		f := filepath.Join(t.TempDir(), "offsets.json")
		if err := os.WriteFile(f, []byte(`{"partitions": [{"topic": "orders", "partition": 0, "offset": 300}, {"topic": "orders", "partition": 1, "offset": 300}], "version": 1}`), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"delete-records", "--offset-json-file", f}, wait...)...)
		blocked(t, code, out, errb, "orders-0")
		if !strings.Contains(out, "partition: orders-1\tlow_watermark: 300") {
			t.Fatalf("orders-1 was not trimmed:\n%s%s", out, errb)
		}
		if s := snapPart(t, st, "orders", 1); s.trim != 300 {
			t.Fatalf("orders-1 trim %d, want 300", s.trim)
		}
		if s := snapPart(t, st, "orders", 0); s.trim == 300 {
			t.Fatal("the held orders-0 was trimmed")
		}
	})
	t.Run("checkpoint-create", func(t *testing.T) {
		dir, st := fresh(t)
		if _, err := cli2(t, dir, "trim", "orders-1", "--to", "300"); err != nil {
			t.Fatal(err)
		}
		before := snapPart(t, st, "orders", 0)
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"checkpoint", "create", "orders-0", "orders-1"}, wait...)...)
		blocked(t, code, out, errb, "orders-0")
		ok := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "orders-1 ") && !strings.Contains(line, "error") {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("orders-1 not checkpointed:\n%s%s", out, errb)
		}
		if s := snapPart(t, st, "orders", 0); len(s.checkpoints) != len(before.checkpoints) || s.bindingVersion != before.bindingVersion {
			t.Fatal("the held orders-0 got a checkpoint")
		}
	})
	t.Run("compact", func(t *testing.T) {
		dir, st := fresh(t)
		uncompact(t, dir, "customers", 0)
		uncompact(t, dir, "customers", 1)
		compactNow := demo.CompactNow.UTC().Format(time.RFC3339)
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"compact", "customers-0", "customers-1", "--now", compactNow}, wait...)...)
		blocked(t, code, out, errb, "customers-0")
		for p, want := range map[int32]string{0: layout.CoverageNone, 1: layout.CoverageActive} {
			b, _, err := layout.LoadBinding(ctx, st, "customers", p)
			if err != nil || b.Coverage.State != want {
				t.Fatalf("customers-%d coverage %+v (%v), want %s", p, b.Coverage, err, want)
			}
		}
	})
	t.Run("gc", func(t *testing.T) {
		dir, st := fresh(t)
		for _, p := range []int32{0, 1} {
			if _, err := cli2(t, dir, "trim", fmt.Sprintf("payments-%d", p), "--to", "100"); err != nil {
				t.Fatal(err)
			}
		}
		// orders-0 and orders-1 get garbage beyond the head, 2h old.
		var keys []string
		for _, p := range []int32{0, 1} {
			b, _, err := layout.LoadBinding(ctx, st, "orders", p)
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := layout.LoadHead(ctx, st, b.StreamID)
			if err != nil {
				t.Fatal(err)
			}
			key := layout.ObjectKey(b.StreamID, h.Head, h.Head+3)
			if _, err := st.Put(ctx, key, []byte("leftover"), store.IfAbsent()); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-2 * time.Hour)
			if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(key)), old, old); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, key)
		}
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"gc", "--grace", "1m"}, wait...)...)
		blocked(t, code, out, errb, "orders-0")
		if _, err := st.Head(ctx, keys[0]); err != nil {
			t.Fatalf("gc deleted %s in the held orders-0: %v", keys[0], err)
		}
		if _, err := st.Head(ctx, keys[1]); err == nil {
			t.Fatalf("gc kept %s in the free orders-1:\n%s", keys[1], out)
		}
		if code, out, errb := cli(t, "file://"+dir, nil, "gc", "--grace", "1m", "--dry-run", "--lease-wait", "0s"); code != 0 {
			t.Fatalf("gc --dry-run with a held lease: exit %d (a dry run takes no lease)\n%s%s", code, out, errb)
		}
	})
	t.Run("repair", func(t *testing.T) {
		// Quarantined first (verify quarantines under the partition's
		// lease), then the leases are taken.
		dir, st := unheld(t)
		replica := dir + ".replica"
		quarantineMember(t, dir, replica, "customers", 0)
		// (quarantineMember copied the store first; a second member of
		// another partition is damaged in the same copy.)
		damage(t, dir, "customers", 1)
		hold(t, st)
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"repair", "--all-from", "file://" + replica}, wait...)...)
		blocked(t, code, out, errb, "customers-0")
		for p, want := range map[int32]string{0: layout.CoverageQuarantined, 1: layout.CoverageActive} {
			b, _, err := layout.LoadBinding(ctx, st, "customers", p)
			if err != nil || b.Coverage.State != want {
				t.Fatalf("customers-%d coverage %s (%v), want %s\n%s%s", p, b.Coverage.State, err, want, out, errb)
			}
		}
	})
	t.Run("verify", func(t *testing.T) {
		dir, st := fresh(t)
		// A damaged member in the held customers-0 and the free
		// customers-1: only the free one is quarantined.
		for _, p := range []int32{0, 1} {
			b, _, err := layout.LoadBinding(ctx, st, "customers", p)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := st.List(ctx, layout.StreamPrefix(b.StreamID)+"compacted/")
			if err != nil || len(objs) == 0 {
				t.Fatalf("customers-%d: %d compacted objects, %v", p, len(objs), err)
			}
			data, err := st.Get(ctx, objs[0].Key, nil)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0xff
			if _, err := st.Put(ctx, objs[0].Key, data, store.None()); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"verify", "customers-0", "customers-1"}, wait...)...)
		if code != 3 && code != 4 {
			t.Fatalf("verify: exit %d, want 3 or 4\n%s%s", code, out, errb)
		}
		if !strings.Contains(out+errb, "held by other-job@elsewhere") {
			t.Fatalf("verify does not name the held customers-0:\n%s%s", out, errb)
		}
		for p, want := range map[int32]string{0: layout.CoverageActive, 1: layout.CoverageQuarantined} {
			b, _, err := layout.LoadBinding(ctx, st, "customers", p)
			if err != nil || b.Coverage.State != want {
				t.Fatalf("customers-%d coverage %s (%v), want %s\n%s%s", p, b.Coverage.State, err, want, out, errb)
			}
		}
		// Checking a held partition writes nothing, so needs no lease.
		if code, out, errb := cli(t, "file://"+dir, nil, "verify", "orders-0", "--lease-wait", "0s"); code != 0 {
			t.Fatalf("verify of the clean, held orders-0: exit %d\n%s%s", code, out, errb)
		}
	})
	t.Run("config-set", func(t *testing.T) {
		dir, st := fresh(t)
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"config", "set", "orders", "retention.ms=86400000"}, wait...)...)
		blocked(t, code, out, errb, "orders-0")
		for p, want := range map[int32]int64{0: layout.DefaultTopicConfig().RetentionMs, 1: 86400000} {
			b, _, err := layout.LoadBinding(ctx, st, "orders", p)
			if err != nil || b.Config.RetentionMs != want {
				t.Fatalf("orders-%d retention.ms %d (%v), want %d\n%s%s", p, b.Config.RetentionMs, err, want, out, errb)
			}
		}
	})
	t.Run("store-upgrade", func(t *testing.T) {
		dir, st := fresh(t)
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"store", "upgrade"}, wait...)...)
		blocked(t, code, out, errb, "orders-0")
		if !strings.Contains(out, "2 partitions blocked") {
			t.Fatalf("store upgrade does not report the two held partitions:\n%s%s", out, errb)
		}
		_ = st
	})
	t.Run("import", func(t *testing.T) {
		dir, st := fresh(t)
		src := filepath.Join("..", "testdata", "kafka", "kafka-uncompacted")
		ents, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		var part string
		for _, e := range ents {
			if e.IsDir() && strings.Contains(e.Name(), "-") {
				part = e.Name()
				break
			}
		}
		if part == "" {
			t.Fatalf("no partition directory in %s", src)
		}
		holdLease(t, st, "imported", 0)
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"import", "kafka-log", filepath.Join(src, part), "--topic", "imported", "--partition", "0"}, wait...)...)
		blocked(t, code, out, errb, "imported-0")
		if _, _, err := layout.LoadBinding(ctx, st, "imported", 0); err == nil {
			t.Fatal("the import wrote the held partition's binding")
		}
		if code, out, errb := cli(t, "file://"+dir, nil, append([]string{"import", "kafka-log", filepath.Join(src, part), "--topic", "imported", "--partition", "1"}, wait...)...); code != 0 {
			t.Fatalf("import into the free imported-1: exit %d\n%s%s", code, out, errb)
		}
	})
}

// cli2 runs nereusctl on the file store dir in a subprocess; a non-zero
// exit is an error.
func cli2(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	code, out, errb := cli(t, "file://"+dir, nil, args...)
	if code != 0 {
		return out, fmt.Errorf("nereusctl %v: exit %d\n%s%s", args, code, out, errb)
	}
	return out, nil
}

// TestTwoTrimsOnOnePartitionNeverInterleave: a trim stopped (SIGSTOP)
// between its pre-trim checkpoint and its head CAS holds orders-0's lease;
// a second trim process to another target waits --lease-wait and exits 4
// without touching the partition, and one with a long wait waits until the
// first finishes and then trims; the end state is one clean sequence per
// target.
func TestTwoTrimsOnOnePartitionNeverInterleave(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	demoBase("--records", "1500", "--partitions", "1")(t, dir)
	url := "file://" + dir
	st := fileStore(t, dir)
	before := snapPart(t, st, "orders", 0)
	c, out, errb := cliProc(t, url, []string{"NEREUSCTL_TEST_STOP_AFTER=checkpoint"}, "trim", "orders-0", "--to", trimTarget)
	waitStopped(t, c, out, errb)
	defer func() { _ = c.Process.Signal(syscall.SIGCONT) }()
	mid := snapPart(t, st, "orders", 0)

	code, out2, errb2 := cli(t, url, nil, "trim", "orders-0", "--to", "500", "--lease-wait", "200ms")
	if code != 4 || !strings.Contains(out2+errb2, fmt.Sprintf("/pid-%d/", c.Process.Pid)) {
		t.Fatalf("second trim during the first: exit %d, want 4 naming the first trim (pid %d)\n%s%s", code, c.Process.Pid, out2, errb2)
	}
	if s := snapPart(t, st, "orders", 0); s.headVersion != mid.headVersion || s.bindingVersion != mid.bindingVersion || len(s.checkpoints) != len(mid.checkpoints) {
		t.Fatalf("the blocked trim changed the partition: %+v -> %+v", mid, s)
	}

	// A patient second trim: waits for the first, then trims further.
	c2, out3, errb3 := cliProc(t, url, nil, "trim", "orders-0", "--to", "500", "--lease-wait", "60s")
	time.Sleep(500 * time.Millisecond)
	if s := snapPart(t, st, "orders", 0); s.headVersion != mid.headVersion || len(s.checkpoints) != len(mid.checkpoints) {
		t.Fatalf("the waiting trim changed the partition while the first held it: %+v -> %+v", mid, s)
	}
	if err := c.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, c.Wait()); code != 0 {
		t.Fatalf("first trim: exit %d\n%s%s", code, out, errb)
	}
	if code := exitOf(t, c2.Wait()); code != 0 {
		t.Fatalf("waiting trim: exit %d\n%s%s", code, out3, errb3)
	}
	s := snapPart(t, st, "orders", 0)
	if s.trim != 500 || s.observed != 500 {
		t.Fatalf("orders-0 after both trims: trim %d, observed %d, want 500", s.trim, s.observed)
	}
	if s.headVersion != before.headVersion+2 {
		t.Fatalf("head version %d -> %d, want exactly two trim CASes", before.headVersion, s.headVersion)
	}
	if code, out, errb := cli(t, url, nil, "verify", "orders-0", "--deep"); code != 0 {
		t.Fatalf("verify --deep: exit %d\n%s%s", code, out, errb)
	}
}

// TestParallelOrderAndIsolation: compact --all, gc and repair --all-from
// run --parallel 4 partitions at once; their reports list the partitions
// in sorted order whatever finishes first, and one partition that fails
// (its lease held by another job) is that partition's error while every
// other one is done; the exit status is the worst (4).
func TestParallelOrderAndIsolation(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base")
	demoBase("--records", "4000", "--partitions", "3")(t, base)
	fresh := func(t *testing.T) (string, store.Store) {
		dir := filepath.Join(t.TempDir(), "store")
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		return dir, fileStore(t, dir)
	}
	ctx := context.Background()
	args := []string{"--parallel", "4", "--lease-wait", "100ms", "-o", "json"}
	sorted := func(t *testing.T, names []string) {
		t.Helper()
		for i := 1; i < len(names); i++ {
			a, _ := layout.ParseTopicPartition(names[i-1])
			b, _ := layout.ParseTopicPartition(names[i])
			if a.Topic > b.Topic || (a.Topic == b.Topic && a.Partition >= b.Partition) {
				t.Fatalf("partitions out of order: %s before %s in %v", a, b, names)
			}
		}
	}

	t.Run("compact-all", func(t *testing.T) {
		dir, st := fresh(t)
		for p := int32(0); p < 3; p++ {
			uncompact(t, dir, "customers", p)
		}
		holdLease(t, st, "customers", 1)
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"compact", "--all", "--now", demo.CompactNow.UTC().Format(time.RFC3339)}, args...)...)
		if code != 4 {
			t.Fatalf("compact --all with customers-1 held: exit %d, want 4\n%s%s", code, out, errb)
		}
		var doc struct {
			Partitions []struct {
				Topic     string          `json:"topic"`
				Partition int32           `json:"partition"`
				Error     string          `json:"error"`
				Result    json.RawMessage `json:"result"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var names []string
		for _, p := range doc.Partitions {
			name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
			names = append(names, name)
			if (name == "customers-1") != (p.Error != "") {
				t.Fatalf("%s: error %q; want an error for the held customers-1 only", name, p.Error)
			}
		}
		sorted(t, names)
		if !strings.Contains(strings.Join(names, " "), "customers-0 customers-1 customers-2") {
			t.Fatalf("compact --all partitions %v", names)
		}
		for p, want := range map[int32]string{0: layout.CoverageActive, 1: layout.CoverageNone, 2: layout.CoverageActive} {
			b, _, err := layout.LoadBinding(ctx, st, "customers", p)
			if err != nil || b.Coverage.State != want {
				t.Fatalf("customers-%d coverage %s (%v), want %s", p, b.Coverage.State, err, want)
			}
		}
	})
	t.Run("gc", func(t *testing.T) {
		dir, st := fresh(t)
		holdLease(t, st, "orders", 1)
		var keys []string
		for p := int32(0); p < 3; p++ {
			b, _, err := layout.LoadBinding(ctx, st, "orders", p)
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := layout.LoadHead(ctx, st, b.StreamID)
			if err != nil {
				t.Fatal(err)
			}
			key := layout.ObjectKey(b.StreamID, h.Head, h.Head+2)
			if _, err := st.Put(ctx, key, []byte("leftover"), store.IfAbsent()); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(key)), old, old); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, key)
		}
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"gc", "--grace", "0s"}, args...)...)
		if code != 4 {
			t.Fatalf("gc with orders-1 held: exit %d, want 4\n%s%s", code, out, errb)
		}
		var doc struct {
			GC struct {
				Partitions []struct {
					Partition string `json:"partition"`
					Error     string `json:"error"`
				} `json:"partitions"`
			} `json:"gc"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		tps, err := layout.ListBindings(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.GC.Partitions) != len(tps) {
			t.Fatalf("gc reported %d of %d partitions", len(doc.GC.Partitions), len(tps))
		}
		for i, p := range doc.GC.Partitions {
			if p.Partition != tps[i].String() {
				t.Fatalf("gc partition %d is %s, want %s (the bindings' order)", i, p.Partition, tps[i])
			}
			if (p.Partition == "orders-1") != (p.Error != "") {
				t.Fatalf("%s: error %q; want an error for the held orders-1 only", p.Partition, p.Error)
			}
		}
		for p, key := range keys {
			_, err := st.Head(ctx, key)
			if (p == 1) != (err == nil) {
				t.Fatalf("orders-%d's leftover %s: %v (kept only in the held orders-1)", p, key, err)
			}
		}
	})
	t.Run("repair-all-from", func(t *testing.T) {
		dir, st := fresh(t)
		replica := dir + ".replica"
		quarantineMember(t, dir, replica, "customers", 0)
		damage(t, dir, "customers", 1)
		damage(t, dir, "customers", 2)
		holdLease(t, st, "customers", 1)
		code, out, errb := cli(t, "file://"+dir, nil, append([]string{"repair", "--all-from", "file://" + replica}, args...)...)
		if code != 4 {
			t.Fatalf("repair --all-from with customers-1 held: exit %d, want 4\n%s%s", code, out, errb)
		}
		var doc struct {
			Repairs []struct {
				Partition   string `json:"partition"`
				Reactivated bool   `json:"reactivated"`
			} `json:"repairs"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var names []string
		for _, r := range doc.Repairs {
			names = append(names, r.Partition)
		}
		if strings.Join(names, " ") != "customers-0 customers-2" {
			t.Fatalf("repairs %v, want customers-0 then customers-2 (customers-1 held)", names)
		}
		if !strings.Contains(errb, "customers-1") || !strings.Contains(errb, "held by other-job@elsewhere") {
			t.Fatalf("the held customers-1 is not reported:\n%s", errb)
		}
		for p, want := range map[int32]string{0: layout.CoverageActive, 1: layout.CoverageQuarantined, 2: layout.CoverageActive} {
			b, _, err := layout.LoadBinding(ctx, st, "customers", p)
			if err != nil || b.Coverage.State != want {
				t.Fatalf("customers-%d coverage %s (%v), want %s", p, b.Coverage.State, err, want)
			}
		}
	})
}

// TestPausedGCDeletesNothingPastItsLease: a compaction killed after it
// staged its NTC2 objects leaves them unreferenced, and `gc --grace 0s`
// decides to delete them; stopped (SIGSTOP) between that decision and its
// deletes, past its 1s lease, it loses the partition to a compaction that
// takes the expired lease over, re-PUTs the same content-addressed
// objects and publishes them as the ACTIVE coverage. Continued (SIGCONT),
// gc must prove its lease before each delete and find it gone: nothing the
// coverage references is deleted and `verify --deep` is clean. Before the
// fence, gc deleted the published coverage's objects on its stale
// decision.
func TestPausedGCDeletesNothingPastItsLease(t *testing.T) {
	// A compaction killed after its PUTs: its objects are unreferenced.
	dir, st, prefix, staged := killedCompaction(t)
	url := "file://" + dir
	compactNow := demo.CompactNow.UTC().Format(time.RFC3339)
	ctx := context.Background()

	// gc decides they are garbage, and stops before deleting them.
	gc, gout, gerr := cliProc(t, url, []string{"NEREUSCTL_TEST_STOP_AFTER=decided:customers-0"}, "gc", "--grace", "0s", "--lease-ttl", "1s", "--parallel", "1", "-v")
	waitStopped(t, gc, gout, gerr)
	defer func() { _ = gc.Process.Signal(syscall.SIGCONT) }()
	for _, in := range staged {
		if _, err := st.Head(ctx, in.Key); err != nil {
			t.Fatalf("gc deleted %s before its stop: %v", in.Key, err)
		}
	}

	// The compaction reruns: it waits out gc's lease (its holder is alive,
	// stopped), takes it over and publishes the same objects.
	code, cout, cerr := cli(t, url, nil, "compact", "customers-0", "--now", compactNow, "--lease-wait", "60s")
	if code != 0 {
		t.Fatalf("compact while gc is stopped: exit %d\n%s%s", code, cout, cerr)
	}
	checkCoverageWhole(t, dir, "customers", 0)

	// gc goes on: its lease is gone, it deletes nothing of customers-0.
	if err := gc.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	gcode := exitOf(t, gc.Wait())
	if gcode != 4 {
		t.Fatalf("gc continued past its lease: exit %d, want 4 (customers-0's lease not renewed in time)\n%s%s", gcode, gout, gerr)
	}
	if !strings.Contains(gout.String()+gerr.String(), "not renewed in time") {
		t.Fatalf("gc does not say its lease ran out:\n%s%s", gout, gerr)
	}
	if strings.Contains(gout.String(), "deleted "+prefix) {
		t.Fatalf("gc deleted objects of customers-0's view after its lease ran out:\n%s", gout)
	}
	checkCoverageWhole(t, dir, "customers", 0)
}
