package repair

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/testutil/fencetest"
)

// repairWrites: what a repair writes (the quarantine record and its
// archive, the restored member, the binding's coverage).
func repairWrites(key string) bool {
	return strings.HasPrefix(key, layout.QuarantinePrefix) || strings.Contains(key, "/compacted/") || strings.HasPrefix(key, layout.BindingsPrefix)
}

// archiveMove: the archive is one step, the archived copy then the
// record's delete.
func archiveMove(prev, key string) bool {
	return strings.HasPrefix(prev, layout.QuarantinePrefix+"archive/") && strings.HasPrefix(key, layout.QuarantinePrefix)
}

// TestRepairFencesEveryWrite: the progress record, the restore, the
// coverage CAS and the archive each follow a fence call (Options.Fence:
// the lease proven), and a fence that refuses at any of them stops the
// repair there, writing nothing more; the rerun finishes it.
func TestRepairFencesEveryWrite(t *testing.T) {
	ctx := context.Background()
	base, tp, ref, file := quarantinedStore(t)
	fs := &fencetest.Store{Store: cloneStore(t, base, "fenced"), Guarded: repairWrites, Continues: archiveMove}
	b, _, err := layout.LoadBinding(ctx, fs, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Repair(ctx, fs, b, Options{Digest: ref.SHA256, FromFile: file, NowMs: testNow, Fence: fs.Fence})
	if err != nil || !r.Restored || !r.Reactivated {
		t.Fatalf("repair: %+v %v", r, err)
	}
	rep := fs.Report()
	if len(rep.Unfenced) > 0 {
		t.Fatalf("wrote %v without proving the lease first (fences %v, writes %v)", rep.Unfenced, rep.Steps, rep.Writes)
	}
	for k := 1; k <= len(rep.Steps); k++ {
		st := cloneStore(t, base, "refused")
		fs := &fencetest.Store{Store: st, Guarded: repairWrites, Continues: archiveMove, RefuseAt: k}
		b, _, err := layout.LoadBinding(ctx, fs, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Repair(ctx, fs, b, Options{Digest: ref.SHA256, FromFile: file, NowMs: testNow, Fence: fs.Fence})
		if !errors.Is(err, fencetest.ErrRefused) {
			t.Fatalf("refused at fence %d (%s): %v", k, rep.Steps[k-1], err)
		}
		if late := fs.Report().Late; len(late) > 0 {
			t.Fatalf("refused at fence %d (%s): still wrote %v", k, rep.Steps[k-1], late)
		}
		b, _, err = layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := Repair(ctx, st, b, Options{Digest: ref.SHA256, FromFile: file, NowMs: testNow}); err != nil || !r.Reactivated {
			t.Fatalf("rerun after the refusal at %s: %+v %v", rep.Steps[k-1], r, err)
		}
	}
}
