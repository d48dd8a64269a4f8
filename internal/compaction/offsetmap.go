package compaction

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// EntryBytes is the size of one offset-map slot: a 16-byte hash of the key
// and the latest offset (8 bytes), Kafka's SkimpyOffsetMap layout (Kafka
// hashes with MD5; two 64-bit maphash values are as collision-safe for
// this purpose and about twenty times faster).
const EntryBytes = 24

// maxLoad is the fill ratio at which the map grows or, at its memory cap,
// is full (Kafka's cleaner uses 0.9 too).
const maxLoad = 0.9

// offsetMap maps the key hash to the latest offset seen, in one flat array
// of three words per slot (the two hash words, then offset+1 so that 0
// means empty), with linear probing.
//
// Its memory is bounded at its peak, not only at rest: growing copies the
// table into a new one, so for a moment both exist. The budget (budget
// slots of EntryBytes) therefore covers old + new: the table grows by half
// while the new table stays within a quarter of the budget, and its last
// growth takes everything the old table leaves (budget - old, between 3/4
// and 5/6 of the budget). Beyond that it reports full, and the compaction
// goes on in passes. At most 90% of the slots are used, so a full map holds
// at least 0.9 × 3/4 × budget keys: about 35.6 bytes of budget per key at
// worst, 24 bytes per slot always.
type offsetMap struct {
	slots  []uint64 // 3 words a slot
	n      uint64   // slots
	used   int
	budget int    // slots the map may hold at once, growth copy included
	peak   int    // the most slots held at once (old + new while growing)
	last   bool   // the last growth happened: full at the next overflow
	sink   uint64 // keeps prefetch's loads
}

func newOffsetMap(maxBytes int64) *offsetMap {
	budget := int(maxBytes / EntryBytes)
	if budget < 16 {
		budget = 16
	}
	start := max(1, min(budget/4, 1<<16))
	return &offsetMap{slots: make([]uint64, 3*start), n: uint64(start), budget: budget, peak: start}
}

// hashSeeds are per process: the map never leaves memory, and what the
// compaction writes does not depend on hash values.
var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// keyHash is the key's 128-bit hash: two independently seeded 64-bit
// hashes.
func keyHash(key []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(hashSeeds[0], key), maphash.Bytes(hashSeeds[1], key)}
}

// home is the slot where h's probe starts: h[0] scaled to [0, n).
func (m *offsetMap) home(h [2]uint64) uint64 {
	i, _ := bits.Mul64(h[0], m.n)
	return i
}

// prefetch touches the home slots of hs before they are looked up in
// turn: the loads are independent, so the processor overlaps their cache
// misses instead of taking them one lookup at a time.
func (m *offsetMap) prefetch(hs [][2]uint64) {
	var sink uint64
	for _, h := range hs {
		sink += m.slots[3*m.home(h)+2]
	}
	m.sink = sink
}

// find returns the slot of h, or the empty slot where it would go.
func (m *offsetMap) find(h [2]uint64) (uint64, bool) {
	for i := m.home(h); ; {
		s := m.slots[3*i : 3*i+3 : 3*i+3]
		if s[2] == 0 {
			return i, false
		}
		if s[0] == h[0] && s[1] == h[1] {
			return i, true
		}
		if i++; i == m.n {
			i = 0
		}
	}
}

// put records off as the latest offset of h. It returns false, changing
// nothing, when h is new and the map is full at its memory cap.
func (m *offsetMap) put(h [2]uint64, off int64) bool {
	i, ok := m.find(h)
	if !ok {
		if float64(m.used+1) > maxLoad*float64(m.n) {
			if !m.grow() {
				return false
			}
			i, _ = m.find(h)
		}
		m.used++
		m.slots[3*i], m.slots[3*i+1] = h[0], h[1]
	}
	m.slots[3*i+2] = uint64(off) + 1
	return true
}

// get returns the latest offset of h.
func (m *offsetMap) get(h [2]uint64) (int64, bool) {
	i, ok := m.find(h)
	if !ok {
		return 0, false
	}
	return int64(m.slots[3*i+2]) - 1, true
}

// nextSize is the table size of the next growth, or 0 when the map may
// not grow: old + new never exceeds the budget.
func (m *offsetMap) nextSize() int {
	if m.last {
		return 0
	}
	cur := int(m.n)
	if n := cur + cur/2 + 1; n <= m.budget/4 {
		return n
	}
	if n := m.budget - cur; n > cur {
		return n
	}
	return 0
}

func (m *offsetMap) grow() bool {
	n := m.nextSize()
	if n == 0 {
		return false
	}
	if n > m.budget/4 {
		m.last = true
	}
	old := m.slots
	m.peak = max(m.peak, int(m.n)+n)
	m.slots, m.n, m.used = make([]uint64, 3*n), uint64(n), 0
	for i := 0; i+2 < len(old); i += 3 {
		if old[i+2] != 0 {
			j, _ := m.find([2]uint64{old[i], old[i+1]})
			copy(m.slots[3*j:3*j+3], old[i:i+3])
			m.used++
		}
	}
	return float64(m.used+1) <= maxLoad*float64(m.n)
}

// latestOffsets turns the map, in place, into the ascending list of the
// latest offsets it holds (each plus one) and returns it; the map is
// unusable afterwards. A record of the scanned range is the latest of its
// key exactly when its offset is in this list, so the cleaning pass checks
// records against it in offset order, without hashing a key or touching
// the table at random, in no memory beyond the table's.
func (m *offsetMap) latestOffsets() []uint64 {
	k := 0
	for i := 0; i+2 < len(m.slots); i += 3 {
		if v := m.slots[i+2]; v != 0 {
			m.slots[k] = v // k <= i/3 < i+2: an unread slot is never overwritten
			k++
		}
	}
	out := m.slots[:k:k]
	slices.Sort(out)
	m.slots, m.n, m.used = nil, 0, 0
	return out
}

// peakBytes is the most memory the map held at once (both tables while it
// grew); never more than the budget it was made with.
func (m *offsetMap) peakBytes() int64 { return int64(m.peak) * EntryBytes }
