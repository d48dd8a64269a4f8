package ntc2

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

func digestOf(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// testMeta is a view [base, end) with a few sources (deliberately unsorted:
// the writer sorts them).
func testMeta(base, end int64) Meta {
	return Meta{Base: base, End: end, Sources: []Source{
		{Gen: 7, ManifestSHA256: digestOf("gen-7")},
		{Gen: 3, ManifestSHA256: digestOf("gen-3")},
		{Gen: 12, ManifestSHA256: digestOf("gen-12")},
	}}
}

// rowShape tunes genRows.
type rowShape struct {
	maxGap    int64 // offsets advance by 1 + rand(maxGap)
	keySpace  int   // keys drawn from this many (duplicates allowed when small)
	bigEvery  int   // one row in bigEvery gets a value of 64 KiB .. 400 KiB (0: never)
	valueSize int   // typical value size
}

var defaultShape = rowShape{maxGap: 5, keySpace: 1 << 30, bigEvery: 0, valueSize: 120}

// genRows makes n random rows from base: tombstones with and without a
// delete horizon, empty and nil values, headers with null and empty
// values, both timestamp types, timestamps that go backwards, empty keys,
// and (per shape) big values spanning blocks.
func genRows(rng *rand.Rand, n int, base int64, s rowShape) []Row {
	rows := make([]Row, 0, n)
	off := base + rng.Int63n(3)
	ts := int64(1_700_000_000_000) + rng.Int63n(1_000_000)
	for i := 0; i < n; i++ {
		r := Row{Offset: off, DeleteHorizonMs: -1}
		switch rng.Intn(20) {
		case 0:
			r.Timestamp = -1 // NO_TIMESTAMP
		case 1:
			r.Timestamp = ts - rng.Int63n(100_000) // backwards
		default:
			ts += rng.Int63n(1000)
			r.Timestamp = ts
		}
		if rng.Intn(4) == 0 {
			r.TimestampType = kafka.LogAppendTime
		}
		switch k := rng.Intn(s.keySpace); {
		case rng.Intn(50) == 0:
			r.Key = []byte{} // empty, not null
		default:
			r.Key = []byte(fmt.Sprintf("key-%08d", k))
		}
		switch v := rng.Intn(10); {
		case v == 0: // tombstone, no horizon yet
		case v == 1: // tombstone with a horizon
			r.DeleteHorizonMs = ts + 86_400_000 + rng.Int63n(1000)
		case v == 2:
			r.Value = []byte{} // empty, not null
		case s.bigEvery > 0 && rng.Intn(s.bigEvery) == 0:
			r.Value = make([]byte, 64<<10+rng.Intn(336<<10))
			rng.Read(r.Value[:len(r.Value)/2]) // half random, half zeros
		default:
			r.Value = make([]byte, rng.Intn(2*s.valueSize+1))
			for j := range r.Value {
				r.Value[j] = "abcdefgh{}\":, 0123"[rng.Intn(18)]
			}
		}
		for h := rng.Intn(4) - 1; h > 0; h-- {
			hd := kafka.RecordHeader{Key: fmt.Sprintf("h%d", rng.Intn(5))}
			switch rng.Intn(3) {
			case 0: // null value
			case 1:
				hd.Value = []byte{}
			default:
				hd.Value = []byte(fmt.Sprintf("v%d", rng.Intn(1000)))
			}
			r.Headers = append(r.Headers, hd)
		}
		rows = append(rows, r)
		off += 1 + rng.Int63n(s.maxGap+1)
	}
	return rows
}

// build writes rows with meta.
func build(t testing.TB, meta Meta, rows []Row) ([]byte, *Footer) {
	t.Helper()
	w := NewWriter(meta)
	for i := range rows {
		if err := w.Add(rows[i]); err != nil {
			t.Fatalf("add row %d: %v", i, err)
		}
	}
	data, f, err := w.Finish()
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	return data, f
}

// endAfter is an exclusive end a little past the last row.
func endAfter(rows []Row, base int64) int64 {
	if len(rows) == 0 {
		return base + 10
	}
	return rows[len(rows)-1].Offset + 7
}

// nilness distinguishes nil from empty.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func rowDiff(want, got *Row) string {
	switch {
	case want.Offset != got.Offset:
		return fmt.Sprintf("offset %d vs %d", want.Offset, got.Offset)
	case want.Timestamp != got.Timestamp || want.TimestampType != got.TimestampType:
		return fmt.Sprintf("timestamp %d/%v vs %d/%v", want.Timestamp, want.TimestampType, got.Timestamp, got.TimestampType)
	case want.DeleteHorizonMs != got.DeleteHorizonMs:
		return fmt.Sprintf("horizon %d vs %d", want.DeleteHorizonMs, got.DeleteHorizonMs)
	case !sameBytes(want.Key, got.Key):
		return fmt.Sprintf("key %q (nil %v) vs %q (nil %v)", want.Key, want.Key == nil, got.Key, got.Key == nil)
	case !sameBytes(want.Value, got.Value):
		return fmt.Sprintf("value of %d bytes (nil %v) vs %d (nil %v)", len(want.Value), want.Value == nil, len(got.Value), got.Value == nil)
	case len(want.Headers) != len(got.Headers):
		return fmt.Sprintf("%d headers vs %d", len(want.Headers), len(got.Headers))
	}
	for i := range want.Headers {
		w, g := want.Headers[i], got.Headers[i]
		if w.Key != g.Key || !sameBytes(w.Value, g.Value) {
			return fmt.Sprintf("header %d: %q=%q (nil %v) vs %q=%q (nil %v)", i, w.Key, w.Value, w.Value == nil, g.Key, g.Value, g.Value == nil)
		}
	}
	return ""
}

func allRows(t testing.TB, r *Reader) []Row {
	t.Helper()
	var got []Row
	if err := r.Rows(func(row Row) error { got = append(got, row); return nil }); err != nil {
		t.Fatalf("rows: %v", err)
	}
	return got
}

func checkRows(t testing.TB, want, got []Row) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if d := rowDiff(&want[i], &got[i]); d != "" {
			t.Fatalf("row %d: %s", i, d)
		}
	}
}

// modelFooter is the footer a reference model expects for rows.
func modelCounts(rows []Row) (keys, tombstones int64) {
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[string(r.Key)] {
			seen[string(r.Key)] = true
			keys++
		}
		if r.Value == nil {
			tombstones++
		}
	}
	return keys, tombstones
}

// smallObject is a small object of two blocks: a zstd block of repetitive
// rows (tombstones with and without a horizon, headers with null and empty
// values, both timestamp types) filled to exactly TargetBlockRaw, then an
// uncompressed block of incompressible rows.
func smallObject(t testing.TB) []byte {
	t.Helper()
	rng := rand.New(rand.NewSource(3))
	var rows []Row
	c := rowCtx{first: true, base: 100}
	off, raw := int64(100), 0
	for raw < TargetBlockRaw {
		r := Row{Offset: off, Timestamp: 1_700_000_000_000 + off, Key: []byte(fmt.Sprintf("k%04d", off%1000)), Value: bytes.Repeat([]byte("v"), 200), DeleteHorizonMs: -1}
		switch off % 7 {
		case 0:
			r.Value = nil
		case 1:
			r.Value, r.DeleteHorizonMs = nil, 1_700_086_400_000
		case 2:
			r.Headers = []kafka.RecordHeader{{Key: "a", Value: nil}, {Key: "b", Value: []byte{}}}
			r.TimestampType = kafka.LogAppendTime
		}
		if TargetBlockRaw-raw < 400 {
			// The last row fills the block exactly.
			r.Value, r.DeleteHorizonMs = []byte{}, -1
			for encodedLen(&c, &r) < TargetBlockRaw-raw {
				r.Value = append(r.Value, 'w')
			}
		}
		raw += encodedLen(&c, &r)
		c.first, c.prevOf, c.prevTS = false, r.Offset, r.Timestamp
		rows = append(rows, r)
		off += 1 + off%3
	}
	if raw != TargetBlockRaw {
		t.Fatalf("first block of %d raw bytes", raw)
	}
	for i := 0; i < 3; i++ {
		v := make([]byte, 40)
		rng.Read(v)
		rows = append(rows, Row{Offset: off, Timestamp: 5, Key: []byte{byte(i)}, Value: v, DeleteHorizonMs: -1})
		off += 2
	}
	data, _ := build(t, testMeta(100, off+3), rows)
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	bs := r.Blocks()
	if len(bs) != 2 || bs[0].Codec != "zstd" || bs[1].Codec != "none" {
		t.Fatalf("small object should be a zstd block then a plain one: %+v", bs)
	}
	return data
}

// rawBlock is a block for assemble: stored bytes as given (CRC over them).
type rawBlock struct {
	e      entry // first, last, maxTS, rows, raw, codec; off, stored and crc are filled in
	stored []byte
}

// plainBlock encodes rows as an uncompressed block for assemble.
func plainBlock(base int64, rows []Row) rawBlock {
	c := rowCtx{first: true, base: base}
	var raw []byte
	e := entry{first: rows[0].Offset, last: rows[len(rows)-1].Offset, maxTS: rows[0].Timestamp, rows: uint32(len(rows))}
	for i := range rows {
		raw = appendRow(raw, &c, &rows[i])
		c.first, c.prevOf, c.prevTS = false, rows[i].Offset, rows[i].Timestamp
		e.maxTS = max(e.maxTS, rows[i].Timestamp)
	}
	e.raw = uint32(len(raw))
	return rawBlock{e: e, stored: raw}
}

// assemble frames blocks by hand (for hostile inputs) with correct CRCs
// and content digest (sources sorted by gen).
func assemble(f Footer, blocks []rawBlock) []byte {
	f.Sources = slices.Clone(f.Sources)
	slices.SortFunc(f.Sources, func(a, b Source) int { return cmp.Compare(a.Gen, b.Gen) })
	data := appendHeader(nil, Version, 0)
	var idx []byte
	for _, b := range blocks {
		e := b.e
		e.off, e.stored, e.crc = uint64(len(data)), uint32(len(b.stored)), crc32c(b.stored)
		data = append(data, b.stored...)
		idx = e.appendTo(idx)
	}
	data = append(data, idx...)
	f.Blocks = len(blocks)
	return appendFooter(data, &f, crc32c(idx))
}

// refooter rewrites the footer of a valid object after edit changes its
// fields, keeping every checksum and the digest right.
func refooter(t testing.TB, data []byte, edit func(f *Footer, idx []entry)) []byte {
	t.Helper()
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	f := r.footer.clone()
	idx := append([]entry(nil), r.entries...)
	edit(f, idx)
	out := append([]byte(nil), data[:r.idxStart]...)
	start := len(out)
	for i := range idx {
		out = idx[i].appendTo(out)
	}
	f.Blocks = len(idx)
	return appendFooter(out, f, crc32c(out[start:]))
}

// setContentSHA overwrites the stored content digest and fixes the footer
// CRC, so that only the digest is wrong.
func setContentSHA(data []byte, sum [32]byte) []byte {
	out := bytes.Clone(data)
	n := int(binary.BigEndian.Uint32(out[len(out)-8:]))
	foot := out[len(out)-n:]
	shaAt := n - trailerSize - 4 - 32
	copy(foot[shaAt:], sum[:])
	binary.BigEndian.PutUint32(foot[n-trailerSize-4:], crc32c(foot[:n-trailerSize-4]))
	return out
}

// reseal recomputes every checksum of something shaped like an object (the
// block CRCs the index names, the index CRC, the content digest, the footer
// CRC), so that a fuzzer's mutations reach the decoders behind them. It
// returns data unchanged when the trailer or the counts make no sense.
func reseal(data []byte) []byte {
	n := len(data)
	if n < minObjectSize {
		return data
	}
	f := int(binary.BigEndian.Uint32(data[n-8:]))
	if f < footerFixed+sourceSize || f > n-headerSize || (f-footerFixed)%sourceSize != 0 {
		return data
	}
	out := bytes.Clone(data)
	foot := out[n-f:]
	idxLen := int64(binary.BigEndian.Uint32(foot[offBlocks:])) * entrySize
	if idxLen > int64(n-f-headerSize) {
		return data
	}
	idxStart := n - f - int(idxLen)
	idx := out[idxStart : n-f]
	for i := 0; i+entrySize <= len(idx); i += entrySize {
		e := parseEntry(idx[i:])
		if e.off <= uint64(idxStart) && uint64(e.stored) <= uint64(idxStart)-e.off {
			binary.BigEndian.PutUint32(idx[i+44:], crc32c(out[e.off:e.off+uint64(e.stored)]))
		}
	}
	binary.BigEndian.PutUint32(foot[offIndexCRC:], crc32c(idx))
	shaAt := f - trailerSize - 4 - 32
	sum := sha256.Sum256(out[:n-f+shaAt])
	copy(foot[shaAt:], sum[:])
	binary.BigEndian.PutUint32(foot[f-trailerSize-4:], crc32c(foot[:f-trailerSize-4]))
	return out
}

// Version is the format version.
func (ix *Index) Version() int { return ix.l.version }

// Size is the object's size in bytes.
func (ix *Index) Size() int64 { return ix.size }

// TailLen is the number of bytes at the end of the object that hold the
// block index and the footer.
func (ix *Index) TailLen() int { return int(ix.size - ix.idxStart) }

// SeekBlock returns the index of the first block that may hold rows at or
// above offset: the first block whose last offset is >= offset, or
// len(Blocks()) when no row of the view is. An offset outside the view's
// [Base, End) is an error wrapping ErrOutOfRange: this view does not say
// what is there. (It is not called Seek because go vet reserves that name
// for io.Seeker's signature.)
func (ix *Index) SeekBlock(offset int64) (int, error) {
	if offset < ix.footer.Base || offset >= ix.footer.End {
		return 0, fmt.Errorf("ntc2: seek %d: %w [%d, %d)", offset, ErrOutOfRange, ix.footer.Base, ix.footer.End)
	}
	return sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].last >= offset }), nil
}

func (f Finding) String() string {
	if f.Block >= 0 {
		return fmt.Sprintf("%s: block %d: %s", f.Check, f.Block, f.Detail)
	}
	return fmt.Sprintf("%s: %s", f.Check, f.Detail)
}

// VerifyBytes is Open then Verify; a failed Open is reported as a finding.
func VerifyBytes(data []byte) []Finding {
	r, err := Open(data)
	if err != nil {
		return []Finding{FindingOf(err)}
	}
	return r.Verify()
}

// NewWriter starts an object for meta. An invalid meta (Base < 0, End <
// Base, no source, more than MaxSources, a negative or repeated gen, a
// digest that is not 64 lowercase hex digits) is reported by every later
// call. The sources are stored ascending by gen.
func NewWriter(meta Meta) *Writer {
	return NewWriterWith(meta, WriterOptions{})
}
