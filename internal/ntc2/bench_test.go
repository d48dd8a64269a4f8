package ntc2

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

const benchRows = 50_000

// benchData is a realistic compacted view: 16-byte keys, JSON values of
// about 170 bytes (a few fields varying), one header in four rows, one
// tombstone in ten, offsets with gaps.
func benchData() (Meta, []Row, int64) {
	rng := rand.New(rand.NewSource(1))
	rows := make([]Row, benchRows)
	off, ts := int64(1_000_000), int64(1_700_000_000_000)
	var payload int64
	for i := range rows {
		off += 1 + rng.Int63n(8)
		ts += rng.Int63n(50)
		r := Row{Offset: off, Timestamp: ts, Key: []byte(fmt.Sprintf("user-%011d", rng.Int63n(1e11))), DeleteHorizonMs: -1}
		if i%10 == 0 {
			r.DeleteHorizonMs = ts + 86_400_000
		} else {
			r.Value = []byte(fmt.Sprintf(`{"id":%d,"name":"customer %d","email":"c%d@example.com","plan":"%s","balance":%d.%02d,"tags":["a","b%d"],"updated":%d,"note":"%x"}`,
				off, rng.Intn(1e6), rng.Intn(1e6), []string{"free", "pro", "team"}[rng.Intn(3)], rng.Intn(1e5), rng.Intn(100), rng.Intn(10), ts, rng.Uint64()))
		}
		if i%4 == 0 {
			r.Headers = []kafka.RecordHeader{{Key: "trace-id", Value: []byte(fmt.Sprintf("%016x", rng.Uint64()))}}
		}
		payload += int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			payload += int64(len(h.Key) + len(h.Value))
		}
		rows[i] = r
	}
	return testMeta(0, off+1), rows, payload
}

// BenchmarkWriter reports MB/s of row bytes (keys, values, headers) written.
func BenchmarkWriter(b *testing.B) {
	meta, rows, payload := benchData()
	b.SetBytes(payload)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		w := NewWriter(meta)
		for i := range rows {
			if err := w.Add(rows[i]); err != nil {
				b.Fatal(err)
			}
		}
		data, _, err := w.Finish()
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size)/float64(payload), "stored/payload")
}

// BenchmarkReaderRows reports MB/s of row bytes read by Open + Rows.
func BenchmarkReaderRows(b *testing.B) {
	meta, rows, payload := benchData()
	data, _ := build(b, meta, rows)
	b.SetBytes(payload)
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open(data)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := r.Rows(func(Row) error { n++; return nil }); err != nil || n != len(rows) {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkVerify reports MB/s of row bytes checked by Open + Verify.
func BenchmarkVerify(b *testing.B) {
	meta, rows, payload := benchData()
	data, _ := build(b, meta, rows)
	b.SetBytes(payload)
	for b.Loop() {
		if fs := VerifyBytes(data); len(fs) > 0 {
			b.Fatal(fs)
		}
	}
}

// BenchmarkPointRead is a fetch from the tail's index: SeekBlock and one
// block decoded.
func BenchmarkPointRead(b *testing.B) {
	meta, rows, _ := benchData()
	data, _ := build(b, meta, rows)
	ix, err := OpenTail(data[len(data)-SuggestedTailRead:], int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	bs := ix.Blocks()
	i := 0
	for b.Loop() {
		off := rows[(i*7919)%len(rows)].Offset
		i++
		j, err := ix.SeekBlock(off)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ix.DecodeBlock(j, data[bs[j].Offset:bs[j].Offset+bs[j].StoredLen]); err != nil {
			b.Fatal(err)
		}
	}
}
