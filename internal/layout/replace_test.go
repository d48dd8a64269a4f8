package layout

import (
	"context"
	"errors"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

// TestReplaceConfirmsLostResponse: a Replace retried after its response was
// lost meets a lost precondition on its own write; it succeeds. A Replace
// whose ETag is stale because another writer changed the document still
// loses its precondition.
func TestReplaceConfirmsLostResponse(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("replace")
	h := sampleHead()
	v1, err := Create(ctx, st, "streams/s-abc/head.json", h)
	if err != nil {
		t.Fatal(err)
	}
	next := *h
	next.Head, next.Version = 950, h.Version+1
	if _, err := Replace(ctx, st, "streams/s-abc/head.json", &next, v1.ETag); err != nil {
		t.Fatal(err)
	}
	info, err := Replace(ctx, st, "streams/s-abc/head.json", &next, v1.ETag)
	if err != nil || info.ETag != store.ETagOf(Encode(&next)) {
		t.Fatalf("retried replace: %+v, %v", info, err)
	}
	other := next
	other.Head = 990
	if _, err := Replace(ctx, st, "streams/s-abc/head.json", &other, v1.ETag); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("stale replace of other content: %v, want a lost precondition", err)
	}
}
