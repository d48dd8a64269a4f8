package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
)

// shardStore is a demo store of 39 partitions (12 orders partitions that a
// 2027 clock trims, 27 that it leaves alone) and each partition's head
// version before any run.
func shardStore(t *testing.T) (string, map[string]partSnap) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	url := "file://" + dir
	inproc(t, url, "demo", "--records", "3000", "--partitions", "12", "--no-tour", "-q")
	st := fileStore(t, dir)
	tps, err := layout.ListBindings(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if len(tps) < 39 {
		t.Fatalf("%d partitions, want 39", len(tps))
	}
	before := map[string]partSnap{}
	for _, tp := range tps {
		before[tp.String()] = snapPart(t, st, tp.Topic, tp.Partition)
	}
	return dir, before
}

type retentionRun struct {
	Partitions []retention.Result   `json:"partitions"`
	Summary    retention.JobSummary `json:"summary"`
}

// checkTrimmedOnce: every partition's head moved at most once, exactly once
// for the orders partitions (each planned trim), and head and binding agree.
func checkTrimmedOnce(t *testing.T, dir string, before map[string]partSnap) {
	t.Helper()
	st := fileStore(t, dir)
	for name, b := range before {
		tp, _ := layout.ParseTopicPartition(name)
		a := snapPart(t, st, tp.Topic, tp.Partition)
		want := b.headVersion
		if tp.Topic == "orders" {
			want++
		}
		if a.headVersion != want || a.trim != a.observed {
			t.Errorf("%s: head version %d -> %d (want %d), trim %d, observed %d", name, b.headVersion, a.headVersion, want, a.trim, a.observed)
		}
	}
}

// TestRetentionShardsInParallel starts 4 real processes at once, one per
// shard of --all --shard i/4, on one file:// store: every one exits 0 with
// no error (disjoint shards never meet a partition lease), together they
// cover every partition exactly once, every planned trim happens exactly
// once, and each shard keeps its own store progress, complete.
func TestRetentionShardsInParallel(t *testing.T) {
	dir, before := shardStore(t)
	url := "file://" + dir
	const n = 4
	type proc struct {
		wait func() (int, string, string)
	}
	procs := make([]proc, n)
	for i := 0; i < n; i++ {
		c, out, errb := cliProc(t, url, nil, "retention", "run", "--all", "--yes", "--now", "2027-06-01T00:00:00Z",
			"--shard", fmt.Sprintf("%d/%d", i, n), "--lease-wait", "0s", "--progress-file", filepath.Join(t.TempDir(), "p.json"), "-o", "json")
		procs[i].wait = func() (int, string, string) {
			code := 0
			if err := c.Wait(); err != nil {
				code = c.ProcessState.ExitCode()
			}
			return code, out.String(), errb.String()
		}
	}
	seen := map[string]int{}
	keys := map[string]bool{}
	for i, p := range procs {
		code, out, stderr := p.wait()
		if code != 0 {
			t.Fatalf("shard %d/%d: exit %d\n%s%s", i, n, code, out, stderr)
		}
		var rep retentionRun
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("shard %d: %v: %s", i, err, out)
		}
		if rep.Summary.Errors != 0 || len(rep.Partitions) == 0 {
			t.Fatalf("shard %d: %d errors over %d partitions", i, rep.Summary.Errors, len(rep.Partitions))
		}
		for _, r := range rep.Partitions {
			tp := layout.TopicPartition{Topic: r.Topic, Partition: r.Partition}
			if layout.ShardOf(tp, n) != i {
				t.Errorf("shard %d ran %s, which is shard %d's", i, tp, layout.ShardOf(tp, n))
			}
			seen[tp.String()]++
		}
		keys[rep.Summary.ProgressKey] = true
		p, _, err := layout.LoadRetentionProgress(context.Background(), fileStore(t, dir), rep.Summary.ProgressKey)
		if err != nil || !p.Complete || p.Selection != fmt.Sprintf("--all %d/%d", i, n) || p.DoneCount() != len(rep.Partitions) {
			t.Fatalf("shard %d: store progress %s: %+v, %v", i, rep.Summary.ProgressKey, p, err)
		}
	}
	for name := range before {
		if seen[name] != 1 {
			t.Errorf("%s covered %d times, want exactly once", name, seen[name])
		}
	}
	if len(seen) != len(before) {
		t.Errorf("%d partitions covered, the store has %d", len(seen), len(before))
	}
	if len(keys) != n {
		t.Errorf("%d store progress documents for %d shards", len(keys), n)
	}
	checkTrimmedOnce(t, dir, before)
	if left, _ := fileStore(t, dir).List(context.Background(), layout.LeasesPrefix); len(left) != 0 {
		t.Errorf("leases left behind: %v", left)
	}
}

// TestRetentionOverlappingRuns runs the same shard twice at once (slowed so
// that they overlap): they exclude each other per partition and through
// the shard's store progress. Each exits 0, or 4 saying another run of the
// selection is live or a partition is held; at least one finishes; every
// planned trim happens exactly once, and the shard's progress ends complete.
func TestRetentionOverlappingRuns(t *testing.T) {
	dir, before := shardStore(t)
	url := "file://" + dir
	args := []string{"retention", "run", "--all", "--yes", "--now", "2027-06-01T00:00:00Z", "--shard", "0/2",
		"--max-requests-per-second", "300", "--parallel", "2", "--progress-interval", "0s", "-o", "json"}
	type res struct {
		code        int
		out, stderr string
	}
	results := make(chan res, 2)
	for i := 0; i < 2; i++ {
		c, out, errb := cliProc(t, url, nil, append(args, "--progress-file", filepath.Join(t.TempDir(), "p.json"))...)
		go func() {
			code := 0
			if err := c.Wait(); err != nil {
				code = c.ProcessState.ExitCode()
			}
			results <- res{code, out.String(), errb.String()}
		}()
	}
	ok := 0
	for i := 0; i < 2; i++ {
		r := <-results
		switch {
		case r.code == 0:
			ok++
		case r.code == 4 && (strings.Contains(r.stderr, "another run of this selection") || strings.Contains(r.stderr, "is held by")):
			t.Logf("one run stood down: %s", strings.SplitN(r.stderr, "\n", 2)[0])
		default:
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.stderr)
		}
	}
	if ok == 0 {
		t.Fatal("neither run finished")
	}
	// Only shard 0's partitions are touched; each planned trim once.
	shard0 := map[string]partSnap{}
	st := fileStore(t, dir)
	for name, b := range before {
		tp, _ := layout.ParseTopicPartition(name)
		if layout.ShardOf(tp, 2) == 0 {
			shard0[name] = b
		} else if a := snapPart(t, st, tp.Topic, tp.Partition); a.headVersion != b.headVersion {
			t.Errorf("%s (shard 1) was trimmed", name)
		}
	}
	checkTrimmedOnce(t, dir, shard0)
	p, _, err := layout.LoadRetentionProgress(context.Background(), st, layout.RetentionProgressKey("--all 0/2"))
	if err != nil || !p.Complete {
		t.Fatalf("shard 0's progress: %+v, %v", p, err)
	}
}
