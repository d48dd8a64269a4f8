package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/retention"
)

// Per-partition request budget of retention run beyond the tail objects and
// manifests a partition's replay must read: a replay's own reads (binding,
// head, checkpoint, anchor object, a coverage manifest; listings of the
// checkpoints, the objects after the anchor, the objects from the trim for
// the hole check, the generations; and the health check's listing of the
// compacted/ views of a partition with coverage where the stream is not
// listed in one page, file://: it reads no manifest a checkpoint recorded)
// and, for a trimmed partition, the durable
// sequence's writes and its one read-back: pre-trim checkpoint PUT, the
// binding's checkpoint_ref PUT, head PUT, head read-back, binding PUT. The
// binding and head are read once before their CAS (not again), the
// partition is replayed once. The partition lease (PUT, DELETE) and the
// store progress (a GET, then PUTs) are outside a partition's count.
const (
	replayBudget = 10
	trimBudget   = 5
)

// runRetentionStats runs retention run -o json --stats in-process: its
// report and its request counts.
func runRetentionStats(t *testing.T, dir string, args ...string) (retentionRun, reqCounts) {
	t.Helper()
	t.Setenv("NEREUSCTL_STORE", "file://"+dir)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var out, errb bytes.Buffer
	all := append([]string{"retention", "run", "--all", "--yes", "--now", "2027-06-01T00:00:00Z", "--progress-file", filepath.Join(t.TempDir(), "p.json"),
		"--progress-interval", "1h", "-o", "json", "--stats"}, args...)
	if code := cmd.Execute(context.Background(), all, &out, &errb); code != 0 {
		t.Fatalf("nereusctl %v: exit %d\n%s%s", all, code, out.String(), errb.String())
	}
	var rep retentionRun
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	return rep, jsonStats(t, errb.String())
}

// jsonStats reads the request counts of --stats under -o json: the last
// stderr line, {"schema_version":1,"stats":{"requests":{...}}}.
func jsonStats(t *testing.T, stderr string) reqCounts {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var doc struct {
		Stats struct {
			Requests map[string]int64 `json:"requests"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &doc); err != nil || doc.Stats.Requests == nil {
		t.Fatalf("no request counts in %q (%v)", stderr, err)
	}
	r := doc.Stats.Requests
	return reqCounts{Get: r["GET"], Head: r["HEAD"], List: r["LIST"], Put: r["PUT"], Delete: r["DELETE"]}
}

// TestRetentionEconomyTwoSizes measures retention run --all (with its
// trims) at two stream sizes, 2,000 and 20,000 records (ten times the
// objects and segments). Each partition's requests beyond the tail it must
// read stay within one budget at both sizes (replayBudget, plus trimBudget
// when trimmed); with fresh checkpoints (no tail) a partition with the
// same outcome costs exactly the same at both sizes; and the run's own
// overhead beyond its partitions (the bindings listing, two lease requests
// per partition, the store progress) is the same at both sizes.
func TestRetentionEconomyTwoSizes(t *testing.T) {
	type measure struct {
		stale, fresh       retentionRun
		staleRun, freshRun reqCounts
		tail               map[string]tailOf
	}
	measureAt := func(records string) measure {
		dir := filepath.Join(t.TempDir(), "stale")
		inproc(t, "file://"+dir, "demo", "--records", records, "--partitions", "1", "--no-tour")
		fresh := filepath.Join(t.TempDir(), "fresh")
		if err := os.CopyFS(fresh, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		var m measure
		m.tail = tails(t, dir)
		m.stale, m.staleRun = runRetentionStats(t, dir)
		inproc(t, "file://"+fresh, "checkpoint", "create", "--all")
		for name, tl := range tails(t, fresh) {
			if tl.objects != 0 {
				t.Fatalf("%s records: %s has %d tail objects after checkpoint create --all", records, name, tl.objects)
			}
		}
		m.fresh, m.freshRun = runRetentionStats(t, fresh)
		return m
	}
	small, large := measureAt("2000"), measureAt("20000")
	var tailSmall, tailLarge int64
	for _, tl := range small.tail {
		tailSmall += int64(tl.objects)
	}
	for _, tl := range large.tail {
		tailLarge += int64(tl.objects)
	}
	if tailLarge < 5*tailSmall {
		t.Fatalf("the larger streams' tails (%d objects) are not much larger than the smaller's (%d): the sizes do not differ", tailLarge, tailSmall)
	}
	overhead := func(rep retentionRun, c reqCounts) int64 {
		sum := int64(0)
		for _, r := range rep.Partitions {
			sum += r.Requests
		}
		return c.Get + c.Head + c.List + c.Put + c.Delete - sum
	}
	budget := func(r retention.Result) int64 {
		if r.Trim != nil && r.Trim.HeadMutated {
			return replayBudget + trimBudget
		}
		return replayBudget
	}
	for _, m := range []struct {
		name string
		m    measure
	}{{"2000", small}, {"20000", large}} {
		for _, r := range m.m.stale.Partitions {
			name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
			tl := m.m.tail[name]
			if beyond := r.Requests - int64(tl.objects+tl.manifests); beyond < 0 || beyond > budget(r) {
				t.Errorf("%s records: %s cost %d requests, %d beyond its tail of %d objects and %d manifests: budget %d",
					m.name, name, r.Requests, beyond, tl.objects, tl.manifests, budget(r))
			}
		}
		for _, r := range m.m.fresh.Partitions {
			if r.Requests > budget(r) {
				t.Errorf("%s records, fresh checkpoints: %s-%d cost %d requests: budget %d", m.name, r.Topic, r.Partition, r.Requests, budget(r))
			}
		}
		t.Logf("%s records: retention run %+v (run overhead %d); fresh checkpoints %+v (run overhead %d); %d partitions",
			m.name, m.m.staleRun, overhead(m.m.stale, m.m.staleRun), m.m.freshRun, overhead(m.m.fresh, m.m.freshRun), len(m.m.stale.Partitions))
	}
	// Same outcome, no tail: the same requests whatever the stream's size.
	for i, r := range small.fresh.Partitions {
		l := large.fresh.Partitions[i]
		if r.Topic != l.Topic || r.Partition != l.Partition {
			t.Fatalf("partition %d: %s-%d vs %s-%d", i, r.Topic, r.Partition, l.Topic, l.Partition)
		}
		if budget(r) == budget(l) && r.Requests != l.Requests {
			t.Errorf("fresh checkpoints: %s-%d cost %d requests at 2,000 records and %d at 20,000", r.Topic, r.Partition, r.Requests, l.Requests)
		}
	}
	for _, o := range []int64{overhead(small.fresh, small.freshRun), overhead(large.fresh, large.freshRun), overhead(small.stale, small.staleRun), overhead(large.stale, large.staleRun)} {
		if o != overhead(small.fresh, small.freshRun) {
			t.Errorf("the run's own overhead depends on the stream size: %d vs %d", o, overhead(small.fresh, small.freshRun))
		}
	}
}
