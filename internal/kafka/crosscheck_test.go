package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cross-checks against franz-go: its kmsg types parse and build the batch
// and record layouts, and its kgo compressor/decompressor are an
// independent implementation of Kafka's codec stream formats.

// sampleRecords covers null and empty keys and values, headers with null
// and empty values, negative and large deltas, and offset gaps (as left by
// compaction).
func sampleRecords(base, ts int64, n int) []Record {
	recs := make([]Record, 0, n)
	off := base
	for i := 0; i < n; i++ {
		r := Record{Offset: off, Timestamp: ts + int64(i*37) - 5}
		switch i % 5 {
		case 0:
			r.Key, r.Value = []byte(fmt.Sprintf("key-%d", i)), bytes.Repeat([]byte{byte(i)}, i*13)
		case 1:
			r.Key, r.Value = nil, []byte("value without key")
		case 2:
			r.Key, r.Value = []byte("tombstone"), nil
		case 3:
			r.Key, r.Value = []byte{}, []byte{}
			r.Headers = []RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "", Value: nil}, {Key: "h3", Value: []byte{}}}
		case 4:
			r.Key, r.Value = []byte("k"), bytes.Repeat([]byte("abcdefgh"), 1000+i)
			r.Headers = []RecordHeader{{Key: "trace", Value: []byte{1, 2, 3}}}
		}
		recs = append(recs, r)
		off += int64(1 + i%3)
	}
	return recs
}

var franzCodec = map[Codec]kgo.CompressionCodecType{
	CodecNone: kgo.CodecNone, CodecGzip: kgo.CodecGzip, CodecSnappy: kgo.CodecSnappy,
	CodecLZ4: kgo.CodecLz4, CodecZstd: kgo.CodecZstd,
}

// parseFranzRecords parses a records section with kmsg.Record, one
// length-prefixed record after another.
func parseFranzRecords(t *testing.T, data []byte, n int) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	for i := 0; i < n; i++ {
		var r kmsg.Record
		if err := r.ReadFrom(data); err != nil {
			t.Fatalf("kmsg record %d: %v", i, err)
		}
		used := varintSize(r.Length) + int(r.Length)
		if used > len(data) {
			t.Fatalf("kmsg record %d: length %d over %d bytes", i, r.Length, len(data))
		}
		data = data[used:]
		out = append(out, r)
	}
	if len(data) != 0 {
		t.Fatalf("%d bytes after %d kmsg records", len(data), n)
	}
	return out
}

func TestEncodeParsesWithFranz(t *testing.T) {
	dec := kgo.DefaultDecompressor()
	for c := CodecNone; c <= CodecZstd; c++ {
		for _, tt := range []TimestampType{CreateTime, LogAppendTime} {
			recs := sampleRecords(1000, 1_700_000_000_000, 40)
			spec := BatchSpec{
				BaseOffset: 1000, PartitionLeaderEpoch: 7, Codec: c, TimestampType: tt, Transactional: true,
				ProducerID: 4242, ProducerEpoch: 3, BaseSequence: 2147483640, DeleteHorizonMs: -1,
				Records: recs,
			}
			if tt == LogAppendTime {
				spec.MaxTimestamp = 1_800_000_000_000
				for i := range spec.Records {
					spec.Records[i].TimestampDelta = int64(i)
				}
			}
			raw, err := EncodeBatch(spec)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			var fb kmsg.RecordBatch
			if err := fb.ReadFrom(raw); err != nil {
				t.Fatalf("%s: kmsg: %v", c, err)
			}
			if int(fb.Length)+12 != len(raw) || fb.Magic != 2 || fb.FirstOffset != 1000 || fb.PartitionLeaderEpoch != 7 ||
				fb.ProducerID != 4242 || fb.ProducerEpoch != 3 || fb.FirstSequence != 2147483640 || fb.NumRecords != 40 ||
				fb.Attributes != int16(c)|0x10|int16(tt)<<3 {
				t.Fatalf("%s: kmsg header %+v", c, fb)
			}
			if crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(fb.CRC) != crc {
				t.Fatalf("%s: crc %x vs %x", c, uint32(fb.CRC), crc)
			}
			data, err := dec.Decompress(fb.Records, franzCodec[c])
			if err != nil {
				t.Fatalf("%s: franz decompress: %v", c, err)
			}
			frs := parseFranzRecords(t, data, 40)
			last := recs[len(recs)-1]
			if int64(fb.LastOffsetDelta) != last.Offset-1000 {
				t.Fatalf("%s: last offset delta %d", c, fb.LastOffsetDelta)
			}
			if tt == CreateTime && (fb.FirstTimestamp != recs[0].Timestamp || fb.MaxTimestamp != maxTS(recs)) {
				t.Fatalf("%s: timestamps %d %d", c, fb.FirstTimestamp, fb.MaxTimestamp)
			}
			for i, fr := range frs {
				r := recs[i]
				wantDelta := r.Timestamp - recs[0].Timestamp
				if tt == LogAppendTime {
					wantDelta = int64(i)
				}
				if int64(fr.OffsetDelta) != r.Offset-1000 || fr.TimestampDelta64 != wantDelta ||
					!nullableEqual(fr.Key, r.Key) || !nullableEqual(fr.Value, r.Value) || len(fr.Headers) != len(r.Headers) {
					t.Fatalf("%s: record %d differs: %+v", c, i, fr)
				}
				for j, h := range fr.Headers {
					if h.Key != r.Headers[j].Key || !nullableEqual(h.Value, r.Headers[j].Value) {
						t.Fatalf("%s: record %d header %d differs", c, i, j)
					}
				}
			}
			// And our own decoder agrees with itself.
			b, err := DecodeBatch(raw, DefaultLimits())
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if tt == CreateTime && !recordsEqual(b.Records, withDeltas(recs, 1000, recs[0].Timestamp)) {
				t.Fatalf("%s: records differ after round trip", c)
			}
		}
	}
}

func maxTS(recs []Record) int64 {
	m := int64(-1)
	for _, r := range recs {
		m = max(m, r.Timestamp)
	}
	return m
}

func withDeltas(recs []Record, base, baseTS int64) []Record {
	out := append([]Record(nil), recs...)
	for i := range out {
		out[i].OffsetDelta = int32(out[i].Offset - base)
		out[i].TimestampDelta = out[i].Timestamp - baseTS
	}
	return out
}

// TestFranzBuiltBatchesDecode builds batches with kmsg and kgo's
// compressor (and other encoder settings than ours: raw snappy blocks,
// LZ4 frames with 4 MiB blocks and content checksums, std gzip) and decodes
// them here.
func TestFranzBuiltBatchesDecode(t *testing.T) {
	for c := CodecNone; c <= CodecZstd; c++ {
		recs := sampleRecords(0, 1_600_000_000_000, 25)
		var raw []byte
		for i, r := range recs {
			fr := kmsg.Record{
				TimestampDelta64: r.Timestamp - recs[0].Timestamp,
				OffsetDelta:      int32(r.Offset),
				Key:              r.Key,
				Value:            r.Value,
			}
			for _, h := range r.Headers {
				fr.Headers = append(fr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
			}
			body := fr.AppendTo(nil)
			// AppendTo writes Length as given: compute it from the body.
			fr.Length = int32(len(body) - 1)
			body = fr.AppendTo(nil)
			if int(fr.Length) != len(body)-varintSize(fr.Length) {
				t.Fatalf("record %d: length bookkeeping", i)
			}
			raw = append(raw, body...)
		}
		payloads := map[string][]byte{}
		if c == CodecNone {
			payloads["raw"] = raw
		} else {
			comp, err := kgo.DefaultCompressor(kgoCodec(c))
			if err != nil {
				t.Fatal(err)
			}
			z, used := comp.Compress(new(bytes.Buffer), raw)
			if used != franzCodec[c] {
				t.Fatalf("%s: kgo used codec %d", c, used)
			}
			payloads["kgo"] = append([]byte(nil), z...)
			if c == CodecSnappy {
				payloads["raw-block"] = snappyRawBlock(raw)
			}
		}
		for how, payload := range payloads {
			fb := kmsg.RecordBatch{
				FirstOffset: 500, PartitionLeaderEpoch: 2, Magic: 2, Attributes: int16(c),
				LastOffsetDelta: int32(recs[len(recs)-1].Offset), FirstTimestamp: recs[0].Timestamp, MaxTimestamp: maxTS(recs),
				ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: payload,
			}
			fb.Length = int32(49 + len(payload))
			b := fb.AppendTo(nil)
			binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
			got, err := DecodeBatch(b, DefaultLimits())
			if err != nil {
				t.Fatalf("%s/%s: %v", c, how, err)
			}
			want := make([]Record, len(recs))
			for i, r := range recs {
				want[i] = r
				want[i].Offset = 500 + r.Offset
				want[i].OffsetDelta = int32(r.Offset)
				want[i].TimestampDelta = r.Timestamp - recs[0].Timestamp
			}
			if !recordsEqual(got.Records, want) {
				t.Fatalf("%s/%s: records differ", c, how)
			}
			// Re-encoding an uncompressed franz batch gives its bytes back.
			if c == CodecNone {
				re, err := EncodeBatch(SpecOf(got))
				if err != nil || !bytes.Equal(re, b) {
					t.Fatalf("re-encode of franz batch differs: %v", err)
				}
			}
		}
	}
}

func kgoCodec(c Codec) kgo.CompressionCodec {
	switch c {
	case CodecGzip:
		return kgo.GzipCompression()
	case CodecSnappy:
		return kgo.SnappyCompression()
	case CodecLZ4:
		return kgo.Lz4Compression()
	case CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// TestCompressAgainstFranz checks both directions for every codec on
// sizes around the xerial and LZ4 block boundaries.
func TestCompressAgainstFranz(t *testing.T) {
	dec := kgo.DefaultDecompressor()
	for c := CodecGzip; c <= CodecZstd; c++ {
		comp, err := kgo.DefaultCompressor(kgoCodec(c))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 100, 32 << 10, 32<<10 + 1, 64 << 10, 200_001} {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(i*7 + i/100)
			}
			ours, err := Compress(c, src)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Compress(c, src)
			if !bytes.Equal(ours, again) {
				t.Errorf("%s: compression not deterministic", c)
			}
			// For no input SnappyOutputStream writes its 16-byte header
			// alone, which xerial reads back as empty; franz only
			// recognises the framing when more than the header follows.
			if !(c == CodecSnappy && n == 0) {
				back, err := dec.Decompress(ours, franzCodec[c])
				if err != nil || !bytes.Equal(back, src) {
					t.Errorf("%s/%d: franz cannot read ours: %v", c, n, err)
				}
			}
			if back, err := Decompress(c, ours, 1<<20); err != nil || !bytes.Equal(back, src) {
				t.Errorf("%s/%d: we cannot read ours: %v", c, n, err)
			}
			theirs, _ := comp.Compress(new(bytes.Buffer), src)
			got, err := Decompress(c, theirs, 1<<20)
			if err != nil || !bytes.Equal(got, src) {
				t.Errorf("%s/%d: we cannot read franz's: %v", c, n, err)
			}
		}
	}
}

// snappyRawBlock is a raw snappy block without xerial framing, which
// xerial's reader (and so Kafka) also accepts.
func snappyRawBlock(src []byte) []byte { return snappy.Encode(nil, src) }
