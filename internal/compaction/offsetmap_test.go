package compaction

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOffsetMapMatchesModel: against a Go map, through growth and up to a
// full map at its memory cap, the offset map keeps the latest offset of
// every key it accepted, refuses only new keys once full, and stays within
// its budget.
func TestOffsetMapMatchesModel(t *testing.T) {
	for _, budget := range []int64{24 * 16, 24 * 1000, 24 * 100_000} {
		rng := rand.New(rand.NewPCG(uint64(budget), 1))
		m := newOffsetMap(budget)
		model := map[string]int64{}
		full := false
		for off := int64(0); off < 300_000; off++ {
			k := fmt.Sprintf("key-%d", rng.IntN(150_000))
			_, known := model[k]
			ok := m.put(keyHash([]byte(k)), off)
			switch {
			case ok:
				model[k] = off
			case known:
				t.Fatalf("budget %d: a known key refused", budget)
			default:
				full = true
			}
			if ok && full && !known {
				t.Fatalf("budget %d: a new key accepted after the map was full", budget)
			}
		}
		if m.peakBytes() > max(budget, 24*16) {
			t.Fatalf("budget %d: map holds %d bytes", budget, m.bytes())
		}
		for k, want := range model {
			if got, ok := m.get(keyHash([]byte(k))); !ok || got != want {
				t.Fatalf("budget %d: %s = %d, %v; want %d", budget, k, got, ok, want)
			}
		}
		if _, ok := m.get(keyHash([]byte("never-put"))); ok {
			t.Fatalf("budget %d: an absent key found", budget)
		}
		// latestOffsets: exactly the model's values, ascending, plus one.
		var want []uint64
		for _, off := range model {
			want = append(want, uint64(off)+1)
		}
		slices.Sort(want)
		if got := m.latestOffsets(); !slices.Equal(got, want) {
			t.Fatalf("budget %d: latest offsets %d values, want %d", budget, len(got), len(want))
		}
		if budget < 24*150_000 && !full {
			t.Fatalf("budget %d: never full", budget)
		}
		// Full no earlier than 90% of the last table, which is at least
		// 3/4 of the budget (the growth copy must fit beside it).
		if float64(len(model)) < 0.9*0.75*float64(budget/EntryBytes)-1 && full {
			t.Fatalf("budget %d: full at %d keys of %d slots", budget, len(model), budget/EntryBytes)
		}
	}
}
