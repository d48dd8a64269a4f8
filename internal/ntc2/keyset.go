package ntc2

import "hash/maphash"

// keyHash is the distinct-key set's entry: two 64-bit hashes of the key
// under independent seeds drawn at random per process. Two keys collide
// with probability about 2^-128 and no input can be crafted to collide
// (the seeds are secret), so the writer and every verifier count the same
// keys, while hashing runs at memory speed (SHA-256 here cost a sixth of
// the writer's time).
func keyHash(key []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(keySeeds[0], key), maphash.Bytes(keySeeds[1], key)}
}

var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// keySet is the set of distinct key hashes: open addressing with linear
// probing over pairs of words, kept at most half full (16 to 32 bytes a
// key), the slot taken straight from the (already uniform) hash. The zero
// hash pair marks an empty slot; a key hashing to it is counted apart.
type keySet struct {
	slots []uint64 // 2 words a slot
	n     uint64   // slots, a power of two
	count int64
	zero  bool
}

func newKeySet(hint int64) *keySet {
	n := uint64(1024)
	for n < uint64(min(max(hint, 0), 1<<30))*2 {
		n *= 2
	}
	return &keySet{slots: make([]uint64, 2*n), n: n}
}

// add inserts h; it reports nothing, the set counts.
func (s *keySet) add(h [2]uint64) {
	if h == [2]uint64{} {
		if !s.zero {
			s.zero = true
			s.count++
		}
		return
	}
	if uint64(s.count+1)*2 > s.n {
		s.grow()
	}
	s.insert(h)
}

func (s *keySet) insert(h [2]uint64) {
	mask := s.n - 1
	for i := h[0] & mask; ; i = (i + 1) & mask {
		a, b := s.slots[2*i], s.slots[2*i+1]
		if a == h[0] && b == h[1] {
			return
		}
		if a == 0 && b == 0 {
			s.slots[2*i], s.slots[2*i+1] = h[0], h[1]
			s.count++
			return
		}
	}
}

func (s *keySet) grow() {
	old := s.slots
	s.n *= 2
	s.slots = make([]uint64, 2*s.n)
	zero := s.zero
	s.count = 0
	for i := 0; i+1 < len(old); i += 2 {
		if old[i] != 0 || old[i+1] != 0 {
			s.insert([2]uint64{old[i], old[i+1]})
		}
	}
	if zero {
		s.count++
	}
}

// len is the number of distinct keys added.
func (s *keySet) len() int64 { return s.count }
