package retention

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

// demoStore writes a small demo cluster into a fresh mem:// store.
func demoStore(t *testing.T) *store.Mem {
	t.Helper()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records, o.Partitions = 1500, 1
	if _, err := demo.Run(context.Background(), st, o); err != nil {
		t.Fatal(err)
	}
	return st
}

type snapshot struct {
	head        layout.Head
	binding     layout.Binding
	checkpoints map[string]bool
	objects     map[string]store.ObjectInfo
}

func snap(t *testing.T, st store.Store, tp layout.TopicPartition) snapshot {
	t.Helper()
	ctx := context.Background()
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{head: *h, binding: *b, checkpoints: map[string]bool{}, objects: map[string]store.ObjectInfo{}}
	cps, _ := st.List(ctx, layout.CheckpointsPrefix(b.StreamID))
	for _, c := range cps {
		s.checkpoints[c.Key] = true
	}
	all, _ := st.List(ctx, "")
	for _, o := range all {
		s.objects[o.Key] = o
	}
	return s
}

// checkTrimmed asserts the invariants after a trim to target completed:
// log start moved exactly once, at most one new checkpoint, head and binding
// agree, replay --compare passes, and nothing was deleted.
func checkTrimmed(t *testing.T, st store.Store, tp layout.TopicPartition, before snapshot, target int64) {
	t.Helper()
	ctx := context.Background()
	after := snap(t, st, tp)
	if after.head.Trim != target {
		t.Fatalf("head trim %d, want %d", after.head.Trim, target)
	}
	if after.head.Version != before.head.Version+1 {
		t.Fatalf("head version %d -> %d: want exactly one trim mutation", before.head.Version, after.head.Version)
	}
	if after.binding.ObservedLogStart != target {
		t.Fatalf("binding observed_log_start %d, want %d", after.binding.ObservedLogStart, target)
	}
	newCPs := 0
	for k := range after.checkpoints {
		if !before.checkpoints[k] {
			newCPs++
		}
	}
	if newCPs > 1 {
		t.Fatalf("%d new checkpoints, want at most one pre-trim checkpoint", newCPs)
	}
	if r := after.binding.CheckpointRef; r == nil || r.Anchor < target || !after.checkpoints[r.Key] {
		t.Fatalf("binding checkpoint_ref %+v does not name a checkpoint at or above %d", r, target)
	}
	for k := range before.objects {
		if _, ok := after.objects[k]; !ok {
			t.Fatalf("trim deleted %s", k)
		}
	}
	b := after.binding
	res, err := recovery.Replay(ctx, st, &b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := recovery.Replay(ctx, st, &b, recovery.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest() != full.Digest() || res.State.LogStart != target {
		t.Fatalf("replay: digest %s vs full %s, log start %d", res.Digest(), full.Digest(), res.State.LogStart)
	}
}

// TestTrimFaultAtEveryCall injects a fault into the Nth PUT, GET, HEAD or
// LIST of a trim (a lost response after the write, a failed call, a 412, a
// 409), then reruns the same trim cleanly: the outcome is always one trim.
func TestTrimFaultAtEveryCall(t *testing.T) {
	ctx := context.Background()
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	base := demoStore(t)
	target := int64(250)
	kinds := []struct {
		name string
		rule func(verb string, n int) faultstore.Rule
	}{
		{"lost-response", func(v string, n int) faultstore.Rule {
			return faultstore.Rule{Verb: v, Nth: n, Kind: faultstore.LoseResponse}
		}},
		{"timeout", func(v string, n int) faultstore.Rule {
			return faultstore.Rule{Verb: v, Nth: n, Kind: faultstore.FailCall, Err: context.DeadlineExceeded}
		}},
		{"412", func(v string, n int) faultstore.Rule {
			return faultstore.Rule{Verb: v, Nth: n, Kind: faultstore.FailCall, Err: store.ErrPreconditionFailed}
		}},
		{"409", func(v string, n int) faultstore.Rule {
			return faultstore.Rule{Verb: v, Nth: n, Kind: faultstore.FailCall, Err: store.ErrConflict}
		}},
	}
	runs := 0
	for _, verb := range []string{store.VerbPut, store.VerbGet, store.VerbHead, store.VerbList} {
		for _, k := range kinds {
			if k.name == "lost-response" && verb != store.VerbPut {
				continue
			}
			for n := 1; ; n++ {
				st := cloneMem(t, base)
				before := snap(t, st, tp)
				faulty := faultstore.New(st)
				faulty.Add(k.rule(verb, n))
				_ = RunPartition(ctx, faulty, Request{TP: tp, DeleteRecords: &target, NowMs: time.Now().UnixMilli()})
				fired := faulty.Fired() > 0
				r := RunPartition(ctx, st, Request{TP: tp, DeleteRecords: &target, NowMs: time.Now().UnixMilli()})
				if !r.OK() {
					t.Fatalf("%s %s #%d: rerun failed: %s %s", k.name, verb, n, r.Error, r.ErrorDetail)
				}
				t.Run(fmt.Sprintf("%s-%s-%d", k.name, verb, n), func(t *testing.T) { checkTrimmed(t, st, tp, before, target) })
				runs++
				if !fired {
					break // the trim made fewer than n such calls
				}
			}
		}
	}
	t.Logf("%d fault points checked", runs)
}

// cloneMem copies a mem:// store.
func cloneMem(t *testing.T, src *store.Mem) *store.Mem {
	t.Helper()
	ctx := context.Background()
	dst := store.NewMem(fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()))
	all, err := src.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range all {
		b, err := src.Get(ctx, o.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Put(ctx, o.Key, b, store.None()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestTrimCrashAtEveryStep stops the sequence after each step, as a crash
// would, then reruns it.
func TestTrimCrashAtEveryStep(t *testing.T) {
	ctx := context.Background()
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	base := demoStore(t)
	target := int64(350)
	crash := errors.New("crash")
	for _, step := range []string{StepCheckpoint, StepHead, StepVerify, StepBinding} {
		st := cloneMem(t, base)
		before := snap(t, st, tp)
		r := RunPartition(ctx, st, Request{TP: tp, DeleteRecords: &target, Hooks: Hooks{After: func(s string) error {
			if s == step {
				return crash
			}
			return nil
		}}})
		if r.OK() || !errors.Is(r.Err, crash) {
			t.Fatalf("step %s: the crash did not stop the run: %+v", step, r)
		}
		r = RunPartition(ctx, st, Request{TP: tp, DeleteRecords: &target})
		if !r.OK() {
			t.Fatalf("step %s: rerun: %s %s", step, r.Error, r.ErrorDetail)
		}
		checkTrimmed(t, st, tp, before, target)
		// a third run is a no-op
		mid := snap(t, st, tp)
		r = RunPartition(ctx, st, Request{TP: tp, DeleteRecords: &target})
		if !r.OK() || r.Trimmed() {
			t.Fatalf("step %s: third run: %+v", step, r)
		}
		if after := snap(t, st, tp); after.head.Version != mid.head.Version || after.binding.Version != mid.binding.Version || len(after.objects) != len(mid.objects) {
			t.Fatalf("step %s: a repeated trim mutated the store", step)
		}
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	st := demoStore(t)
	before, _ := st.List(ctx, "")
	target := int64(300)
	for _, tp := range []layout.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "payments", Partition: 0}} {
		r := RunPartition(ctx, st, Request{TP: tp, DeleteRecords: &target, DryRun: true, Retention: true, NowMs: time.Now().UnixMilli()})
		if !r.OK() || !r.Trimmed() || r.Checkpoint == "" || r.RequestsEstimate == 0 {
			t.Fatalf("%s dry run: %+v", tp, r)
		}
	}
	after, _ := st.List(ctx, "")
	if len(before) != len(after) {
		t.Fatalf("dry run changed the object count: %d -> %d", len(before), len(after))
	}
	for i := range before {
		if before[i].Key != after[i].Key || before[i].ETag != after[i].ETag {
			t.Fatalf("dry run changed %s", before[i].Key)
		}
	}
}

// TestGCSupersededViews: after a second compaction, gc deletes the views
// older than the active set's sources (the previous set is kept: a
// regenerate needs it) and NTC2 objects nothing references; the active set
// still verifies and reads.
func TestGCSupersededViews(t *testing.T) {
	ctx := context.Background()
	st := demoStore(t)
	tp := layout.TopicPartition{Topic: "customers", Partition: 0}
	// an abandoned run's object: no manifest references it
	orphan := "streams/" + mustBinding(t, st, tp).StreamID + "/compacted/" + strings.Repeat("0", 64) + ".ntc2"
	if _, err := st.Put(ctx, orphan, []byte("x"), store.None()); err != nil {
		t.Fatal(err)
	}
	b := mustBinding(t, st, tp)
	first := b.Coverage.Members[0].Gen
	rep, err := GC(ctx, st, []layout.TopicPartition{tp}, GCOptions{Now: time.Now().Add(time.Hour), Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals[GarbageCompacted].Objects != 1 {
		t.Fatalf("gc: %+v", rep.Totals)
	}
	if _, err := st.Head(ctx, orphan); err == nil {
		t.Fatal("the orphan NTC2 object survived")
	}
	if _, _, err := layout.LoadGeneration(ctx, st, b.StreamID, first); err != nil {
		t.Fatalf("the active set's generation was collected: %v", err)
	}
	// Two more compactions over new segments: the first set becomes the
	// source of the second, then is superseded by the third.
	for round := 0; round < 2; round++ {
		w, err := stream.OpenWriter(ctx, st, b.StreamID, b.Config)
		if err != nil {
			t.Fatal(err)
		}
		next := w.Next()
		spec := kafka.NewBatchSpec(next, []kafka.Record{{Offset: next, Timestamp: 1, Key: []byte("customer-1"), Value: []byte("v")}})
		bt, _ := kafka.EncodeBatch(spec)
		if err := w.Append(ctx, [][]byte{bt}); err != nil {
			t.Fatal(err)
		}
		if err := w.Roll(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := compaction.Compact(ctx, st, mustBinding(t, st, tp), compaction.Options{NowMs: 2_000_000_000_000}); err != nil {
			t.Fatal(err)
		}
	}
	b = mustBinding(t, st, tp)
	rep, err = GC(ctx, st, []layout.TopicPartition{tp}, GCOptions{Now: time.Now().Add(time.Hour), Grace: time.Minute})
	if err != nil || len(rep.Errors) > 0 {
		t.Fatal(err, rep.Errors)
	}
	if _, _, err := layout.LoadGeneration(ctx, st, b.StreamID, first); err == nil {
		t.Fatal("the superseded first set survived gc")
	}
	if rep.Totals[GarbageCompacted].Objects < 2 {
		t.Fatalf("gc: %+v", rep.Totals)
	}
	// the active set and its source set still read and verify
	if _, err := compaction.Read(ctx, st, b, 0, func(compaction.Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := compaction.Compact(ctx, st, b, compaction.Options{NowMs: 2_000_000_000_001}); err != nil {
		t.Fatal(err)
	}
}

func mustBinding(t *testing.T, st store.Store, tp layout.TopicPartition) *layout.Binding {
	t.Helper()
	b, _, err := layout.LoadBinding(context.Background(), st, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
