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

// Each emits in input order whatever finishes first, runs at most n at
// once, holds at most Window(n) results (started, not yet emitted), and a
// per-item failure is a result of its own, never an abort.
func TestEachOrderBoundAndFailures(t *testing.T) {
	const n = 5
	items := make([]int, 500)
	for i := range items {
		items[i] = i
	}
	rng := rand.New(rand.NewPCG(3, 4))
	delays := make([]time.Duration, len(items))
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(400)) * time.Microsecond
	}
	delays[7] = 20 * time.Millisecond // a slow item holds back the ones after it
	type res struct {
		v   int
		err error
	}
	var inFlight, peak, started, emitted, held atomic.Int64
	maxTo := func(a *atomic.Int64, v int64) {
		for {
			p := a.Load()
			if v <= p || a.CompareAndSwap(p, v) {
				return
			}
		}
	}
	var got []res
	err := Each(context.Background(), n, items, func(ctx context.Context, i, it int) (res, error) {
		maxTo(&peak, inFlight.Add(1))
		maxTo(&held, started.Add(1)-emitted.Load())
		defer inFlight.Add(-1)
		time.Sleep(delays[i])
		if it%11 == 0 {
			return res{v: it, err: errors.New("this partition failed")}, nil
		}
		return res{v: it * 2}, nil
	}, func(i, it int, r res) error {
		if i != len(got) || it != i {
			t.Fatalf("emitted item %d (%d) after %d items", i, it, len(got))
		}
		got = append(got, r)
		emitted.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("%d items emitted, want %d", len(got), len(items))
	}
	for i, r := range got {
		switch {
		case i%11 == 0 && (r.err == nil || r.v != i):
			t.Fatalf("item %d: %+v, want its failure in place", i, r)
		case i%11 != 0 && (r.err != nil || r.v != 2*i):
			t.Fatalf("item %d: %+v, want %d in place", i, r, 2*i)
		}
	}
	if p := peak.Load(); p > n || p < 2 {
		t.Fatalf("peak in flight %d, want 2..%d", p, n)
	}
	if h := held.Load(); h > int64(Window(n)) || h <= n {
		t.Fatalf("at most %d results held, want more than %d (the slow item) and at most Window(%d) = %d", h, n, n, Window(n))
	}
}

// The context's end stops the items not yet started, every item that ran
// is still emitted in order, and the end is returned.
func TestEachStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Int64
	items := make([]int, 1000)
	var emitted []int
	err := Each(ctx, 2, items, func(ctx context.Context, i, _ int) (int, error) {
		if ran.Add(1) == 10 {
			cancel()
		}
		return i, ctx.Err()
	}, func(i, _ int, r int) error {
		if r != i || (len(emitted) > 0 && emitted[len(emitted)-1] >= i) {
			t.Fatalf("emitted %d (result %d) after %v", i, r, emitted)
		}
		emitted = append(emitted, i)
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if n := ran.Load(); n > 20 || int64(len(emitted)) != n {
		t.Fatalf("%d items ran after the cancel at 10, %d emitted: want every one that ran emitted", n, len(emitted))
	}
}

// An emit error (the output cannot be written) stops the job: nothing is
// emitted after it, no item starts, and it is returned.
func TestEachStopsOnEmitError(t *testing.T) {
	var ran atomic.Int64
	items := make([]int, 1000)
	bad := errors.New("stdout closed")
	calls := 0
	err := Each(context.Background(), 3, items, func(ctx context.Context, i, _ int) (int, error) {
		ran.Add(1)
		return i, nil
	}, func(i, _ int, _ int) error {
		calls++
		if i == 4 {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) {
		t.Fatalf("err %v, want the emit error", err)
	}
	if calls != 5 {
		t.Fatalf("emit called %d times, want 5 (none after the error)", calls)
	}
	if n := ran.Load(); n > 4+int64(Window(3))+1 {
		t.Fatalf("%d items ran, want at most the window past the failed emit", n)
	}
}

// Each holds at most Window(n) results even when the first item is the
// slowest: the items past the window do not start until it is emitted.
func TestEachWindowWaitsForTheSlowFirst(t *testing.T) {
	release := make(chan struct{})
	var maxStarted atomic.Int64
	items := make([]int, 100)
	done := make(chan error, 1)
	go func() {
		done <- Each(context.Background(), 2, items, func(ctx context.Context, i, _ int) (int, error) {
			for {
				p := maxStarted.Load()
				if int64(i) <= p || maxStarted.CompareAndSwap(p, int64(i)) {
					break
				}
			}
			if i == 0 {
				<-release
			}
			return i, nil
		}, func(int, int, int) error { return nil })
	}()
	time.Sleep(50 * time.Millisecond)
	if m := maxStarted.Load(); m >= int64(Window(2)) {
		t.Fatalf("item %d started while item 0 was not emitted: want below Window(2) = %d", m, Window(2))
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := maxStarted.Load(); m != 99 {
		t.Fatalf("last item started %d, want 99", m)
	}
}
