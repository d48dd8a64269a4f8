package nkc1

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestRoundTrip(t *testing.T) {
	for seed := int64(1); seed <= 150; seed++ {
		rng := rand.New(rand.NewSource(seed))
		p := genState(rng, rng.Intn(400))
		c := checkpointFor(rng, p)
		data, root, err := Encode(c)
		if err != nil {
			t.Fatalf("seed %d: encode: %v", seed, err)
		}
		// Determinism: twice, and from a deep copy (fresh map orders).
		again, root2, _ := Encode(c)
		c2 := *c
		c2.State = p.Clone()
		copied := mustEncode(t, &c2)
		if !bytes.Equal(data, again) || !bytes.Equal(data, copied) || root != root2 {
			t.Fatalf("seed %d: encoding is not deterministic", seed)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("seed %d: decode: %v", seed, err)
		}
		if d1, d2 := state.Digest(p), state.Digest(got.State); d1 != d2 {
			t.Fatalf("seed %d: state digest %s, decoded %s", seed, d1, d2)
		}
		if !reflect.DeepEqual(got.Anchor, c.Anchor) || got.Binding != c.Binding {
			t.Fatalf("seed %d: anchor/binding %+v %+v, want %+v %+v", seed, got.Anchor, got.Binding, c.Anchor, c.Binding)
		}
		if len(c.Coverage.Sources) == 0 {
			c.Coverage.Sources = []SourceRef{}
		}
		if !reflect.DeepEqual(got.Coverage, c.Coverage) {
			t.Fatalf("seed %d: coverage %+v, want %+v", seed, got.Coverage, c.Coverage)
		}
		if got.State.LSO() != p.LSO() || got.State.HW() != p.HW() {
			t.Fatalf("seed %d: LSO/HW %d/%d, want %d/%d", seed, got.State.LSO(), got.State.HW(), p.LSO(), p.HW())
		}
		// Canonical: the decoded checkpoint encodes to the same bytes.
		if re := mustEncode(t, got); !bytes.Equal(re, data) {
			t.Fatalf("seed %d: re-encoding the decoded checkpoint changed the bytes", seed)
		}
		r, err := Open(data)
		if err != nil {
			t.Fatal(err)
		}
		if fs := r.Verify(); len(fs) != 0 {
			t.Fatalf("seed %d: findings on a valid checkpoint: %v", seed, fs)
		}
		if r.Root() != root || r.Version() != 1 || r.Size() != int64(len(data)) {
			t.Fatalf("seed %d: root %s version %d size %d", seed, r.Root(), r.Version(), r.Size())
		}
	}
}

// TestRoundTripExtremes builds a state directly with extreme field values.
func TestRoundTripExtremes(t *testing.T) {
	p := state.New(0)
	p.LogStart, p.NextOffset = 5, math.MaxInt64-1
	p.Producers[math.MaxInt64] = &state.Producer{ID: math.MaxInt64, Epoch: math.MaxInt16, CoordinatorEpoch: math.MinInt32, LastTimestamp: math.MinInt64, TxnFirstOffset: 7,
		Batches: []state.BatchMeta{{LastSeq: -1, LastOffset: math.MaxInt64, OffsetDelta: math.MaxInt32, Timestamp: -1}}}
	p.Producers[0] = &state.Producer{ID: 0, Epoch: -1, CoordinatorEpoch: -1, LastTimestamp: -1, TxnFirstOffset: -1}
	p.Ongoing[7] = state.Txn{ProducerID: math.MaxInt64, FirstOffset: 7}
	p.Aborted = []state.AbortedTxn{{ProducerID: 0, FirstOffset: 1, LastOffset: 2, LastStableOffset: 3}}
	p.Epochs = []state.EpochEntry{{Epoch: 0, StartOffset: 5}, {Epoch: math.MaxInt32, StartOffset: math.MaxInt64 - 2}}
	p.Segments = []state.Segment{
		{Base: 5, End: 100, Bytes: math.MaxInt64, MaxTimestamp: -1, OffsetOfMax: -1, Gen: 0,
			OffsetIndex: []state.OffsetIndexEntry{{Offset: 9, Position: 1, ObjectBase: 5, ObjectPos: 2}},
			TimeIndex:   []state.TimeIndexEntry{{Timestamp: 1, Offset: 9}}},
		{Base: 100, End: -1, MaxTimestamp: -1, OffsetOfMax: -1, Gen: -1},
	}
	c := &Checkpoint{
		Anchor:   Anchor{StreamID: "s", Topic: "t", Offset: p.NextOffset, LogStart: 5},
		State:    p,
		Coverage: Coverage{LogStart: 5, Anchor: p.NextOffset, Sources: []SourceRef{{Gen: math.MaxInt64, ManifestSHA256: strings.Repeat("ab", 32)}, {Gen: 0, ManifestSHA256: strings.Repeat("0", 64)}}},
		Binding:  BindingRef{Key: layout.BindingKey("t", 0), Version: math.MaxInt64},
	}
	data := mustEncode(t, c)
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if state.Digest(got.State) != state.Digest(p) {
		t.Fatal("digest differs")
	}
	if got.Coverage.Sources[0].Gen != 0 || got.Coverage.Sources[1].Gen != math.MaxInt64 {
		t.Fatalf("sources not sorted by gen: %+v", got.Coverage.Sources)
	}
}

func TestEncodeRefusesInconsistentParts(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	base := checkpointFor(rng, genState(rng, 50))
	cases := map[string]func(c *Checkpoint){
		"nil state":           func(c *Checkpoint) { c.State = nil },
		"offset != next":      func(c *Checkpoint) { c.Anchor.Offset++ },
		"log start":           func(c *Checkpoint) { c.Anchor.LogStart++ },
		"coverage anchor":     func(c *Checkpoint) { c.Coverage.Anchor-- },
		"bad stream id":       func(c *Checkpoint) { c.Anchor.StreamID = "Bad/ID" },
		"bad topic":           func(c *Checkpoint) { c.Anchor.Topic = "a b" },
		"negative partition":  func(c *Checkpoint) { c.Anchor.Partition = -1 },
		"object sha":          func(c *Checkpoint) { c.Anchor.ObjectSHA256 = "XYZ" },
		"sha without key":     func(c *Checkpoint) { c.Anchor.ObjectKey = "" },
		"object elsewhere":    func(c *Checkpoint) { c.Anchor.ObjectKey = layout.ObjectKey("other", 0, c.Anchor.Offset) },
		"object end":          func(c *Checkpoint) { c.Anchor.ObjectKey = layout.ObjectKey(c.Anchor.StreamID, 0, c.Anchor.Offset+1) },
		"binding key":         func(c *Checkpoint) { c.Binding.Key = "nope" },
		"binding other topic": func(c *Checkpoint) { c.Binding.Key = layout.BindingKey("other", c.Anchor.Partition) },
		"binding version":     func(c *Checkpoint) { c.Binding.Version = 0 },
		"duplicate source": func(c *Checkpoint) {
			c.Coverage.Sources = []SourceRef{{Gen: 1, ManifestSHA256: strings.Repeat("a", 64)}, {Gen: 1, ManifestSHA256: strings.Repeat("b", 64)}}
		},
		"six batches": func(c *Checkpoint) {
			c.State = c.State.Clone()
			c.State.Producers[1] = &state.Producer{ID: 1, TxnFirstOffset: -1, Batches: make([]state.BatchMeta, 6)}
		},
		"orphan txn": func(c *Checkpoint) {
			c.State = c.State.Clone()
			c.State.Ongoing[c.Anchor.Offset+5] = state.Txn{ProducerID: 424242, FirstOffset: c.Anchor.Offset + 5}
		},
	}
	for name, mutate := range cases {
		c := *base
		c.Coverage.Sources = append([]SourceRef(nil), base.Coverage.Sources...)
		mutate(&c)
		if _, _, err := Encode(&c); err == nil {
			t.Errorf("%s: encode accepted it", name)
		} else if !strings.HasPrefix(err.Error(), "nkc1: encode: ") {
			t.Errorf("%s: error %q lacks the nkc1: encode: prefix", name, err)
		}
	}
	if _, _, err := Encode(base); err != nil {
		t.Fatalf("the base checkpoint: %v", err)
	}
}

// isCorruptionError reports an error a caller would treat as a bad file.
func isCorruptionError(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrVersion)
}

// mustReject asserts that both paths refuse the bytes, without panicking.
func mustReject(t *testing.T, what string, bad []byte) {
	t.Helper()
	if _, err := Decode(bad); err == nil {
		t.Fatalf("%s: Decode accepted it", what)
	} else if !isCorruptionError(err) {
		t.Fatalf("%s: Decode error %v wraps neither ErrCorrupt nor ErrVersion", what, err)
	} else if !strings.HasPrefix(err.Error(), "nkc1: ") {
		t.Fatalf("%s: error %q lacks the nkc1: prefix", what, err)
	}
	if len(VerifyBytes(bad)) == 0 {
		t.Fatalf("%s: VerifyBytes found nothing", what)
	}
	r, err := Open(bad)
	if err != nil {
		if !isCorruptionError(err) {
			t.Fatalf("%s: Open error %v wraps neither ErrCorrupt nor ErrVersion", what, err)
		}
		return
	}
	if fs := r.Verify(); len(fs) == 0 {
		t.Fatalf("%s: Open+Verify found nothing", what)
	}
}

func TestCorruptionEveryByte(t *testing.T) {
	data := smallCheckpoint(t)
	t.Logf("checkpoint of %d bytes", len(data))
	for i := range data {
		for _, op := range []struct {
			name string
			f    func(byte) byte
		}{{"xor 0xff", func(b byte) byte { return b ^ 0xff }}, {"+1", func(b byte) byte { return b + 1 }}} {
			bad := bytes.Clone(data)
			bad[i] = op.f(bad[i])
			mustReject(t, "byte "+strconv.Itoa(i)+" "+op.name, bad)
		}
	}
}

func TestCorruptionEveryTruncation(t *testing.T) {
	data := smallCheckpoint(t)
	for n := 0; n < len(data); n++ {
		if _, err := Open(data[:n]); err == nil {
			t.Fatalf("Open accepted the first %d of %d bytes", n, len(data))
		}
		mustReject(t, "truncated to "+strconv.Itoa(n), data[:n])
		// A cut from the front (a bad ranged read) as well.
		mustReject(t, "front cut "+strconv.Itoa(n), data[len(data)-n:])
	}
	mustReject(t, "one byte appended", append(bytes.Clone(data), 0))
	mustReject(t, "copy appended", append(bytes.Clone(data), data...))
}

func TestSectionIsolation(t *testing.T) {
	data := smallCheckpoint(t)
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := r.Info(SectionProducers)
	bad := bytes.Clone(data)
	bad[info.Offset+info.StoredLen/2] ^= 0x01
	rb, err := Open(bad) // Open does not read section bytes
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := rb.Section(SectionEpochs); err != nil {
		t.Fatalf("epochs next to a corrupt producers section: %v", err)
	}
	_, err = rb.Section(SectionProducers)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Check != CheckCRC || ce.Section != "producers" || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt producers: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "nkc1: section producers: crc32c mismatch: stored 0x") {
		t.Fatalf("message %q", err)
	}
	fs := rb.Verify()
	if len(fs) != 1 || fs[0].Check != CheckCRC || fs[0].Section != "producers" {
		t.Fatalf("findings %v, want one crc finding on producers", fs)
	}
	if _, err := Decode(bad); err == nil || !strings.Contains(err.Error(), "section producers: crc32c mismatch") {
		t.Fatalf("decode: %v", err)
	}

	// Section(id) reads only its own bytes: wreck every other section.
	wreck := bytes.Clone(data)
	ep, _ := r.Info(SectionEpochs)
	for _, s := range r.Sections() {
		if s.ID == SectionEpochs {
			continue
		}
		for j := s.Offset; j < s.Offset+s.StoredLen; j++ {
			wreck[j] = 0xAA
		}
	}
	rw, err := Open(wreck)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := r.Section(SectionEpochs)
	got, err := rw.Section(SectionEpochs)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("epochs (%d bytes at %d) in a wrecked file: %v", ep.StoredLen, ep.Offset, err)
	}
	if len(rw.Verify()) != len(r.Sections())-1 {
		t.Fatalf("wrecked file: findings %v", rw.Verify())
	}
}

func TestSHA256CheckedAfterCRC(t *testing.T) {
	// Stored bytes whose CRC matches but whose raw digest does not: the
	// table's SHA-256 catches what the CRC cannot.
	secs := sectionsOf(t, smallCheckpoint(t))
	secs[4].stored = append([]byte(nil), secs[4].stored...)
	secs[4].stored[len(secs[4].stored)-1] ^= 1 // raw stays the original
	data := build(secs)
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Section(SectionEpochs)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Check != CheckSHA256 || !strings.Contains(err.Error(), "section epochs: sha256 mismatch") {
		t.Fatalf("got %v", err)
	}
}

func TestVersionAndMagic(t *testing.T) {
	data := smallCheckpoint(t)
	bad := bytes.Clone(data)
	fs := len(data) - int(binary.BigEndian.Uint32(data[len(data)-8:]))
	binary.BigEndian.PutUint16(bad[4:], 2)
	binary.BigEndian.PutUint16(bad[fs+4:], 2)
	_, err := Open(bad)
	if !errors.Is(err, ErrVersion) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "unknown format version 2") {
		t.Fatalf("version 2: %v", err)
	}
	if _, err := resolveVersion(0); !errors.Is(err, ErrVersion) {
		t.Fatalf("version 0: %v", err)
	}
	if _, err := Open([]byte("PK\x03\x04 not a checkpoint")); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not an NKC1 checkpoint") {
		t.Fatalf("zip: %v", err)
	}
	if _, err := Open(nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty: %v", err)
	}
}

func TestOpenFooterRangedRead(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	c := checkpointFor(rng, genState(rng, 3000))
	data := mustEncode(t, c)
	size := int64(len(data))
	tail := data[max(0, len(data)-SuggestedTailRead):]
	ft, err := OpenFooter(tail, size)
	if err != nil {
		t.Fatal(err)
	}
	if err := ft.VerifyRoot(); err != nil {
		t.Fatal(err)
	}
	info, ok := ft.Info(SectionAnchor)
	if !ok {
		t.Fatal("no anchor")
	}
	raw, err := ft.DecodeSection(SectionAnchor, data[info.Offset:info.Offset+info.StoredLen])
	if err != nil {
		t.Fatal(err)
	}
	a, err := decodeAnchor(raw)
	if err != nil || a != c.Anchor {
		t.Fatalf("anchor %+v, %v", a, err)
	}
	// Too short a tail: ErrShortTail and FooterLen say how much to read.
	short := data[len(data)-20:]
	if _, err := OpenFooter(short, size); !errors.Is(err, ErrShortTail) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("short tail: %v", err)
	}
	n, err := FooterLen(short)
	if err != nil || n != ft.FooterLen() {
		t.Fatalf("footer len %d, %v; want %d", n, err, ft.FooterLen())
	}
	if _, err := OpenFooter(data[len(data)-n:], size); err != nil {
		t.Fatalf("exact tail: %v", err)
	}
	// Wrong total size: the table no longer fits.
	if _, err := OpenFooter(tail, size+1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong size: %v", err)
	}
	// Wrong stored length handed to DecodeSection.
	if _, err := ft.DecodeSection(SectionAnchor, raw[:len(raw)-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short section: %v", err)
	}
	if _, err := ft.DecodeSection(42, nil); err == nil {
		t.Fatal("section 42 should not exist")
	}
}

func TestOptionalUnknownSection(t *testing.T) {
	data := smallCheckpoint(t)
	secs := sectionsOf(t, data)
	extra := rawSection{id: 12, flags: FlagOptional, stored: []byte("from the future"), raw: []byte("from the future")}
	withOpt := build(append(append([]rawSection(nil), secs...), extra))
	c, err := Decode(withOpt)
	if err != nil {
		t.Fatalf("optional unknown section: %v", err)
	}
	want, _ := Decode(data)
	if state.Digest(c.State) != state.Digest(want.State) {
		t.Fatal("digest differs")
	}
	r, _ := Open(withOpt)
	if fs := r.Verify(); len(fs) != 0 {
		t.Fatalf("findings: %v", fs)
	}
	v, err := r.Describe(12)
	if err != nil || v.(UnknownSectionView).RawLen != len("from the future") {
		t.Fatalf("describe: %v %v", v, err)
	}
	if SectionName(12) != "section-12" {
		t.Fatal(SectionName(12))
	}
	if id, ok := SectionByName("section-12"); !ok || id != 12 {
		t.Fatal("section-12 by name")
	}

	extra.flags = 0
	if _, err := Open(build(append(append([]rawSection(nil), secs...), extra))); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not flagged optional") {
		t.Fatalf("required unknown section: %v", err)
	}
	// Missing a required section.
	if _, err := Open(build(secs[:8])); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("8 sections: %v", err)
	}
	noCov := append(append([]rawSection(nil), secs[:7]...), secs[8], rawSection{id: 10, flags: FlagOptional})
	if _, err := Open(build(noCov)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "coverage is missing") {
		t.Fatalf("no coverage: %v", err)
	}
	// A required section flagged optional, an unknown codec.
	s2 := append([]rawSection(nil), secs...)
	s2[3].flags = FlagOptional
	if _, err := Open(build(s2)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("optional aborted: %v", err)
	}
	s3 := append([]rawSection(nil), secs...)
	s3[3].codec = 7
	if _, err := Open(build(s3)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "unknown codec 7") {
		t.Fatalf("codec 7: %v", err)
	}
}

func TestPayloadDecodeFailureIsNamed(t *testing.T) {
	// Valid digests over a payload that does not decode (a writer bug).
	secs := sectionsOf(t, smallCheckpoint(t))
	secs[4].raw = append(bytes.Clone(secs[4].raw), 0) // trailing byte in epochs
	secs[4].stored = secs[4].raw
	r, err := Open(build(secs))
	if err != nil {
		t.Fatal(err)
	}
	fs := r.Verify()
	if len(fs) != 1 || fs[0].Check != CheckDecode || fs[0].Section != "epochs" {
		t.Fatalf("findings %v", fs)
	}
	_, err = r.Checkpoint()
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, state.ErrMalformed) || !strings.HasPrefix(err.Error(), "nkc1: section epochs: payload does not decode") {
		t.Fatalf("got %v", err)
	}
	// Sections that decode alone but disagree: coverage for another range.
	secs = sectionsOf(t, smallCheckpoint(t))
	cov, _ := decodeCoverage(secs[7].raw)
	cov.Anchor++
	secs[7].raw, _ = encodeCoverage(&cov)
	secs[7].stored = secs[7].raw
	if _, err := Decode(build(secs)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "section coverage") {
		t.Fatalf("coverage mismatch: %v", err)
	}
}

func TestZstdBombRefused(t *testing.T) {
	secs := sectionsOf(t, smallCheckpoint(t))
	big := make([]byte, 64<<20) // 64 MiB of zeros: a few KiB compressed
	small := []byte("tiny raw claim, whose digest the table records")
	// Three bombs: a large declared window; a small window with a declared
	// content size; a small window and no content size (a streamed frame),
	// which only the output limit stops.
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	smallWin, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1024))
	var streamed bytes.Buffer
	sw, _ := zstd.NewWriter(&streamed, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1024))
	sw.Write(big)
	sw.Close()
	for i, bomb := range [][]byte{enc.EncodeAll(big, nil), smallWin.EncodeAll(big, nil), streamed.Bytes()} {
		secs[2] = rawSection{id: SectionTransactions, codec: CodecZstd, stored: bomb, raw: small}
		r, err := Open(build(secs))
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = r.Section(SectionTransactions)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bomb %d: %v", i, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Fatalf("decompressing bomb %d allocated %d bytes", i, alloc)
		}
		t.Logf("bomb %d of %d stored bytes refused: %v", i, len(bomb), err)
	}

	// A raw length over the cap is refused by Open already.
	secs[2].raw = nil
	data := build(secs)
	fs := len(data) - int(binary.BigEndian.Uint32(data[len(data)-8:]))
	binary.BigEndian.PutUint64(data[fs+headerSize+2*entrySize+20:], MaxRawBytes+1)
	if _, err := Open(data); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "cap") {
		t.Fatalf("raw over cap: %v", err)
	}
}

func TestCompressionRule(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	data := mustEncode(t, checkpointFor(rng, genState(rng, 2000)))
	r, _ := Open(data)
	for _, s := range r.Sections() {
		if s.RawLen < compressMinBytes && s.Codec != "none" {
			t.Errorf("%s: %d raw bytes compressed", s.Name, s.RawLen)
		}
		if s.Codec == "zstd" && s.StoredLen >= s.RawLen {
			t.Errorf("%s: zstd does not pay (%d >= %d)", s.Name, s.StoredLen, s.RawLen)
		}
	}
	if s, _ := r.Info(SectionProducers); s.Codec != "zstd" {
		t.Errorf("producers of a busy log should compress: %+v", s)
	}
	if s, _ := r.Info(SectionBindingRef); s.Codec != "none" {
		t.Errorf("binding ref should not compress: %+v", s)
	}
}

func TestDescribeEverySection(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	p := genState(rng, 1500)
	c := checkpointFor(rng, p)
	data := mustEncode(t, c)
	r, _ := Open(data)
	for _, s := range r.Sections() {
		v, err := r.Describe(s.ID)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("%s: json: %v", s.Name, err)
		}
	}
	v, _ := r.Describe(SectionProducers)
	if prs := v.([]state.Producer); len(prs) != len(p.Producers) {
		t.Fatalf("%d producers described, %d in state", len(prs), len(p.Producers))
	}
	v, _ = r.Describe(SectionIndexes)
	idx := v.([]IndexView)
	if len(idx) != len(p.Segments) {
		t.Fatalf("%d index lists, %d segments", len(idx), len(p.Segments))
	}
	for i, s := range p.Segments {
		if idx[i].Base != s.Base || len(idx[i].OffsetIndex) != len(s.OffsetIndex) || len(idx[i].TimeIndex) != len(s.TimeIndex) {
			t.Fatalf("segment %d index differs", i)
		}
	}
	v, _ = r.Describe(SectionAnchor)
	if v.(Anchor) != c.Anchor {
		t.Fatal("anchor differs")
	}
	a, err := r.Anchor()
	if err != nil || a != c.Anchor {
		t.Fatal("Reader.Anchor differs")
	}
	if _, err := DescribeSection(SectionIndexes, []byte{0, 0, 0, 9}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "section indexes") {
		t.Fatalf("bad indexes: %v", err)
	}
}

func TestSectionNames(t *testing.T) {
	for id := uint16(1); id <= numRequired; id++ {
		if got, ok := SectionByName(SectionName(id)); !ok || got != id {
			t.Errorf("%d: %q -> %d %v", id, SectionName(id), got, ok)
		}
	}
	for name, id := range map[string]uint16{"binding-ref": SectionBindingRef, "leader-epochs": SectionEpochs, "aborted-ranges": SectionAborted} {
		if got, ok := SectionByName(name); !ok || got != id {
			t.Errorf("%s -> %d", name, got)
		}
	}
	for _, bad := range []string{"", "section-0", "section-01", "nope", "section-70000"} {
		if _, ok := SectionByName(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestGolden pins the version-1 bytes of a reference checkpoint: a reader
// must always decode it (compatibility promise), and the writer must encode
// the decoded checkpoint back to the same bytes. Run
// `go test ./internal/nkc1 -run Golden -update` to regenerate it after an
// intended change (for example a zstd library upgrade that changes the
// compressed bytes: keep the old file as a second vector then, it must
// still decode).
func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "v1-small.nkc1")
	if *update {
		rng := rand.New(rand.NewSource(2024))
		data := mustEncode(t, checkpointFor(rng, genState(rng, 300)))
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	got, err := Decode(golden)
	if err != nil {
		t.Fatalf("the golden version-1 file no longer decodes: %v", err)
	}
	if len(got.State.Producers) == 0 || len(got.State.Segments) == 0 || len(got.Coverage.Sources) == 0 {
		t.Fatal("the golden file should exercise producers, segments and sources")
	}
	if again := mustEncode(t, got); !bytes.Equal(golden, again) {
		t.Fatalf("Encode no longer reproduces %s byte for byte (run with -update if intended)", path)
	}
}
