package recovery

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

// unpaged hides the store's page listing (store.PageLister), as file://
// has none: a replay through it lists checkpoints, generations and
// objects one prefix at a time.
type unpaged struct{ store.Store }

// TestReplayListsTheStreamInOnePage: on a store that lists in pages (S3;
// mem:// as S3 does), a replay of a stream whose keys fit one page sends
// one LIST for its checkpoints, generations and objects together, where
// the listing of each part cost one LIST each, and derives the same
// result: chosen checkpoint, candidates, tail and state digest. A stream
// of more keys than a page keeps the listings of its parts, with the same
// result.
func TestReplayListsTheStreamInOnePage(t *testing.T) {
	ctx := context.Background()
	f, cps := twoCheckpoints(t)
	f.setTrim(t, cps[0].Anchor+2)
	for range 5 {
		f.appendRandom(t) // a tail after the newest checkpoint
	}
	b, _ := f.binding(t)
	replay := func(st store.Store, full bool) (*Result, int64) {
		t.Helper()
		ctr := store.NewCounter(st)
		res, err := Replay(ctx, ctr, b, Options{Full: full, VerifyCRC: true})
		if err != nil {
			t.Fatal(err)
		}
		return res, ctr.Counts()[store.VerbList]
	}
	same := func(what string, a, b *Result) {
		t.Helper()
		if a.Digest() != b.Digest() || !reflect.DeepEqual(a.Candidates, b.Candidates) || a.Tail.Batches != b.Tail.Batches || (a.Chosen == nil) != (b.Chosen == nil) {
			t.Fatalf("%s: the one-page replay and the per-prefix replay differ:\n%+v\n%+v", what, a, b)
		}
	}
	for _, full := range []bool{false, true} {
		paged, lists := replay(f.st, full)
		per, perLists := replay(unpaged{f.st}, full)
		same(fmt.Sprintf("full=%v", full), paged, per)
		if lists != 1 {
			t.Errorf("full=%v: %d LISTs through a paging store, want 1 (the stream's one page)", full, lists)
		}
		if perLists < 3 {
			t.Errorf("full=%v: %d LISTs without pages: the comparison proves nothing", full, perLists)
		}
		if paged.Tail.Batches == 0 && !full {
			t.Fatal("no tail replayed: the test proves nothing")
		}
	}

	// More keys than one page: the page is not the whole stream, and the
	// parts are listed as before (one LIST more than without pages).
	for range store.PageKeys {
		f.appendRandom(t)
	}
	b, _ = f.binding(t)
	paged, lists := replay(f.st, false)
	per, perLists := replay(unpaged{f.st}, false)
	same("over a page", paged, per)
	if lists != perLists+1 {
		t.Errorf("over a page: %d LISTs through a paging store, %d without: want one more (the page that did not hold the stream)", lists, perLists)
	}
}
