package retention

import (
	"context"
	"errors"
	"testing"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// TestTrimNeverRunsOverAHole: with a COMMITTED object missing between the
// trim and the head (below the newest checkpoint, which hides it),
// RunPartition (trim, delete-records, retention run; dry run or not; the
// path every command takes) neither moves the trim, writes a checkpoint nor
// touches the binding: a trim past the hole would make the lost data look
// like gc's. The head moved on after an earlier replay: the run replays the
// current head, not the replay it could have reused.
func TestTrimNeverRunsOverAHole(t *testing.T) {
	ctx := context.Background()
	st := demoStore(t)
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	b := mustBinding(t, st, tp)
	stale, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if stale.Chosen == nil {
		t.Fatal("the demo's orders-0 has no checkpoint")
	}
	objs, err := layout.ListObjects(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	var victim layout.StreamObject
	for _, o := range objs {
		if o.End < stale.Chosen.Anchor && o.Base > 0 {
			victim = o
			break
		}
	}
	if err := st.Delete(ctx, victim.Key, store.None()); err != nil {
		t.Fatal(err)
	}
	// the head moved on since the stale replay (another trim's CAS
	// would do the same): a new version of the same bounds
	h, etag, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	h.Version++
	if _, err := layout.Replace(ctx, st, layout.HeadKey(b.StreamID), h, etag); err != nil {
		t.Fatal(err)
	}
	before := snap(t, st, tp)
	wantLoss := func(what string, err error) {
		t.Helper()
		var me *stream.MissingError
		if !errors.As(err, &me) || !errkind.IsData(err) || me.Ranges[0] != [2]int64{victim.Base, victim.End} {
			t.Fatalf("%s: %v (kind %v), want missing [%d, %d)", what, err, errkind.Of(err), victim.Base, victim.End)
		}
	}
	target := stale.Head.Head - 1 // past the hole
	for _, dry := range []bool{true, false} {
		r := RunPartition(ctx, st, Request{TP: tp, DeleteRecords: &target, DryRun: dry})
		if r.OK() {
			t.Fatalf("dry run %v: trimmed over the hole: %+v", dry, r)
		}
		wantLoss("RunPartition", r.Err)
	}
	after := snap(t, st, tp)
	if after.head != before.head || after.binding.Version != before.binding.Version || len(after.objects) != len(before.objects) {
		t.Fatalf("the store changed: head %+v -> %+v, binding v%d -> v%d, %d -> %d objects", before.head, after.head, before.binding.Version, after.binding.Version, len(before.objects), len(after.objects))
	}
}
