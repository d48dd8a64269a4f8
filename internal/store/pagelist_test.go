package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
)

// TestListFirstPageThroughEveryDecorator: the decorators cmd stacks on a
// store each pass the one-page listing down (a replay on S3 lists its
// stream in one request), count and rate-limit it as one LIST, and a
// store that does not page (file://) is sent nothing through any of them.
func TestListFirstPageThroughEveryDecorator(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	chain := func(s store.Store) (store.Store, *store.Counter) {
		c := store.NewCounter(s)
		s = store.WithTimeout(c, time.Minute)
		s = store.WithLog(s, log)
		s = store.WithRateLimit(s, 1000)
		return store.WithRetry(s, store.DefaultRetryPolicy()), c
	}
	mem := store.NewMem("pages")
	for i := range 5 {
		if _, err := mem.Put(ctx, fmt.Sprintf("streams/s/k%d", i), []byte("x"), store.None()); err != nil {
			t.Fatal(err)
		}
	}
	s, c := chain(mem)
	infos, complete, paged, err := store.ListFirstPage(ctx, s, "streams/s/", 3)
	if err != nil || !paged || complete || len(infos) != 3 || infos[0].Key != "streams/s/k0" || infos[2].Key != "streams/s/k2" {
		t.Fatalf("first page of 3 of 5 keys: %v complete=%v paged=%v err=%v", infos, complete, paged, err)
	}
	infos, complete, _, err = store.ListFirstPage(ctx, s, "streams/s/", store.PageKeys)
	if err != nil || !complete || len(infos) != 5 {
		t.Fatalf("whole listing in a page: %d keys, complete=%v, err=%v", len(infos), complete, err)
	}
	if n := c.Counts()[store.VerbList]; n != 2 {
		t.Fatalf("counted %d LISTs, want 2", n)
	}

	file, err := store.NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, c = chain(file)
	if _, _, paged, err := store.ListFirstPage(ctx, s, "streams/s/", store.PageKeys); paged || err != nil {
		t.Fatalf("file:// through the decorators: paged=%v err=%v, want no page listing", paged, err)
	}
	if n := c.Total(); n != 0 {
		t.Fatalf("file:// was sent %d requests for a page it does not list", n)
	}
}
