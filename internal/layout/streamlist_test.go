package layout

import (
	"context"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

// TestStreamPageCoversThePartsBeforeTheObjects: a stream of more keys
// than a LIST page is listed in a truncated first page (ListStreamPage),
// which holds its checkpoints, compacted views and generations whole (they
// sort before the head and the objects) but not its objects; ListStream
// keeps its answer (nil: list the parts). A stream that fits is complete.
func TestStreamPageCoversThePartsBeforeTheObjects(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("page")
	const sid = "s-0123456789abcdef"
	put := func(key string) {
		t.Helper()
		if _, err := st.Put(ctx, key, []byte("x"), store.None()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		put(CheckpointKey(sid, int64(i*10), "0123456789ab"))
		put(GenerationKey(sid, int64(i)))
	}
	put(HeadKey(sid))
	for i := range 20 {
		put(ObjectKey(sid, int64(i), int64(i+1)))
	}
	small, err := ListStreamPage(ctx, st, sid)
	if err != nil || small == nil || !small.Complete() || !small.Covers(ObjectsPrefix(sid)) || len(small.Under(ObjectsPrefix(sid))) != 20 {
		t.Fatalf("a stream of 31 keys: %+v, %v", small, err)
	}
	for i := 20; i < store.PageKeys+100; i++ {
		put(ObjectKey(sid, int64(i), int64(i+1)))
	}
	l, err := ListStreamPage(ctx, st, sid)
	if err != nil || l == nil {
		t.Fatalf("ListStreamPage: %v, %v", l, err)
	}
	if l.Complete() {
		t.Fatal("a stream of more keys than a page listed complete in one")
	}
	for _, c := range []struct {
		prefix string
		covers bool
		n      int
	}{
		{CheckpointsPrefix(sid), true, 5},
		{CompactedPrefix(sid), true, 0},
		{GenerationsPrefix(sid), true, 5},
		{ObjectsPrefix(sid), false, -1},
	} {
		if got := l.Covers(c.prefix); got != c.covers {
			t.Errorf("Covers(%s) = %v, want %v", c.prefix, got, c.covers)
		}
		if c.n >= 0 && len(l.Under(c.prefix)) != c.n {
			t.Errorf("Under(%s): %d keys, want %d", c.prefix, len(l.Under(c.prefix)), c.n)
		}
	}
	if whole, err := ListStream(ctx, st, sid); whole != nil || err != nil {
		t.Fatalf("ListStream of a stream over a page: %v, %v (want nil: list the parts)", whole, err)
	}
}
