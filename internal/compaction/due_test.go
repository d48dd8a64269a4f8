package compaction

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
)

// TestDueUsesTopicMinCleanableDirtyRatio: compact --dry-run's due decision
// compares the dirty ratio with the topic's min.cleanable.dirty.ratio, not
// a fixed 0.5. Kafka's LogCleanerManager.grabFilthiestCompactedLog keeps a
// log when ltc.cleanableRatio > ltc.log.config.minCleanableRatio (strictly
// greater), with LogToClean's cleanableRatio = cleanableBytes /
// (cleanBytes + cleanableBytes). The expected decisions below apply that
// rule to byte counts taken from the store (the active view's objects and
// the dirty segment's objects), not to what the dry run reports.
func TestDueUsesTopicMinCleanableDirtyRatio(t *testing.T) {
	ctx := context.Background()
	s := newTSStream(t)
	for i := 0; i < 40; i++ {
		s.batch(t, []string{fmt.Sprintf("key-%02d", i)}, []int64{int64(i)}, false, 0)
	}
	s.roll(t)
	if r, err := Compact(ctx, s.st, s.binding(t), Options{NowMs: 1_000}); err != nil || !r.Activated {
		t.Fatalf("compact: %v %+v", err, r)
	}
	s.batch(t, []string{"key-00"}, []int64{50}, false, 0) // one dirty closed segment
	s.roll(t)
	s.batch(t, []string{"open"}, []int64{60}, false, 0)

	// The byte counts, from the store.
	b := s.binding(t)
	var clean, cleanable int64
	for _, m := range b.Coverage.Members {
		g, _, err := layout.LoadGeneration(ctx, s.st, b.StreamID, m.Gen)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range g.Objects {
			clean += o.Size
		}
	}
	gens, err := layout.ListGenerations(ctx, s.st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, s.st, b.StreamID, n)
		if err != nil {
			t.Fatal(err)
		}
		if g.Kind == layout.KindCommitted && g.Base >= b.Coverage.End {
			for _, o := range g.Objects {
				cleanable += o.Size
			}
		}
	}
	ratio := float64(cleanable) / float64(clean+cleanable)
	if ratio <= 0 || ratio >= 0.5 {
		t.Fatalf("the set-up's dirty ratio is %v (%d of %d bytes), want one below Kafka's default 0.5", ratio, cleanable, clean+cleanable)
	}

	for _, c := range []struct {
		setting *float64
		due     bool
	}{
		{nil, ratio > 0.5},     // Kafka's default
		{ptr(0), ratio > 0},    // any dirty byte
		{ptr(ratio / 2), true}, // ratio > ratio/2
		{ptr(ratio), false},    // not strictly greater
		{ptr(1), false},        // never by the ratio
	} {
		b := s.binding(t)
		b.Config.MinCleanableDirtyRatio = c.setting
		r, err := Compact(ctx, s.st, b, Options{NowMs: 2_000, DryRun: true})
		if err != nil || r.Due == nil {
			t.Fatalf("dry run: %v %+v", err, r)
		}
		want := 0.5
		if c.setting != nil {
			want = *c.setting
		}
		d := r.Due
		if d.Due != c.due || d.MinCleanableDirtyRatio != want || d.CleanBytes != clean || d.CleanableBytes != cleanable {
			t.Errorf("min.cleanable.dirty.ratio %v: due %v (want %v), ratio %v, clean %d (want %d), cleanable %d (want %d): %s",
				want, d.Due, c.due, d.MinCleanableDirtyRatio, d.CleanBytes, clean, d.CleanableBytes, cleanable, d.Reason)
		}
		if !strings.Contains(d.Reason, fmt.Sprintf("min.cleanable.dirty.ratio %v", want)) {
			t.Errorf("reason %q does not name the ratio %v", d.Reason, want)
		}
	}
}

func ptr(f float64) *float64 { return &f }
