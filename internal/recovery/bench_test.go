package recovery_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

// The restart benchmark stream: the demo's orders-0 on the embedded default
// (file://) with a checkpoint every 1% of its life, so that tails of 1%, 5%
// and 20% can be replayed from the same stream. NEREUS_BENCH_RECORDS sets
// the size (default 1,000,000 records).
var (
	benchOnce sync.Once
	benchSt   store.Store
	benchB    *layout.Binding
	benchDir  string
	benchErr  error
)

func benchStream(b *testing.B) (store.Store, *layout.Binding) {
	b.Helper()
	benchOnce.Do(func() {
		n := 1_000_000
		if v, err := strconv.Atoi(os.Getenv("NEREUS_BENCH_RECORDS")); err == nil && v > 0 {
			n = v
		}
		benchDir, benchErr = os.MkdirTemp("", "nereus-bench-replay-*")
		if benchErr != nil {
			return
		}
		if os.Getenv("NEREUS_BENCH_STORE") == "s3" {
			// The same stream on versitygw: a restart's requests follow
			// the tail there (LIST after the anchor, GETs of the tail).
			srv := s3server.Start(b)
			benchSt, benchErr = store.Open(context.Background(), srv.URL("bench"), store.OpenOptions{S3Endpoint: srv.Endpoint, S3PathStyle: true})
			if benchErr != nil {
				return
			}
		} else {
			var fs *store.File
			if fs, benchErr = store.NewFile(benchDir); benchErr != nil {
				return
			}
			benchSt = fs
		}
		o := demo.Options{Partitions: 1, Records: n, Seed: 1, Checkpoints: 99, Topics: []string{"orders"}}
		start := time.Now()
		if _, benchErr = demo.Run(context.Background(), benchSt, o); benchErr != nil {
			return
		}
		b.Logf("built a %d-record stream with 99 checkpoints in %s (%s)", n, time.Since(start).Round(time.Second), benchDir)
		benchB, _, benchErr = layout.LoadBinding(context.Background(), benchSt, "orders", 0)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSt, benchB
}

// BenchmarkRestart compares a restart from a checkpoint with a 1%, 5% and
// 20% tail against a full replay of the same stream, and the full replay's
// read rate against reading the same object files (cat). The ratios are
// reported as metrics: full_over_tail1 (target >= 30), tail5_over_tail1 and
// tail20_over_tail1 (cost follows the tail: about 5 and 20), and
// replay_over_cat (target >= 0.5). NEREUS_BENCH_STORE=s3 runs it on
// versitygw instead of the embedded default.
func BenchmarkRestart(b *testing.B) {
	st, bd := benchStream(b)
	ctx := context.Background()
	h, _, _ := layout.LoadHead(ctx, st, bd.StreamID)
	timeIt := func(o recovery.Options) (time.Duration, *recovery.Result) {
		best := time.Duration(1 << 62)
		var res *recovery.Result
		for i := 0; i < 3; i++ {
			start := time.Now()
			r, err := recovery.Replay(ctx, st, bd, o)
			if err != nil {
				b.Fatal(err)
			}
			best, res = min(best, time.Since(start)), r
		}
		return best, res
	}
	for i := 0; i < b.N; i++ {
		full, fr := timeIt(recovery.Options{Full: true})
		t1, r1 := timeIt(recovery.Options{MaxAnchor: h.Head * 99 / 100})
		t5, _ := timeIt(recovery.Options{MaxAnchor: h.Head * 95 / 100})
		t20, _ := timeIt(recovery.Options{MaxAnchor: h.Head * 80 / 100})
		if r1.Digest() != fr.Digest() {
			b.Fatalf("digests differ: %s vs %s", r1.Digest(), fr.Digest())
		}
		// cat: read every object file of the stream (file:// only)
		cat := time.Duration(1 << 62)
		var catBytes int64
		for k := 0; k < 3 && os.Getenv("NEREUS_BENCH_STORE") != "s3"; k++ {
			start := time.Now()
			catBytes = 0
			files, _ := filepath.Glob(filepath.Join(benchDir, "streams", bd.StreamID, "objects", "*.kb"))
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					b.Fatal(err)
				}
				catBytes += int64(len(data))
			}
			cat = min(cat, time.Since(start))
		}
		b.ReportMetric(float64(full)/float64(t1), "full_over_tail1")
		b.ReportMetric(float64(t5)/float64(t1), "tail5_over_tail1")
		b.ReportMetric(float64(t20)/float64(t1), "tail20_over_tail1")
		b.ReportMetric(float64(cat)/float64(full), "replay_over_cat")
		b.ReportMetric(float64(fr.Tail.Bytes)/full.Seconds()/1e6, "replay_MBps")
		b.ReportMetric(float64(catBytes)/cat.Seconds()/1e6, "cat_MBps")
		b.ReportMetric(float64(full.Milliseconds()), "full_ms")
		b.ReportMetric(float64(t1.Milliseconds()), "tail1_ms")
		b.ReportMetric(float64(r1.Tail.Objects), "tail1_objects")
	}
}
