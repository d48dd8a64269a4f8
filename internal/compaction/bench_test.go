package compaction_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// The compaction benchmark streams: the demo's customers-0 (keyed updates
// and tombstones, a fifth as many keys as records, a quarter of the batches
// zstd) on the embedded default, in two shapes: the demo's own small
// batches (up to 10 records, objects of about 18 KiB) and a busy producer's
// (batches of 101 to 200 records, objects of about 420 KiB).
// NEREUS_BENCH_RECORDS sets the size (default 1,000,000 records).
type benchStream struct {
	once sync.Once
	st   *store.File
	dir  string
	err  error
}

var benchStreams = map[string]*benchStream{"demo-batches": {}, "busy-batches": {}}

func benchRecords() int {
	if v, err := strconv.Atoi(os.Getenv("NEREUS_BENCH_RECORDS")); err == nil && v > 0 {
		return v
	}
	return 1_000_000
}

func (s *benchStream) get(b *testing.B, batchRecords int) *store.File {
	b.Helper()
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "nereus-bench-compact-*"); s.err != nil {
			return
		}
		if s.st, s.err = store.NewFile(s.dir); s.err != nil {
			return
		}
		start := time.Now()
		o := demo.Options{Partitions: 1, Records: benchRecords(), Seed: 1, Checkpoints: 2, Topics: []string{"customers"}, BatchRecords: batchRecords}
		if _, s.err = demo.Run(context.Background(), s.st, o); s.err != nil {
			return
		}
		b.Logf("built a %d-record customers stream in %s (%s)", o.Records, time.Since(start).Round(time.Second), s.dir)
	})
	if s.err != nil {
		b.Fatal(s.err)
	}
	return s.st
}

// uncompacted makes the stream as if it had never been compacted: the
// binding's coverage reset, every TOPIC_COMPACTED generation and NTC2
// object removed, so that the next compaction writes everything again.
func uncompacted(b *testing.B, st store.Store) *layout.Binding {
	b.Helper()
	ctx := context.Background()
	bd, etag, err := layout.LoadBinding(ctx, st, "customers", 0)
	if err != nil {
		b.Fatal(err)
	}
	bd.Coverage = layout.Coverage{State: layout.CoverageNone}
	bd.Version++
	if _, err := layout.Replace(ctx, st, layout.BindingKey("customers", 0), bd, etag); err != nil {
		b.Fatal(err)
	}
	gens, err := layout.ListGenerations(ctx, st, bd.StreamID)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, st, bd.StreamID, n)
		if err != nil {
			b.Fatal(err)
		}
		if g.Kind != layout.KindTopicCompacted {
			continue
		}
		for _, o := range g.Objects {
			if err := st.Delete(ctx, o.Key, store.None()); err != nil && !errors.Is(err, store.ErrNotFound) {
				b.Fatal(err)
			}
		}
		if err := st.Delete(ctx, layout.GenerationKey(bd.StreamID, n), store.None()); err != nil {
			b.Fatal(err)
		}
	}
	return bd
}

// BenchmarkCompact compacts the whole customers-0 stream from scratch and
// reports the input rate (mb_in/s; target >= 100 on one core: run with
// -cpu 1), and as a same-process baseline the rate of reading the same
// COMMITTED object files once (read_mb/s) and the ratio of the two.
func BenchmarkCompact(b *testing.B) {
	for _, shape := range []struct {
		name         string
		batchRecords int
	}{{"demo-batches", 0}, {"busy-batches", 200}} {
		b.Run(shape.name, func(b *testing.B) {
			s := benchStreams[shape.name]
			st := s.get(b, shape.batchRecords)
			benchCompact(b, st, s.dir)
		})
	}
}

func benchCompact(b *testing.B, st store.Store, dir string) {
	ctx := context.Background()
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

	// Baseline: read every COMMITTED object file once.
	var files []string
	_ = filepath.WalkDir(filepath.Join(dir, "streams"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".kb") {
			files = append(files, p)
		}
		return nil
	})
	readStart := time.Now()
	var readBytes int64
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		readBytes += int64(len(data))
	}
	readSecs := time.Since(readStart).Seconds()

	var r *compaction.Result
	var times []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bd := uncompacted(b, st)
		b.StartTimer()
		start := time.Now()
		var err error
		if r, err = compaction.Compact(ctx, st, bd, compaction.Options{NowMs: now, MaxMemory: compaction.DefaultMaxMemory}); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start).Seconds())
	}
	b.StopTimer()
	// This machine is shared: report the median run and the best one.
	slices.Sort(times)
	secs := times[len(times)/2]
	in := float64(r.Stats.BytesIn)
	b.ReportMetric(in/secs/1e6, "mb_in/s")
	b.ReportMetric(in/times[0]/1e6, "best_mb_in/s")
	b.ReportMetric(float64(readBytes)/readSecs/1e6, "read_mb/s")
	b.ReportMetric(float64(r.Stats.Keys), "keys")
	b.ReportMetric(float64(r.Stats.SourceObjects)/float64(r.Stats.Passes+1), "objects")
	b.ReportMetric((in/secs)/(float64(readBytes)/readSecs), "compact_over_read")
	if b.N > 0 {
		b.Logf("%s", fmt.Sprintf("%+v", r.Stats))
	}
}
