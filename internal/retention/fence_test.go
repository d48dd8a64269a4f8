package retention

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
	"github.com/nereusctl/nereusctl/internal/testutil/fencetest"
)

// trimWrites: what the trim sequence writes (the pre-trim checkpoint, the
// head, the binding).
func trimWrites(key string) bool {
	return strings.Contains(key, "/checkpoints/") || strings.HasSuffix(key, "/head.json") || strings.HasPrefix(key, layout.BindingsPrefix)
}

// checkpointThenRef: the pre-trim checkpoint's publish is one call
// (recovery.CreateFrom) that writes the checkpoint, then the binding's
// reference to it.
func checkpointThenRef(prev, key string) bool {
	return strings.Contains(prev, "/checkpoints/") && strings.HasPrefix(key, layout.BindingsPrefix)
}

// TestTrimFencesEveryWrite: the pre-trim checkpoint, the head CAS and the
// binding CAS each follow a fence call (Hooks.Fence: the lease proven),
// and a fence that refuses at any of them stops the sequence there,
// writing nothing more; the rerun finishes the trim.
func TestTrimFencesEveryWrite(t *testing.T) {
	ctx := context.Background()
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	base := demoStore(t)
	// One more record: the head moves past the demo's checkpoint, so the
	// trim writes a pre-trim checkpoint of its own.
	b := mustBinding(t, base, tp)
	w, err := stream.OpenWriter(ctx, base, b.StreamID, b.Config)
	if err != nil {
		t.Fatal(err)
	}
	next := w.Next()
	bt, _ := kafka.EncodeBatch(kafka.NewBatchSpec(next, []kafka.Record{{Offset: next, Timestamp: 1, Key: []byte("k"), Value: []byte("v")}}))
	if err := w.Append(ctx, [][]byte{bt}); err != nil {
		t.Fatal(err)
	}
	target := next
	fs := &fencetest.Store{Store: cloneMem(t, base), Guarded: trimWrites, Continues: checkpointThenRef}
	r := RunPartition(ctx, fs, Request{TP: tp, DeleteRecords: &target, NowMs: time.Now().UnixMilli(), Hooks: Hooks{Fence: fs.Fence}})
	if !r.OK() || !r.Trimmed() {
		t.Fatalf("trim: %s %s", r.Error, r.ErrorDetail)
	}
	rep := fs.Report()
	if len(rep.Unfenced) > 0 {
		t.Fatalf("wrote %v without proving the lease first (fences %v, writes %v)", rep.Unfenced, rep.Steps, rep.Writes)
	}
	for _, want := range []string{"trim " + StepCheckpoint, "trim " + StepHead, "trim " + StepBinding} {
		if !contains(rep.Steps, want) {
			t.Fatalf("no fence %q: %v", want, rep.Steps)
		}
	}
	for k := 1; k <= len(rep.Steps); k++ {
		st := cloneMem(t, base)
		before := snap(t, st, tp)
		fs := &fencetest.Store{Store: st, Guarded: trimWrites, Continues: checkpointThenRef, RefuseAt: k}
		r := RunPartition(ctx, fs, Request{TP: tp, DeleteRecords: &target, NowMs: time.Now().UnixMilli(), Hooks: Hooks{Fence: fs.Fence}})
		if r.OK() || !errors.Is(r.Err, fencetest.ErrRefused) {
			t.Fatalf("refused at fence %d (%s): %s %s", k, rep.Steps[k-1], r.Error, r.ErrorDetail)
		}
		if late := fs.Report().Late; len(late) > 0 {
			t.Fatalf("refused at fence %d (%s): still wrote %v", k, rep.Steps[k-1], late)
		}
		if r := RunPartition(ctx, st, Request{TP: tp, DeleteRecords: &target, NowMs: time.Now().UnixMilli()}); !r.OK() {
			t.Fatalf("rerun after the refusal at %s: %s %s", rep.Steps[k-1], r.Error, r.ErrorDetail)
		}
		checkTrimmed(t, st, tp, before, target)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestGCFencesEveryDelete: under a partition wrapper (the lease), every
// delete of a partition's garbage follows a fence call, and a fence that
// refuses stops that partition's deletes at once; the store-wide sweeps
// (tasks of deleted streams, temp files) hold no partition lease and are
// not fenced.
func TestGCFencesEveryDelete(t *testing.T) {
	ctx := context.Background()
	st, tps := gcDemo(t)
	// Garbage in every partition: the view objects nothing references.
	for _, tp := range tps {
		b := mustBinding(t, st, tp)
		for _, k := range []string{"a", "b", "c"} {
			if _, err := st.Put(ctx, layout.StreamPrefix(b.StreamID)+"compacted/"+strings.Repeat(k, 64)+".ntc2", []byte(k), store.None()); err != nil {
				t.Fatal(err)
			}
		}
	}
	streamKey := func(key string) bool { return strings.HasPrefix(key, layout.StreamsPrefix) }
	wrap := func(ctx context.Context, _ layout.TopicPartition, fn func(context.Context) error) error {
		return fn(ctx)
	}
	o := GCOptions{Now: time.Now().Add(2 * time.Hour), Grace: time.Hour, Partition: wrap}

	fs := &fencetest.Store{Store: cloneMem(t, st), Guarded: streamKey}
	o.Fence = fs.Fence
	rep, err := GC(ctx, fs, tps, o)
	if err != nil || len(rep.Errors) > 0 || rep.Objects < 3*len(tps) {
		t.Fatalf("gc: %d objects, %v %v", rep.Objects, rep.Errors, err)
	}
	if r := fs.Report(); len(r.Unfenced) > 0 || len(r.Writes) < 3*len(tps) {
		t.Fatalf("deleted %d of %d without proving the lease first: %v", len(r.Unfenced), len(r.Writes), r.Unfenced)
	}

	fs = &fencetest.Store{Store: cloneMem(t, st), Guarded: streamKey, RefuseAt: 1}
	o.Fence = fs.Fence
	o.Parallel = 1
	rep, err = GC(ctx, fs, tps, o)
	if err != nil {
		t.Fatal(err)
	}
	if r := fs.Report(); len(r.Writes) > 0 {
		t.Fatalf("the fence refused, yet gc deleted %v", r.Writes)
	}
	if len(rep.Errors) != len(tps) || !strings.Contains(rep.Errors[0], "lease not proven") {
		t.Fatalf("want every partition reported with the refusal, got %v", rep.Errors)
	}
}
