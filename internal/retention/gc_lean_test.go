package retention

import (
	"context"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestGCLeanKeepsOnlyTheSummary: a lean gc (the table output without
// --verbose) deletes exactly what a full one does and reports the same
// totals, but keeps no entry per object and lists only the partitions
// with something to say, so its memory does not follow the objects and
// partitions it collects.
func TestGCLeanKeepsOnlyTheSummary(t *testing.T) {
	ctx := context.Background()
	run := func(lean bool) (*GCReport, []layout.TopicPartition, store.Store) {
		st, tps := gcDemo(t)
		// Trim every partition (garbage below the trim), and make one
		// partition fail (a manifest that does not decode).
		o := jobOptions(t, st, "mem://gc", t.TempDir()+"/p.json")
		o.Now = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
		if _, err := RunJob(ctx, st, o); err != nil {
			t.Fatal(err)
		}
		b, _, err := layout.LoadBinding(ctx, st, "payments", 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, layout.GenerationKey(b.StreamID, 2), []byte(`{"stream_id":`), store.None()); err != nil {
			t.Fatal(err)
		}
		rep, err := GC(ctx, st, tps, GCOptions{Grace: 0, Now: time.Now().Add(time.Hour), Parallel: 3, Lean: lean})
		if err != nil {
			t.Fatal(err)
		}
		return rep, tps, st
	}
	full, tps, fullSt := run(false)
	lean, _, leanSt := run(true)
	if full.Objects == 0 || len(full.Items) != full.Objects || len(full.Partitions) != len(tps) || full.Done() != len(tps) {
		t.Fatalf("full gc: %d objects, %d items, %d of %d partitions (done %d): want garbage listed and every partition", full.Objects, len(full.Items), len(full.Partitions), len(tps), full.Done())
	}
	if lean.Objects != full.Objects || lean.Bytes != full.Bytes || len(lean.Totals) != len(full.Totals) || lean.KeptBeyondHead != full.KeptBeyondHead || len(lean.Errors) != len(full.Errors) || lean.Done() != full.Done() {
		t.Fatalf("lean gc reports %d objects, %d bytes, %d categories, %d errors, %d done; full: %d, %d, %d, %d, %d",
			lean.Objects, lean.Bytes, len(lean.Totals), len(lean.Errors), lean.Done(), full.Objects, full.Bytes, len(full.Totals), len(full.Errors), full.Done())
	}
	for c, tot := range full.Totals {
		if lean.Totals[c] != tot {
			t.Fatalf("category %s: lean %+v, full %+v", c, lean.Totals[c], tot)
		}
	}
	if len(lean.Items) != 0 {
		t.Fatalf("lean gc kept %d items", len(lean.Items))
	}
	var failed int
	for _, p := range lean.Partitions {
		if p.Skipped == "" && p.Error == "" {
			t.Fatalf("lean gc kept partition %s with nothing to say", p.Partition)
		}
		if p.Err() != nil {
			failed++
		}
	}
	if failed != 1 || len(lean.Errors) != 1 {
		t.Fatalf("lean gc: %d failed partitions listed, %d errors: want the malformed one", failed, len(lean.Errors))
	}
	// The same objects are gone from both stores.
	a, err := fullSt.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := leanSt.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("the lean run left %d objects, the full one %d", len(b), len(a))
	}
}
