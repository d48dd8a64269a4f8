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
