package recovery

import (
	"context"
	"testing"
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
