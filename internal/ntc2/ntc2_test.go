package ntc2

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		seed  int64
		n     int
		shape rowShape
	}{
		{1, 0, defaultShape},
		{2, 1, defaultShape},
		{3, 50, defaultShape},
		{4, 5000, defaultShape},
		{5, 3000, rowShape{maxGap: 0, keySpace: 100, valueSize: 40}},                       // dense offsets, many duplicate keys
		{6, 400, rowShape{maxGap: 1000, keySpace: 1 << 30, bigEvery: 10, valueSize: 2000}}, // big values spanning blocks
		{7, 20000, rowShape{maxGap: 3, keySpace: 1 << 30, valueSize: 10}},
	} {
		rng := rand.New(rand.NewSource(tc.seed))
		base := rng.Int63n(1 << 40)
		rows := genRows(rng, tc.n, base, tc.shape)
		meta := testMeta(base, endAfter(rows, base))
		data, f := build(t, meta, rows)

		r, err := Open(data)
		if err != nil {
			t.Fatalf("seed %d: open: %v", tc.seed, err)
		}
		if fs := r.Verify(); len(fs) > 0 {
			t.Fatalf("seed %d: verify: %v", tc.seed, fs)
		}
		checkRows(t, rows, allRows(t, r))

		// The footer: what Finish returned is what Open reads, and it
		// agrees with a reference model of the rows.
		got := r.Footer()
		fj, _ := json.Marshal(f)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(fj, gj) {
			t.Fatalf("seed %d: Finish footer %s, Open footer %s", tc.seed, fj, gj)
		}
		keys, tombs := modelCounts(rows)
		if got.Rows != int64(len(rows)) || got.Keys != keys || got.Tombstones != tombs {
			t.Fatalf("seed %d: counts %d/%d/%d, model %d/%d/%d", tc.seed, got.Rows, got.Keys, got.Tombstones, len(rows), keys, tombs)
		}
		if got.Base != meta.Base || got.End != meta.End || len(got.Sources) != 3 || got.Sources[0].Gen != 3 || got.Sources[2].Gen != 12 || got.Sources[0].ManifestSHA256 != digestOf("gen-3") {
			t.Fatalf("seed %d: meta %+v", tc.seed, got.Meta)
		}
		wantFirst, wantLast := int64(-1), int64(-1)
		if len(rows) > 0 {
			wantFirst, wantLast = rows[0].Offset, rows[len(rows)-1].Offset
		}
		if got.FirstOffset != wantFirst || got.LastOffset != wantLast {
			t.Fatalf("seed %d: first/last %d/%d, want %d/%d", tc.seed, got.FirstOffset, got.LastOffset, wantFirst, wantLast)
		}

		// Blocks: block by block equals the rows; multi-row blocks stay
		// within the target; a zstd block pays for itself.
		var all []Row
		for i, b := range r.Blocks() {
			br, err := r.Block(i)
			if err != nil {
				t.Fatalf("seed %d: block %d: %v", tc.seed, i, err)
			}
			if b.Rows > 1 && b.RawLen > TargetBlockRaw {
				t.Fatalf("seed %d: block %d: %d rows in %d raw bytes", tc.seed, i, b.Rows, b.RawLen)
			}
			if b.Codec == "zstd" && !worthCompressing(int(b.RawLen), int(b.StoredLen)) {
				t.Fatalf("seed %d: block %d: zstd does not pay: %+v", tc.seed, i, b)
			}
			all = append(all, br...)
		}
		checkRows(t, rows, all)
		t.Logf("seed %d: %d rows, %d blocks, %d bytes", tc.seed, len(rows), got.Blocks, len(data))
	}
}

func TestNilVersusEmpty(t *testing.T) {
	rows := []Row{
		{Offset: 10, Key: []byte{}, Value: []byte{}, DeleteHorizonMs: -1},                                                                               // empty key, empty value
		{Offset: 11, Key: []byte("k"), Value: nil, DeleteHorizonMs: -1},                                                                                 // tombstone, no horizon
		{Offset: 15, Key: []byte("k2"), Value: nil, DeleteHorizonMs: 0},                                                                                 // tombstone, horizon 0
		{Offset: 16, Key: []byte("k3"), Value: []byte("x"), DeleteHorizonMs: -1, Headers: []kafka.RecordHeader{{Key: ""}, {Key: "e", Value: []byte{}}}}, // null and empty header values
		{Offset: 17, Key: []byte("k4"), Value: []byte("y"), DeleteHorizonMs: -1, Headers: []kafka.RecordHeader{}},                                       // no headers
		{Offset: math.MaxInt64 - 1, Timestamp: math.MinInt64, Key: []byte("max"), Value: []byte("z"), DeleteHorizonMs: -1},
	}
	data, _ := build(t, testMeta(10, math.MaxInt64), rows)
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	got := allRows(t, r)
	rows[4].Headers = nil // no headers reads back as nil
	checkRows(t, rows, got)
	if f := r.Footer(); f.Tombstones != 2 || f.Keys != 6 {
		t.Fatalf("footer %+v", f)
	}
}

func TestBigValuesSpanBlocks(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var rows []Row
	off := int64(0)
	for _, size := range []int{10, 200 << 10, 10, 10, TargetBlockRaw, 1 << 20, 3 << 20, 10} {
		v := make([]byte, size)
		rng.Read(v[:size/3])
		rows = append(rows, Row{Offset: off, Key: []byte("k" + strconv.Itoa(size)), Value: v, DeleteHorizonMs: -1})
		off += 3
	}
	data, _ := build(t, testMeta(0, off), rows)
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	if fs := r.Verify(); len(fs) > 0 {
		t.Fatal(fs)
	}
	checkRows(t, rows, allRows(t, r))
	bs := r.Blocks()
	// 10 | 200K | 10,10 | 64K | 1M | 3M | 10
	if len(bs) != 7 {
		t.Fatalf("%d blocks: %+v", len(bs), bs)
	}
	for _, b := range bs {
		if b.RawLen > TargetBlockRaw && b.Rows != 1 {
			t.Fatalf("a big row shares its block: %+v", b)
		}
	}
}

func TestDeterminism(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	rows := genRows(rng, 3000, 500, rowShape{maxGap: 9, keySpace: 2000, bigEvery: 200, valueSize: 300})
	meta := testMeta(500, endAfter(rows, 500))
	a, fa := build(t, meta, rows)
	b, fb := build(t, meta, rows)
	if !bytes.Equal(a, b) || fa.ContentSHA256 != fb.ContentSHA256 {
		t.Fatal("the same rows and meta gave different bytes")
	}
	// The order the caller lists sources in does not matter.
	m2 := meta
	m2.Sources = []Source{meta.Sources[2], meta.Sources[0], meta.Sources[1]}
	if c, _ := build(t, m2, rows); !bytes.Equal(a, c) {
		t.Fatal("source order changed the bytes")
	}
	// A refused row leaves no trace.
	w := NewWriter(meta)
	for i := range rows {
		if i == len(rows)/2 {
			if err := w.Add(Row{Offset: rows[i].Offset, Key: nil, DeleteHorizonMs: -1}); err == nil {
				t.Fatal("nil key accepted")
			}
			// Over the cap without holding it: 300 headers share 1 MiB.
			mib := make([]byte, 1<<20)
			huge := Row{Offset: rows[i].Offset, Key: []byte("h"), Value: mib, DeleteHorizonMs: -1}
			for range 300 {
				huge.Headers = append(huge.Headers, kafka.RecordHeader{Key: "x", Value: mib})
			}
			if err := w.Add(huge); err == nil || !strings.Contains(err.Error(), "cap") {
				t.Fatalf("a row over the cap: %v", err)
			}
		}
		if err := w.Add(rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	d, _, err := w.Finish()
	if err != nil || !bytes.Equal(a, d) {
		t.Fatalf("refused rows changed the bytes (%v)", err)
	}
	// Anything that changes gives other bytes and another digest.
	rows[7].Timestamp++
	if c, fc := build(t, meta, rows); bytes.Equal(a, c) || fc.ContentSHA256 == fa.ContentSHA256 {
		t.Fatal("a changed timestamp gave the same object")
	}
}

func TestWriterRefuses(t *testing.T) {
	good := testMeta(100, 200)
	for name, m := range map[string]Meta{
		"negative base":   {Base: -1, End: 5, Sources: good.Sources},
		"end below base":  {Base: 10, End: 9, Sources: good.Sources},
		"no source":       {Base: 0, End: 5},
		"negative gen":    {Base: 0, End: 5, Sources: []Source{{Gen: -1, ManifestSHA256: digestOf("x")}}},
		"repeated gen":    {Base: 0, End: 5, Sources: []Source{{Gen: 1, ManifestSHA256: digestOf("x")}, {Gen: 1, ManifestSHA256: digestOf("y")}}},
		"uppercase hex":   {Base: 0, End: 5, Sources: []Source{{Gen: 1, ManifestSHA256: strings.ToUpper(digestOf("x"))}}},
		"short digest":    {Base: 0, End: 5, Sources: []Source{{Gen: 1, ManifestSHA256: "abc"}}},
		"too many source": {Base: 0, End: 5, Sources: make([]Source, MaxSources+1)},
	} {
		w := NewWriter(m)
		if err := w.Add(Row{Offset: 1, Key: []byte("k"), DeleteHorizonMs: -1}); err == nil {
			t.Errorf("%s: add accepted", name)
		}
		if _, _, err := w.Finish(); err == nil || !strings.HasPrefix(err.Error(), "ntc2: meta: ") {
			t.Errorf("%s: finish: %v", name, err)
		}
	}

	w := NewWriter(good)
	if err := w.Add(Row{Offset: 150, Key: []byte("a"), DeleteHorizonMs: -1}); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]Row{
		"nil key":             {Offset: 160, DeleteHorizonMs: -1},
		"below base":          {Offset: 99, Key: []byte("k"), DeleteHorizonMs: -1},
		"at end":              {Offset: 200, Key: []byte("k"), DeleteHorizonMs: -1},
		"same offset":         {Offset: 150, Key: []byte("k"), DeleteHorizonMs: -1},
		"descending":          {Offset: 149, Key: []byte("k"), DeleteHorizonMs: -1},
		"timestamp type":      {Offset: 160, Key: []byte("k"), TimestampType: 2, DeleteHorizonMs: -1},
		"horizon with value":  {Offset: 160, Key: []byte("k"), Value: []byte("v"), DeleteHorizonMs: 5},
		"horizon below -1":    {Offset: 160, Key: []byte("k"), DeleteHorizonMs: -2},
		"zero value horizons": {Offset: 160, Key: []byte("k"), Value: []byte{}, DeleteHorizonMs: 0},
	} {
		if err := w.Add(r); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), "ntc2: add offset ") {
			t.Errorf("%s: error %q lacks the prefix", name, err)
		}
	}
	if err := w.SetEnd(150); err == nil {
		t.Error("SetEnd at the last row accepted")
	}
	if err := w.SetEnd(99); err == nil {
		t.Error("SetEnd below base accepted")
	}
	if err := w.SetEnd(151); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(Row{Offset: 151, Key: []byte("k"), DeleteHorizonMs: -1}); err == nil {
		t.Error("a row at the new end accepted")
	}
	data, f, err := w.Finish()
	if err != nil || f.End != 151 || f.Rows != 1 {
		t.Fatalf("finish: %v %+v", err, f)
	}
	if _, err := Open(data); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Finish(); err == nil {
		t.Error("second Finish accepted")
	}
	if err := w.Add(Row{Offset: 152, Key: []byte("k"), DeleteHorizonMs: -1}); err == nil {
		t.Error("Add after Finish accepted")
	}
}

func TestEmptyView(t *testing.T) {
	data, f := build(t, testMeta(40, 90), nil)
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	if fs := r.Verify(); len(fs) > 0 {
		t.Fatal(fs)
	}
	if f.Rows != 0 || f.Keys != 0 || f.Blocks != 0 || f.FirstOffset != -1 || f.LastOffset != -1 {
		t.Fatalf("footer %+v", f)
	}
	if i, err := r.SeekBlock(40); err != nil || i != 0 {
		t.Fatalf("seek: %d %v", i, err)
	}
	if n := len(allRows(t, r)); n != 0 {
		t.Fatalf("%d rows", n)
	}
	if len(data) != minObjectSize+2*sourceSize {
		t.Fatalf("empty view of %d bytes", len(data))
	}
	// An empty range is allowed too.
	if _, err := Open(func() []byte { d, _ := build(t, testMeta(5, 5), nil); return d }()); err != nil {
		t.Fatal(err)
	}
}

func TestWriterLen(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	rows := genRows(rng, 4000, 0, defaultShape)
	w := NewWriter(testMeta(0, endAfter(rows, 0)))
	prev := w.Len()
	if prev != headerSize {
		t.Fatalf("fresh writer Len %d", prev)
	}
	for i := range rows {
		if err := w.Add(rows[i]); err != nil {
			t.Fatal(err)
		}
		if w.Len() < prev {
			t.Fatal("Len went down")
		}
		prev = w.Len()
	}
	data, f, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if tail := len(data) - prev; tail < f.Blocks*entrySize+footerFixed || tail > TargetBlockRaw+f.Blocks*entrySize+footerFixed+3*sourceSize {
		t.Fatalf("Len %d before Finish, %d after", prev, len(data))
	}
}

func TestSeekBlock(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	rows := genRows(rng, 6000, 1000, rowShape{maxGap: 40, keySpace: 1 << 30, bigEvery: 300, valueSize: 60})
	end := endAfter(rows, 1000)
	data, _ := build(t, testMeta(1000, end), rows)
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	bs := r.Blocks()
	if len(bs) < 5 {
		t.Fatalf("only %d blocks", len(bs))
	}
	// Where each row lives.
	blockOf := map[int64]int{}
	for i := range bs {
		br, _ := r.Block(i)
		for _, row := range br {
			blockOf[row.Offset] = i
		}
	}
	j := 0 // the first row at or above off
	for off := int64(1000); off < end; off++ {
		for j < len(rows) && rows[j].Offset < off {
			j++
		}
		want := len(bs)
		if j < len(rows) {
			want = blockOf[rows[j].Offset]
		}
		got, err := r.SeekBlock(off)
		if err != nil || got != want {
			t.Fatalf("SeekBlock(%d) = %d, %v; want %d", off, got, err, want)
		}
		// No earlier block holds a row >= off.
		if got > 0 && bs[got-1].LastOffset >= off {
			t.Fatalf("SeekBlock(%d) = %d skips block %d", off, got, got-1)
		}
	}
	for _, off := range []int64{999, end, math.MinInt64, math.MaxInt64} {
		if _, err := r.SeekBlock(off); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("SeekBlock(%d): %v", off, err)
		}
	}
}

func TestDistinctKeysCountedHonestly(t *testing.T) {
	var rows []Row
	for i := 0; i < 1000; i++ {
		rows = append(rows, Row{Offset: int64(i), Key: []byte{byte(i % 37)}, Value: []byte("v"), DeleteHorizonMs: -1})
	}
	data, f := build(t, testMeta(0, 1000), rows)
	if f.Keys != 37 || f.Rows != 1000 {
		t.Fatalf("footer %+v", f)
	}
	if fs := VerifyBytes(data); len(fs) > 0 {
		t.Fatal(fs)
	}
	// A footer claiming another count is caught by Verify.
	bad := refooter(t, data, func(f *Footer, _ []entry) { f.Keys = 38 })
	fs := VerifyBytes(bad)
	if len(fs) != 1 || fs[0].Check != CheckCount || !strings.Contains(fs[0].Detail, "distinct keys") {
		t.Fatalf("findings %v", fs)
	}
}

// isCorruptionError reports an error a caller would treat as a bad object.
func isCorruptionError(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrVersion)
}

// mustReject asserts that the bytes are refused by Open or reported by
// Verify, and that Rows does not accept them silently either, without a
// panic.
func mustReject(t *testing.T, what string, bad []byte) {
	t.Helper()
	r, err := Open(bad)
	if err != nil {
		if !isCorruptionError(err) {
			t.Fatalf("%s: Open error %v wraps neither ErrCorrupt nor ErrVersion", what, err)
		}
		if !strings.HasPrefix(err.Error(), "ntc2: ") {
			t.Fatalf("%s: error %q lacks the ntc2: prefix", what, err)
		}
		if fs := VerifyBytes(bad); len(fs) != 1 {
			t.Fatalf("%s: VerifyBytes: %v", what, fs)
		}
		return
	}
	fs := r.Verify()
	if len(fs) == 0 {
		t.Fatalf("%s: Open and Verify accepted it", what)
	}
	for _, f := range fs {
		switch f.Check {
		case CheckStructure, CheckCRC, CheckSHA256, CheckDecode, CheckCount, CheckOrder:
		default:
			t.Fatalf("%s: finding with check %q", what, f.Check)
		}
	}
}

func TestCorruptionEveryByte(t *testing.T) {
	data := smallObject(t)
	t.Logf("object of %d bytes", len(data))
	for i := range data {
		for _, op := range []struct {
			name string
			f    func(byte) byte
		}{{"xor 0xff", func(b byte) byte { return b ^ 0xff }}, {"+1", func(b byte) byte { return b + 1 }}, {"xor 0x01", func(b byte) byte { return b ^ 1 }}} {
			bad := bytes.Clone(data)
			bad[i] = op.f(bad[i])
			mustReject(t, "byte "+strconv.Itoa(i)+" "+op.name, bad)
		}
	}
}

func TestCorruptionEveryTruncation(t *testing.T) {
	data := smallObject(t)
	for n := 0; n < len(data); n++ {
		if _, err := Open(data[:n]); err == nil {
			t.Fatalf("Open accepted the first %d of %d bytes", n, len(data))
		}
		mustReject(t, "truncated to "+strconv.Itoa(n), data[:n])
		mustReject(t, "front cut "+strconv.Itoa(n), data[len(data)-n:])
	}
	mustReject(t, "one byte appended", append(bytes.Clone(data), 0))
	mustReject(t, "copy appended", append(bytes.Clone(data), data...))
}

func TestVerifyNamesTheCheck(t *testing.T) {
	data := smallObject(t)
	r, _ := Open(data)
	f := r.footer

	// A block byte: the block's CRC, and Block/Rows fail the same way.
	bad := bytes.Clone(data)
	bad[r.entries[1].off+3] ^= 0x40
	fs := VerifyBytes(bad)
	if len(fs) != 2 || fs[0].Check != CheckCRC || fs[0].Block != 1 || fs[1].Check != CheckSHA256 {
		t.Fatalf("block byte: %v", fs)
	}
	rb, _ := Open(bad)
	if _, err := rb.Block(1); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "ntc2: block 1: crc32c mismatch") {
		t.Fatalf("Block: %v", err)
	}
	if err := rb.Rows(func(Row) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Rows: %v", err)
	}

	// Only the digest wrong.
	fs = VerifyBytes(setContentSHA(data, [32]byte{1}))
	if len(fs) != 1 || fs[0].Check != CheckSHA256 || fs[0].Block != -1 {
		t.Fatalf("digest: %v", fs)
	}

	// Counts the index contradicts: Open refuses with "count".
	for name, edit := range map[string]func(*Footer, []entry){
		"rows":  func(f *Footer, _ []entry) { f.Rows++ },
		"first": func(f *Footer, _ []entry) { f.FirstOffset++ },
		"last":  func(f *Footer, _ []entry) { f.LastOffset = -1 },
	} {
		_, err := Open(refooter(t, data, edit))
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Check != CheckCount {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Tombstones the rows contradict: Verify.
	fs = VerifyBytes(refooter(t, data, func(f *Footer, _ []entry) { f.Tombstones-- }))
	if len(fs) != 1 || fs[0].Check != CheckCount || !strings.Contains(fs[0].Detail, "tombstones") {
		t.Fatalf("tombstones: %v", fs)
	}
	// Offsets outside the range or out of order: "order".
	for name, edit := range map[string]func(*Footer, []entry){
		"range": func(f *Footer, _ []entry) { f.End = f.LastOffset },
		"base":  func(f *Footer, _ []entry) { f.Base = f.FirstOffset + 1 },
		"overlap": func(f *Footer, idx []entry) {
			idx[1].first = idx[0].last
		},
	} {
		_, err := Open(refooter(t, data, edit))
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Check != CheckOrder {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// An index entry disagreeing with its block's rows: "decode".
	for name, edit := range map[string]func(*Footer, []entry){
		"first":  func(f *Footer, idx []entry) { idx[1].first--; f.FirstOffset = idx[0].first },
		"max ts": func(_ *Footer, idx []entry) { idx[0].maxTS++ },
		"rows": func(f *Footer, idx []entry) {
			idx[1].rows--
			f.Rows--
			f.Keys--
		},
	} {
		fs := VerifyBytes(refooter(t, data, edit))
		if len(fs) != 1 || fs[0].Check != CheckDecode {
			t.Fatalf("%s: %v", name, fs)
		}
	}
	// Rows that do not decode (a bad attribute byte) behind a valid CRC.
	rows := []Row{{Offset: f.Base, Key: []byte("k"), DeleteHorizonMs: -1}}
	pb := plainBlock(f.Base, rows)
	pb.stored[1] = 0x80 // unknown attribute bit
	fs = VerifyBytes(assemble(Footer{Meta: f.Meta, Rows: 1, Keys: 1, Tombstones: 1, FirstOffset: f.Base, LastOffset: f.Base}, []rawBlock{pb}))
	if len(fs) != 1 || fs[0].Check != CheckDecode || fs[0].Block != 0 || !strings.Contains(fs[0].Detail, "attribute") {
		t.Fatalf("bad row: %v", fs)
	}
}

func TestVersionAndMagic(t *testing.T) {
	data := smallObject(t)
	// Version 2 in the header and its copy, every checksum fixed up.
	v2 := bytes.Clone(data)
	binary.BigEndian.PutUint16(v2[4:], 2)
	n := int(binary.BigEndian.Uint32(v2[len(v2)-8:]))
	foot := v2[len(v2)-n:]
	binary.BigEndian.PutUint16(foot[4:], 2)
	binary.BigEndian.PutUint32(foot[n-12:], crc32c(foot[:n-12]))
	for _, b := range [][]byte{v2, v2[len(v2)-n-2*entrySize:]} {
		var err error
		if len(b) == len(v2) {
			_, err = Open(b)
		} else {
			_, err = OpenTail(b, int64(len(v2)))
		}
		if !errors.Is(err, ErrVersion) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "unknown format version 2") {
			t.Fatalf("version 2: %v", err)
		}
	}
	for _, bad := range [][]byte{nil, []byte("NT"), []byte("NKC1 some other object"), []byte("NTC2")} {
		if _, err := Open(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	// An unknown codec, with every checksum right.
	bad := refooter(t, data, func(_ *Footer, idx []entry) { idx[1].codec = 2 })
	if _, err := Open(bad); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "unknown codec 2") {
		t.Fatalf("codec: %v", err)
	}
}

func TestOpenTailRangedRead(t *testing.T) {
	rng := rand.New(rand.NewSource(41))
	rows := genRows(rng, 3000, 0, defaultShape)
	data, _ := build(t, testMeta(0, endAfter(rows, 0)), rows)
	size := int64(len(data))
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	// Two rounds from a trailer-only read.
	need, err := TailLen(data[size-8:])
	if err != nil || need != r.footLen {
		t.Fatalf("TailLen(trailer) = %d, %v; footer is %d", need, err, r.footLen)
	}
	if _, err := OpenTail(data[size-int64(need):], size); !errors.Is(err, ErrShortTail) {
		t.Fatalf("footer without index: %v", err)
	}
	need2, err := TailLen(data[size-int64(need):])
	if err != nil || need2 != r.TailLen() {
		t.Fatalf("TailLen(footer) = %d, %v; want %d", need2, err, r.TailLen())
	}
	if need2 > SuggestedTailRead {
		t.Fatalf("tail of %d bytes", need2)
	}
	ix, err := OpenTail(data[size-SuggestedTailRead:], size)
	if err != nil {
		t.Fatal(err)
	}
	fj, _ := json.Marshal(ix.Footer())
	gj, _ := json.Marshal(r.Footer())
	if !bytes.Equal(fj, gj) {
		t.Fatal("OpenTail and Open disagree on the footer")
	}
	// Fetch one block by its range.
	off := rows[len(rows)/2].Offset
	i, err := ix.SeekBlock(off)
	if err != nil {
		t.Fatal(err)
	}
	b := ix.Blocks()[i]
	got, err := ix.DecodeBlock(i, data[b.Offset:b.Offset+b.StoredLen])
	if err != nil {
		t.Fatal(err)
	}
	want, _ := r.Block(i)
	checkRows(t, want, got)
	if _, err := ix.DecodeBlock(i, data[b.Offset:b.Offset+b.StoredLen-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short range: %v", err)
	}
	if _, err := ix.DecodeBlock(len(ix.Blocks()), nil); err == nil || errors.Is(err, ErrCorrupt) {
		t.Fatalf("block out of range: %v", err)
	}
	if _, err := OpenTail(data, size-1); err == nil {
		t.Fatal("a tail longer than the object accepted")
	}
}

func TestZstdBombRefused(t *testing.T) {
	big := make([]byte, 16<<20) // 16 MiB of zeros: a few KiB compressed
	rows := []Row{{Offset: 0, Key: []byte("k"), Value: []byte("tiny"), DeleteHorizonMs: -1}}
	pb := plainBlock(0, rows)
	meta := testMeta(0, 10)
	foot := Footer{Meta: meta, Rows: 1, Keys: 1, FirstOffset: 0, LastOffset: 0}
	// Three bombs: a large declared window; a small window with a declared
	// content size; a small window and no content size (a streamed frame),
	// which only the output cap stops.
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	smallWin, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1024))
	var streamed bytes.Buffer
	sw, _ := zstd.NewWriter(&streamed, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1024))
	sw.Write(big)
	sw.Close()
	for i, bomb := range [][]byte{enc.EncodeAll(big, nil), smallWin.EncodeAll(big, nil), streamed.Bytes()} {
		b := pb
		b.e.codec = CodecZstd
		b.stored = bomb
		r, err := Open(assemble(foot, []rawBlock{b}))
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = r.Block(0)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bomb %d: %v", i, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
			t.Fatalf("decompressing bomb %d allocated %d bytes", i, alloc)
		}
		t.Logf("bomb %d of %d stored bytes refused: %v", i, len(bomb), err)
	}

	// Raw lengths over the caps are refused by Open already.
	for name, raw := range map[string]uint32{"one row": MaxBlockRaw + 1} {
		b := pb
		b.e.codec, b.e.raw = CodecZstd, raw
		b.stored = enc.EncodeAll(big[:1000], nil)
		if _, err := Open(assemble(foot, []rawBlock{b})); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "cap") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	two := []Row{rows[0], {Offset: 1, Key: []byte("j"), DeleteHorizonMs: -1}}
	b := plainBlock(0, two)
	b.e.codec, b.e.raw = CodecZstd, MaxMultiRowBlockRaw+1
	b.stored = enc.EncodeAll(big[:1000], nil)
	f2 := foot
	f2.Rows, f2.Keys, f2.Tombstones, f2.LastOffset = 2, 2, 1, 1
	if _, err := Open(assemble(f2, []rawBlock{b})); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "cap") {
		t.Fatalf("two rows: %v", err)
	}
}

func TestHostileRowLengths(t *testing.T) {
	meta := testMeta(0, 100)
	foot := Footer{Meta: meta, Rows: 1, Keys: 1, FirstOffset: 0, LastOffset: 0}
	slices := [][]byte{
		{0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 'k'},                                        // key length far past the end
		{0, 0, 0, 1, 'k', 0xff, 0xff, 0xff, 0x7f, 0, 0},                                     // value length past the end
		{0, 2, 0, 1, 'k', 0xfe, 0xff, 0xff, 0x7f},                                           // a billion headers
		{0, 2, 0, 1, 'k', 1, 0, 0xff, 0x7f},                                                 // header value length past the end
		{0, 2, 0, 1, 'k', 0, 0},                                                             // trailing byte
		{0, 4, 0, 1, 'k', 0},                                                                // horizon without tombstone
		{0, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1, 'k', 0}, // varint overflow
	}
	for i, raw := range slices {
		b := rawBlock{e: entry{first: 0, last: 0, rows: 1, raw: uint32(len(raw)), codec: CodecNone}, stored: raw}
		fs := VerifyBytes(assemble(foot, []rawBlock{b}))
		if len(fs) == 0 || fs[0].Check != CheckDecode {
			t.Fatalf("case %d: %v", i, fs)
		}
	}
}

func TestCompressionRule(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	rows := genRows(rng, 4000, 0, rowShape{maxGap: 2, keySpace: 1 << 30, bigEvery: 50, valueSize: 200})
	data, _ := build(t, testMeta(0, endAfter(rows, 0)), rows)
	r, _ := Open(data)
	var zstdN, noneN int
	for i, b := range r.Blocks() {
		raw := make([]byte, 0, b.RawLen)
		br, _ := r.Block(i)
		c := rowCtx{first: true, base: 0}
		for j := range br {
			raw = appendRow(raw, &c, &br[j])
			c.first, c.prevOf, c.prevTS = false, br[j].Offset, br[j].Timestamp
		}
		want, codec, _ := appendStored(nil, raw)
		if codec != map[string]uint8{"none": CodecNone, "zstd": CodecZstd}[b.Codec] || int64(len(want)) != b.StoredLen {
			t.Fatalf("block %d: %+v, the rule says codec %d, %d bytes", i, b, codec, len(want))
		}
		if b.Codec == "zstd" {
			zstdN++
		} else {
			noneN++
		}
	}
	if zstdN == 0 || noneN == 0 {
		t.Fatalf("%d zstd and %d plain blocks: the data should mix", zstdN, noneN)
	}
}

// TestGolden pins the version-1 bytes of a reference view: a reader must
// always read it (compatibility promise), and the writer must rebuild the
// same bytes from its rows. Run `go test ./internal/ntc2 -run Golden
// -update` to regenerate it after an intended change (for example a zstd
// library upgrade that changes compressed bytes: keep the old file as a
// second vector then, it must still be read).
func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "v1-small.ntc2")
	if *update {
		data, _ := build(t, testMeta(1000, 1000+1<<20), goldenRows())
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	r, err := Open(golden)
	if err != nil {
		t.Fatalf("the golden version-1 file no longer opens: %v", err)
	}
	if fs := r.Verify(); len(fs) > 0 {
		t.Fatalf("the golden version-1 file no longer verifies: %v", fs)
	}
	rows := allRows(t, r)
	f := r.Footer()
	var codecs = map[string]bool{}
	for _, b := range r.Blocks() {
		codecs[b.Codec] = true
	}
	if f.Tombstones == 0 || f.Keys >= f.Rows || !codecs["zstd"] || !codecs["none"] || f.Blocks < 4 {
		t.Fatalf("the golden file should exercise tombstones, duplicate keys and both codecs: %+v %v", f, codecs)
	}
	again, _ := build(t, f.Meta, rows)
	if !bytes.Equal(golden, again) {
		t.Fatalf("the writer no longer reproduces %s byte for byte (run with -update if intended)", path)
	}
}

// TestGoldenOlderEncoder: an object written by the earlier encoder setting
// (zstd SpeedDefault) is still read, verifies, and holds the same rows as
// the current golden file.
func TestGoldenOlderEncoder(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "v1-small-speeddefault.ntc2"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(old)
	if err != nil {
		t.Fatalf("the SpeedDefault golden file no longer opens: %v", err)
	}
	if fs := r.Verify(); len(fs) > 0 {
		t.Fatalf("the SpeedDefault golden file no longer verifies: %v", fs)
	}
	cur, _ := build(t, r.Footer().Meta, goldenRows())
	if bytes.Equal(cur, old) {
		t.Fatal("the current encoder writes the old bytes: this vector is redundant")
	}
	rc, err := Open(cur)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(allRows(t, r)) != fmt.Sprint(allRows(t, rc)) {
		t.Fatal("the old and current golden files hold different rows")
	}
}

// goldenRows are the rows of the golden file: two blocks of random rows
// with low-entropy values (zstd), a row of zeros alone in its block (zstd),
// and a last tiny row (stored plain).
func goldenRows() []Row {
	rng := rand.New(rand.NewSource(2024))
	rows := genRows(rng, 1500, 1000, rowShape{maxGap: 3, keySpace: 800, valueSize: 100})
	for i := range rows {
		if len(rows[i].Value) > 0 {
			rows[i].Value = []byte(fmt.Sprintf(`{"user":%d,"plan":"basic","active":true}`, i%50))
		}
	}
	last := rows[len(rows)-1]
	rows = append(rows,
		Row{Offset: last.Offset + 5, Timestamp: last.Timestamp, Key: []byte("zeros"), Value: make([]byte, TargetBlockRaw), DeleteHorizonMs: -1},
		Row{Offset: last.Offset + 9, Timestamp: last.Timestamp + 1, Key: []byte("last"), DeleteHorizonMs: last.Timestamp + 86_400_000},
	)
	return rows
}

func TestResealKeepsValidObjects(t *testing.T) {
	data := smallObject(t)
	if !bytes.Equal(reseal(data), data) {
		t.Fatal("reseal changed a valid object")
	}
	bad := bytes.Clone(data)
	r, _ := Open(bad)
	bad[r.entries[0].off+5] ^= 1
	if fs := VerifyBytes(reseal(bad)); len(fs) == 0 || fs[0].Check != CheckDecode {
		t.Fatalf("a resealed corrupt block: %v", fs)
	}
}
