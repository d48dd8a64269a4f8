package dumplog

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// benchStream is a large stream in a mem store: about total bytes of
// uncompressed batches of recs records of valueSize bytes, appended as
// ~1 MiB objects through stream.Writer, as an import or a broker writes
// them.
type benchStream struct {
	st      store.Store
	b       *layout.Binding
	objects [][]byte // the objects' bytes, for the baselines
	bytes   int64
	batches int64
}

var benchCache = map[string]*benchStream{}

func newBenchStream(b *testing.B, total, recs, valueSize int) *benchStream {
	b.Helper()
	name := fmt.Sprint(total, "/", recs, "/", valueSize)
	if s := benchCache[name]; s != nil {
		return s
	}
	ctx := context.Background()
	st := store.NewMem("bench")
	sid := "s-bench"
	if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
		b.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	w, err := stream.OpenWriter(ctx, st, sid, cfg)
	if err != nil {
		b.Fatal(err)
	}
	// One template batch; copies get their base offset patched (the CRC
	// does not cover it).
	records := make([]kafka.Record, recs)
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	for i := range records {
		records[i] = kafka.Record{Key: []byte(fmt.Sprintf("key-%06d", i)), Value: value, Offset: int64(i), Timestamp: 1_700_000_000_000 + int64(i)}
	}
	spec := kafka.NewBatchSpec(0, records)
	spec.PartitionLeaderEpoch = 1
	tmpl, err := kafka.EncodeBatch(spec)
	if err != nil {
		b.Fatal(err)
	}
	s := &benchStream{st: st}
	var off int64
	for s.bytes < int64(total) {
		var object [][]byte
		size := 0
		for size+len(tmpl) <= 1<<20 || len(object) == 0 {
			bt := append([]byte(nil), tmpl...)
			binary.BigEndian.PutUint64(bt, uint64(off))
			off += int64(recs)
			object = append(object, bt)
			size += len(bt)
		}
		if err := w.Append(ctx, object); err != nil {
			b.Fatal(err)
		}
		s.bytes += int64(size)
		s.batches += int64(len(object))
	}
	objs, err := layout.ListObjects(ctx, st, sid)
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range objs {
		data, err := st.Get(ctx, o.Key, nil)
		if err != nil {
			b.Fatal(err)
		}
		s.objects = append(s.objects, data)
	}
	s.b = &layout.Binding{Topic: "bench", Partition: 0, StreamID: sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	benchCache[name] = s
	return s
}

var benchShapes = []struct {
	name             string
	recs, valueBytes int
}{
	{"batch=16KiB", 16, 1000}, // producer batch.size default, 1 KB records
	{"batch=300B", 1, 220},    // one small record per batch, as __consumer_offsets holds
}

const benchTotal = 64 << 20

// BenchmarkCopyBaseline copies every object's bytes once: the plain byte
// copy the header pass is compared with.
func BenchmarkCopyBaseline(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(sh.name, func(b *testing.B) {
			s := newBenchStream(b, benchTotal, sh.recs, sh.valueBytes)
			buf := make([]byte, 2<<20)
			b.SetBytes(s.bytes)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, o := range s.objects {
					copy(buf, o)
				}
			}
		})
	}
}

// BenchmarkHeaderScan walks the objects' batch headers only (no store, no
// output): the floor of a header-only dump.
func BenchmarkHeaderScan(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(sh.name, func(b *testing.B) {
			s := newBenchStream(b, benchTotal, sh.recs, sh.valueBytes)
			b.SetBytes(s.bytes)
			b.ResetTimer()
			n := int64(0)
			for i := 0; i < b.N; i++ {
				for _, o := range s.objects {
					sc := kafka.NewScanner(o) // as the dump reads each object
					for sc.Next() {
						n++
					}
				}
			}
			if n != s.batches*int64(b.N) {
				b.Fatalf("%d batches, want %d", n, s.batches*int64(b.N))
			}
		})
	}
}

// BenchmarkDumpHeaderPass is `dump` without --deep: the committed source
// reads every object from the store, walks the headers and renders one
// kafka-dump-log line per batch into a buffered writer.
func BenchmarkDumpHeaderPass(b *testing.B) {
	for _, sh := range benchShapes {
		for _, verify := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/verify-crc=%v", sh.name, verify), func(b *testing.B) {
				s := newBenchStream(b, benchTotal, sh.recs, sh.valueBytes)
				ctx := context.Background()
				b.SetBytes(s.bytes)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					src, err := OpenCommitted(ctx, s.st, s.b)
					if err != nil {
						b.Fatal(err)
					}
					w := bufio.NewWriterSize(io.Discard, 64<<10)
					var buf []byte
					sum, err := Run(ctx, src, Options{From: -1, VerifyCRC: verify}, func(l Line) error {
						buf = append(l.AppendLine(buf[:0]), '\n')
						_, err := w.Write(buf)
						return err
					})
					if err != nil || sum.Batches != s.batches {
						b.Fatalf("%v %+v", err, sum)
					}
					w.Flush()
				}
			})
		}
	}
}
