package compaction

import (
	"encoding/binary"
	"hash/maphash"
)

// EntryBytes is the size of one offset-map slot: a 16-byte hash of the key
// and the latest offset (8 bytes), Kafka's SkimpyOffsetMap layout (Kafka
// hashes with MD5; two 64-bit maphash values are as collision-safe for
// this purpose and about twenty times faster).
const EntryBytes = 24

// maxLoad is the fill ratio at which the map grows or, at its memory cap,
// is full (Kafka's cleaner uses 0.9 too).
const maxLoad = 0.9

// offsetMap maps the key hash to the latest offset seen, in one flat buffer with
// open addressing. It grows by half until maxSlots, then reports full.
type offsetMap struct {
	buf      []byte // slots * 24; offset+1 stored so that 0 means empty
	slots    int
	used     int
	maxSlots int
}

func newOffsetMap(maxBytes int64) *offsetMap {
	maxSlots := int(maxBytes / EntryBytes)
	if maxSlots < 16 {
		maxSlots = 16
	}
	start := min(maxSlots, 1<<16)
	return &offsetMap{buf: make([]byte, start*EntryBytes), slots: start, maxSlots: maxSlots}
}

// hashSeeds are per process: the map never leaves memory, and what the
// compaction writes does not depend on hash values.
var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyHash(key []byte) [16]byte {
	var h [16]byte
	binary.BigEndian.PutUint64(h[:8], maphash.Bytes(hashSeeds[0], key))
	binary.BigEndian.PutUint64(h[8:], maphash.Bytes(hashSeeds[1], key))
	return h
}

func (m *offsetMap) index(h *[16]byte) int {
	return int(binary.BigEndian.Uint64(h[:8]) % uint64(m.slots))
}

// find returns the slot of h, or the empty slot where it would go.
func (m *offsetMap) find(h *[16]byte) (int, bool) {
	i := m.index(h)
	for {
		s := m.buf[i*EntryBytes : (i+1)*EntryBytes]
		if binary.BigEndian.Uint64(s[16:]) == 0 {
			return i, false
		}
		if string(s[:16]) == string(h[:]) {
			return i, true
		}
		if i++; i == m.slots {
			i = 0
		}
	}
}

// put records off as the latest offset of h. It returns false, changing
// nothing, when h is new and the map is full at its memory cap.
func (m *offsetMap) put(h [16]byte, off int64) bool {
	i, ok := m.find(&h)
	if !ok {
		if float64(m.used+1) > maxLoad*float64(m.slots) {
			if !m.grow() {
				return false
			}
			i, _ = m.find(&h)
		}
		m.used++
		copy(m.buf[i*EntryBytes:], h[:])
	}
	binary.BigEndian.PutUint64(m.buf[i*EntryBytes+16:], uint64(off)+1)
	return true
}

// get returns the latest offset of h.
func (m *offsetMap) get(h [16]byte) (int64, bool) {
	i, ok := m.find(&h)
	if !ok {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(m.buf[i*EntryBytes+16:])) - 1, true
}

func (m *offsetMap) grow() bool {
	if m.slots >= m.maxSlots {
		return false
	}
	n := min(m.maxSlots, m.slots+m.slots/2+1)
	old, oldSlots := m.buf, m.slots
	m.buf, m.slots, m.used = make([]byte, n*EntryBytes), n, 0
	for i := 0; i < oldSlots; i++ {
		s := old[i*EntryBytes : (i+1)*EntryBytes]
		if v := binary.BigEndian.Uint64(s[16:]); v != 0 {
			var h [16]byte
			copy(h[:], s[:16])
			j, _ := m.find(&h)
			copy(m.buf[j*EntryBytes:], s)
			m.used++
		}
	}
	return float64(m.used+1) <= maxLoad*float64(m.slots)
}

// bytes is the map's memory.
func (m *offsetMap) bytes() int64 { return int64(len(m.buf)) }
