package ntc2

import (
	"math/rand/v2"
	"testing"
)

// TestKeySetCounts: the set counts exactly the distinct hashes added,
// through growth, repeats and the all-zero hash.
func TestKeySetCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, hint := range []int64{0, 10, 5000} {
		s := newKeySet(hint)
		model := map[[2]uint64]bool{}
		for i := 0; i < 20_000; i++ {
			h := [2]uint64{rng.Uint64N(3000), rng.Uint64N(3)} // many repeats, zero included
			if i == 1234 {
				h = [2]uint64{}
			} else if i%7 == 0 {
				h = [2]uint64{rng.Uint64(), rng.Uint64()}
			}
			s.add(h)
			model[h] = true
			if s.len() != int64(len(model)) {
				t.Fatalf("hint %d, after %d adds: %d keys, want %d", hint, i+1, s.len(), len(model))
			}
		}
		if !model[[2]uint64{}] {
			t.Fatal("the zero hash was never added")
		}
	}
}
