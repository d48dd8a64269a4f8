package store

import (
	"context"
	"time"
)

// KeyLister is implemented by stores (and decorators) that list keys more
// cheaply when the caller needs no sizes or times: file:// then reads
// each folder's entries with their types and stats none of its objects,
// where a listing with sizes stats every entry (a system call and a name
// lookup each, as much as reading a small object costs).
type KeyLister interface {
	// ListKeys is List without sizes and times: each info has its Key and
	// Size -1 (unknown), and no digests.
	ListKeys(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// ListKeys lists the keys with prefix, in lexical order, without their
// sizes when s can (KeyLister: Size -1), else with List (sizes known).
// A caller must treat a negative Size as unknown.
func ListKeys(ctx context.Context, s Store, prefix string) ([]ObjectInfo, error) {
	if k, ok := s.(KeyLister); ok {
		return k.ListKeys(ctx, prefix)
	}
	return s.List(ctx, prefix)
}

// ListKeys counts one LIST.
func (c *Counter) ListKeys(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	c.list.Add(1)
	return ListKeys(ctx, c.s, prefix)
}

// ListKeys retries like List.
func (r *Retry) ListKeys(ctx context.Context, prefix string) (l []ObjectInfo, err error) {
	_, err = r.do(ctx, "list", prefix, func() error {
		l, err = ListKeys(ctx, r.s, prefix)
		return err
	})
	return l, err
}

// ListKeys waits like List.
func (r *RateLimit) ListKeys(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := r.wait(ctx, "list", prefix); err != nil {
		return nil, err
	}
	return ListKeys(ctx, r.s, prefix)
}

// ListKeys logs like List.
func (l *Logged) ListKeys(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	start := time.Now()
	out, err := ListKeys(ctx, l.s, prefix)
	l.done(ctx, "list", prefix, start, err, "objects", len(out), "sizes", false)
	return out, err
}

// ListKeys cuts like List.
func (t *Timeout) ListKeys(ctx context.Context, prefix string) (l []ObjectInfo, err error) {
	err = t.call(ctx, "list", prefix, func(ctx context.Context) error {
		l, err = ListKeys(ctx, t.s, prefix)
		return err
	})
	return l, err
}
