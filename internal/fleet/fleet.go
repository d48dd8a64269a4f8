// Package fleet owns how nereusctl works across many partitions at once:
// a bounded number of partitions in flight (errgroup with SetLimit), the
// results kept in input order whatever finishes first, one partition's
// failure a result of its own (never an abort of the others), and the
// default bound for a store.
//
// It must never decide what a partition's work is, and never hold more
// than the bound's worth of work in flight: memory follows the bound, not
// the number of partitions.
package fleet

import (
	"context"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Default bounds: a request to S3 costs 10-50 ms, so many partitions in
// flight hide the latency; a local directory gains little beyond the
// cores and its own parallel reads.
const (
	DefaultS3   = 32
	DefaultFile = 8
	DefaultMem  = 4
	// Max caps --parallel: more in flight than this only queues in the
	// HTTP client and the rate limiter.
	Max = 1024
)

// DefaultFor is the default bound for a store URL.
func DefaultFor(storeURL string) int {
	switch {
	case strings.HasPrefix(storeURL, "s3://"):
		return DefaultS3
	case strings.HasPrefix(storeURL, "mem://"):
		return DefaultMem
	}
	return DefaultFile
}

// Map calls fn for every item with at most n calls in flight (n < 1 means
// 1) and returns the results in the order of items. fn reports a
// partition's failure in its result; the error it returns is reserved for
// what must stop the whole job (the context's end), which cancels the
// calls not yet started and is returned with the results so far (the
// zero value for items never run).
func Map[T, R any](ctx context.Context, n int, items []T, fn func(ctx context.Context, i int, item T) (R, error)) ([]R, error) {
	out := make([]R, len(items))
	if n < 1 {
		n = 1
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for i, it := range items {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			r, err := fn(gctx, i, it)
			out[i] = r
			return err
		})
	}
	err := g.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return out, err
}

// Window is how many results Each holds at most for a bound of n: the n
// in flight and as many finished ones waiting for a slower item before
// them to be emitted.
func Window(n int) int {
	if n < 1 {
		n = 1
	}
	return 2 * n
}

// Each is Map without the slice of every result: it calls work for every
// item with at most n calls in flight (n < 1 means 1) and hands each
// result to emit in the order of items, one call at a time, on the
// caller's goroutine, as soon as every item before it has been emitted.
// An item starts only once the item Window(n) places before it has been
// emitted, so at most Window(n) results are held at once whatever the
// number of items: memory follows the bound, a slow item holds back the
// emission (and, past the window, the start) of the items after it, never
// their memory.
//
// As with Map, work reports an item's failure in its result; the error it
// returns is reserved for what must stop the whole job (the context's
// end): the items not yet started are not started, the ones in flight
// finish (their context cancelled) and every item whose work returned is
// still emitted in order, its result whatever work returned with the
// error. An error from emit (the output cannot be written) stops the job
// the same way, and no item is emitted after it. Each returns the first
// error of emit, else of work, else the context's.
func Each[T, R any](ctx context.Context, n int, items []T, work func(ctx context.Context, i int, item T) (R, error), emit func(i int, item T, r R) error) error {
	window := Window(n)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(cctx)
	g.SetLimit(window / 2)

	type slot struct {
		r         R
		done, ran bool
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		ring    = make([]slot, window)
		next    int // the next item to emit
		emitErr error
	)
	// emitReady emits, in order, the finished items before limit; with
	// wait it waits for each of them to finish.
	emitReady := func(limit int, wait bool) {
		mu.Lock()
		defer mu.Unlock()
		for next < limit {
			s := &ring[next%window]
			if !s.done {
				if !wait {
					return
				}
				cond.Wait()
				continue
			}
			taken := *s
			*s = slot{}
			i := next
			next++
			if !taken.ran || emitErr != nil {
				continue
			}
			mu.Unlock()
			err := emit(i, items[i], taken.r)
			mu.Lock()
			if err != nil && emitErr == nil {
				emitErr = err
				cancel()
			}
		}
	}
	started := 0
	for i, it := range items {
		if gctx.Err() != nil {
			break
		}
		// Room in the window: item i-window has been emitted.
		emitReady(i-window+1, true)
		emitReady(i, false)
		if gctx.Err() != nil {
			break
		}
		started = i + 1
		g.Go(func() error {
			var (
				r   R
				err error
				ran bool
			)
			if err = gctx.Err(); err == nil {
				r, err = work(gctx, i, it)
				ran = true
			}
			mu.Lock()
			ring[i%window] = slot{r: r, done: true, ran: ran}
			cond.Broadcast()
			mu.Unlock()
			return err
		})
	}
	emitReady(started, true)
	err := g.Wait()
	if emitErr != nil {
		return emitErr
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}
