package recovery

import (
	"context"
	"errors"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// twoCheckpoints builds a stream with checkpoints at two anchors and a tail.
func twoCheckpoints(t *testing.T) (*fixture, []*CreateResult) {
	t.Helper()
	ctx := context.Background()
	f := newFixture(t, 77, 3000)
	var cps []*CreateResult
	for i := 0; i < 30; i++ {
		f.appendRandom(t)
		if i == 9 || i == 19 {
			b, etag := f.binding(t)
			r, err := Create(ctx, f.st, b, etag, false)
			if err != nil {
				t.Fatal(err)
			}
			cps = append(cps, r)
		}
	}
	return f, cps
}

// replayBoth replays with checkpoints and fully and checks the digests.
func replayBoth(t *testing.T, f *fixture) *Result {
	t.Helper()
	ctx := context.Background()
	b, _ := f.binding(t)
	res, err := Replay(ctx, f.st, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := Replay(ctx, f.st, b, Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest() != full.Digest() {
		t.Fatalf("digest %s != full %s", res.Digest(), full.Digest())
	}
	return res
}

func candidate(res *Result, key string) Candidate {
	for _, c := range res.Candidates {
		if c.Key == key {
			return c
		}
	}
	return Candidate{}
}

func TestSelectNewestValid(t *testing.T) {
	f, cps := twoCheckpoints(t)
	res := replayBoth(t, f)
	if res.Chosen == nil || res.Chosen.Key != cps[1].Key {
		t.Fatalf("chose %+v, want %s", res.Chosen, cps[1].Key)
	}
	if c := candidate(res, cps[0].Key); c.Status != "not-needed" {
		t.Fatalf("older checkpoint: %+v", c)
	}
}

func TestSelectSkipsCheckpointLeadingHead(t *testing.T) {
	f, cps := twoCheckpoints(t)
	ctx := context.Background()
	// The head moved back below the newer anchor (truncation after an
	// unclean election): the newer checkpoint leads the head.
	h, etag, err := layout.LoadHead(ctx, f.st, f.b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	h.Head = cps[1].Anchor - 1
	for h.Head > cps[0].Anchor {
		// put the head on an object boundary
		objs, _ := layout.ListObjects(ctx, f.st, f.b.StreamID)
		ok := false
		for _, o := range objs {
			if o.End == h.Head {
				ok = true
			}
		}
		if ok {
			break
		}
		h.Head--
	}
	h.Version++
	if _, err := layout.Replace(ctx, f.st, layout.HeadKey(f.b.StreamID), h, etag); err != nil {
		t.Fatal(err)
	}
	// A binding that refers to the leading checkpoint contradicts the head
	// (layout.CheckInvariants): corruption, refused before any choice.
	b, betag := f.binding(t)
	if _, err := Replay(ctx, f.st, b, Options{}); !errors.Is(err, layout.ErrInvariant) {
		t.Fatalf("binding referring to a checkpoint beyond the head: %v, want ErrInvariant", err)
	}
	// The selection still skips a checkpoint that leads the head when the
	// binding refers to an older one.
	b.CheckpointRef = &layout.CheckpointRef{Key: cps[0].Key, SHA256: cps[0].SHA256, Anchor: cps[0].Anchor}
	b.Version++
	if _, err := layout.Replace(ctx, f.st, layout.BindingKey(b.Topic, b.Partition), b, betag); err != nil {
		t.Fatal(err)
	}
	res := replayBoth(t, f)
	if c := candidate(res, cps[1].Key); c.Status != "skipped" || c.Reason != ReasonLeadsHead {
		t.Fatalf("newer checkpoint: %+v", c)
	}
	if res.Chosen == nil || res.Chosen.Key != cps[0].Key {
		t.Fatalf("chose %+v, want the older one", res.Chosen)
	}
}

func TestSelectSkipsDivergentAnchor(t *testing.T) {
	f, cps := twoCheckpoints(t)
	ctx := context.Background()
	// Another writer's bytes for the same range: same key, other digest.
	cp, err := decodeAt(ctx, f.st, cps[1].Key)
	if err != nil {
		t.Fatal(err)
	}
	data, err := f.st.Get(ctx, cp.Anchor.ObjectKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Flip the leader epoch field (outside the CRC) of the first batch: a
	// valid object with another digest.
	data[12] ^= 0x01
	if _, err := f.st.Put(ctx, cp.Anchor.ObjectKey, data, store.None()); err != nil {
		t.Fatal(err)
	}
	// That history sealed the object with its own bytes: the manifest
	// agrees with them (else the object is corrupt, not divergent).
	f.resealObject(t, cp.Anchor.ObjectKey, func(r *layout.ObjectRef) {
		r.Size, r.ETag, r.CRC32C, r.SHA256 = int64(len(data)), store.ETagOf(data), stream.CRC32C(data), store.SHA256Of(data)
	})
	// Nor does that history's head record the leader epochs this one's
	// does (layout.Head.LeaderEpochs: an epoch against the record is
	// corruption, not divergence).
	b0, _ := f.binding(t)
	h, hetag, err := layout.LoadHead(ctx, f.st, b0.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	h.LeaderEpochs = ""
	if _, err := layout.Replace(ctx, f.st, layout.HeadKey(h.StreamID), h, hetag); err != nil {
		t.Fatal(err)
	}
	b, _ := f.binding(t)
	res, err := Replay(ctx, f.st, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := candidate(res, cps[1].Key); c.Reason != ReasonDigestMismatch {
		t.Fatalf("newer checkpoint: %+v", c)
	}
	if res.Chosen == nil || res.Chosen.Key != cps[0].Key {
		t.Fatalf("chose %+v, want the older one", res.Chosen)
	}
}

func decodeAt(ctx context.Context, st store.Store, key string) (*nkc1.Checkpoint, error) {
	data, err := st.Get(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	return decodeCheckpoint(data)
}

func TestSelectSkipsCorruptSections(t *testing.T) {
	f, cps := twoCheckpoints(t)
	ctx := context.Background()
	orig, err := f.st.Get(ctx, cps[1].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := nkc1.Open(orig)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Sections() {
		if s.StoredLen == 0 {
			continue
		}
		bad := append([]byte(nil), orig...)
		bad[s.Offset+s.StoredLen/2] ^= 0x40
		if _, err := f.st.Put(ctx, cps[1].Key, bad, store.None()); err != nil {
			t.Fatal(err)
		}
		res := replayBoth(t, f)
		if c := candidate(res, cps[1].Key); c.Status != "skipped" || c.Reason != ReasonCorrupt {
			t.Fatalf("section %s flipped: %+v", s.Name, c)
		}
		if res.Chosen == nil || res.Chosen.Key != cps[0].Key {
			t.Fatalf("section %s flipped: chose %+v", s.Name, res.Chosen)
		}
	}
}

func TestSelectSkipsWrongBindingReference(t *testing.T) {
	f, cps := twoCheckpoints(t)
	ctx := context.Background()
	cp, err := decodeAt(ctx, f.st, cps[1].Key)
	if err != nil {
		t.Fatal(err)
	}
	// Made for a binding version the store has never had: the binding was
	// recreated or restored under it.
	cp.Binding.Version += 100
	data, root, err := nkc1.Encode(cp)
	if err != nil {
		t.Fatal(err)
	}
	key := layout.CheckpointKey(f.b.StreamID, cp.Anchor.Offset, root)
	if _, err := f.st.Put(ctx, key, data, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Delete(ctx, cps[1].Key, store.None()); err != nil {
		t.Fatal(err)
	}
	res := replayBoth(t, f)
	if c := candidate(res, key); c.Reason != ReasonBinding {
		t.Fatalf("wrong binding: %+v", c)
	}
	if res.Chosen == nil || res.Chosen.Key != cps[0].Key {
		t.Fatalf("chose %+v", res.Chosen)
	}
}

func TestSelectFallsBackToFullReplay(t *testing.T) {
	f, cps := twoCheckpoints(t)
	ctx := context.Background()
	for _, c := range cps {
		data, _ := f.st.Get(ctx, c.Key, nil)
		data[len(data)/3] ^= 0xff
		if _, err := f.st.Put(ctx, c.Key, data, store.None()); err != nil {
			t.Fatal(err)
		}
	}
	res := replayBoth(t, f)
	if res.Chosen != nil {
		t.Fatalf("chose a corrupt checkpoint: %+v", res.Chosen)
	}
	if res.Tail.From != 0 {
		t.Fatalf("full replay started at %d", res.Tail.From)
	}
}

// TestVerifyDetectsEverySingleByteCorruption flips every byte of a small
// checkpoint, one at a time: checkpoint verify must find each one.
func TestVerifyDetectsEverySingleByteCorruption(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3, 100000)
	for i := 0; i < 3; i++ {
		f.appendRandom(t)
	}
	b, etag := f.binding(t)
	r, err := Create(ctx, f.st, b, etag, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = f.binding(t)
	rep, err := Verify(ctx, f.st, b)
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("clean checkpoint: %+v %v", rep, err)
	}
	orig, _ := f.st.Get(ctx, r.Key, nil)
	t.Logf("checking %d byte positions", len(orig))
	for i := range orig {
		for _, flip := range []byte{0x01, 0x80} {
			bad := append([]byte(nil), orig...)
			bad[i] ^= flip
			if _, err := f.st.Put(ctx, r.Key, bad, store.None()); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(ctx, f.st, b)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) == 0 {
				t.Fatalf("byte %d ^ %#x not detected", i, flip)
			}
		}
	}
	// every truncation too
	for n := 0; n < len(orig); n += 7 {
		if _, err := f.st.Put(ctx, r.Key, orig[:n], store.None()); err != nil {
			t.Fatal(err)
		}
		if rep, _ := Verify(ctx, f.st, b); len(rep.Findings) == 0 {
			t.Fatalf("truncation to %d bytes not detected", n)
		}
	}
}

// decodeCheckpoint opens and fully decodes a checkpoint, as replay does.
func decodeCheckpoint(data []byte) (*nkc1.Checkpoint, error) {
	r, err := nkc1.Open(data)
	if err != nil {
		return nil, err
	}
	return r.Checkpoint()
}
