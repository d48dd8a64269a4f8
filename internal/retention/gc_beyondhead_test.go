package retention

import (
	"context"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestGCKeepsYoungObjectsBeyondHead: an object at the head (a broker's
// append whose head CAS has not happened yet) is never collected younger
// than MinBeyondHeadGrace, even with --grace 0s, and the report counts it;
// once older than the minimum it is collected as beyond-head garbage.
func TestGCKeepsYoungObjectsBeyondHead(t *testing.T) {
	ctx := context.Background()
	st, tps := gcDemo(t)
	b, _, err := layout.LoadBinding(ctx, st, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	key := layout.ObjectKey(b.StreamID, h.Head, h.Head+5)
	if _, err := st.Put(ctx, key, []byte("an append in flight"), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	collected := func(rep *GCReport) bool {
		for _, it := range rep.Items {
			if it.Key == key {
				if it.Category != GarbageBeyondHead {
					t.Fatalf("%s collected as %s, want %s", key, it.Category, GarbageBeyondHead)
				}
				return true
			}
		}
		return false
	}
	// Five minutes old, --grace 0s: kept, and counted.
	rep, err := GC(ctx, st, tps, GCOptions{Grace: 0, Now: time.Now().Add(5 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if collected(rep) {
		t.Fatalf("gc --grace 0s collected %s, 5 minutes old, beyond the head %d: a live broker's append would be lost", key, h.Head)
	}
	if _, err := st.Head(ctx, key); err != nil {
		t.Fatalf("%s after gc: %v", key, err)
	}
	if p := gcPartitionOf(t, rep, "orders-0"); p.KeptBeyondHead != 1 || rep.KeptBeyondHead != 1 {
		t.Fatalf("kept beyond head: partition %d, report %d, want 1 and 1", p.KeptBeyondHead, rep.KeptBeyondHead)
	}
	// Older than the minimum grace: garbage.
	rep, err = GC(ctx, st, tps, GCOptions{Grace: 0, Now: time.Now().Add(MinBeyondHeadGrace + time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if !collected(rep) || rep.KeptBeyondHead != 0 {
		t.Fatalf("past the minimum grace: collected %v, kept %d; want collected, 0 kept", collected(rep), rep.KeptBeyondHead)
	}
	if _, err := st.Head(ctx, key); err == nil {
		t.Fatalf("%s still there after gc past the minimum grace", key)
	}
}
