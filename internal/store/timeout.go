package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Timeout is the per-request timeout decorator; see WithTimeout.
type Timeout struct {
	s Store
	d time.Duration
}

var _ Store = (*Timeout)(nil)

// WithTimeout gives every call on s at most d (--request-timeout): the
// call's context is cancelled after d, so a request an endpoint never
// answers (a hung connection, a server that accepts and stalls) fails with
// a RequestTimeoutError instead of hanging the command. Placed under
// WithRetry, each attempt gets its own d, and a timed-out attempt is
// retried like any transient failure (a timed-out write is ambiguous: the
// retry layer confirms it). d covers the whole call, a GET's body
// included. d <= 0 returns s unchanged.
func WithTimeout(s Store, d time.Duration) Store {
	if d <= 0 {
		return s
	}
	return &Timeout{s: s, d: d}
}

// RequestTimeoutError is a store call cut at the per-request timeout. It
// is transient (Retryable), unlike the caller's own deadline or
// cancellation, which it never hides.
type RequestTimeoutError struct {
	Op    string
	Key   string
	After time.Duration
}

func (e *RequestTimeoutError) Error() string {
	return fmt.Sprintf("%s %s: no answer within %s (--request-timeout)", e.Op, e.Key, e.After)
}

// IsRequestTimeout reports whether err is (or wraps) a call cut at the
// per-request timeout.
func IsRequestTimeout(err error) bool {
	var te *RequestTimeoutError
	return errors.As(err, &te)
}

func (t *Timeout) String() string { return t.s.String() }

// Unwrap returns the decorated store.
func (t *Timeout) Unwrap() Store { return t.s }

// call runs op under a context that ends after t.d. When that deadline
// (and not the caller's context) ended the call, its error is replaced by
// a RequestTimeoutError: the inner error is a context error that the
// retry layer would take for the caller's own and not retry.
//
// The deadline's timer starts only when the call waits on the context
// (lazyDeadline): an HTTP request does at once, a file:// read, which only
// asks Err, never does, and pays no timer for each small object it reads.
func (t *Timeout) call(ctx context.Context, op, key string, f func(ctx context.Context) error) error {
	c := &lazyDeadline{Context: ctx, deadline: time.Now().Add(t.d)}
	defer c.stop()
	err := f(c)
	if err != nil && ctx.Err() == nil && errors.Is(c.Err(), context.DeadlineExceeded) {
		return &RequestTimeoutError{Op: op, Key: key, After: t.d}
	}
	return err
}

// lazyDeadline is context.WithDeadline(Context, deadline) whose timer (and
// registration with the parent) is made only when Done is first asked
// for. Err without Done compares the clock with the deadline, so a callee
// that only polls Err sees the deadline pass just the same.
type lazyDeadline struct {
	context.Context // the parent
	deadline        time.Time

	mu        sync.Mutex
	started   context.Context // the real deadline context, once Done was asked for
	cancel    context.CancelFunc
	stopped   bool
	stoppedAt time.Time
}

func (c *lazyDeadline) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *lazyDeadline) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started == nil {
		c.started, c.cancel = context.WithDeadline(c.Context, c.deadline)
		if c.stopped {
			c.cancel() // asked for after the call ended: done at once
		}
	}
	return c.started.Done()
}

func (c *lazyDeadline) Err() error {
	c.mu.Lock()
	started, stopped, stoppedAt := c.started, c.stopped, c.stoppedAt
	c.mu.Unlock()
	switch {
	case started != nil:
		return started.Err()
	case stopped && stoppedAt.Before(c.deadline):
		return context.Canceled
	case stopped:
		return context.DeadlineExceeded
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value is the real deadline context's once made (so that a context
// derived from this one registers with it, as under WithDeadline), else
// the parent's.
func (c *lazyDeadline) Value(key any) any {
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if started != nil {
		return started.Value(key)
	}
	return c.Context.Value(key)
}

// stop ends the context as cancel does (the call is over).
func (c *lazyDeadline) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped, c.stoppedAt = true, time.Now()
	if c.cancel != nil {
		c.cancel()
	}
}

func (t *Timeout) Head(ctx context.Context, key string) (info ObjectInfo, err error) {
	err = t.call(ctx, "head", key, func(ctx context.Context) error {
		info, err = t.s.Head(ctx, key)
		return err
	})
	return info, err
}

func (t *Timeout) Get(ctx context.Context, key string, rg *Range) (b []byte, err error) {
	err = t.call(ctx, "get", key, func(ctx context.Context) error {
		b, err = t.s.Get(ctx, key, rg)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (t *Timeout) GetInto(ctx context.Context, key string, buf []byte) (b []byte, err error) {
	err = t.call(ctx, "get", key, func(ctx context.Context) error {
		b, err = GetInto(ctx, t.s, key, buf)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (t *Timeout) Put(ctx context.Context, key string, data []byte, g Guard) (info ObjectInfo, err error) {
	err = t.call(ctx, "put", key, func(ctx context.Context) error {
		info, err = t.s.Put(ctx, key, data, g)
		return err
	})
	return info, err
}

func (t *Timeout) Delete(ctx context.Context, key string, g Guard) error {
	return t.call(ctx, "delete", key, func(ctx context.Context) error {
		return t.s.Delete(ctx, key, g)
	})
}

func (t *Timeout) List(ctx context.Context, prefix string) (l []ObjectInfo, err error) {
	err = t.call(ctx, "list", prefix, func(ctx context.Context) error {
		l, err = t.s.List(ctx, prefix)
		return err
	})
	return l, err
}

func (t *Timeout) ListAfter(ctx context.Context, prefix, startAfter string) (l []ObjectInfo, err error) {
	err = t.call(ctx, "list", prefix, func(ctx context.Context) error {
		l, err = t.s.ListAfter(ctx, prefix, startAfter)
		return err
	})
	return l, err
}

// ListRange cuts like ListAfter (RangeLister).
func (t *Timeout) ListRange(ctx context.Context, prefix, startAfter, before string) (l []ObjectInfo, err error) {
	err = t.call(ctx, "list", prefix, func(ctx context.Context) error {
		l, err = ListRange(ctx, t.s, prefix, startAfter, before)
		return err
	})
	return l, err
}
