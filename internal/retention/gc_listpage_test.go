package retention

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// perPrefix hides the store's page listing (store.PageLister), as file://
// has none: every part of a stream is listed on its own.
type perPrefix struct{ store.Store }

// TestGCListsEachStreamOnce: gc lists each stream once, in one LIST page
// on a store that pages (S3; mem:// as S3 does), where it listed the
// objects and the generations twice and the views and the checkpoints
// once more each, and it finds exactly what the per-prefix listings find:
// here an old leftover beyond each head.
func TestGCListsEachStreamOnce(t *testing.T) {
	ctx := context.Background()
	st, tps := gcDemo(t)
	for _, tp := range tps {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := layout.LoadHead(ctx, st, b.StreamID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, layout.ObjectKey(b.StreamID, h.Head, h.Head+5), []byte("leftover"), store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	o := GCOptions{DryRun: true, Now: time.Now().Add(time.Hour), Parallel: 4}
	run := func(s store.Store) (*GCReport, int64) {
		t.Helper()
		c := store.NewCounter(s)
		rep, err := GC(ctx, c, tps, o)
		if err != nil {
			t.Fatal(err)
		}
		return rep, c.Counts()[store.VerbList]
	}
	paged, pagedLists := run(st)
	per, perLists := run(perPrefix{st})
	if paged.Objects < len(tps) || paged.Objects != per.Objects || paged.Bytes != per.Bytes || !reflect.DeepEqual(paged.Items, per.Items) || !reflect.DeepEqual(paged.Totals, per.Totals) {
		t.Fatalf("one-page gc found %d objects (%d bytes), per-prefix gc %d (%d): the listings disagree\n%+v\n%+v", paged.Objects, paged.Bytes, per.Objects, per.Bytes, paged.Items, per.Items)
	}
	n := int64(len(tps))
	// Per partition: the stream's page and its compaction task folder;
	// once: tasks/ and deleted/ (the streams deleted on purpose).
	if pagedLists > 2*n+2 {
		t.Errorf("%d LISTs for %d partitions through a paging store, want at most %d", pagedLists, n, 2*n+2)
	}
	if perLists < 5*n {
		t.Errorf("%d LISTs for %d partitions without pages, want at least %d: the comparison proves nothing", perLists, n, 5*n)
	}
}
