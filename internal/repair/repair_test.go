package repair

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
	"github.com/nereusctl/nereusctl/internal/verify"
)

const testNow = 1795000000000

func cloneStore(t *testing.T, src store.Store, name string) *store.Mem {
	t.Helper()
	ctx := context.Background()
	dst := store.NewMem(name)
	infos, err := src.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		data, err := src.Get(ctx, in.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Put(ctx, in.Key, data, store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// quarantinedStore is a demo store with one member object of an ACTIVE
// compacted set damaged and the set quarantined by verify; it returns the
// store, the partition, the damaged member and its right bytes in a file.
func quarantinedStore(t *testing.T) (*store.Mem, layout.TopicPartition, layout.ObjectRef, string) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem("repair")
	o := demo.DefaultOptions()
	o.Records = 3000
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tps {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if b.Coverage.State != layout.CoverageActive {
			continue
		}
		g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, b.Coverage.Members[0].Gen)
		if err != nil {
			t.Fatal(err)
		}
		ref := g.Objects[0]
		orig, err := st.Get(ctx, ref.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "member.ntc2")
		if err := os.WriteFile(file, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		bad := bytes.Clone(orig)
		bad[len(bad)/2] ^= 0x40
		if _, err := st.Put(ctx, ref.Key, bad, store.None()); err != nil {
			t.Fatal(err)
		}
		rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true, NowMs: testNow})
		if err != nil || !rep.Quarantined {
			t.Fatalf("verify did not quarantine %s: %+v %v", tp, rep, err)
		}
		return st, tp, ref, file
	}
	t.Fatal("the demo wrote no ACTIVE compacted coverage")
	return nil, layout.TopicPartition{}, layout.ObjectRef{}, ""
}

// archived returns every archived quarantine record, by key.
func archived(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	infos, err := st.List(ctx, layout.QuarantinePrefix+"archive/")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, in := range infos {
		data, err := st.Get(ctx, in.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[in.Key] = string(data)
	}
	return out
}

// TestInterruptedRepairKeepsAuditTrail: a repair killed after its restore
// (or after re-activating) and rerun archives exactly the record an
// uninterrupted repair archives: the real source, the restored object, no
// "store", nothing left in progress.
func TestInterruptedRepairKeepsAuditTrail(t *testing.T) {
	ctx := context.Background()
	base, tp, ref, file := quarantinedStore(t)

	clean := cloneStore(t, base, "uninterrupted")
	b, _, err := layout.LoadBinding(ctx, clean, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Repair(ctx, clean, b, Options{Digest: ref.SHA256, FromFile: file, NowMs: testNow})
	if err != nil || !r.Restored || !r.Reactivated {
		t.Fatalf("uninterrupted repair: %+v %v", r, err)
	}
	want := archived(t, clean)
	if len(want) != 1 {
		t.Fatalf("uninterrupted repair archived %d records", len(want))
	}
	for _, rec := range want {
		var q layout.Quarantine
		if err := layout.Decode("archived", []byte(rec), &q); err != nil {
			t.Fatal(err)
		}
		if q.Repair == nil || q.Repair.Source != "file "+file || len(q.Repair.Restored) != 1 || q.Repair.Restored[0] != ref.Key || q.InProgress != nil {
			t.Fatalf("uninterrupted audit trail: %+v", q.Repair)
		}
	}

	crash := errors.New("killed")
	for _, step := range []string{StepRestored, StepReactivated} {
		st := cloneStore(t, base, "crash-"+step)
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Repair(ctx, st, b, Options{Digest: ref.SHA256, FromFile: file, NowMs: testNow, After: func(s string) error {
			if s == step {
				return crash
			}
			return nil
		}})
		if !errors.Is(err, crash) {
			t.Fatalf("%s: %v", step, err)
		}
		// The operator reruns the same command.
		b, _, err = layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Repair(ctx, st, b, Options{Digest: ref.SHA256, FromFile: file, NowMs: testNow}); err != nil {
			t.Fatalf("%s rerun: %v", step, err)
		}
		got := archived(t, st)
		if len(got) != len(want) {
			t.Fatalf("%s: %d archived records, want %d", step, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("crash after %s: archived record differs from the uninterrupted one:\n%s\nwant:\n%s", step, got[k], w)
			}
		}
		if _, err := st.Head(ctx, layout.QuarantineKey(b.Coverage.SetID)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: open quarantine record left: %v", step, err)
		}
	}
}

// silentRetry models a backend client that retries a failed PUT itself
// (the AWS SDK under s3://): a lost response followed by a 412 on our own
// write reaches the caller as a plain lost precondition.
type silentRetry struct{ store.Store }

func (s silentRetry) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	info, err := s.Store.Put(ctx, key, data, g)
	if errors.Is(err, faultstore.ErrInjected) {
		return s.Store.Put(ctx, key, data, g)
	}
	return info, err
}

// TestRepairSurvivesLostResponses: the responses to the restore PUT (If-Match
// on the damaged object) and to the quarantine record CAS are lost after the
// writes happened; the repair recognises its own writes and finishes with
// the right audit trail.
func TestRepairSurvivesLostResponses(t *testing.T) {
	ctx := context.Background()
	base, tp, ref, file := quarantinedStore(t)
	for _, prefix := range []string{ref.Key, layout.QuarantinePrefix} {
		mem := cloneStore(t, base, "lost-"+prefix)
		faulty := faultstore.New(mem).LoseResponseNth(store.VerbPut, 1, prefix)
		st := silentRetry{faulty}
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Repair(ctx, st, b, Options{Digest: ref.SHA256, FromFile: file, NowMs: testNow})
		if err != nil || !r.Restored || !r.Reactivated || faulty.Fired() != 1 {
			t.Fatalf("lost response under %s: %+v %v (%d faults)", prefix, r, err, faulty.Fired())
		}
		for _, rec := range archived(t, mem) {
			if !bytes.Contains([]byte(rec), []byte(`"source": "file `+file+`"`)) {
				t.Fatalf("lost response under %s: archived %s", prefix, rec)
			}
		}
	}
}
