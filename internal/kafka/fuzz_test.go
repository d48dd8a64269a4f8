package kafka

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Fuzz targets. `go test` runs their seeds (every fixture file, plus
// batches of every codec); `go test -fuzz FuzzX` explores. None may panic.

var fuzzLimits = Limits{MaxBatchBytes: 1 << 20, MaxDecodedBytes: 4 << 20, MaxRecords: 1 << 16}

// seedBatches returns every fixture batch and one batch per codec and
// shape from our encoder.
func seedBatches(f *testing.F) [][]byte {
	var out [][]byte
	for _, path := range fixtureFiles(f, isLog) {
		sc := NewScanner(readFile(f, path))
		for sc.Next() {
			out = append(out, append([]byte(nil), sc.Batch()...))
		}
	}
	for c := CodecNone; c <= CodecZstd; c++ {
		s := NewBatchSpec(3, sampleRecords(3, 1_000, 7))
		s.Codec = c
		out = append(out, mustEncode(f, s))
	}
	m, _ := MarkerBatch(9, 1, 5, 0, true, 2, 77)
	empty := mustEncode(f, BatchSpec{BaseOffset: 4, LastOffsetDelta: 3, BaseTimestamp: -1, MaxTimestamp: 5, ProducerID: 1})
	return append(out, m, empty)
}

func FuzzDecodeBatch(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeBatch(t, data)
		// Again with the CRC made valid, so the fuzzer reaches the
		// structure behind it.
		if len(data) >= HeaderSize {
			fixed := append([]byte(nil), data...)
			fixCRC(fixed)
			checkDecodeBatch(t, fixed)
		}
	})
}

// fuzzDecoder is reused across inputs, as a compaction reuses it across
// batches: a previous batch must never leak into the next.
var fuzzDecoder = NewBatchDecoder(fuzzLimits)

func checkDecodeBatch(t *testing.T, data []byte) {
	b, err := DecodeBatch(data, fuzzLimits)
	// The reusing decoder accepts exactly what DecodeBatch accepts, with
	// the same records, and refuses with the same class of error.
	rb, rerr := fuzzDecoder.Decode(data, false)
	if (err == nil) != (rerr == nil) {
		t.Fatalf("DecodeBatch: %v; BatchDecoder: %v", err, rerr)
	}
	if err != nil && errors.Is(err, ErrTooLarge) != errors.Is(rerr, ErrTooLarge) {
		t.Fatalf("DecodeBatch: %v; BatchDecoder: %v", err, rerr)
	}
	if err == nil && (rb.Header != b.Header || !sameContent(rb.Records, b.Records)) {
		t.Fatal("BatchDecoder and DecodeBatch decoded different records")
	}
	if err != nil {
		if b != nil {
			t.Fatal("batch returned with an error")
		}
		return
	}
	if VerifyCRC(data) != nil {
		t.Fatal("decoded a batch with a bad CRC")
	}
	re, err := EncodeBatch(SpecOf(b))
	if err != nil {
		t.Fatalf("re-encode of a decoded batch: %v", err)
	}
	back, err := DecodeBatch(re, fuzzLimits)
	if err != nil {
		t.Fatalf("decode of the re-encoding: %v", err)
	}
	if !sameContent(back.Records, b.Records) {
		t.Fatal("records changed through a re-encoding")
	}
	h, bh := b.Header, back.Header
	if h.BaseOffset != bh.BaseOffset || h.LastOffsetDelta != bh.LastOffsetDelta || h.ProducerID != bh.ProducerID ||
		h.ProducerEpoch != bh.ProducerEpoch || h.BaseSequence != bh.BaseSequence || h.RecordsCount != bh.RecordsCount ||
		h.PartitionLeaderEpoch != bh.PartitionLeaderEpoch || h.Codec() != bh.Codec() || h.IsControl() != bh.IsControl() ||
		h.IsTransactional() != bh.IsTransactional() || h.TimestampType() != bh.TimestampType() {
		t.Fatalf("header changed through a re-encoding:\n%+v\n%+v", h, bh)
	}
}

// sameContent compares what a record means: offsets, timestamps, key,
// value and headers (deltas may be rebased).
func sameContent(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Offset != y.Offset || x.Timestamp != y.Timestamp || x.Attributes != y.Attributes ||
			!nullableEqual(x.Key, y.Key) || !nullableEqual(x.Value, y.Value) || len(x.Headers) != len(y.Headers) {
			return false
		}
		for j := range x.Headers {
			if x.Headers[j].Key != y.Headers[j].Key || !nullableEqual(x.Headers[j].Value, y.Headers[j].Value) {
				return false
			}
		}
	}
	return true
}

func FuzzScanner(f *testing.F) {
	for _, path := range fixtureFiles(f, isLog) {
		data := readFile(f, path)
		f.Add(data)
		f.Add(data[:len(data)*2/3])
		f.Add(append(append([]byte(nil), data...), make([]byte, 100)...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, verify := range []bool{false, true} {
			sc := NewScanner(data)
			if verify {
				sc = NewScannerVerify(data)
			}
			prevEnd := int64(0)
			for sc.Next() {
				if sc.Pos() != prevEnd {
					t.Fatalf("batch at %d, previous ended at %d", sc.Pos(), prevEnd)
				}
				raw := sc.Batch()
				h, err := ParseHeader(raw)
				if err != nil || h != sc.Header() || h.Size() != len(raw) {
					t.Fatalf("Batch() and Header() disagree: %v", err)
				}
				if verify && VerifyCRC(raw) != nil {
					t.Fatal("verifying scanner passed a bad CRC")
				}
				prevEnd += int64(len(raw))
			}
			if (sc.Err() == nil) != (sc.Pos() == int64(len(data))) {
				t.Fatalf("stopped at %d of %d with %v", sc.Pos(), len(data), sc.Err())
			}
			if sc.Pos() != prevEnd {
				t.Fatalf("Pos %d after the last batch ended at %d", sc.Pos(), prevEnd)
			}
		}
	})
}

func FuzzRecords(f *testing.F) {
	for _, b := range seedBatches(f) {
		h, err := ParseHeader(b)
		if err != nil || h.Codec() != CodecNone {
			continue
		}
		f.Add(b[HeaderSize:], h.RecordsCount, h.LastOffsetDelta, false)
	}
	f.Add([]byte{0x0e, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00}, int32(1), int32(0), true)
	f.Fuzz(func(t *testing.T, data []byte, count, lastDelta int32, logAppend bool) {
		h := BatchHeader{BaseOffset: 1000, BaseTimestamp: 5000, MaxTimestamp: 7000, LastOffsetDelta: lastDelta, RecordsCount: count}
		if logAppend {
			h.Attributes |= attrLogAppendTime
		}
		recs, err := DecodeRecords(h, data, fuzzLimits)
		if err != nil {
			return
		}
		if len(recs) != int(count) {
			t.Fatalf("%d records for count %d", len(recs), count)
		}
		var re []byte
		for i := range recs {
			if re, err = appendRecord(re, &recs[i], recs[i].TimestampDelta, recs[i].OffsetDelta); err != nil {
				t.Fatal(err)
			}
		}
		if len(re) > len(data) {
			t.Fatalf("canonical re-encoding is longer (%d) than the input (%d)", len(re), len(data))
		}
		back, err := DecodeRecords(h, re, fuzzLimits)
		if err != nil {
			t.Fatalf("decode of the re-encoding: %v", err)
		}
		if !recordsEqual(back, recs) {
			t.Fatal("records changed through a re-encoding")
		}
	})
}

func FuzzSnapshot(f *testing.F) {
	for _, path := range fixtureFiles(f, func(n string) bool { return strings.HasSuffix(n, ".snapshot") }) {
		f.Add(readFile(f, path))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ReadSnapshot(data)
		if err != nil {
			return
		}
		if got := WriteSnapshot(entries); !bytes.Equal(got, data) {
			t.Fatalf("snapshot did not round-trip:\n got %x\nwant %x", got, data)
		}
	})
}

func FuzzEpochCheckpoint(f *testing.F) {
	for _, path := range fixtureFiles(f, func(n string) bool { return n == "leader-epoch-checkpoint" }) {
		f.Add(readFile(f, path))
	}
	f.Add([]byte("0\r\n2\r\n1 5\r\n3\t90\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ReadEpochCheckpoint(data)
		if err != nil {
			return
		}
		back, err := ReadEpochCheckpoint(WriteEpochCheckpoint(entries))
		if err != nil || (len(entries) > 0 || len(back) > 0) && !reflect.DeepEqual(back, entries) {
			t.Fatalf("checkpoint did not round-trip: %v vs %v (%v)", entries, back, err)
		}
	})
}
