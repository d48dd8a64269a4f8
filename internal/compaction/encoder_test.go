package compaction

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/store"
)

const otherEncoder = "ntc2 v1 zstd klauspost/compress@v0.0.1 level default"

// countingStore counts reads.
type countingStore struct {
	store.Store
	gets int
}

func (c *countingStore) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	c.gets++
	return c.Store.Get(ctx, key, r)
}

// TestRegenerateChecksTheEncoder: a generation another encoder wrote is
// refused before any source is read, naming both identities; the one this
// build wrote regenerates; one that records none is attempted.
func TestRegenerateChecksTheEncoder(t *testing.T) {
	ctx := context.Background()
	wl := newWorkload(t, 7)
	wl.append(t, 30, true)
	r, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 3_000_000})
	if err != nil || !r.Activated {
		t.Fatalf("compact: %+v %v", r, err)
	}
	g, _, err := layout.LoadGeneration(ctx, wl.st, wl.b.StreamID, r.Gen)
	if err != nil {
		t.Fatal(err)
	}
	if g.Compaction.Encoder != ntc2.EncoderIdentity() {
		t.Fatalf("manifest records encoder %q, this build's is %q", g.Compaction.Encoder, ntc2.EncoderIdentity())
	}
	for _, c := range []struct {
		encoder string
		refuse  bool
	}{{otherEncoder, true}, {ntc2.EncoderIdentity(), false}, {"", false}} {
		h := *g
		p := *g.Compaction
		p.Encoder = c.encoder
		h.Compaction = &p
		cs := &countingStore{Store: wl.st}
		n := 0
		err := Regenerate(ctx, cs, &h, 0, func(ref layout.ObjectRef, data []byte) {
			if ref.SHA256 == g.Objects[n].SHA256 {
				n++
			}
		})
		if !c.refuse {
			if err != nil || n != len(g.Objects) {
				t.Fatalf("encoder %q: regenerated %d of %d objects: %v", c.encoder, n, len(g.Objects), err)
			}
			continue
		}
		var me *EncoderMismatchError
		if !errors.Is(err, ErrEncoderMismatch) || !errors.As(err, &me) || me.Recorded != otherEncoder || me.Running != ntc2.EncoderIdentity() {
			t.Fatalf("encoder %q: want the refusal, got %v", c.encoder, err)
		}
		if !strings.Contains(err.Error(), otherEncoder) || !strings.Contains(err.Error(), ntc2.EncoderIdentity()) {
			t.Fatalf("refusal does not name both identities: %v", err)
		}
		if cs.gets != 0 || n != 0 {
			t.Fatalf("the refusal read %d objects and emitted %d", cs.gets, n)
		}
	}
}

// TestTaskOfAnotherEncoderResumes: a task another build froze (its plan
// records that build's encoder) resumes with its frozen clock, and the
// published manifest records the encoder that wrote the objects: this
// build's.
func TestTaskOfAnotherEncoderResumes(t *testing.T) {
	ctx := context.Background()
	wl := newWorkload(t, 42)
	wl.append(t, 30, true)
	crash := errors.New("crash")
	_, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 3_000_000, After: func(s string) error {
		if s == StepFrozen {
			return crash
		}
		return nil
	}})
	if !errors.Is(err, crash) {
		t.Fatal(err)
	}
	task, etag, err := loadTask(ctx, wl.st, wl.b.StreamID)
	if err != nil || task == nil {
		t.Fatalf("no task: %v", err)
	}
	task.Plan.Params.Encoder = otherEncoder
	if _, err := saveTask(ctx, wl.st, task, etag); err != nil {
		t.Fatal(err)
	}
	r, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 9_000_000})
	if err != nil || !r.Activated || !r.Resumed {
		t.Fatalf("rerun: %+v %v", r, err)
	}
	g, _, err := layout.LoadGeneration(ctx, wl.st, wl.b.StreamID, r.Gen)
	if err != nil {
		t.Fatal(err)
	}
	if g.Compaction.NowMs != 3_000_000 || g.Compaction.Encoder != ntc2.EncoderIdentity() {
		t.Fatalf("published clock %d, encoder %q: want the frozen 3000000 and %q", g.Compaction.NowMs, g.Compaction.Encoder, ntc2.EncoderIdentity())
	}
}

// TestCrashedGenerationOfAnotherEncoderNotReused: a crashed run's published
// generation is reused only when it is the same content, encoder included:
// one another build published (naming its encoder) is not taken for this
// build's, so the activated set's manifest names the encoder that wrote
// its objects.
func TestCrashedGenerationOfAnotherEncoderNotReused(t *testing.T) {
	ctx := context.Background()
	wl := newWorkload(t, 42)
	wl.append(t, 30, true)
	crash := errors.New("crash")
	r, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 3_000_000, After: func(s string) error {
		if s == StepPublished {
			return crash
		}
		return nil
	}})
	if !errors.Is(err, crash) {
		t.Fatal(err)
	}
	crashed := r.Gen
	g, _, err := layout.LoadGeneration(ctx, wl.st, wl.b.StreamID, crashed)
	if err != nil {
		t.Fatal(err)
	}
	g.Compaction.Encoder = otherEncoder
	if _, err := wl.st.Put(ctx, layout.GenerationKey(wl.b.StreamID, crashed), layout.Encode(g), store.None()); err != nil {
		t.Fatal(err)
	}
	r, err = Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 9_000_000})
	if err != nil || !r.Activated {
		t.Fatalf("rerun: %+v %v", r, err)
	}
	if r.Gen == crashed {
		t.Fatalf("the rerun reused generation %d, which names the encoder %q", crashed, otherEncoder)
	}
	b := loadB(t, wl.st)
	a, _, err := layout.LoadGeneration(ctx, wl.st, wl.b.StreamID, b.Coverage.Members[0].Gen)
	if err != nil {
		t.Fatal(err)
	}
	if a.Gen != r.Gen || a.Compaction.Encoder != ntc2.EncoderIdentity() {
		t.Fatalf("active generation %d records encoder %q, want %d with %q", a.Gen, a.Compaction.Encoder, r.Gen, ntc2.EncoderIdentity())
	}
}
