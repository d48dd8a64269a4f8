package repair

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestAllFromFinishesAnInterruptedRepair: a repair killed after its restore
// (every member holds its bytes again, the coverage is still QUARANTINED)
// is finished by `repair --all-from REPLICA`: the coverage is re-activated
// and the record archived; before the fix it exited 0 and left the
// coordinator blocked.
func TestAllFromFinishesAnInterruptedRepair(t *testing.T) {
	ctx := context.Background()
	st, tp, ref, file := quarantinedStore(t)
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	crash := errors.New("killed")
	_, err = Repair(ctx, st, b, Options{Digest: ref.SHA256, FromFile: file, NowMs: testNow, After: func(s string) error {
		if s == StepRestored {
			return crash
		}
		return nil
	}})
	if !errors.Is(err, crash) {
		t.Fatalf("repair: %v, want the kill after the restore", err)
	}
	if b, _, _ = layout.LoadBinding(ctx, st, tp.Topic, tp.Partition); b.Coverage.State != layout.CoverageQuarantined {
		t.Fatalf("after the kill the coverage is %s, want QUARANTINED", b.Coverage.State)
	}
	// The replica holds the right bytes at the same key.
	replica := store.NewMem(t.Name() + "-replica")
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Put(ctx, ref.Key, good, store.None()); err != nil {
		t.Fatal(err)
	}
	res, err := AllFromPartition(ctx, st, replica, tp, Options{NowMs: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !res[0].Reactivated {
		t.Fatalf("all-from results %+v, want one re-activation", res)
	}
	b, _, err = layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	if b.Coverage.State != layout.CoverageActive {
		t.Fatalf("coverage %s after --all-from, want ACTIVE", b.Coverage.State)
	}
	if _, err := st.Head(ctx, layout.QuarantineKey(b.Coverage.SetID)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("open quarantine record left: %v", err)
	}
	if len(archived(t, st)) != 1 {
		t.Fatalf("archived %d records, want 1", len(archived(t, st)))
	}
}
