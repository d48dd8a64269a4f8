package retention

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
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
	if res.Digest != full.Digest || res.State.LogStart != target {
		t.Fatalf("replay: digest %s vs full %s, log start %d", res.Digest, full.Digest, res.State.LogStart)
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
		rule func(verb string, n int) store.Rule
	}{
		{"lost-response", func(v string, n int) store.Rule { return store.Rule{Verb: v, Nth: n, Kind: store.LoseResponse} }},
		{"timeout", func(v string, n int) store.Rule {
			return store.Rule{Verb: v, Nth: n, Kind: store.FailCall, Err: context.DeadlineExceeded}
		}},
		{"412", func(v string, n int) store.Rule {
			return store.Rule{Verb: v, Nth: n, Kind: store.FailCall, Err: store.ErrPreconditionFailed}
		}},
		{"409", func(v string, n int) store.Rule {
			return store.Rule{Verb: v, Nth: n, Kind: store.FailCall, Err: store.ErrConflict}
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
				faulty := store.NewFaulty(st)
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
