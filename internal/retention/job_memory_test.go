package retention

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/store"
)

// heapLive is the live heap after a full collection.
func heapLive() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// jobRetained runs a retention job (trims included) over a demo store of
// perTopic partitions per user topic and returns how many partitions it
// covered and the heap the job itself held when its last partition
// finished: the live heap then, less the live heap once the job is over
// and its report dropped. The store (which the trims grew), the selection
// and the test's own data are in both and cancel out; what is left is
// what the job keeps about the partitions it has done.
func jobRetained(t *testing.T, perTopic int, dryRun bool) (int, int64) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem(fmt.Sprintf("%s-%d", t.Name(), perTopic))
	do := demo.Options{Partitions: perTopic, Records: 40 * perTopic, Seed: 1, Checkpoints: 1, Parallel: 4}
	if _, err := demo.Run(ctx, st, do); err != nil {
		t.Fatal(err)
	}
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	o := JobOptions{
		Partitions: tps, Selection: "--all ", Now: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), NowExplicit: true, DryRun: dryRun,
		ProgressFile: filepath.Join(t.TempDir(), "p.json"), StoreID: "mem://" + t.Name(),
		Lease: lease.Options{Holder: "test", TTL: time.Minute}, Parallel: 4, FlushEvery: 0,
	}
	var atLast int64 = -1
	o.OnPartition = func(done, total int, _ *Result) {
		if done == total {
			atLast = heapLive()
		}
	}
	emitted, trimmed := 0, 0
	o.Emit = func(r *Result) error {
		emitted++
		if r.Trimmed() {
			trimmed++
		}
		if !r.OK() {
			return fmt.Errorf("%s-%d: %s", r.Topic, r.Partition, r.ErrorDetail)
		}
		return nil
	}
	rep, err := RunJob(ctx, st, o)
	if err != nil {
		t.Fatal(err)
	}
	if emitted != len(tps) || rep.Finished() != len(tps) || trimmed == 0 || trimmed != rep.Trimmed {
		t.Fatalf("%d of %d partitions emitted, %d reported, %d trimmed (%d in the summary)", emitted, len(tps), rep.Finished(), trimmed, rep.Trimmed)
	}
	rep = nil
	after := heapLive()
	runtime.KeepAlive(st)
	runtime.KeepAlive(tps)
	return len(tps), atLast - after
}

// TestJobMemoryIndependentOfPartitions: what a retention run keeps about
// the partitions it has done does not grow with their number: over N and
// 4N partitions, the heap the job holds when its last partition finishes
// grows by less than a small bound per partition, with progress or
// without (a dry run). Its progress kept a record per partition (a name
// and four numbers: 103 bytes a partition measured here) until it became
// a watermark and a window (-6 bytes a partition, i.e. none). It used to
// keep every partition's whole result (plan, segments, candidates, trim)
// twice, in the results and in the local progress cache, and every
// partition lease's renewal context hung off the job's context until the
// end (855 and 454 bytes a partition on these tiny partitions; kilobytes
// on real ones, whose plans list more segments).
func TestJobMemoryIndependentOfPartitions(t *testing.T) {
	for _, c := range []struct {
		dry   bool
		bound float64 // bytes per added partition
	}{{false, 48}, {true, 48}} {
		t.Run(fmt.Sprintf("dry_run=%v", c.dry), func(t *testing.T) {
			n1, r1 := jobRetained(t, 25, c.dry)
			n4, r4 := jobRetained(t, 100, c.dry)
			slope := float64(r4-r1) / float64(n4-n1)
			t.Logf("job-held heap at the last partition: %d partitions %d bytes, %d partitions %d bytes: %.0f bytes per added partition", n1, r1, n4, r4, slope)
			if slope > c.bound {
				t.Fatalf("the job holds %.0f bytes more per partition (%d at %d partitions, %d at %d): want at most %.0f", slope, r1, n1, r4, n4, c.bound)
			}
		})
	}
}

// TestJobLocalProgressIsTheStoreDocument: the local progress file is a
// cache of the store progress, no more: it holds the store document as
// written (so it is as small as that), reads back as such, and a run that
// finds only it (the store document gone) resumes from it.
func TestJobLocalProgressIsTheStoreDocument(t *testing.T) {
	ctx := context.Background()
	st := demoStore(t)
	o := jobOptions(t, st, "mem://a", filepath.Join(t.TempDir(), "p.json"))
	crashAfterFirstTrim(t, st, o)
	doc, _, err := layout.LoadRetentionProgress(ctx, st, layout.RetentionProgressKey(o.Selection))
	if err != nil {
		t.Fatal(err)
	}
	id, local, err := loadProgress(o.ProgressFile)
	if err != nil {
		t.Fatal(err)
	}
	if id != o.StoreID || string(layout.Encode(local)) != string(layout.Encode(doc)) {
		t.Fatalf("local progress (store %q): %s\nwant the store document %s", id, layout.Encode(local), layout.Encode(doc))
	}
	if doc.DoneCount() == 0 || doc.Complete {
		t.Fatalf("after the crash: %d done, complete %v", doc.DoneCount(), doc.Complete)
	}
	if err := st.Delete(ctx, layout.RetentionProgressKey(o.Selection), store.None()); err != nil {
		t.Fatal(err)
	}
	rep, err := RunJob(ctx, st, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != doc.DoneCount() || rep.Trimmed < doc.Trimmed || rep.GarbageBytes < doc.GarbageBytes {
		t.Fatalf("resumed from the local file: %+v, want the %d partitions it counts done (%d trimmed, %d garbage bytes)", rep.JobSummary, doc.DoneCount(), doc.Trimmed, doc.GarbageBytes)
	}
}
