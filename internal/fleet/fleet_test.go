package fleet

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// Results come back in input order whatever finishes first, at most n run
// at once, and a per-item failure is a result, not an abort.
func TestMapOrderBoundAndFailures(t *testing.T) {
	items := make([]int, 200)
	for i := range items {
		items[i] = i
	}
	var inFlight, peak atomic.Int64
	rng := rand.New(rand.NewPCG(1, 2))
	delays := make([]time.Duration, len(items))
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(300)) * time.Microsecond
	}
	type res struct {
		v   int
		err error
	}
	out, err := Map(context.Background(), 7, items, func(ctx context.Context, i, it int) (res, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(delays[i])
		if it%13 == 0 {
			return res{v: it, err: errors.New("this partition failed")}, nil
		}
		return res{v: it * 2}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 7 || p < 2 {
		t.Fatalf("peak in flight %d, want 2..7", p)
	}
	for i, r := range out {
		switch {
		case i%13 == 0 && (r.err == nil || r.v != i):
			t.Fatalf("item %d: %+v, want its failure in place", i, r)
		case i%13 != 0 && (r.err != nil || r.v != 2*i):
			t.Fatalf("item %d: %+v, want %d in place", i, r, 2*i)
		}
	}
}

// The context's end stops the items not yet started and is returned.
func TestMapStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int64
	items := make([]int, 1000)
	_, err := Map(ctx, 2, items, func(ctx context.Context, i, _ int) (int, error) {
		if ran.Add(1) == 10 {
			cancel()
		}
		return i, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if n := ran.Load(); n > 20 {
		t.Fatalf("%d items ran after the cancel at 10", n)
	}
}

func TestDefaultFor(t *testing.T) {
	for url, want := range map[string]int{"s3://b/p": DefaultS3, "file:///x": DefaultFile, "mem://m": DefaultMem, "file://./nereus-data": DefaultFile} {
		if got := DefaultFor(url); got != want {
			t.Errorf("DefaultFor(%q) = %d, want %d", url, got, want)
		}
	}
}
