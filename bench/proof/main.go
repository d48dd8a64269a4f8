// Command proof is the proof-ledger benchmark (bench/proof.sh): it builds a
// synthetic file:// store of many small partitions (each a stream of small
// objects, a few sealed COMMITTED generations and an open segment), then
// runs the real binary's nightly job, verify --all --deep --incremental
// --max-bytes BUDGET, one simulated night after another (--now), until a
// run reports complete. It reports the runs taken against
// ceil(total/budget), that every object was hashed exactly once across them
// (the hashes add up to the objects, and every object is proved), the
// ledger bytes per partition, and the cost of a freshness verdict
// (--max-age: no object bytes read) and of a plan.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

var (
	bin        = flag.String("bin", "", "the nereusctl binary")
	dir        = flag.String("dir", "", "the store's folder (created; kept when -keep)")
	partitions = flag.Int("partitions", 5000, "partitions in the store")
	objects    = flag.Int("objects", 8, "objects per partition")
	records    = flag.Int("records", 10, "records per object")
	valueBytes = flag.Int("value-bytes", 100, "bytes of each record's value")
	budget     = flag.String("max-bytes", "", "the nightly budget (default: a seventh of the store)")
	maxNights  = flag.Int("max-nights", 60, "stop after this many nights")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "proof:", err)
		os.Exit(1)
	}
}

// build writes the synthetic store: partition i of topic "proof" on stream
// s-<i as 16 hex digits>, objects of one batch each, a segment rolled every
// three objects.
func build(ctx context.Context, st store.Store) error {
	cfg := layout.DefaultTopicConfig()
	cfg.SegmentBytes = int64(3 * (*records) * (*valueBytes + 40))
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	value := bytes.Repeat([]byte("v"), *valueBytes)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := 0; i < *partitions; i++ {
		g.Go(func() error {
			sid := fmt.Sprintf("s-%016x", i)
			if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
				return err
			}
			b := &layout.Binding{Topic: "proof", TopicID: "proof-bench", Partition: int32(i), StreamID: sid, Config: cfg,
				Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
			if _, err := layout.Create(ctx, st, layout.BindingKey("proof", int32(i)), b); err != nil {
				return err
			}
			w, err := stream.OpenWriter(ctx, st, sid, cfg)
			if err != nil {
				return err
			}
			clock := t0
			w.NowMs = func() int64 { return clock }
			for o := 0; o < *objects; o++ {
				base := w.Next()
				rs := make([]kafka.Record, *records)
				for r := range rs {
					rs[r] = kafka.Record{Offset: base + int64(r), Timestamp: clock + int64(r), Key: []byte(strconv.Itoa(r)), Value: value}
				}
				batch, err := kafka.EncodeBatch(kafka.NewBatchSpec(base, rs))
				if err != nil {
					return err
				}
				if err := w.Append(ctx, [][]byte{batch}); err != nil {
					return err
				}
				clock += 1000
			}
			return nil
		})
	}
	return g.Wait()
}

type verifyDoc struct {
	OK    bool `json:"ok"`
	Proof struct {
		Complete           bool  `json:"complete"`
		Objects            int   `json:"objects"`
		Bytes              int64 `json:"bytes"`
		Hashed             int   `json:"hashed"`
		HashedBytes        int64 `json:"hashed_bytes"`
		Fresh              int   `json:"fresh"`
		Left               int   `json:"left"`
		LeftBytes          int64 `json:"left_bytes"`
		RunsToFullCoverage int   `json:"runs_to_full_coverage"`
		Unproved           int   `json:"unproved"`
		LedgerBytes        int64 `json:"ledger_bytes"`
		Plan               *struct {
			Objects  int   `json:"objects"`
			Bytes    int64 `json:"bytes"`
			Requests int64 `json:"requests"`
		} `json:"plan"`
	} `json:"proof"`
}

func nereusctl(args ...string) (*verifyDoc, time.Duration, int, error) {
	cmd := exec.Command(*bin, append([]string{"--store", "file://" + *dir, "-o", "json", "-q"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(*dir, ".state"), "XDG_CONFIG_HOME="+filepath.Join(*dir, ".config"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return nil, d, 0, err
	}
	var v verifyDoc
	if jerr := json.Unmarshal(out.Bytes(), &v); jerr != nil {
		return nil, d, code, fmt.Errorf("%v: %v\n%s", args, jerr, errb.String())
	}
	return &v, d, code, nil
}

func run() error {
	if *bin == "" || *dir == "" {
		return fmt.Errorf("-bin and -dir are required")
	}
	ctx := context.Background()
	if _, err := os.Stat(filepath.Join(*dir, "bindings")); err != nil {
		if err := os.MkdirAll(*dir, 0o700); err != nil {
			return err
		}
		st, err := store.NewFile(*dir)
		if err != nil {
			return err
		}
		t := time.Now()
		if err := build(ctx, st); err != nil {
			return err
		}
		fmt.Printf("setup: %d partitions x %d objects of %d records (%d-byte values) in %.1f s\n", *partitions, *objects, *records, *valueBytes, time.Since(t).Seconds())
	} else {
		fmt.Printf("setup: the store in %s kept from an earlier run\n", *dir)
	}
	night := func(n int) string {
		return time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC).Add(time.Duration(n) * 24 * time.Hour).Format(time.RFC3339)
	}
	// The size of the store's immutable objects, from a plan.
	plan, d, code, err := nereusctl("verify", "--all", "--deep", "--incremental", "--plan", "--now", night(0))
	if err != nil || code != 0 {
		return fmt.Errorf("plan: exit %d: %v", code, err)
	}
	total := plan.Proof.Bytes
	fmt.Printf("store: %d immutable objects, %d bytes; a plan of a full proof: %d requests, %.1f s\n", plan.Proof.Objects, total, plan.Proof.Plan.Requests, d.Seconds())
	b := total / 7
	if *budget != "" {
		if b, err = strconv.ParseInt(*budget, 10, 64); err != nil {
			return fmt.Errorf("-max-bytes %q: want bytes", *budget)
		}
	}
	want := int((total + b - 1) / b)
	fmt.Printf("budget: %d bytes a night: ceil(total/budget) = %d nights\n", b, want)
	hashed, runs := 0, 0
	for n := 1; n <= *maxNights; n++ {
		v, d, code, err := nereusctl("verify", "--all", "--deep", "--incremental", "--max-bytes", strconv.FormatInt(b, 10), "--now", night(n))
		if err != nil || code != 0 {
			return fmt.Errorf("night %d: exit %d: %v", n, code, err)
		}
		runs++
		hashed += v.Proof.Hashed
		fmt.Printf("night %2d: hashed %6d objects, %10d bytes (%.2f of the budget); left %6d objects, %10d bytes; runs to full coverage %d; complete %v; %.1f s\n",
			n, v.Proof.Hashed, v.Proof.HashedBytes, float64(v.Proof.HashedBytes)/float64(b), v.Proof.Left, v.Proof.LeftBytes, v.Proof.RunsToFullCoverage, v.Proof.Complete, d.Seconds())
		if v.Proof.Complete {
			break
		}
	}
	delta := runs - want
	fmt.Printf("full coverage in %d nights, ceil(total/budget) = %d: %+d (target: within ±1) %s\n", runs, want, delta, verdict(delta >= -1 && delta <= 1))
	fmt.Printf("objects hashed across the nights: %d of %d %s\n", hashed, plan.Proof.Objects, verdict(hashed == plan.Proof.Objects))

	v, d, code, err := nereusctl("verify", "--all", "--deep", "--incremental", "--now", night(runs+1))
	if err != nil || code != 0 {
		return fmt.Errorf("after full coverage: exit %d: %v", code, err)
	}
	fmt.Printf("the night after: hashed %d objects, %d fresh, %d unproved %s; %.1f s\n", v.Proof.Hashed, v.Proof.Fresh, v.Proof.Unproved, verdict(v.Proof.Hashed == 0 && v.Proof.Unproved == 0), d.Seconds())
	f, d, code, err := nereusctl("verify", "--all", "--max-age", "30d", "--now", night(runs+1))
	if err != nil {
		return err
	}
	fmt.Printf("freshness verdict (--max-age 30d): exit %d, %d unproved; %.1f s\n", code, f.Proof.Unproved, d.Seconds())

	// The ledgers' bytes.
	files, _ := filepath.Glob(filepath.Join(*dir, "streams", "*", "proof.json"))
	var sizes []int64
	var sum int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return err
		}
		sizes = append(sizes, fi.Size())
		sum += fi.Size()
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	if len(sizes) > 0 {
		fmt.Printf("ledgers: %d, %d bytes in all: %.0f bytes per partition (min %d, max %d), %.0f bytes per proved object\n",
			len(sizes), sum, float64(sum)/float64(len(sizes)), sizes[0], sizes[len(sizes)-1], float64(sum)/float64(plan.Proof.Objects))
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "(ok)"
	}
	return "(MISSED)"
}
