package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"
)

// fixCRC recomputes the CRC of a batch after a test has patched it, so
// that the structural checks behind the CRC are what fails.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], ComputeCRC(b))
	return b
}

func mustEncode(t testing.TB, s BatchSpec) []byte {
	t.Helper()
	b, err := EncodeBatch(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func oneRecordBatch(t testing.TB, key, value []byte) []byte {
	return mustEncode(t, NewBatchSpec(10, []Record{{Offset: 10, Timestamp: 1000, Key: key, Value: value}}))
}

func wantErr(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %v", what, sentinel)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %q does not wrap %v", what, err, sentinel)
	}
	if msg := err.Error(); msg != strings.ToLower(msg[:1])+msg[1:] || strings.HasSuffix(msg, ".") {
		t.Errorf("%s: error %q should start lowercase and not end with a period", what, msg)
	}
}

func TestHostileBatchLengths(t *testing.T) {
	good := oneRecordBatch(t, []byte("k"), []byte("value"))

	// Declared length beyond the bytes given.
	_, err := DecodeBatch(good[:len(good)-1], DefaultLimits())
	wantErr(t, "short batch", err, ErrTruncated)
	long := append(append([]byte(nil), good...), 0)
	_, err = DecodeBatch(long, DefaultLimits())
	wantErr(t, "batch with trailing byte", err, ErrCorrupt)
	grown := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(grown[offLength:], uint32(len(good)))
	_, err = DecodeBatch(grown, DefaultLimits())
	wantErr(t, "length over the bytes", err, ErrTruncated)

	// Length below the header.
	small := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(small[offLength:], 48)
	_, err = DecodeBatch(small, DefaultLimits())
	wantErr(t, "length 48", err, ErrCorrupt)
	_, err = ParseHeader(small)
	wantErr(t, "ParseHeader length 48", err, ErrCorrupt)

	// Records count beyond what the bytes can hold.
	many := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(many[offRecordsCount:], 1<<30)
	binary.BigEndian.PutUint32(many[offLastOffsetDelta:], 1<<30)
	_, err = DecodeBatch(fixCRC(many), DefaultLimits())
	wantErr(t, "huge records count", err, ErrTooLarge)
	some := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(some[offRecordsCount:], 3)
	binary.BigEndian.PutUint32(some[offLastOffsetDelta:], 5)
	_, err = DecodeBatch(fixCRC(some), DefaultLimits())
	wantErr(t, "records count 3 for one record's bytes", err, ErrCorrupt)
	neg := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(neg[offRecordsCount:], 0xffffffff)
	_, err = DecodeBatch(fixCRC(neg), DefaultLimits())
	wantErr(t, "negative count", err, ErrCorrupt)
	over := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(over[offRecordsCount:], 2)
	_, err = DecodeBatch(fixCRC(over), DefaultLimits())
	wantErr(t, "count above last offset delta + 1", err, ErrCorrupt)
	negDelta := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(negDelta[offLastOffsetDelta:], 0xfffffffe)
	_, err = ParseHeader(fixCRC(negDelta))
	wantErr(t, "negative last offset delta", err, ErrCorrupt)

	// Limits.
	_, err = DecodeBatch(good, Limits{MaxBatchBytes: len(good) - 1})
	wantErr(t, "MaxBatchBytes", err, ErrTooLarge)
	_, err = DecodeBatch(good, Limits{MaxDecodedBytes: 3})
	wantErr(t, "MaxDecodedBytes", err, ErrTooLarge)
	two := mustEncode(t, NewBatchSpec(0, []Record{{Offset: 0}, {Offset: 1}}))
	_, err = DecodeBatch(two, Limits{MaxRecords: 1})
	wantErr(t, "MaxRecords", err, ErrTooLarge)
}

func TestHostileHeader(t *testing.T) {
	good := oneRecordBatch(t, nil, []byte("v"))
	for _, magic := range []byte{0, 1, 3, 0xff} {
		b := append([]byte(nil), good...)
		b[offMagic] = magic
		_, err := DecodeBatch(b, DefaultLimits())
		wantErr(t, "bad magic", err, ErrCorrupt)
		_, err = ParseHeader(b[:20])
		wantErr(t, "bad magic in a short header", err, ErrCorrupt)
	}
	_, err := ParseHeader(good[:HeaderSize-1])
	wantErr(t, "60-byte header", err, ErrTruncated)

	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	_, err = DecodeBatch(bad, DefaultLimits())
	wantErr(t, "flipped byte", err, ErrCRC)
	wantErr(t, "flipped byte is corrupt", err, ErrCorrupt)
	err = VerifyCRC(bad)
	wantErr(t, "VerifyCRC", err, ErrCRC)
	// The partition leader epoch is outside the CRC.
	epoch := append([]byte(nil), good...)
	epoch[offLeaderEpoch] ^= 0x7f
	if err := VerifyCRC(epoch); err != nil {
		t.Errorf("leader epoch change broke the CRC: %v", err)
	}
	// An unknown codec id behind a valid CRC.
	codec := append([]byte(nil), good...)
	codec[offAttributes+1] |= 7
	_, err = DecodeBatch(fixCRC(codec), DefaultLimits())
	wantErr(t, "codec 7", err, ErrCorrupt)
}

// recordBatch builds an uncompressed batch whose records section is given
// raw, with a valid CRC.
func recordBatch(count int32, lastDelta int32, records []byte) []byte {
	h := BatchHeader{
		BaseOffset: 100, Length: int32(MinLength + len(records)), PartitionLeaderEpoch: -1, Magic: Magic,
		LastOffsetDelta: lastDelta, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordsCount: count,
	}
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	putHeader(b, &h)
	return fixCRC(append(b, records...))
}

// rawRecord encodes a record body from varint-level parts and prefixes the
// given length (or the true length when length < -100).
func rawRecord(length int32, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	if length < -100 {
		length = int32(len(body))
	}
	return append(appendVarint(nil, length), body...)
}

func vi(v int32) []byte { return appendVarint(nil, v) }

func TestHostileRecords(t *testing.T) {
	attr := []byte{0}
	ts := appendVarlong(nil, 0)
	good := rawRecord(-999, attr, ts, vi(0), vi(1), []byte("k"), vi(1), []byte("v"), vi(0))
	if _, err := DecodeBatch(recordBatch(1, 0, good), DefaultLimits()); err != nil {
		t.Fatalf("hand-built record: %v", err)
	}
	cases := []struct {
		name string
		rec  []byte
	}{
		{"length one short", rawRecord(int32(len(good))-2, attr, ts, vi(0), vi(1), []byte("k"), vi(1), []byte("v"), vi(0))},
		{"length one long", append(rawRecord(int32(len(good)), attr, ts, vi(0), vi(1), []byte("k"), vi(1), []byte("v"), vi(0)), 0)},
		{"negative record length", rawRecord(-5, attr, ts, vi(0), vi(-1), vi(-1), vi(0))},
		{"key length -2", rawRecord(-999, attr, ts, vi(0), vi(-2), vi(-1), vi(0))},
		{"key length over body", rawRecord(-999, attr, ts, vi(0), vi(100), vi(-1), vi(0))},
		{"value length -7", rawRecord(-999, attr, ts, vi(0), vi(-1), vi(-7), vi(0))},
		{"negative header count", rawRecord(-999, attr, ts, vi(0), vi(-1), vi(-1), vi(-1))},
		{"header count over body", rawRecord(-999, attr, ts, vi(0), vi(-1), vi(-1), vi(1000))},
		{"negative header key length", rawRecord(-999, attr, ts, vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1))},
		{"header value length -3", rawRecord(-999, attr, ts, vi(0), vi(-1), vi(-1), vi(1), vi(1), []byte("h"), vi(-3))},
		{"varint too long", rawRecord(-999, attr, ts, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, vi(-1), vi(-1), vi(0))},
		{"varlong too long", rawRecord(-999, attr, bytes.Repeat([]byte{0x80}, 11), vi(0), vi(-1), vi(-1), vi(0))},
		{"varint cut short", []byte{0x80}},
		{"negative offset delta", rawRecord(-999, attr, ts, vi(-1), vi(-1), vi(-1), vi(0))},
		{"offset delta past last", rawRecord(-999, attr, ts, vi(1), vi(-1), vi(-1), vi(0))},
		{"empty body", rawRecord(-999)},
	}
	for _, c := range cases {
		_, err := DecodeBatch(recordBatch(1, 0, c.rec), DefaultLimits())
		wantErr(t, c.name, err, ErrCorrupt)
	}
	// Two records with the same offset delta, and bytes after the last
	// record.
	_, err := DecodeBatch(recordBatch(2, 1, append(append([]byte(nil), good...), good...)), DefaultLimits())
	wantErr(t, "repeated offset delta", err, ErrCorrupt)
	_, err = DecodeBatch(recordBatch(1, 0, append(append([]byte(nil), good...), 0, 0, 0, 0, 0, 0, 0)), DefaultLimits())
	wantErr(t, "bytes after the last record", err, ErrCorrupt)
	// A count of 0 reads no records, whatever follows (Kafka's iterator).
	if b, err := DecodeBatch(recordBatch(0, 0, good), DefaultLimits()); err != nil || len(b.Records) != 0 {
		t.Errorf("count 0: %v", err)
	}
}

// payloadBatch wraps a records section (compressed with c) in a batch
// header claiming count records, with a valid CRC.
func payloadBatch(c Codec, count int32, payload []byte) []byte {
	h := BatchHeader{
		Length: int32(MinLength + len(payload)), PartitionLeaderEpoch: -1, Magic: Magic, Attributes: int16(c),
		LastOffsetDelta: count - 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordsCount: count,
	}
	b := make([]byte, HeaderSize, HeaderSize+len(payload))
	putHeader(b, &h)
	return fixCRC(append(b, payload...))
}

// bombStream is a compressed stream inflating to n MiB of zeros, built
// cheaply: gzip members, zstd frames and xerial chunks may repeat; LZ4 is
// compressed whole (Kafka reads one LZ4 frame).
func bombStream(t testing.TB, c Codec, n int) []byte {
	if c == CodecLZ4 {
		z, err := Compress(c, make([]byte, n<<20))
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	unit, err := Compress(c, make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(unit, n)
}

func allocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecompressionBombs: for every codec, a small batch that inflates
// past MaxDecodedBytes fails with ErrTooLarge, and decoding it allocates
// little more than the cap.
func TestDecompressionBombs(t *testing.T) {
	// Both decoders: DecodeBatch and the reusing BatchDecoder (its own zstd
	// path) must refuse alike, within the same allocation bounds.
	for name, decode := range map[string]func(b []byte, lim Limits) error{
		"DecodeBatch": func(b []byte, lim Limits) error { _, err := DecodeBatch(b, lim); return err },
		"BatchDecoder": func(b []byte, lim Limits) error {
			_, err := NewBatchDecoder(lim).Decode(b, false)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { testDecompressionBombs(t, decode) })
	}
}

func testDecompressionBombs(t *testing.T, decode func(b []byte, lim Limits) error) {
	const inflatedMiB = 8
	const capBytes = 1 << 20
	for c := CodecGzip; c <= CodecZstd; c++ {
		z := bombStream(t, c, inflatedMiB)
		ratio := 100
		if c == CodecSnappy {
			ratio = 18 // snappy inflates at most about 21:1
		}
		if len(z) > (inflatedMiB<<20)/ratio {
			t.Fatalf("%s: bomb is %d bytes, not a bomb", c, len(z))
		}
		// The stream is sound: it inflates fully under a fitting cap.
		if out, err := Decompress(c, z, inflatedMiB<<20); err != nil || len(out) != inflatedMiB<<20 {
			t.Fatalf("%s: bomb stream under a fitting cap: %d bytes, %v", c, len(out), err)
		}
		b := payloadBatch(c, 1000, z)
		var err error
		alloc := allocDuring(func() { err = decode(b, Limits{MaxDecodedBytes: capBytes}) })
		wantErr(t, c.String()+" bomb", err, ErrTooLarge)
		if alloc > 8*capBytes {
			t.Errorf("%s bomb: decoding allocated %d bytes for a %d-byte cap", c, alloc, capBytes)
		}
	}
	// The default caps stop a bomb too: a xerial stream inflating to 65
	// MiB is cut at 64 MiB, and a zstd frame declaring 65 MiB is refused
	// from its header.
	b := payloadBatch(CodecSnappy, 1000, bombStream(t, CodecSnappy, 65))
	var err error
	alloc := allocDuring(func() { err = decode(b, Limits{}) })
	wantErr(t, "snappy bomb over the default cap", err, ErrTooLarge)
	if alloc > 3*uint64(DefaultLimits().MaxDecodedBytes) {
		t.Errorf("snappy bomb: decoding allocated %d bytes under the default cap", alloc)
	}
	// Frame header: magic, single segment with an 8-byte content size.
	zf := binary.LittleEndian.AppendUint64([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}, 65<<20)
	zf = append(zf, 0x01, 0x00, 0x00) // an empty last raw block
	alloc = allocDuring(func() { err = decode(payloadBatch(CodecZstd, 1000, zf), DefaultLimits()) })
	wantErr(t, "zstd bomb over the default cap", err, ErrTooLarge)
	if alloc > 1<<20 {
		t.Errorf("zstd frame declaring 65 MiB: decoding allocated %d bytes", alloc)
	}
	// A real batch of one huge record: refused under a small cap, decoded
	// under a fitting one.
	s := NewBatchSpec(0, []Record{{Offset: 0, Timestamp: 1, Value: make([]byte, 4<<20)}})
	s.Codec = CodecZstd
	b = mustEncode(t, s)
	err = decode(b, Limits{MaxDecodedBytes: capBytes})
	wantErr(t, "4 MiB record under a 1 MiB cap", err, ErrTooLarge)
	if err := decode(b, Limits{MaxDecodedBytes: 5 << 20}); err != nil {
		t.Errorf("4 MiB record under a 5 MiB cap: %v", err)
	}
}

// TestCraftedStreams feeds streams that lie about their size.
func TestCraftedStreams(t *testing.T) {
	// A raw snappy block whose header claims 2^31 bytes.
	claim := appendUvarint(nil, 1<<31)
	_, err := Decompress(CodecSnappy, append(claim, 0, 0), 1<<20)
	wantErr(t, "snappy claim", err, ErrTooLarge)
	// A xerial chunk claiming 1 GiB.
	x := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	chunk := appendUvarint(nil, 1<<30)
	x = binary.BigEndian.AppendUint32(x, uint32(len(chunk)))
	x = append(x, chunk...)
	var alloc uint64
	alloc = allocDuring(func() { _, err = Decompress(CodecSnappy, x, 1<<20) })
	wantErr(t, "xerial claim", err, ErrTooLarge)
	if alloc > 4<<20 {
		t.Errorf("xerial claim allocated %d bytes", alloc)
	}
	// Xerial chunk length past the end, negative, and a bad version.
	y := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1)
	_, err = Decompress(CodecSnappy, y, 1<<20)
	wantErr(t, "xerial chunk past the end", err, ErrCorrupt)
	z := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff)
	_, err = Decompress(CodecSnappy, z, 1<<20)
	wantErr(t, "xerial negative chunk", err, ErrCorrupt)
	v0 := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 0, 0, 0, 0, 0)
	_, err = Decompress(CodecSnappy, v0, 1<<20)
	wantErr(t, "xerial version 0", err, ErrCorrupt)
	if out, err := Decompress(CodecSnappy, x[:16], 1<<20); err != nil || len(out) != 0 {
		t.Errorf("xerial header alone = %q, %v; want empty", out, err)
	}

	// A zstd frame header declaring a 2 GiB window (window descriptor
	// exponent 21): refused before allocating.
	zf := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa8, 0x01, 0x00, 0x00}
	alloc = allocDuring(func() { _, err = Decompress(CodecZstd, zf, 1<<20) })
	if err == nil || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTooLarge)) {
		t.Errorf("zstd 2 GiB window: %v", err)
	}
	if alloc > 16<<20 {
		t.Errorf("zstd 2 GiB window allocated %d bytes", alloc)
	}
	// A zstd frame declaring a 1 TiB content size.
	zc := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0, 1, 0, 0, 0x01, 0, 0}
	alloc = allocDuring(func() { _, err = Decompress(CodecZstd, zc, 1<<20) })
	if err == nil {
		t.Errorf("zstd 1 TiB content size decoded")
	}
	if alloc > 16<<20 {
		t.Errorf("zstd 1 TiB content allocated %d bytes", alloc)
	}

	for c := CodecGzip; c <= CodecZstd; c++ {
		for _, junk := range [][]byte{nil, {0}, []byte("not compressed at all")} {
			if (c == CodecSnappy && len(junk) == 1) || (c == CodecZstd && len(junk) == 0) {
				continue // a valid empty raw snappy block; no zstd frame at all
			}
			if _, err := Decompress(c, junk, 1<<20); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s on %q: %v, want ErrCorrupt", c, junk, err)
			}
		}
		good, _ := Compress(c, bytes.Repeat([]byte("abc"), 50_000))
		for _, cut := range []int{len(good) / 2, len(good) - 1} {
			if _, err := Decompress(c, good[:cut], 1<<20); err == nil {
				t.Errorf("%s: stream cut to %d of %d decoded", c, cut, len(good))
			}
		}
	}
}

func TestScannerStops(t *testing.T) {
	a := oneRecordBatch(t, []byte("a"), []byte("1"))
	b := mustEncode(t, NewBatchSpec(11, []Record{{Offset: 11, Key: []byte("b")}, {Offset: 12}}))
	log := append(append([]byte(nil), a...), b...)

	scan := func(data []byte, verify bool) (n int, pos int64, err error) {
		sc := NewScanner(data)
		if verify {
			sc = NewScannerVerify(data)
		}
		for sc.Next() {
			if !bytes.Equal(sc.Batch(), data[sc.Pos():sc.Pos()+int64(sc.Header().Size())]) {
				t.Fatal("Batch() is not the bytes at Pos()")
			}
			n++
		}
		if sc.Batch() != nil {
			t.Error("Batch() after the end")
		}
		return n, sc.Pos(), sc.Err()
	}

	if n, pos, err := scan(log, true); n != 2 || pos != int64(len(log)) || err != nil {
		t.Fatalf("clean log: %d batches, pos %d, %v", n, pos, err)
	}
	if n, pos, err := scan(nil, true); n != 0 || pos != 0 || err != nil {
		t.Fatalf("empty log: %d, %d, %v", n, pos, err)
	}
	// Torn last batch, at every cut.
	for cut := len(a) + 1; cut < len(log); cut++ {
		n, pos, err := scan(log[:cut], false)
		if n != 1 || pos != int64(len(a)) {
			t.Fatalf("cut %d: %d batches, pos %d", cut, n, pos)
		}
		if bytes.Count(log[len(a):cut], []byte{0}) == cut-len(a) {
			// The torn bytes so far are the zero high bytes of the
			// base offset: indistinguishable from a zero tail.
			wantErr(t, "torn batch", err, ErrZeroTail)
		} else {
			wantErr(t, "torn batch", err, ErrTruncated)
		}
	}
	// Preallocated zero tail, of any length.
	for _, z := range []int{1, 11, 12, 61, 4096} {
		n, pos, err := scan(append(append([]byte(nil), log...), make([]byte, z)...), true)
		if n != 2 || pos != int64(len(log)) {
			t.Fatalf("zero tail %d: %d batches, pos %d", z, n, pos)
		}
		wantErr(t, "zero tail", err, ErrZeroTail)
	}
	// Zero length but non-zero bytes after.
	junk := append(append([]byte(nil), log...), make([]byte, 20)...)
	junk[len(junk)-1] = 1
	_, _, err := scan(junk, false)
	wantErr(t, "zero length then junk", err, ErrCorrupt)
	// Garbage length, bad magic.
	g := append(append([]byte(nil), log...), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5)
	_, _, err = scan(g, false)
	wantErr(t, "length 5", err, ErrCorrupt)
	m := append([]byte(nil), log...)
	m[len(a)+offMagic] = 1
	if n, pos, err := scan(m, false); n != 1 || pos != int64(len(a)) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad magic: %d, %d, %v", n, pos, err)
	}
	// CRC: only the verifying scanner notices.
	c := append([]byte(nil), log...)
	c[len(c)-1] ^= 0xff
	if n, _, err := scan(c, false); n != 2 || err != nil {
		t.Fatalf("header scan of a bad CRC: %d, %v", n, err)
	}
	n, pos, err := scan(c, true)
	if n != 1 || pos != int64(len(a)) {
		t.Fatalf("verify scan of a bad CRC: %d, %d", n, pos)
	}
	wantErr(t, "bad crc", err, ErrCRC)
	wantErr(t, "bad crc", err, ErrCorrupt)
	if !strings.Contains(err.Error(), fmt.Sprintf("position %d", len(a))) {
		t.Errorf("error does not name the position: %v", err)
	}
}

func TestScannerAllocs(t *testing.T) {
	var log []byte
	for i := int64(0); i < 100; i++ {
		log = append(log, oneRecordBatchAt(t, i)...)
	}
	sc := NewScannerVerify(log)
	allocs := testing.AllocsPerRun(20, func() {
		sc.Reset(log)
		n := 0
		for sc.Next() {
			n++
			_ = sc.Header().LastOffset()
			_ = sc.Batch()
		}
		if n != 100 || sc.Err() != nil {
			t.Fatalf("%d batches, %v", n, sc.Err())
		}
	})
	if allocs != 0 {
		t.Errorf("scanning 100 batches allocated %.0f times", allocs)
	}
}

// A warm BatchDecoder decodes without allocating per batch, compressed
// (zstd) or not, headers with recurring keys included.
func TestBatchDecoderAllocs(t *testing.T) {
	var batches [][]byte
	for i := int64(0); i < 50; i++ {
		hs := []RecordHeader{{Key: "trace-id", Value: []byte("abc")}, {Key: fmt.Sprintf("h%d", i%3), Value: nil}}
		s := NewBatchSpec(i*3, []Record{{Offset: i * 3, Timestamp: 1, Key: []byte("k"), Value: []byte("value value value value"), Headers: hs}, {Offset: i*3 + 1, Timestamp: 2, Value: []byte("v")}, {Offset: i*3 + 2, Timestamp: 3, Key: []byte("k2")}})
		if i%2 == 0 {
			s.Codec = CodecZstd
		}
		batches = append(batches, mustEncode(t, s))
	}
	d := NewBatchDecoder(Limits{})
	names := []string{"h0", "h1", "h2"}
	decodeAll := func() {
		for i, b := range batches {
			got, err := d.Decode(b, false)
			if err != nil || len(got.Records) != 3 || got.Records[0].Offset != int64(i*3) || string(got.Records[0].Value) != "value value value value" ||
				len(got.Records[0].Headers) != 2 || got.Records[0].Headers[1].Key != names[i%3] {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
	}
	decodeAll()
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	if allocs := testing.AllocsPerRun(10, decodeAll); allocs != 0 {
		t.Errorf("decoding 50 batches allocated %.0f times", allocs)
	}
}

func oneRecordBatchAt(t testing.TB, off int64) []byte {
	return mustEncode(t, NewBatchSpec(off, []Record{{Offset: off, Timestamp: 1000 + off, Value: []byte("v")}}))
}

func TestTopicNames(t *testing.T) {
	for _, ok := range []string{"a", "A-b_c.d", "__consumer_offsets", strings.Repeat("x", 249), "...", "-", "0"} {
		if err := ValidateTopic(ok); err != nil {
			t.Errorf("ValidateTopic(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", strings.Repeat("x", 250), "a b", "a/b", "../x", "tópico", "a\x00", "a:b", "a\n"} {
		err := ValidateTopic(bad)
		wantErr(t, "ValidateTopic "+bad, err, ErrInvalidName)
	}
	good := map[string]struct {
		topic string
		p     int32
	}{
		"first_topic-0":          {"first_topic", 0},
		"__consumer_offsets-49":  {"__consumer_offsets", 49},
		"my-topic-with-dashes-7": {"my-topic-with-dashes", 7},
		"t-2147483647":           {"t", 2147483647},
		"topic--1":               {"topic-", 1},
	}
	for s, want := range good {
		topic, p, err := ParseTopicPartition(s)
		if err != nil || topic != want.topic || p != want.p {
			t.Errorf("ParseTopicPartition(%q) = %q, %d, %v", s, topic, p, err)
		}
	}
	for _, bad := range []string{"", "topic", "topic-", "-1", "topic-+1", "topic-01", "topic-2147483648", "topic-1-", "topic- 1",
		"topic-1.abc-delete", "topic-1.abc-future", "topic-1-stray", "../x-1", "a b-1", "..-1", ".-0"} {
		_, _, err := ParseTopicPartition(bad)
		wantErr(t, "ParseTopicPartition "+bad, err, ErrInvalidName)
	}
}

func TestHostileSnapshots(t *testing.T) {
	good := WriteSnapshot([]SnapshotEntry{{ProducerID: 1, Epoch: 2, LastSequence: 3, LastOffset: 4, OffsetDelta: 5, Timestamp: 6, CoordinatorEpoch: 7, CurrentTxnFirstOffset: -1}})
	if _, err := ReadSnapshot(good); err != nil {
		t.Fatal(err)
	}
	_, err := ReadSnapshot(good[:9])
	wantErr(t, "9 bytes", err, ErrTruncated)
	bad := append([]byte(nil), good...)
	bad[20] ^= 1
	_, err = ReadSnapshot(bad)
	wantErr(t, "flipped entry byte", err, ErrCRC)
	v := append([]byte(nil), good...)
	v[1] = 2
	_, err = ReadSnapshot(v)
	wantErr(t, "version 2", err, ErrCorrupt)
	fix := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[2:], crc32c(b[6:]))
		return b
	}
	short := fix(append([]byte(nil), good[:len(good)-1]...))
	_, err = ReadSnapshot(short)
	wantErr(t, "short entry", err, ErrTruncated)
	count := fix(func() []byte { b := append([]byte(nil), good...); binary.BigEndian.PutUint32(b[6:], 1<<30); return b }())
	_, err = ReadSnapshot(count)
	wantErr(t, "huge count", err, ErrTruncated)
	negc := fix(func() []byte {
		b := append([]byte(nil), good...)
		binary.BigEndian.PutUint32(b[6:], 0xffffffff)
		return b
	}())
	_, err = ReadSnapshot(negc)
	wantErr(t, "negative count", err, ErrCorrupt)
	extra := fix(append(append([]byte(nil), good...), 0))
	_, err = ReadSnapshot(extra)
	wantErr(t, "trailing byte", err, ErrCorrupt)
}

func TestEpochCheckpointParsing(t *testing.T) {
	ok := map[string][]EpochEntry{
		"":                              nil,
		"0\n":                           nil,
		"0\n0\n":                        nil,
		"0\n2\n0 0\n5 100\n":            {{0, 0}, {5, 100}},
		"0\r\n1\r\n3 7\r\n":             {{3, 7}},
		"0\n1\n3\t7":                    {{3, 7}},
		"0\n1\n3   7  \n":               {{3, 7}},
		"0\n1\n+3 -7\n":                 {{3, -7}},
		"0\n1\n2147483647 1\n":          {{2147483647, 1}},
		"0\n1\n1 9223372036854775807\n": {{1, 9223372036854775807}},
	}
	for in, want := range ok {
		got, err := ReadEpochCheckpoint([]byte(in))
		if err != nil || len(got) != len(want) {
			t.Errorf("ReadEpochCheckpoint(%q) = %v, %v", in, got, err)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("ReadEpochCheckpoint(%q) = %v", in, got)
			}
		}
	}
	for _, in := range []string{"1\n0\n", "x\n", "0\nx\n", "0\n-1\n", "0\n1\n", "0\n1\n1\n", "0\n1\n1 2 3\n", " 0\n", "0\n1\n 1 2\n",
		"0\n1\n1 2\n\n", "0\n1\n2147483648 0\n", "0\n1\n1 x\n", "0\n1\n0 0\n1 1\n", "0\n2000000000\n0 0\n", "0\n1\n" + strings.Repeat("1", 5000) + " 1\n"} {
		_, err := ReadEpochCheckpoint([]byte(in))
		if err == nil || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTruncated)) {
			t.Errorf("ReadEpochCheckpoint(%q): %v", in, err)
		}
	}
	e := []EpochEntry{{0, 0}, {3, 57}, {12, 9000000000}}
	if got, err := ReadEpochCheckpoint(WriteEpochCheckpoint(e)); err != nil || len(got) != 3 || got[2] != e[2] {
		t.Errorf("round trip: %v %v", got, err)
	}
	if string(WriteEpochCheckpoint(nil)) != "0\n0\n" {
		t.Errorf("empty checkpoint %q", WriteEpochCheckpoint(nil))
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
