package importer

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

// An import whose binding create fails (a crash after every generation,
// the genesis and the trim, before the binding) reruns to the same store
// as an uninterrupted import: the rerun finds its own half-written stream
// (the stream id derives from the bytes), resumes it without sealing
// anything twice, and creates the binding. Before, every rerun sealed the
// open segment's objects again as one more generation and exited 3
// ("stream has N generations, the import made N-1 ... damaged").
func TestImportRerunAfterFailedBindingCreate(t *testing.T) {
	ctx := context.Background()
	for _, fixture := range []string{"kafka-2.7-compacted/__consumer_offsets-28", "kafka-2.7-compacted/__consumer_offsets-39"} {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			dir := filepath.Join(fixtureRoot, fixture)
			ref := store.NewMem("ref")
			want := run(t, ref, Options{Dir: dir, ObjectBytes: 1})

			mem := store.NewMem("t")
			faulty := faultstore.New(mem).FailNth(store.VerbPut, 1, "bindings/", nil)
			if _, err := Run(ctx, faulty, Options{Dir: dir, ObjectBytes: 1}); !errors.Is(err, faultstore.ErrInjected) {
				t.Fatalf("first run: %v, want the injected binding failure", err)
			}
			if _, _, err := layout.LoadBinding(ctx, mem, want.Topic, want.Partition); err == nil {
				t.Fatal("the failed run created the binding")
			}
			again, err := Run(ctx, mem, Options{Dir: dir, ObjectBytes: 1})
			if err != nil {
				t.Fatalf("rerun: %v", err)
			}
			if !again.Resumed || again.StreamID != want.StreamID || again.StateDigest != want.StateDigest || again.Generations != want.Generations {
				t.Fatalf("rerun: resumed %v stream %s digest %s gens %d; uninterrupted %s %s %d", again.Resumed, again.StreamID, again.StateDigest, again.Generations, want.StreamID, want.StateDigest, want.Generations)
			}
			sameStore(t, ref, mem)
			// A third run over the binding it made: already imported.
			third, err := Run(ctx, mem, Options{Dir: dir, ObjectBytes: 1})
			if err != nil || !third.AlreadyImported {
				t.Fatalf("third run: %v %+v", err, third)
			}
			sameStore(t, ref, mem)
		})
	}
}

// A half-written stream under this import's id whose objects are not the
// ones it writes (another build cut them differently) is a conflict named
// as such: not "the segment files are damaged", and nothing more is
// written.
func TestImportRerunOverForeignStream(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18")
	mem := store.NewMem("t")
	first := run(t, mem, Options{Dir: dir}) // one object for its 277 batches
	if err := mem.Delete(ctx, first.Binding, store.None()); err != nil {
		t.Fatal(err)
	}
	before, _ := mem.List(ctx, "")
	_, err := Run(ctx, mem, Options{Dir: dir, ObjectBytes: 1}) // one object per batch
	if !errors.Is(err, ErrStreamConflict) || errkind.Of(err) != errkind.Conflict || errors.Is(err, kafka.ErrCorrupt) || !strings.Contains(err.Error(), first.StreamID) {
		t.Fatalf("foreign stream: %v (kind %v)", err, errkind.Of(err))
	}
	after, _ := mem.List(ctx, "")
	if len(after) != len(before) {
		t.Fatalf("%d keys before, %d after: the refused rerun wrote", len(before), len(after))
	}
}

// sameStore fails unless a and b hold the same keys with the same bytes.
func sameStore(t *testing.T, a, b store.Store) {
	t.Helper()
	ctx := context.Background()
	la, err := a.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(la) != len(lb) {
		var ka, kb []string
		for _, o := range la {
			ka = append(ka, o.Key)
		}
		for _, o := range lb {
			kb = append(kb, o.Key)
		}
		t.Fatalf("%d keys vs %d:\n%s\n--\n%s", len(la), len(lb), strings.Join(ka, "\n"), strings.Join(kb, "\n"))
	}
	for i := range la {
		if la[i].Key != lb[i].Key {
			t.Fatalf("key %d: %s vs %s", i, la[i].Key, lb[i].Key)
		}
		da, err := a.Get(ctx, la[i].Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		db, err := b.Get(ctx, lb[i].Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(da) != string(db) {
			t.Fatalf("%s differs:\n%s\n--\n%s", la[i].Key, da, db)
		}
	}
}
