package recovery

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
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

	// More keys than one page: the page is not the whole stream, but it
	// holds the parts that sort before the objects whole (checkpoints,
	// compacted views, generations), which are not listed again: fewer
	// LISTs than without pages, the same result.
	for range store.PageKeys {
		f.appendRandom(t)
	}
	b, _ = f.binding(t)
	paged, lists := replay(f.st, false)
	per, perLists := replay(unpaged{f.st}, false)
	same("over a page", paged, per)
	if lists >= perLists {
		t.Errorf("over a page: %d LISTs through a paging store, %d without: want fewer (the page holds the checkpoints and generations)", lists, perLists)
	}
}

// TestCheckpointVerifyListsOnceAndTrustsTheListing: checkpoint verify of a
// stream whose keys fit a page sends one LIST and no HEAD on a store whose
// listing has ETags (S3, mem://), with the per-prefix path's result; so
// does checkpoint list.
func TestCheckpointVerifyListsOnceAndTrustsTheListing(t *testing.T) {
	ctx := context.Background()
	f, _ := twoCheckpoints(t)
	b, _ := f.binding(t)
	h, _, err := layout.LoadHead(ctx, f.st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	ctr := store.NewCounter(f.st)
	rep, err := VerifyAt(ctx, ctr, b, h)
	if err != nil {
		t.Fatal(err)
	}
	per, err := VerifyAt(ctx, unpaged{f.st}, b, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 || len(per.Findings) != 0 || rep.Checkpoints != 2 || per.Checkpoints != 2 {
		t.Fatalf("sound stream: %+v / %+v", rep, per)
	}
	if c := ctr.Counts(); c[store.VerbList] != 1 || c[store.VerbHead] != 0 {
		t.Fatalf("checkpoint verify sent %d LISTs and %d HEADs, want 1 and 0", c[store.VerbList], c[store.VerbHead])
	}
	// checkpoint list lists the same way.
	ctr = store.NewCounter(f.st)
	entries, err := List(ctx, ctr, b)
	if err != nil {
		t.Fatal(err)
	}
	perEntries, err := List(ctx, unpaged{f.st}, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(entries, perEntries) || len(entries) != 2 {
		t.Fatalf("checkpoint list: %+v, per prefix %+v", entries, perEntries)
	}
	if n := ctr.Counts()[store.VerbList]; n != 1 {
		t.Fatalf("checkpoint list sent %d LISTs, want 1", n)
	}
}

// staleListing lists checkpoints one byte longer than they are, as a
// listing taken before an object was replaced would.
type staleListing struct{ *store.Mem }

func (s staleListing) ListFirstPage(ctx context.Context, prefix string, max int) ([]store.ObjectInfo, bool, error) {
	infos, complete, err := s.Mem.ListFirstPage(ctx, prefix, max)
	for i := range infos {
		if strings.Contains(infos[i].Key, "/checkpoints/") {
			infos[i].Size++
		}
	}
	return infos, complete, err
}

// TestCheckpointVerifyChecksBytesAgainstTheListing: where the listing is
// the reference (no HEAD), bytes that disagree with it are a size finding
// naming the listing.
func TestCheckpointVerifyChecksBytesAgainstTheListing(t *testing.T) {
	ctx := context.Background()
	f, _ := twoCheckpoints(t)
	b, _ := f.binding(t)
	h, _, err := layout.LoadHead(ctx, f.st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyAt(ctx, staleListing{f.st}, b, h)
	if err != nil {
		t.Fatal(err)
	}
	sizes := 0
	for _, fd := range rep.Findings {
		if fd.Check == "size" && strings.Contains(fd.Detail, "the listing says") {
			sizes++
		}
	}
	if sizes != 2 {
		t.Fatalf("want a size finding per checkpoint, got %+v", rep.Findings)
	}
}
