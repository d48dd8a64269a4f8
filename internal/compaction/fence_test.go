package compaction

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/testutil/fencetest"
)

// publishKey: what a compaction publishes (the NTC2 objects, the manifest,
// the binding's coverage); its task is its own workflow state.
func publishKey(key string) bool {
	return strings.Contains(key, "/compacted/") || strings.Contains(key, "/generations/") || strings.HasPrefix(key, layout.BindingsPrefix)
}

// TestCompactionFencesEveryPublish: every NTC2 PUT, the manifest publish
// and the coverage CAS follow a fence call (Options.Fence: the lease
// proven), and a fence that refuses at any of them stops the compaction
// there: nothing is published after it and the coverage is not moved.
func TestCompactionFencesEveryPublish(t *testing.T) {
	ctx := context.Background()
	const seed = 3
	wl := newWorkload(t, seed)
	wl.keys = 200
	wl.append(t, 80, true)
	fs := &fencetest.Store{Store: wl.st, Guarded: publishKey}
	r, err := Compact(ctx, fs, loadB(t, wl.st), Options{NowMs: 2_000_000, ObjectBytes: 1, Fence: fs.Fence})
	if err != nil || !r.Activated {
		t.Fatalf("compact: %+v %v", r, err)
	}
	rep := fs.Report()
	if len(rep.Unfenced) > 0 {
		t.Fatalf("published %d objects without proving the lease first (first %s)", len(rep.Unfenced), rep.Unfenced[0])
	}
	for _, want := range []string{"compact put ", "compact publish", "compact activate coverage"} {
		found := false
		for _, s := range rep.Steps {
			found = found || strings.HasPrefix(s, want)
		}
		if !found {
			t.Fatalf("no fence before %q: steps %v", want, rep.Steps)
		}
	}
	t.Logf("%d objects, %d fence calls", r.Stats.Objects, len(rep.Steps))
	if r.Stats.Objects < 2 {
		t.Fatalf("%d NTC2 objects (%+v): want several, to fence each", r.Stats.Objects, r.Stats)
	}
	// Refused at the first and second PUT, the manifest and the coverage.
	n := len(rep.Steps)
	for _, k := range []int{1, 2, n - 1, n} {
		wl := newWorkload(t, seed)
		wl.keys = 200
		wl.append(t, 80, true)
		fs := &fencetest.Store{Store: wl.st, Guarded: publishKey, RefuseAt: k}
		r, err := Compact(ctx, fs, loadB(t, wl.st), Options{NowMs: 2_000_000, ObjectBytes: 1, Fence: fs.Fence})
		if !errors.Is(err, fencetest.ErrRefused) {
			t.Fatalf("refused at fence %d (%s): %+v %v", k, rep.Steps[k-1], r, err)
		}
		if late := fs.Report().Late; len(late) > 0 {
			t.Fatalf("refused at fence %d (%s): still published %d objects (first %s)", k, rep.Steps[k-1], len(late), late[0])
		}
		if b := loadB(t, wl.st); b.Coverage.State == layout.CoverageActive {
			t.Fatalf("refused at fence %d (%s): coverage activated", k, rep.Steps[k-1])
		}
	}
}
