package compaction

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

// copyStore copies every object of src into dst.
func copyStore(t *testing.T, src, dst store.Store) {
	t.Helper()
	ctx := context.Background()
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
}

// silentRetry models a backend client that retries a failed PUT itself
// and reports only the last answer, as the AWS SDK's retryer does under
// the s3:// store: a lost response followed by a 412 reaches the caller as
// a plain lost precondition, with nothing ambiguous about it.
type silentRetry struct{ store.Store }

func (s silentRetry) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	info, err := s.Store.Put(ctx, key, data, g)
	if errors.Is(err, faultstore.ErrInjected) {
		return s.Store.Put(ctx, key, data, g)
	}
	return info, err
}

// TestCompactSurvivesLostTaskResponse: the response to a guarded PUT of the
// compaction task document is lost after the write happened; the retry
// then meets a lost precondition that is our own write. Compaction must
// recognise it (the stored bytes are ours) and finish, on mem:// and
// file://, for the task's IfAbsent create and each of its If-Match updates,
// whether the retry is the backend client's own (silent) or nereusctl's
// retry decorator.
func TestCompactSurvivesLostTaskResponse(t *testing.T) {
	ctx := context.Background()
	for _, backend := range []string{"mem", "file"} {
		for _, retry := range []string{"backend", "decorator"} {
			for _, nth := range []int{1, 2, 3} { // 1 is the IfAbsent create; 2, 3 the If-Match updates
				wl := newWorkload(t, 7)
				wl.append(t, 20, true)
				var base store.Store = wl.st
				if backend == "file" {
					fs, err := store.NewFile(t.TempDir())
					if err != nil {
						t.Fatal(err)
					}
					copyStore(t, wl.st, fs)
					base = fs
				}
				faulty := faultstore.New(base).LoseResponseNth(store.VerbPut, nth, layout.TasksPrefix)
				var st store.Store = silentRetry{faulty}
				if retry == "decorator" {
					st = store.WithRetry(faulty, store.RetryPolicy{Attempts: 3, Initial: time.Microsecond, Max: time.Microsecond})
				}
				what := backend + ", " + retry + " retry, task PUT " + string(rune('0'+nth))
				b, _, err := layout.LoadBinding(ctx, st, wl.b.Topic, wl.b.Partition)
				if err != nil {
					t.Fatal(err)
				}
				r, err := Compact(ctx, st, b, Options{NowMs: 3_000_000})
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if faulty.Fired() != 1 {
					t.Fatalf("%s: %d faults fired, want 1", what, faulty.Fired())
				}
				if !r.Activated {
					t.Fatalf("%s: not activated: %+v", what, r)
				}
				if tasks, _ := base.List(ctx, layout.TasksPrefix); len(tasks) != 0 {
					t.Fatalf("%s: task left behind: %v", what, tasks)
				}
			}
		}
	}
}
