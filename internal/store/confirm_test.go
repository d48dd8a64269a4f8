package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

// TestConfirmIfMatch: after an If-Match 412, the stored bytes decide: ours
// is a success with the object's info, anything else (other bytes, a
// missing key) returns the lost precondition unchanged.
func TestConfirmIfMatch(t *testing.T) {
	ctx := context.Background()
	for _, mk := range []func(t *testing.T) store.Store{
		func(t *testing.T) store.Store { return store.NewMem("confirm") },
		func(t *testing.T) store.Store {
			f, err := store.NewFile(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
	} {
		st := mk(t)
		v1, err := st.Put(ctx, "doc.json", []byte("version 1"), store.IfAbsent())
		if err != nil {
			t.Fatal(err)
		}
		ours := []byte("version 2")
		if _, err := st.Put(ctx, "doc.json", ours, store.IfMatch(v1.ETag)); err != nil {
			t.Fatal(err)
		}
		// The retry of the same CAS meets 412: our bytes are there.
		_, cause := st.Put(ctx, "doc.json", ours, store.IfMatch(v1.ETag))
		if !errors.Is(cause, store.ErrPreconditionFailed) {
			t.Fatalf("%s: retry of a landed CAS: %v, want a lost precondition", st, cause)
		}
		info, err := store.ConfirmIfMatch(ctx, st, "doc.json", ours, cause)
		if err != nil || info.ETag != store.ETagOf(ours) || info.Size != int64(len(ours)) || info.SHA256 != store.SHA256Of(ours) {
			t.Fatalf("%s: confirm of our bytes: %+v, %v", st, info, err)
		}
		// Someone else's bytes, same length: the precondition stays lost.
		if _, err := store.ConfirmIfMatch(ctx, st, "doc.json", []byte("version 3"), cause); err != cause {
			t.Fatalf("%s: confirm of other bytes: %v, want the cause", st, err)
		}
		if _, err := store.ConfirmIfMatch(ctx, st, "doc.json", []byte("v2"), cause); err != cause {
			t.Fatalf("%s: confirm of shorter bytes: %v, want the cause", st, err)
		}
		if _, err := store.ConfirmIfMatch(ctx, st, "gone.json", ours, cause); err != cause {
			t.Fatalf("%s: confirm of a missing key: %v, want the cause", st, err)
		}
	}
}
