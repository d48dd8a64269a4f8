package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/status"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

var countsRe = regexp.MustCompile(`requests: GET=(\d+) HEAD=(\d+) LIST=(\d+) PUT=(\d+) DELETE=(\d+)`)

// requests runs nereusctl with --stats and returns the total request count.
func requests(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	code := cmd.Execute(context.Background(), append(args, "--stats"), &out, &errb)
	if code != 0 {
		t.Fatalf("nereusctl %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	m := countsRe.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no request counts in %q", errb.String())
	}
	total := 0
	for _, s := range m[1:] {
		n, _ := strconv.Atoi(s)
		total += n
	}
	return total, strings.TrimPrefix(m[0], "requests: ")
}

// TestRequestEconomyS3 measures what commands cost in S3 requests against
// versitygw (docs/design.md §13: every command reports its counts; status and
// trim --dry-run are O(1) per partition once checkpoints are fresh) and
// keeps them within bounds.
func TestRequestEconomyS3(t *testing.T) {
	srv := s3server.Start(t)
	env := map[string]string{"NEREUSCTL_STORE": srv.URL("economy"), "NEREUSCTL_S3_ENDPOINT": srv.Endpoint, "NEREUSCTL_S3_PATH_STYLE": "true", "XDG_CONFIG_HOME": t.TempDir()}
	requests(t, env, "demo", "--records", "3000", "--partitions", "1", "--no-tour")
	// fresh checkpoints everywhere: the steady state of a cluster
	requests(t, env, "checkpoint", "create", "--all")
	n, counts := requests(t, env, "status")
	t.Logf("status, 6 partitions: %s (%.1f per partition)", counts, float64(n)/6)
	if n > 6*12 {
		t.Errorf("status cost %d requests for 6 partitions with fresh checkpoints", n)
	}
	n, counts = requests(t, env, "trim", "orders-0", "--to", "300", "--dry-run")
	t.Logf("trim --dry-run, 1 partition: %s", counts)
	if n > 15 {
		t.Errorf("trim --dry-run cost %d requests", n)
	}
	n, counts = requests(t, env, "trim", "orders-0", "--to", "300")
	t.Logf("trim, 1 partition: %s", counts)
	if n > 30 {
		t.Errorf("trim cost %d requests", n)
	}
	n1, counts := requests(t, env, "verify", "__consumer_offsets-0")
	t.Logf("verify (default), __consumer_offsets-0: %s", counts)
	n2, counts2 := requests(t, env, "verify", "__consumer_offsets-0", "--deep")
	t.Logf("verify --deep, __consumer_offsets-0: %s (the difference is one GET per object)", counts2)
	if n2 <= n1 {
		t.Errorf("deep verify (%d) did not cost more than default (%d)", n2, n1)
	}
}

// tailOf is what a restart from the newest usable checkpoint must read
// beyond a fixed overhead, per partition: the COMMITTED objects after the
// anchor (status's tail_objects) and the generation manifests newer than
// the last generation the checkpoint knows.
type tailOf struct{ objects, manifests int }

func tails(t *testing.T, dir string) map[string]tailOf {
	t.Helper()
	ctx := context.Background()
	st := fileStore(t, dir)
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := status.Collect(ctx, st, tps, time.Now(), 1)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tailOf{}
	for _, r := range rows {
		b, _, err := layout.LoadBinding(ctx, st, r.Topic, r.Partition)
		if err != nil {
			t.Fatal(err)
		}
		gens, err := layout.ListGenerations(ctx, st, b.StreamID)
		if err != nil {
			t.Fatal(err)
		}
		last := int64(-1)
		for _, g := range gens {
			m, _, err := layout.LoadGeneration(ctx, st, b.StreamID, g)
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind == layout.KindCommitted && r.CheckpointAnchor != nil && m.End <= *r.CheckpointAnchor {
				last = max(last, g)
			}
		}
		tl := tailOf{objects: r.TailObjects}
		for _, g := range gens {
			if g > last {
				tl.manifests++
			}
		}
		out[fmt.Sprintf("%s-%d", r.Topic, r.Partition)] = tl
	}
	return out
}

// countsOf runs nereusctl --stats in-process and returns its counts.
func countsOf(t *testing.T, dir string, args ...string) reqCounts {
	t.Helper()
	t.Setenv("NEREUSCTL_STORE", "file://"+dir)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var out, errb bytes.Buffer
	if code := cmd.Execute(context.Background(), append(args, "--stats"), &out, &errb); code != 0 {
		t.Fatalf("nereusctl %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	m := countsRe.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no request counts in %q", errb.String())
	}
	n := make([]int64, 5)
	for i, s := range m[1:] {
		n[i], _ = strconv.ParseInt(s, 10, 64)
	}
	return reqCounts{Get: n[0], Head: n[1], List: n[2], Put: n[3], Delete: n[4]}
}

// reqCounts is one --stats report line.
type reqCounts struct{ Get, Head, List, Put, Delete int64 }

// TestRequestEconomyTwoSizes measures the claim of docs/design.md §13 at
// two stream sizes, 2,000 and 20,000 records (ten times the objects and
// segments): status and trim --dry-run cost O(1) requests per partition
// beyond the tail they must read (the objects after the checkpoint's
// anchor and the generation manifests sealed since). With stale
// checkpoints the overhead beyond the tail is bounded by the same constant
// at both sizes while the tail itself grows; with fresh checkpoints (no
// tail) the counts are exactly equal at both sizes.
func TestRequestEconomyTwoSizes(t *testing.T) {
	// GETs beyond the tail, per partition: binding, head, checkpoint, the
	// anchor object's check, a coverage manifest. LISTs: 4 per partition
	// (checkpoints, objects after the anchor, generations after the
	// checkpoint's last, and the objects from the trim to the anchor, which
	// the hole check reads: an object missing there is data loss) plus one
	// of the bindings. The health check adds no GET here (the manifests a
	// checkpoint recorded are compared with the listing, not read again;
	// a coverage member's manifest is the one counted above) but a LIST:
	// a partition with compacted coverage lists its compacted/ views (the
	// set's member objects) where the stream is not listed in one page
	// (file://), and a status of every binding runs the store-wide check
	// once: bindings/, streams/ (one level), deleted/, quarantine/, leases/.
	const perPartition = 5
	const listsPerPartition = 4
	const coverageLists = 1 // per partition with coverage, on file://
	const storeWideLists = 5
	type measure struct {
		status, trim           reqCounts
		statusFresh, trimFresh reqCounts
		tail                   map[string]tailOf
		partitions             int64
	}
	measureAt := func(records string) measure {
		dir := filepath.Join(t.TempDir(), "store")
		inproc(t, "file://"+dir, "demo", "--records", records, "--partitions", "1", "--no-tour")
		var m measure
		m.tail = tails(t, dir)
		m.partitions = int64(len(m.tail))
		m.status = countsOf(t, dir, "status")
		m.trim = countsOf(t, dir, "trim", "orders-0", "--to", "300", "--dry-run")
		inproc(t, "file://"+dir, "checkpoint", "create", "--all")
		for name, tl := range tails(t, dir) {
			if tl.objects != 0 {
				t.Fatalf("%s records: %s has %d tail objects after checkpoint create --all", records, name, tl.objects)
			}
		}
		m.statusFresh = countsOf(t, dir, "status")
		m.trimFresh = countsOf(t, dir, "trim", "orders-0", "--to", "300", "--dry-run")
		return m
	}
	small, large := measureAt("2000"), measureAt("20000")
	if small.partitions != large.partitions {
		t.Fatalf("%d vs %d partitions", small.partitions, large.partitions)
	}
	sumTail := func(m measure) (objs, mans int64) {
		for _, tl := range m.tail {
			objs += int64(tl.objects)
			mans += int64(tl.manifests)
		}
		return
	}
	so, _ := sumTail(small)
	lo, _ := sumTail(large)
	if lo < 5*so {
		t.Fatalf("the larger stream's tail (%d objects) is not much larger than the smaller's (%d): the sizes do not differ", lo, so)
	}
	for _, m := range []struct {
		name string
		m    measure
	}{{"2000", small}, {"20000", large}} {
		objs, mans := sumTail(m.m)
		over := m.m.status.Get - objs - mans
		t.Logf("%s records: status %+v; tail %d objects, %d manifests; %d GETs beyond the tail for %d partitions",
			m.name, m.m.status, objs, mans, over, m.m.partitions)
		if over < 0 || over > perPartition*m.m.partitions || m.m.status.List > (listsPerPartition+coverageLists)*m.m.partitions+1+storeWideLists ||
			m.m.status.Head+m.m.status.Put+m.m.status.Delete != 0 {
			t.Errorf("%s records: status %+v is not O(1) per partition beyond the tail", m.name, m.m.status)
		}
		tl := m.m.tail["orders-0"]
		tover := m.m.trim.Get - int64(tl.objects) - int64(tl.manifests)
		t.Logf("%s records: trim --dry-run %+v; orders-0 tail %d objects, %d manifests", m.name, m.m.trim, tl.objects, tl.manifests)
		if tover < 0 || tover > perPartition || m.m.trim.List != listsPerPartition || m.m.trim.Put+m.m.trim.Delete+m.m.trim.Head != 0 {
			t.Errorf("%s records: trim --dry-run %+v is not O(1) beyond orders-0's tail", m.name, m.m.trim)
		}
	}
	// No tail: the same requests whatever the stream's size.
	t.Logf("fresh checkpoints: status %+v vs %+v; trim --dry-run %+v vs %+v", small.statusFresh, large.statusFresh, small.trimFresh, large.trimFresh)
	if small.statusFresh != large.statusFresh || small.trimFresh != large.trimFresh {
		t.Errorf("with fresh checkpoints the counts depend on the stream size: status %+v vs %+v, trim --dry-run %+v vs %+v",
			small.statusFresh, large.statusFresh, small.trimFresh, large.trimFresh)
	}
	if small.statusFresh.Get+small.statusFresh.List > (perPartition+listsPerPartition+coverageLists)*small.partitions+storeWideLists || small.trimFresh.Get+small.trimFresh.List > perPartition+listsPerPartition {
		t.Errorf("with fresh checkpoints: status %+v for %d partitions, trim --dry-run %+v", small.statusFresh, small.partitions, small.trimFresh)
	}
}
