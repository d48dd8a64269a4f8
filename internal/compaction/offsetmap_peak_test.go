package compaction

import (
	"encoding/binary"
	"testing"
)

// TestOffsetMapPeakWithinBudget fills maps of many budgets until they report
// full and checks the claim of the memory bound at its worst moment: the
// map never holds more than its budget at once, its growth copy included,
// and a full map holds at least 0.9 × 3/4 of the budget's slots in keys.
func TestOffsetMapPeakWithinBudget(t *testing.T) {
	var key [8]byte
	for _, maxBytes := range []int64{1 << 10, 5000, 64 << 10, 1 << 20, 3<<20 + 17, 16 << 20} {
		m := newOffsetMap(maxBytes)
		budget := maxBytes / EntryBytes
		keys := int64(0)
		for ; ; keys++ {
			binary.BigEndian.PutUint64(key[:], uint64(keys))
			if !m.put(keyHash(key[:]), keys) {
				break
			}
			if got := int64(len(m.slots)/3) + 0; got > budget {
				t.Fatalf("budget %d B: table of %d slots exceeds the budget of %d", maxBytes, got, budget)
			}
		}
		if m.peakBytes() > maxBytes {
			t.Errorf("budget %d B: peak %d B (both tables while growing) exceeds it", maxBytes, m.peakBytes())
		}
		if min := int64(0.9 * 0.75 * float64(budget)); keys < min {
			t.Errorf("budget %d B (%d slots): full after %d keys, want at least %d", maxBytes, budget, keys, min)
		}
		// A full map still answers for every key it took.
		for k := int64(0); k < keys; k += 97 {
			binary.BigEndian.PutUint64(key[:], uint64(k))
			if off, ok := m.get(keyHash(key[:])); !ok || off != k {
				t.Fatalf("budget %d B: key %d lost after growth (%d, %v)", maxBytes, k, off, ok)
			}
		}
	}
}
