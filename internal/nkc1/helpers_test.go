package nkc1

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"

	"github.com/nereusctl/nereusctl/internal/container"
)

// Attribute bits of a RecordBatch v2 header (docs/design.md §4).
const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// genState builds a random partition state by replaying a synthetic log
// through the state package: idempotent and transactional producers,
// commits and aborts, leader-epoch changes, offset gaps, segment seals and
// log-start advances.
func genState(rng *rand.Rand, steps int) *state.Partition {
	start := rng.Int63n(1000)
	p := state.New(start)
	leaderEpoch := int32(rng.Intn(3))
	gen := int64(0)
	nProducers := 1 + rng.Intn(8)
	prodEpoch := make([]int16, nProducers)
	seq := make([]int32, nProducers)
	inTxn := make([]bool, nProducers)
	ts := int64(1_700_000_000_000) + rng.Int63n(1000)
	objBase, objPos := start, int64(0)
	for i := 0; i < steps; i++ {
		ts += rng.Int63n(50)
		r := rng.Intn(100)
		switch {
		case r < 4:
			leaderEpoch += int32(1 + rng.Intn(2))
			continue
		case r < 9:
			if n := len(p.Segments); n > 0 && p.Segments[n-1].Open() {
				if err := p.Seal(gen, p.NextOffset); err != nil {
					panic(err)
				}
				gen += int64(1 + rng.Intn(2))
			}
			continue
		case r < 11:
			if d := p.NextOffset - p.LogStart; d > 0 {
				p.ApplyLogStart(p.LogStart + rng.Int63n(d+1))
			}
			continue
		case r < 13:
			objBase, objPos = p.NextOffset, 0 // a new object
			continue
		}
		base := p.NextOffset
		if rng.Intn(20) == 0 {
			base += int64(1 + rng.Intn(3)) // a gap (compaction, import)
		}
		h := kafka.BatchHeader{
			BaseOffset: base, PartitionLeaderEpoch: leaderEpoch, Magic: 2,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
			BaseTimestamp: ts, MaxTimestamp: ts + rng.Int63n(10) - 3,
		}
		var m state.Marker
		pi := rng.Intn(nProducers)
		switch {
		case r < 25 && inTxn[pi]: // a transaction marker
			h.Attributes = attrControl | attrTransactional
			h.ProducerID, h.ProducerEpoch = int64(1000+pi), prodEpoch[pi]
			m = state.Marker{Present: true, Type: kafka.ControlAbort, CoordinatorEpoch: int32(rng.Intn(5)), Timestamp: h.MaxTimestamp}
			if rng.Intn(2) == 0 {
				m.Type = kafka.ControlCommit
			}
			inTxn[pi] = false
		case r < 30: // no producer id
			h.LastOffsetDelta = int32(rng.Intn(10))
		default:
			if rng.Intn(30) == 0 {
				prodEpoch[pi]++
				seq[pi] = 0
			}
			h.ProducerID, h.ProducerEpoch = int64(1000+pi), prodEpoch[pi]
			h.LastOffsetDelta = int32(rng.Intn(10))
			h.BaseSequence = seq[pi]
			seq[pi] += h.LastOffsetDelta + 1
			if rng.Intn(3) == 0 || inTxn[pi] {
				h.Attributes = attrTransactional
				inTxn[pi] = true
			}
		}
		size := int64(kafka.HeaderSize + rng.Intn(3000))
		if err := p.Apply(h, size, m, state.Position{ObjectBase: objBase, ObjectPos: objPos}); err != nil {
			panic(err)
		}
		objPos += size
	}
	return p
}

func randHex(rng *rand.Rand) string {
	var b [32]byte
	rng.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkpointFor wraps a state in a consistent anchor, coverage and binding
// reference.
func checkpointFor(rng *rand.Rand, p *state.Partition) *Checkpoint {
	sid := fmt.Sprintf("stream-%d", rng.Intn(1000))
	topic, part := "orders.v1", int32(rng.Intn(64))
	c := &Checkpoint{
		Anchor: Anchor{
			StreamID: sid, TopicID: "q0bn6WqHRjSoh0z9sOXDfQ", Topic: topic, Partition: part,
			Offset: p.NextOffset, HeadEpoch: rng.Int63n(100), LogStart: p.LogStart,
		},
		State:    p,
		Coverage: Coverage{LogStart: p.LogStart, Anchor: p.NextOffset},
		Binding:  BindingRef{Key: layout.BindingKey(topic, part), Version: 1 + rng.Int63n(50)},
	}
	if p.NextOffset > 0 {
		base := p.NextOffset - 1 - rng.Int63n(p.NextOffset)
		c.Anchor.ObjectKey = layout.ObjectKey(sid, base, p.NextOffset)
		c.Anchor.ObjectSHA256 = randHex(rng)
	}
	for _, s := range p.Segments {
		if !s.Open() {
			c.Coverage.Sources = append(c.Coverage.Sources, SourceRef{Gen: s.Gen, ManifestSHA256: randHex(rng)})
		}
	}
	return c
}

func mustEncode(t testing.TB, c *Checkpoint) []byte {
	t.Helper()
	data, _, err := Encode(c)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return data
}

// smallCheckpoint is a small but complete checkpoint with at least one
// zstd-compressed section.
func smallCheckpoint(t testing.TB) []byte {
	t.Helper()
	rng := rand.New(rand.NewSource(7))
	p := genState(rng, 40)
	data := mustEncode(t, checkpointFor(rng, p))
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	var zstd, none bool
	for _, s := range r.Sections() {
		zstd = zstd || s.Codec == "zstd"
		none = none || s.Codec == "none"
	}
	if !zstd || !none {
		t.Fatalf("small checkpoint should mix codecs: %+v", r.Sections())
	}
	return data
}

// rawSection is a section for build: stored bytes as given, CRC over them,
// SHA-256 over raw.
type rawSection struct {
	id     uint16
	codec  uint8
	flags  uint8
	stored []byte
	raw    []byte
}

// build frames sections by hand (for hostile and forward-compatible
// inputs), with a correct root.
func build(secs []rawSection) []byte {
	data := appendHeader(nil, Version, 0, uint32(len(secs)))
	var entries []entry
	for _, s := range secs {
		entries = append(entries, entry{
			id: s.id, codec: s.codec, flags: s.flags, off: uint64(len(data)),
			stored: uint64(len(s.stored)), raw: uint64(len(s.raw)),
			crc: container.CRC32C(s.stored), sha: sha256.Sum256(s.raw),
		})
		data = append(data, s.stored...)
	}
	fs := len(data)
	data = append(data, data[:headerSize]...)
	for i := range entries {
		data = entries[i].appendTo(data)
	}
	root := sha256.Sum256(data[fs:])
	data = append(data, root[:]...)
	data = binary.BigEndian.AppendUint32(data, uint32(len(data)-fs+trailerSize))
	return append(data, Magic...)
}

// sectionsOf returns the raw sections of a valid checkpoint, uncompressed.
func sectionsOf(t testing.TB, data []byte) []rawSection {
	t.Helper()
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	var out []rawSection
	for _, s := range r.Sections() {
		raw, err := r.Section(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rawSection{id: s.ID, stored: raw, raw: raw})
	}
	return out
}

// FindingOf turns an error of this package (from Open, Section, Decode)
// into a Finding.
func FindingOf(err error) Finding { return findingOf(err) }

// VerifyBytes is Open then Verify; a failed Open is reported as a finding.
func VerifyBytes(data []byte) []Finding {
	r, err := Open(data)
	if err != nil {
		return []Finding{findingOf(err)}
	}
	return r.Verify()
}

// Anchor opens and decodes the anchor section only.
func (r *Reader) Anchor() (Anchor, error) {
	raw, err := r.Section(SectionAnchor)
	if err != nil {
		return Anchor{}, err
	}
	a, err := decodeAnchor(raw)
	if err != nil {
		return Anchor{}, sectionCorrupt(SectionAnchor, CheckDecode, err, "payload does not decode")
	}
	return a, nil
}

// Describe opens one section and returns DescribeSection's value for it.
func (r *Reader) Describe(id uint16) (any, error) {
	raw, err := r.Section(id)
	if err != nil {
		return nil, err
	}
	return DescribeSection(id, raw)
}

// Decode opens a checkpoint, checks the root and every section, decodes
// every payload and rebuilds the checkpoint with state.Assemble. Any failure
// is an error naming the section and the check.
func Decode(data []byte) (*Checkpoint, error) {
	r, err := Open(data)
	if err != nil {
		return nil, err
	}
	return r.Checkpoint()
}
