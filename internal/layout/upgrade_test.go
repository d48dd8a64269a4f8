package layout

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

// silentRetry: a backend client that retries a failed PUT itself, so a
// lost response reaches the caller as the retry's 412.
type silentRetry struct{ store.Store }

func (s silentRetry) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	info, err := s.Store.Put(ctx, key, data, g)
	if errors.Is(err, faultstore.ErrInjected) {
		return s.Store.Put(ctx, key, data, g)
	}
	return info, err
}

func legacyStore(t *testing.T) *store.Mem {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem(t.Name())
	b := activeBinding()
	b.StreamID = "s-abc"
	for key, v := range map[string]any{
		BindingKey(b.Topic, b.Partition):            b,
		HeadKey("s-abc"):                            sampleHead(),
		GenerationKey("s-abc", 1):                   sampleGeneration(),
		QuarantineKey(strings.Repeat("b", 64)):      sampleQuarantine(),
		LeaseKey("retention"):                       sampleLease(),
		QuarantinePrefix + "archive/" + "x-1.json":  sampleQuarantine(),
		TaskPrefix("compact-s-abc") + "task.json":   sampleLease(), // tasks are not upgraded
		QuarantinePrefix + "archive/" + "notes.txt": sampleLease(), // not a document
	} {
		if _, err := st.Put(ctx, key, withoutDigest(v), store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestUpgrade: a store of documents written before digests (written here
// without them) is upgraded: --dry-run writes nothing, each legacy binding,
// head, quarantine record (open, archived) and lease is rewritten with the
// same content plus its digest, the legacy manifest is kept, a lost
// response is recognised, a rerun is a no-op.
func TestUpgrade(t *testing.T) {
	ctx := context.Background()
	st := legacyStore(t)
	// --dry-run: nothing written.
	before, _ := st.List(ctx, "")
	rep, err := UpgradeWith(ctx, st, UpgradeOptions{DryRun: true})
	if err != nil || rep.Err() != nil {
		t.Fatalf("dry run: %v %v", err, rep.Err())
	}
	if rep.Counts[UpgradeWould] != 5 || rep.Counts[UpgradeKept] != 1 || rep.Scanned != 6 {
		t.Fatalf("dry run: %+v", rep)
	}
	after, _ := st.List(ctx, "")
	for i := range before {
		if before[i].ETag != after[i].ETag {
			t.Fatalf("dry run changed %s", before[i].Key)
		}
	}
	// The upgrade; the response to one PUT is lost behind the backend's
	// own retry: still counted upgraded, nothing reported changed.
	faulty := faultstore.New(st).LoseResponseNth(store.VerbPut, 1, HeadKey("s-abc"))
	rep, err = UpgradeWith(ctx, silentRetry{faulty}, UpgradeOptions{DryRun: false})
	if err != nil || rep.Err() != nil || faulty.Fired() != 1 {
		t.Fatalf("upgrade: %v %v (%d faults)", err, rep.Err(), faulty.Fired())
	}
	if rep.Counts[UpgradeUpgraded] != 5 || rep.Counts[UpgradeKept] != 1 {
		t.Fatalf("upgrade: %+v", rep)
	}
	// Every upgraded document now decodes with its digest, same content.
	b, _, err := LoadBinding(ctx, st, "orders", 3)
	if err != nil || b.Config.RetentionBytes != 1<<30 {
		t.Fatalf("binding after upgrade: %+v %v", b, err)
	}
	if _, _, err := LoadHead(ctx, st, "s-abc"); err != nil {
		t.Fatal(err)
	}
	var l Lease
	if _, err := Load(ctx, st, LeaseKey("retention"), &l); err != nil || l != *sampleLease() {
		t.Fatalf("lease after upgrade: %+v %v", l, err)
	}
	// Idempotent.
	rep, err = UpgradeWith(ctx, st, UpgradeOptions{DryRun: false})
	if err != nil || rep.Err() != nil || rep.Counts[UpgradeCurrent] != 5 || len(rep.Items) != 1 {
		t.Fatalf("rerun: %+v %v", rep, err)
	}
}

// TestUpgradeRefusesAndReportsChanges: a malformed legacy document and a
// stray file under generations/ are refused and left alone (corruption),
// a document another writer changed meanwhile is reported (a lost
// precondition), the rest is upgraded, and a rerun finishes.
func TestUpgradeRefusesAndReportsChanges(t *testing.T) {
	ctx := context.Background()
	st := legacyStore(t)
	if _, err := st.Put(ctx, GenerationsPrefix("s-abc")+"readme.txt", []byte("notes"), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(withoutDigest(sampleHead())), `"trim"`, `"tvim"`, 1)
	if _, err := st.Put(ctx, HeadKey("s-abc"), []byte(bad), store.None()); err != nil {
		t.Fatal(err)
	}
	// A competing writer: the lease CAS loses its precondition, and the
	// stored lease is not ours.
	faulty := faultstore.New(st).FailNth(store.VerbPut, 1, LeaseKey("retention"), store.ErrPreconditionFailed)
	rep, err := UpgradeWith(ctx, faulty, UpgradeOptions{DryRun: false})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[UpgradeRefused] != 2 || rep.Counts[UpgradeChanged] != 1 || rep.Counts[UpgradeUpgraded] != 3 {
		t.Fatalf("%+v", rep)
	}
	if e := rep.Err(); !errors.Is(e, ErrCorruptDocument) || !strings.Contains(e.Error(), `unknown field "tvim"`) {
		t.Fatalf("refused: %v", e)
	}
	if got, _ := st.Get(ctx, HeadKey("s-abc"), nil); string(got) != bad {
		t.Fatal("a malformed document was rewritten")
	}
	// Once the operator fixed the head and removed the stray file, the
	// lease is left: a lost precondition (exit 4), rerun.
	if _, err := st.Put(ctx, HeadKey("s-abc"), withoutDigest(sampleHead()), store.None()); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, GenerationsPrefix("s-abc")+"readme.txt", store.None()); err != nil {
		t.Fatal(err)
	}
	faulty = faultstore.New(st).FailNth(store.VerbPut, 1, LeaseKey("retention"), store.ErrPreconditionFailed)
	rep, _ = UpgradeWith(ctx, faulty, UpgradeOptions{DryRun: false})
	if e := rep.Err(); !errors.Is(e, store.ErrPreconditionFailed) || !strings.Contains(e.Error(), LeaseKey("retention")) {
		t.Fatalf("changed: %v", e)
	}
	rep, _ = UpgradeWith(ctx, st, UpgradeOptions{DryRun: false})
	if rep.Err() != nil || rep.Counts[UpgradeUpgraded] != 1 { // the lease
		t.Fatalf("final rerun: %+v", rep)
	}
}
