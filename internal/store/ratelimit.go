package store

import (
	"context"
	"fmt"

	"golang.org/x/time/rate"
)

// RateLimit is the rate-limit decorator; see WithRateLimit.
type RateLimit struct {
	s Store
	l *rate.Limiter
}

var _ Store = (*RateLimit)(nil)

// WithRateLimit lets at most perSecond calls through per second
// (--max-requests-per-second), waiting (with ctx) for a token before each
// call; bursts are limited to one second's worth. perSecond <= 0 returns s
// unchanged.
func WithRateLimit(s Store, perSecond float64) Store {
	if perSecond <= 0 {
		return s
	}
	burst := max(1, int(perSecond))
	return &RateLimit{s: s, l: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

func (r *RateLimit) String() string { return r.s.String() }

// Unwrap returns the decorated store.
func (r *RateLimit) Unwrap() Store { return r.s }

func (r *RateLimit) wait(ctx context.Context, verb, key string) error {
	if err := r.l.Wait(ctx); err != nil {
		return fmt.Errorf("%s %s: rate limit: %w", verb, key, err)
	}
	return nil
}

func (r *RateLimit) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := r.wait(ctx, "head", key); err != nil {
		return ObjectInfo{}, err
	}
	return r.s.Head(ctx, key)
}

func (r *RateLimit) Get(ctx context.Context, key string, rg *Range) ([]byte, error) {
	if err := r.wait(ctx, "get", key); err != nil {
		return nil, err
	}
	return r.s.Get(ctx, key, rg)
}

func (r *RateLimit) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	if err := r.wait(ctx, "get", key); err != nil {
		return nil, err
	}
	return GetInto(ctx, r.s, key, buf)
}

func (r *RateLimit) Put(ctx context.Context, key string, data []byte, g Guard) (ObjectInfo, error) {
	if err := r.wait(ctx, "put", key); err != nil {
		return ObjectInfo{}, err
	}
	return r.s.Put(ctx, key, data, g)
}

func (r *RateLimit) Delete(ctx context.Context, key string, g Guard) error {
	if err := r.wait(ctx, "delete", key); err != nil {
		return err
	}
	return r.s.Delete(ctx, key, g)
}

func (r *RateLimit) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := r.wait(ctx, "list", prefix); err != nil {
		return nil, err
	}
	return r.s.List(ctx, prefix)
}

func (r *RateLimit) ListAfter(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	if err := r.wait(ctx, "list", prefix); err != nil {
		return nil, err
	}
	return r.s.ListAfter(ctx, prefix, startAfter)
}

// ListRange waits like ListAfter (RangeLister).
func (r *RateLimit) ListRange(ctx context.Context, prefix, startAfter, before string) ([]ObjectInfo, error) {
	if err := r.wait(ctx, "list", prefix); err != nil {
		return nil, err
	}
	return ListRange(ctx, r.s, prefix, startAfter, before)
}
