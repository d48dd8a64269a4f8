package recovery

import (
	"context"
	"fmt"
	"testing"

	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestCheckpointBeforeFinalTimeIndexRule: a checkpoint made by a build
// before the final time-index entry rule (LogSegment.onBecomeInactiveSegment,
// state.Seal) holds sealed segments without that entry. Hydrated today it
// is completed (state.CompleteSealedTimeIndexes), so the checkpoint path
// and a full replay agree: an upgrade must not turn every existing
// checkpoint into a replay --compare MISMATCH (exit 3).
func TestCheckpointBeforeFinalTimeIndexRule(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 7, 2500)
	for range 30 {
		f.appendRandom(t)
	}
	b, etag := f.binding(t)
	res, err := Replay(ctx, f.st, b, Options{VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	// The state as the older build derived it: no final entry.
	stripped := 0
	for i := range res.State.Segments {
		s := &res.State.Segments[i]
		if k := len(s.TimeIndex); !s.Open() && k > 0 && s.TimeIndex[k-1].Timestamp == s.MaxTimestamp && s.TimeIndex[k-1].Offset == s.OffsetOfMax {
			s.TimeIndex = s.TimeIndex[:k-1]
			stripped++
		}
	}
	if stripped == 0 {
		t.Fatal("the workload sealed no segment with a final time-index entry: the test proves nothing")
	}
	if _, err := CreateFrom(ctx, f.st, b, etag, res, false); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.appendRandom(t)
	}
	b, _ = f.binding(t)
	cp, err := Replay(ctx, f.st, b, Options{VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Chosen == nil {
		t.Fatalf("the old-rule checkpoint was not chosen: %+v", cp.Candidates)
	}
	full, err := Replay(ctx, f.st, b, Options{Full: true, VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Digest() != full.Digest() {
		t.Fatalf("checkpoint path %s != full replay %s after hydrating a checkpoint made under the old rule (%d entries stripped)", cp.Digest(), full.Digest(), stripped)
	}
}

// TestCheckpointBeforeSegmentBaseRule: a checkpoint made by a build before
// the segment base rule holds segments that start at the previous
// segment's end after an offset gap, where a full replay today starts them
// at their first batch. The right base cannot be derived from the
// checkpoint or the manifests without reading each segment's first batch
// (the checkpoint records no first offset, a manifest's base is its first
// object's), so hydration keeps the checkpoint's bases (a log start lower
// than Kafka's by offsets that hold no record, never higher) at no extra
// request; the difference is then recognised exactly
// (state.OldRuleSegmentBases: never taken for a match, never a mismatch
// without a cause: any other difference is not explained), and a
// checkpoint from a full replay (CreateFullAt, checkpoint create --full)
// makes the checkpoint path match again.
func TestCheckpointBeforeSegmentBaseRule(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 13, 1<<20)
	for seg := range 6 {
		for range 4 {
			f.appendRandom(t)
		}
		if err := f.w.Roll(ctx); err != nil {
			t.Fatal(err)
		}
		gap := int64(0) // every other segment starts right at the previous end
		if seg%2 == 0 {
			gap = 3 + int64(seg)
		}
		if err := f.w.Append(ctx, batchesAt(t, f.w.Next()+gap)); err != nil {
			t.Fatal(err)
		}
	}
	b, etag := f.binding(t)
	res, err := Replay(ctx, f.st, b, Options{VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	// The state as the older build derived it: after a gap a segment
	// started at the previous segment's end.
	var moved []int64
	for i := 1; i < len(res.State.Segments); i++ {
		s, prev := &res.State.Segments[i], res.State.Segments[i-1]
		if s.Base != prev.End {
			moved = append(moved, s.Base)
			s.Base = prev.End
		}
	}
	if len(moved) < 3 {
		t.Fatalf("the workload made %d segments after gaps: the test proves nothing", len(moved))
	}
	old, err := CreateFrom(ctx, f.st, b, etag, res, false)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.appendRandom(t)
	}
	b, etag = f.binding(t)
	requests := store.NewCounter(f.st)
	cp, err := Replay(ctx, requests, b, Options{VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Chosen == nil || cp.Chosen.Key != old.Key {
		t.Fatalf("the old-rule checkpoint was not chosen: %+v", cp.Candidates)
	}
	full, err := Replay(ctx, f.st, b, Options{Full: true, VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	// Hydration reads nothing more than for any checkpoint: the same
	// requests as the checkpoint path of a new-rule checkpoint (below).
	oldRequests := requests.Counts()
	if cp.Digest() == full.Digest() {
		t.Fatal("the old-rule checkpoint path matches the full replay: the old bases were not kept (or derived by reading data)")
	}
	for i, s := range cp.State.Segments {
		if s.Base > full.State.Segments[i].Base {
			t.Fatalf("segment %d: checkpoint path base %d above today's %d: a log start above Kafka's", i, s.Base, full.State.Segments[i].Base)
		}
	}
	got, ok := state.OldRuleSegmentBases(cp.State, full.State)
	if !ok || fmt.Sprint(got) != fmt.Sprint(moved) {
		t.Fatalf("the difference is not recognised as the segment base rule: %v %v, want %v", got, ok, moved)
	}
	// Anything else that differs is not explained away.
	if _, ok := state.OldRuleSegmentBases(full.State, full.State); ok {
		t.Fatal("equal states explained as a rule change")
	}
	other := cp.State.Clone()
	for _, pr := range other.Producers {
		pr.Epoch++
		break
	}
	if _, ok := state.OldRuleSegmentBases(other, full.State); ok {
		t.Fatal("a producer that differs was explained as a segment base rule change")
	}
	lower := cp.State.Clone()
	lower.Segments[len(lower.Segments)-1].Base--
	if _, ok := state.OldRuleSegmentBases(lower, full.State); ok {
		t.Fatal("a base that is not the previous segment's end was explained as the old rule")
	}
	// The action the mismatch names: a checkpoint from a full replay.
	fresh, err := CreateFullAt(ctx, f.st, b, etag, state.Clock{}, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = f.binding(t)
	requests = store.NewCounter(f.st)
	again, err := Replay(ctx, requests, b, Options{VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Chosen == nil || again.Chosen.Key != fresh.Key {
		t.Fatalf("the checkpoint from the full replay was not chosen: %+v", again.Candidates)
	}
	if again.Digest() != full.Digest() {
		t.Fatalf("after checkpoint create --full: checkpoint path %s != full replay %s", again.Digest(), full.Digest())
	}
	// Hydrating the old-rule checkpoint asked for nothing more than
	// hydrating today's: the checkpoint, its anchor object, the tail.
	newRequests := requests.Counts()
	beyondTail := func(c store.Counts, r *Result) string {
		c[store.VerbGet] -= int64(r.Tail.Objects)
		return c.String()
	}
	if o, n := beyondTail(oldRequests, cp), beyondTail(newRequests, again); o != n {
		t.Fatalf("requests beyond the tail: old-rule checkpoint %s, today's %s", o, n)
	}
}
