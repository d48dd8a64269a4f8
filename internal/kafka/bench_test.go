package kafka

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"testing"
)

// benchLog is a synthetic 64 MiB log: batches of 20 records with 16-byte
// keys and ~500-byte values, one batch in four compressed with a rotating
// codec, as a mixed topic would hold.
var benchLog = sync.OnceValue(func() []byte {
	const target = 64 << 20
	log := make([]byte, 0, target+(1<<20))
	value := make([]byte, 500)
	for i := range value {
		value[i] = byte(i * 31)
	}
	off := int64(0)
	for n := 0; len(log) < target; n++ {
		recs := make([]Record, 20)
		for i := range recs {
			recs[i] = Record{Offset: off + int64(i), Timestamp: 1_700_000_000_000 + off, Key: []byte(fmt.Sprintf("key-%012d", off+int64(i))), Value: value}
		}
		s := NewBatchSpec(off, recs)
		if n%4 == 0 {
			s.Codec = Codec(1 + (n/4)%4)
		}
		b, err := EncodeBatch(s)
		if err != nil {
			panic(err)
		}
		log = append(log, b...)
		off += int64(len(recs))
	}
	return log
})

// BenchmarkCopy is the baseline: copying the log once.
func BenchmarkCopy(b *testing.B) {
	log := benchLog()
	dst := make([]byte, len(log))
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for b.Loop() {
		copy(dst, log)
	}
}

// BenchmarkScanHeaders walks every batch header of the log: no
// decompression, no allocation per batch.
func BenchmarkScanHeaders(b *testing.B) {
	log := benchLog()
	sc := NewScanner(log)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	b.ResetTimer()
	var last int64
	batches := 0
	for b.Loop() {
		sc.Reset(log)
		batches = 0
		for sc.Next() {
			last = sc.HeaderPtr().LastOffset()
			batches++
		}
		if sc.Err() != nil {
			b.Fatal(sc.Err())
		}
	}
	_ = last
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(batches), "ns/batch")
}

// BenchmarkScanHeadersVerify also checks every batch's CRC-32C.
func BenchmarkScanHeadersVerify(b *testing.B) {
	log := benchLog()
	sc := NewScannerVerify(log)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sc.Reset(log)
		for sc.Next() {
		}
		if sc.Err() != nil {
			b.Fatal(sc.Err())
		}
	}
}

// BenchmarkDecodeBatches fully decodes every batch of the log.
func BenchmarkDecodeBatches(b *testing.B) {
	log := benchLog()
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sc := NewScanner(log)
		for sc.Next() {
			if _, err := DecodeBatch(sc.Batch(), DefaultLimits()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLogScanner is BenchmarkScanHeadersVerify through LogScanner,
// which import reads every segment with (the format check per entry):
// on a v2-only log it must cost what the verifying Scanner costs.
func BenchmarkLogScanner(b *testing.B) { benchLogScanner(b, benchLog()) }

// benchLogScanner reads log with a LogScanner b.N times.
func benchLogScanner(b *testing.B, log []byte) {
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sc := NewLogScanner(log, DefaultLimits())
		for sc.Next() {
		}
		if sc.Err() != nil {
			b.Fatal(sc.Err())
		}
	}
}

// benchLegacyLog is a 16 MiB log of legacy message sets: magic 1 gzip
// wrappers of 20 inner messages (16-byte keys, ~500-byte values).
var benchLegacyLog = sync.OnceValue(func() []byte {
	const target = 16 << 20
	value := make([]byte, 500)
	for i := range value {
		value[i] = byte(i * 31)
	}
	var log []byte
	off := int64(0)
	for len(log) < target {
		var set []byte
		for i := range 20 {
			m := appendLegacyV1(nil, int64(i), 0, 1_700_000_000_000+off, []byte(fmt.Sprintf("key-%012d", off+int64(i))), value)
			set = append(set, m...)
		}
		z, err := Compress(CodecGzip, set)
		if err != nil {
			panic(err)
		}
		log = appendLegacyV1(log, off+19, int8(CodecGzip), 1_700_000_000_000+off, nil, z)
		off += 20
	}
	return log
})

// appendLegacyV1 appends one magic 1 entry (the benchmark's own writer).
func appendLegacyV1(dst []byte, off int64, attrs int8, ts int64, key, value []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(off))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = append(dst, 1, byte(attrs))
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	for _, f := range [][]byte{key, value} {
		if f == nil {
			dst = binary.BigEndian.AppendUint32(dst, 0xffffffff)
			continue
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(f)))
		dst = append(dst, f...)
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(dst)-start-12))
	binary.BigEndian.PutUint32(dst[start+12:], crc32.ChecksumIEEE(dst[start+16:]))
	return dst
}

// BenchmarkLogScannerLegacy reads and up-converts a legacy log.
func BenchmarkLogScannerLegacy(b *testing.B) { benchLogScanner(b, benchLegacyLog()) }
