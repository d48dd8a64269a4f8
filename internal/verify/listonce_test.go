package verify_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/verify"
)

// listCounter counts List calls by prefix.
type listCounter struct {
	store.Store
	mu    sync.Mutex
	lists map[string]int
}

func (l *listCounter) List(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	l.mu.Lock()
	l.lists[prefix]++
	l.mu.Unlock()
	return l.Store.List(ctx, prefix)
}

// TestDeepVerifyListsTheObjectsOnce: verify --deep lists a stream's
// object folder and its checkpoints once per partition (the checkpoint
// checks reuse the listing the other checks read), and a bad checkpoint
// is still found.
func TestDeepVerifyListsTheObjectsOnce(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	b := loadB(t, st, ordersTP)
	cps, err := st.List(ctx, layout.CheckpointsPrefix(b.StreamID))
	if err != nil || len(cps) == 0 {
		t.Fatalf("the demo wrote no checkpoint to check: %v", err)
	}
	lc := &listCounter{Store: st, lists: map[string]int{}}
	rep, err := verify.Partition(ctx, lc, b, verify.Options{Deep: true, ReadOnly: true})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("verify: %v, findings %+v", err, rep.Findings)
	}
	for _, p := range []string{layout.ObjectsPrefix(b.StreamID), layout.CheckpointsPrefix(b.StreamID)} {
		if n := lc.lists[p]; n != 1 {
			t.Errorf("%s listed %d times, want once", p, n)
		}
	}

	// A checkpoint whose bytes changed is still a checkpoint finding.
	data, err := st.Get(ctx, cps[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	put(t, st, cps[0].Key, data)
	rep, err = verify.Partition(ctx, st, b, verify.Options{Deep: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Scope == verify.ScopeCheckpoint && f.Object == cps[0].Key && strings.HasPrefix(f.Check, verify.CheckCheckpoint+":") {
			found = true
		}
	}
	if !found {
		t.Fatalf("a changed checkpoint is not a finding: %+v", rep.Findings)
	}
}
