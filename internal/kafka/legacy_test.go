package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Legacy message sets built with franz-go's kmsg.MessageV0 / MessageV1
// (an independent writer of the layout; the size and CRC-32 fields are
// filled here from the bytes it lays out) and compressed with kgo's
// compressor, read back with DecodeLegacyBatch and up-converted; the v2
// batch is parsed with kmsg.RecordBatch.

// kmsgV0 is one magic 0 entry.
func kmsgV0(off int64, attrs int8, key, value []byte) []byte {
	m := kmsg.MessageV0{Offset: off, Magic: 0, Attributes: attrs, Key: key, Value: value}
	return sealLegacy(m.AppendTo(nil))
}

// kmsgV1 is one magic 1 entry.
func kmsgV1(off int64, attrs int8, ts int64, key, value []byte) []byte {
	m := kmsg.MessageV1{Offset: off, Magic: 1, Attributes: attrs, Timestamp: ts, Key: key, Value: value}
	return sealLegacy(m.AppendTo(nil))
}

// sealLegacy fills an entry's size and CRC-32 (IEEE, over magic to end).
func sealLegacy(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

func kgoCompress(t testing.TB, c Codec, src []byte) []byte {
	t.Helper()
	comp, err := kgo.DefaultCompressor(kgoCodec(c))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := comp.Compress(new(bytes.Buffer), src)
	return append([]byte(nil), out...)
}

func mustLegacy(t testing.TB, b []byte) *LegacyBatch {
	t.Helper()
	lb, err := DecodeLegacyBatch(b, DefaultLimits())
	if err != nil {
		t.Fatalf("decode legacy entry: %v", err)
	}
	return lb
}

// upConverted up-converts and checks the v2 batch with kmsg.RecordBatch:
// what a v2 batch built from legacy records holds (AbstractLegacyRecordBatch:
// no producer, no partition leader epoch, not transactional or control).
func upConverted(t testing.TB, lb *LegacyBatch) *Batch {
	t.Helper()
	v2, err := lb.UpConvert()
	if err != nil {
		t.Fatal(err)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(v2); err != nil {
		t.Fatalf("kmsg.RecordBatch: %v", err)
	}
	if rb.Magic != 2 || rb.ProducerID != -1 || rb.ProducerEpoch != -1 || rb.FirstSequence != -1 || rb.PartitionLeaderEpoch != -1 ||
		rb.Attributes&0x37 != 0 || rb.FirstOffset != lb.BaseOffset || int64(rb.LastOffsetDelta) != lb.LastOffset-lb.BaseOffset || rb.MaxTimestamp != lb.MaxTimestamp {
		t.Fatalf("up-converted header %+v, legacy %+v", rb, lb)
	}
	if uint32(rb.CRC) != crc32.Checksum(v2[21:], castagnoli) {
		t.Fatal("up-converted batch CRC")
	}
	b, err := DecodeBatch(v2, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	again, _ := lb.UpConvert()
	if !bytes.Equal(again, v2) {
		t.Fatal("up-conversion is not deterministic")
	}
	return b
}

func TestLegacyUncompressed(t *testing.T) {
	// magic 0: no timestamp, null key; magic 1 CreateTime and LogAppendTime.
	for _, c := range []struct {
		entry   []byte
		off, ts int64
		tt      TimestampType
		key     []byte
		value   []byte
	}{
		{kmsgV0(7, 0, nil, []byte("v0")), 7, NoTimestamp, CreateTime, nil, []byte("v0")},
		{kmsgV1(8, 0, 1_500_000_000_000, []byte("k"), nil), 8, 1_500_000_000_000, CreateTime, []byte("k"), nil},
		{kmsgV1(9, 0x08, 1_600_000_000_000, []byte{}, []byte{}), 9, 1_600_000_000_000, LogAppendTime, []byte{}, []byte{}},
	} {
		lb := mustLegacy(t, c.entry)
		b := upConverted(t, lb)
		h := b.Header
		if h.BaseOffset != c.off || h.LastOffset() != c.off || h.MaxTimestamp != c.ts || h.TimestampType() != c.tt || len(b.Records) != 1 {
			t.Fatalf("entry at %d: header %+v", c.off, h)
		}
		r := b.Records[0]
		if r.Offset != c.off || r.Timestamp != c.ts || !bytes.Equal(r.Key, c.key) || (r.Key == nil) != (c.key == nil) || !bytes.Equal(r.Value, c.value) || (r.Value == nil) != (c.value == nil) || len(r.Headers) != 0 {
			t.Fatalf("entry at %d: record %+v", c.off, r)
		}
		// kmsg reads the entry the same way.
		if c.entry[16] == 1 {
			var m kmsg.MessageV1
			if err := m.ReadFrom(c.entry); err != nil || m.Timestamp != lb.Wrapper.Timestamp || !bytes.Equal(m.Value, lb.Wrapper.Value) || uint32(m.CRC) != lb.Wrapper.CRC {
				t.Fatalf("kmsg: %v %+v", err, m)
			}
		}
	}
}

// innerSet is a message set of inner messages (relative offsets for
// magic 1) with key "k<i>" and value "v<i>".
func innerSet(magic int8, offsets []int64, ts []int64) []byte {
	var set []byte
	for i, off := range offsets {
		k, v := []byte{'k', byte('0' + i)}, []byte{'v', byte('0' + i)}
		if magic == 0 {
			set = append(set, kmsgV0(off, 0, k, v)...)
		} else {
			set = append(set, kmsgV1(off, 0, ts[i], k, v)...)
		}
	}
	return set
}

// Compressed wrappers as DeepRecordsIterator reads them: magic 1 inner
// offsets are relative to base = wrapper offset - last inner offset (gaps
// kept, the batch's last offset the wrapper's); magic 0 inner offsets are
// absolute; under LogAppendTime every record has the wrapper's timestamp,
// under CreateTime its own; every codec Kafka's legacy format has.
func TestLegacyCompressed(t *testing.T) {
	for _, codec := range []Codec{CodecGzip, CodecSnappy, CodecLZ4} {
		// magic 1, CreateTime: inner 0, 1, 3 relative; wrapper at 103.
		set := innerSet(1, []int64{0, 1, 3}, []int64{1000, 1001, 1003})
		lb := mustLegacy(t, kmsgV1(103, int8(codec), 1003, nil, kgoCompress(t, codec, set)))
		b := upConverted(t, lb)
		if b.Header.BaseOffset != 100 || b.Header.LastOffset() != 103 || b.Header.TimestampType() != CreateTime || b.Header.MaxTimestamp != 1003 || len(b.Records) != 3 {
			t.Fatalf("%s v1: header %+v", codec, b.Header)
		}
		for i, want := range []struct{ off, ts int64 }{{100, 1000}, {101, 1001}, {103, 1003}} {
			if r := b.Records[i]; r.Offset != want.off || r.Timestamp != want.ts || string(r.Key) != string([]byte{'k', byte('0' + i)}) {
				t.Fatalf("%s v1 record %d: %+v", codec, i, r)
			}
		}
		// magic 1, LogAppendTime: the wrapper's timestamp for each record.
		lb = mustLegacy(t, kmsgV1(13, int8(codec)|0x08, 5000, nil, kgoCompress(t, codec, set)))
		b = upConverted(t, lb)
		if b.Header.TimestampType() != LogAppendTime || b.Header.MaxTimestamp != 5000 || b.Header.BaseOffset != 10 {
			t.Fatalf("%s v1 LogAppendTime: %+v", codec, b.Header)
		}
		for i, r := range b.Records {
			if r.Timestamp != 5000 || r.TimestampDelta != []int64{0, 1, 3}[i] {
				t.Fatalf("%s v1 LogAppendTime record %d: %+v (want the wrapper's time, own create-time delta)", codec, i, r)
			}
		}
		// magic 0: absolute inner offsets, no timestamps.
		lb = mustLegacy(t, kmsgV0(52, int8(codec), nil, kgoCompress(t, codec, innerSet(0, []int64{50, 52}, nil))))
		b = upConverted(t, lb)
		if b.Header.BaseOffset != 50 || b.Header.LastOffset() != 52 || b.Header.MaxTimestamp != NoTimestamp || b.Records[1].Offset != 52 || b.Records[0].Timestamp != NoTimestamp {
			t.Fatalf("%s v0: %+v %+v", codec, b.Header, b.Records)
		}
	}
	// A magic 1 wrapper at offset 0 (certain librdkafka versions) takes
	// the inner offsets as they are; its batch's last offset is still the
	// wrapper's, so an inner offset above it cannot be stored in a v2
	// batch.
	lb := mustLegacy(t, kmsgV1(0, int8(CodecGzip), 9, nil, kgoCompress(t, CodecGzip, innerSet(1, []int64{0}, []int64{9}))))
	if lb.BaseOffset != 0 || lb.LastOffset != 0 || len(lb.Records) != 1 {
		t.Fatalf("wrapper at 0: %+v", lb)
	}
	if _, err := DecodeLegacyBatch(kmsgV1(0, int8(CodecGzip), 9, nil, kgoCompress(t, CodecGzip, innerSet(1, []int64{0, 1}, []int64{8, 9}))), DefaultLimits()); !errors.Is(err, ErrLegacyUnreadable) {
		t.Fatalf("wrapper at 0 with inner offsets above it: %v", err)
	}
	// A magic 0 inner message in a magic 1 wrapper has no timestamp.
	mixed := append(kmsgV0(0, 0, nil, []byte("a")), kmsgV1(1, 0, 77, nil, []byte("b"))...)
	lb = mustLegacy(t, kmsgV1(11, int8(CodecGzip), 77, nil, kgoCompress(t, CodecGzip, mixed)))
	if lb.Records[0].Timestamp != NoTimestamp || lb.Records[1].Timestamp != 77 || lb.BaseOffset != 10 {
		t.Fatalf("mixed inner magics: %+v", lb.Records)
	}
}

// Kafka's magic 0 LZ4 writer put a wrong header checksum in the frame
// descriptor, which KafkaLZ4BlockInputStream ignores for magic 0 only.
func TestLegacyLZ4HeaderChecksum(t *testing.T) {
	z := kgoCompress(t, CodecLZ4, innerSet(0, []int64{5}, nil))
	if fixed, ok := fixLZ4HeaderChecksum(z); !ok || !bytes.Equal(fixed, z) {
		t.Fatal("fixLZ4HeaderChecksum changed a frame pierrec/lz4 wrote (xxh32 of the descriptor is wrong)")
	}
	bad := append([]byte(nil), z...)
	bad[6] ^= 0x5a // the checksum byte after FLG and BD
	if lb, err := DecodeLegacyBatch(kmsgV0(5, int8(CodecLZ4), nil, bad), DefaultLimits()); err != nil || lb.Records[0].Offset != 5 {
		t.Fatalf("magic 0 with a wrong LZ4 header checksum: %v", err)
	}
	if _, err := DecodeLegacyBatch(kmsgV1(0, int8(CodecLZ4), 1, nil, bad), DefaultLimits()); !errors.Is(err, ErrLegacyUnreadable) {
		t.Fatalf("magic 1 with a wrong LZ4 header checksum: %v", err)
	}
}

// What Kafka's recovery refuses (LogSegment.recover: CRC, size) is
// ErrCRC / ErrCorrupt / ErrTruncated; what passes the wrapper CRC but
// cannot be read is ErrLegacyUnreadable.
func TestLegacyErrors(t *testing.T) {
	ok := kmsgV1(3, 0, 1, []byte("k"), []byte("v"))
	crc := append([]byte(nil), ok...)
	crc[len(crc)-1] ^= 1
	small := append([]byte(nil), ok[:12]...)
	binary.BigEndian.PutUint32(small[8:], 13)
	small = append(small, make([]byte, 13)...)
	set := innerSet(1, []int64{0}, []int64{1})
	badInner := append([]byte(nil), set...)
	badInner[len(badInner)-1] ^= 1
	innerZ := kmsgV1(0, int8(CodecGzip), 1, nil, kgoCompress(t, CodecGzip, set))
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"crc", crc, ErrCRC},
		{"torn", ok[:len(ok)-2], ErrTruncated},
		{"size below 14", small, ErrCorrupt},
		{"key length", sealLegacy(append(append([]byte(nil), ok[:26]...), 0x7f, 0, 0, 0, 1, 2)), ErrLegacyUnreadable},
		{"null compressed value", kmsgV1(1, int8(CodecGzip), 1, nil, nil), ErrLegacyUnreadable},
		{"zstd wrapper", kmsgV1(1, int8(CodecZstd), 1, nil, []byte("x")), ErrLegacyUnreadable},
		{"not gzip", kmsgV1(1, int8(CodecGzip), 1, nil, []byte("not gzip")), ErrLegacyUnreadable},
		{"inner crc", kmsgV1(0, int8(CodecGzip), 1, nil, kgoCompress(t, CodecGzip, badInner)), ErrLegacyUnreadable},
		{"inner compressed", kmsgV1(0, int8(CodecGzip), 1, nil, kgoCompress(t, CodecGzip, innerZ)), ErrLegacyUnreadable},
		{"empty set", kmsgV1(0, int8(CodecGzip), 1, nil, kgoCompress(t, CodecGzip, []byte{1, 2})), ErrLegacyUnreadable},
		{"wrapper below last inner", kmsgV1(1, int8(CodecGzip), 1, nil, kgoCompress(t, CodecGzip, innerSet(1, []int64{0, 5}, []int64{1, 1}))), ErrLegacyUnreadable},
	} {
		_, err := DecodeLegacyBatch(c.b, DefaultLimits())
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.want != ErrLegacyUnreadable && errors.Is(err, ErrLegacyUnreadable) {
			t.Fatalf("%s: %v is not one Kafka's recovery keeps", c.name, err)
		}
	}
}

// The decompressed size is capped: a wrapper inflating beyond
// MaxDecodedBytes is ErrTooLarge, and what is allocated stays within
// about the cap.
func TestLegacyDecompressionBounded(t *testing.T) {
	big := innerSet(1, []int64{0}, []int64{1})
	big = append(big, make([]byte, 8<<20)...) // zeros compress to almost nothing
	w := kmsgV1(0, int8(CodecGzip), 1, nil, kgoCompress(t, CodecGzip, big))
	if len(w) > 64<<10 {
		t.Fatalf("test wrapper is %d bytes", len(w))
	}
	lim := Limits{MaxDecodedBytes: 1 << 20}
	var err error
	n := allocDuring(func() { _, err = DecodeLegacyBatch(w, lim) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the cap: %v", err)
	}
	if n > 4<<20 {
		t.Fatalf("a refused 8 MiB inflation allocated %d bytes, cap 1 MiB", n)
	}
}

// A segment may hold legacy entries and v2 batches (a topic whose message
// format was upgraded): LogScanner reads both, up-converting the former,
// and stops at a torn or zero tail as the v2 scanner does.
func TestLogScannerMixed(t *testing.T) {
	v2, err := EncodeBatch(NewBatchSpec(4, []Record{{Offset: 4, Timestamp: 5, Key: []byte("k"), Value: []byte("v")}}))
	if err != nil {
		t.Fatal(err)
	}
	seg := append(append(kmsgV0(0, 0, nil, []byte("a")), kmsgV1(3, int8(CodecSnappy), 4, nil, kgoCompress(t, CodecSnappy, innerSet(1, []int64{0, 1, 2}, []int64{2, 3, 4})))...), v2...)
	full := len(seg)
	seg = append(seg, make([]byte, 100)...)
	sc := NewLogScanner(seg, DefaultLimits())
	var got []string
	for sc.Next() {
		h := sc.HeaderPtr()
		got = append(got, string(rune('0'+h.BaseOffset))+"-"+string(rune('0'+h.LastOffset()))+map[bool]string{true: "L", false: "2"}[sc.Legacy()])
		if !sc.Legacy() && !bytes.Equal(sc.Batch(), v2) {
			t.Fatal("a v2 batch is passed through as it is")
		}
	}
	if !errors.Is(sc.Err(), ErrZeroTail) || sc.Pos() != int64(full) {
		t.Fatalf("stopped at %d with %v, want the zero tail at %d", sc.Pos(), sc.Err(), full)
	}
	if want := []string{"0-0L", "1-3L", "4-42"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("entries %v, want %v", got, want)
	}
	torn := kmsgV1(0, 0, 1, nil, []byte("abc"))
	sc = NewLogScanner(append(kmsgV0(0, 0, nil, nil), torn[:len(torn)-1]...), DefaultLimits())
	for sc.Next() {
	}
	if !errors.Is(sc.Err(), ErrTruncated) || sc.Pos() != 26 {
		t.Fatalf("torn legacy tail: %v at %d", sc.Err(), sc.Pos())
	}
}

// FuzzLogScanner: no input panics, and every entry LogScanner gives is a
// valid RecordBatch v2 (its CRC, records that decode) within the input,
// entries back to back; a legacy entry's v2 batch has no producer and no
// leader epoch and holds exactly the records DecodeLegacyBatch reads
// from the entry, up-converted again to the same bytes.
func FuzzLogScanner(f *testing.F) {
	v2, _ := EncodeBatch(NewBatchSpec(4, []Record{{Offset: 4, Timestamp: 5, Key: []byte("k"), Value: []byte("v")}}))
	set := innerSet(1, []int64{0, 1, 3}, []int64{1000, 1001, 1003})
	f.Add(kmsgV0(7, 0, nil, []byte("v0")))
	f.Add(kmsgV1(9, 0x08, 1_600_000_000_000, []byte{}, []byte{}))
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4} {
		f.Add(append(kmsgV1(103, int8(c), 1003, nil, kgoCompress(f, c, set)), v2...))
		f.Add(kmsgV0(52, int8(c), nil, kgoCompress(f, c, innerSet(0, []int64{50, 52}, nil))))
	}
	f.Add(append(kmsgV0(0, 0, nil, []byte("a")), make([]byte, 20)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLogScanner(t, data)
		// Again with every legacy CRC made valid, so the fuzzer reaches
		// the message behind it.
		fixed := append([]byte(nil), data...)
		for p := 0; p+headerUpToMagic <= len(fixed); {
			size := int(int32(binary.BigEndian.Uint32(fixed[p+8:])))
			if size < legacyOverheadV0 || p+12+size > len(fixed) || !IsLegacyEntry(fixed[p:]) {
				break
			}
			binary.BigEndian.PutUint32(fixed[p+12:], crc32.ChecksumIEEE(fixed[p+16:p+12+size]))
			p += 12 + size
		}
		checkLogScanner(t, fixed)
	})
}

func checkLogScanner(t *testing.T, data []byte) {
	sc := NewLogScanner(data, fuzzLimits)
	at := 0
	for sc.Next() {
		if int(sc.Pos()) != at || sc.EntrySize() <= 0 || at+sc.EntrySize() > len(data) {
			t.Fatalf("entry at %d of %d bytes, expected at %d in %d", sc.Pos(), sc.EntrySize(), at, len(data))
		}
		b, err := DecodeBatch(sc.Batch(), fuzzLimits)
		if err != nil {
			t.Fatalf("entry at %d: its v2 batch does not decode: %v", at, err)
		}
		h := b.Header
		if h != *sc.HeaderPtr() || h.LastOffset() < h.BaseOffset {
			t.Fatalf("entry at %d: header %+v, scanner %+v", at, h, *sc.HeaderPtr())
		}
		if sc.Legacy() {
			if h.ProducerID != NoProducerID || h.ProducerEpoch != NoProducerEpoch || h.BaseSequence != NoSequence || h.PartitionLeaderEpoch != NoPartitionLeaderEpoch || h.IsControl() || h.IsTransactional() || h.Codec() != CodecNone {
				t.Fatalf("legacy entry at %d: v2 header %+v", at, h)
			}
			lb, err := DecodeLegacyBatch(data[at:at+sc.EntrySize()], fuzzLimits)
			if err != nil {
				t.Fatalf("legacy entry at %d: %v", at, err)
			}
			if len(lb.Records) != len(b.Records) || h.BaseOffset != lb.BaseOffset || h.LastOffset() != lb.LastOffset || h.MaxTimestamp != lb.MaxTimestamp {
				t.Fatalf("legacy entry at %d: %d records [%d, %d] max %d, v2 %d records %+v", at, len(lb.Records), lb.BaseOffset, lb.LastOffset, lb.MaxTimestamp, len(b.Records), h)
			}
			for i, r := range b.Records {
				w := lb.Records[i]
				if r.Offset != w.Offset || r.Timestamp != w.Timestamp || !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) {
					t.Fatalf("legacy entry at %d record %d: v2 %+v, legacy %+v", at, i, r, w)
				}
			}
			again, err := lb.UpConvert()
			if err != nil || !bytes.Equal(again, sc.Batch()) {
				t.Fatalf("legacy entry at %d: up-converting again gives other bytes (%v)", at, err)
			}
		} else if !bytes.Equal(sc.Batch(), data[at:at+sc.EntrySize()]) {
			t.Fatalf("v2 entry at %d is not its own bytes", at)
		}
		at += sc.EntrySize()
	}
	if sc.Err() == nil && at != len(data) {
		t.Fatalf("clean end at %d of %d bytes", at, len(data))
	}
	if sc.Err() != nil && int(sc.Pos()) != at {
		t.Fatalf("stopped at %d, after the last entry at %d", sc.Pos(), at)
	}
}
