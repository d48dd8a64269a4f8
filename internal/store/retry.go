package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds WithRetry.
type RetryPolicy struct {
	// Attempts is the total number of tries per call (at least 1).
	Attempts int
	// Initial is the first backoff ceiling; it doubles per retry up to Max.
	// Each wait is drawn uniformly from [0, ceiling) (full jitter).
	Initial time.Duration
	Max     time.Duration
	// Log receives a line per retry (info: attempt, key, error, wait),
	// per give-up after the last attempt (warn), and per lost
	// precondition of a guarded write (info; after an ambiguous attempt,
	// with the check whether ours landed). Nil logs nothing.
	Log *slog.Logger
	// Meter counts each retry (nil: not counted).
	Meter *Meter
}

// DefaultRetryPolicy: 6 tries, backoff from 100 ms up to 5 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Attempts: 6, Initial: 100 * time.Millisecond, Max: 5 * time.Second}
}

// Retry is the retry decorator; see WithRetry.
type Retry struct {
	s Store
	p RetryPolicy
}

var _ Store = (*Retry)(nil)

// WithRetry retries calls that fail with a Retryable error (transient
// failures and ErrConflict), with exponential backoff and full jitter. It
// never retries ErrNotFound, ErrPreconditionFailed, ErrInvalidKey,
// ErrTooLarge, context errors, Permanent errors, or permission and
// credential failures (ErrAccessDenied, an EACCES/EPERM/EROFS from the file
// system, ErrCredentials, ErrNoSuchBucket), and stops when ctx ends. Its
// errors are *OpError (the operation and key, for KeyOf).
//
// After an ambiguous attempt (one that failed in a way that may hide a
// completed write, e.g. a timeout) a guarded write that then meets
// ErrPreconditionFailed is checked against the store before it is reported:
//
//   - IfAbsent: ConfirmIfAbsent compares the stored bytes with ours
//     (docs/design.md §2); equal bytes are a success.
//   - IfMatch: if the object's ETag is now the MD5 of our bytes, our write
//     landed; that is a success.
//   - Delete IfMatch: if the object is now gone, our delete landed.
//
// ErrConflict is a definite "not applied", not ambiguous.
func WithRetry(s Store, p RetryPolicy) *Retry {
	if p.Attempts < 1 {
		p.Attempts = 1
	}
	if p.Initial <= 0 {
		p.Initial = time.Millisecond
	}
	if p.Max < p.Initial {
		p.Max = p.Initial
	}
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	return &Retry{s: s, p: p}
}

func (r *Retry) String() string { return r.s.String() }

// Unwrap returns the decorated store.
func (r *Retry) Unwrap() Store { return r.s }

// do runs op until it succeeds, fails for good, or attempts run out. It
// reports whether any failed attempt was ambiguous.
func (r *Retry) do(ctx context.Context, name, key string, op func() error) (ambiguous bool, err error) {
	ceiling := r.p.Initial
	for attempt := 1; ; attempt++ {
		err = op()
		if err == nil || !Retryable(err) || isPermanentFault(err) {
			return ambiguous, opErr(name, key, err)
		}
		if attempt >= r.p.Attempts {
			r.p.Log.Warn("store call failed after retries", "op", name, "key", key, "attempts", attempt, "error", err)
			return ambiguous, opErr(name, key, err)
		}
		if !errors.Is(err, ErrConflict) {
			ambiguous = true
		}
		r.p.Meter.retry()
		wait := rand.N(ceiling) + 1
		r.p.Log.Info("store retry", "op", name, "key", key, "attempt", attempt, "error", err, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ambiguous, opErr(name, key, fmt.Errorf("%w (retrying after: %w)", ctx.Err(), err))
		case <-t.C:
		}
		ceiling = min(ceiling*2, r.p.Max)
	}
}

func (r *Retry) Head(ctx context.Context, key string) (info ObjectInfo, err error) {
	_, err = r.do(ctx, "head", key, func() error {
		info, err = r.s.Head(ctx, key)
		return err
	})
	return info, err
}

func (r *Retry) Get(ctx context.Context, key string, rg *Range) (b []byte, err error) {
	_, err = r.do(ctx, "get", key, func() error {
		b, err = r.s.Get(ctx, key, rg)
		return err
	})
	return b, err
}

func (r *Retry) GetInto(ctx context.Context, key string, buf []byte) (b []byte, err error) {
	_, err = r.do(ctx, "get", key, func() error {
		b, err = GetInto(ctx, r.s, key, buf)
		return err
	})
	return b, err
}

func (r *Retry) List(ctx context.Context, prefix string) (l []ObjectInfo, err error) {
	_, err = r.do(ctx, "list", prefix, func() error {
		l, err = r.s.List(ctx, prefix)
		return err
	})
	return l, err
}

func (r *Retry) Put(ctx context.Context, key string, data []byte, g Guard) (info ObjectInfo, err error) {
	ambiguous, err := r.do(ctx, "put", key, func() error {
		info, err = r.s.Put(ctx, key, data, g)
		return err
	})
	if !ambiguous || !errors.Is(err, ErrPreconditionFailed) {
		if errors.Is(err, ErrPreconditionFailed) {
			r.p.Log.Info("store precondition failed", "op", "put", "key", key, "guard", g.String())
		}
		return info, err
	}
	r.p.Log.Info("store precondition failed after an ambiguous attempt; checking whether ours landed", "op", "put", "key", key, "guard", g.String())
	if g.IsIfAbsent() {
		info, err = ConfirmIfAbsent(ctx, r.inner(), key, data, err)
		return info, opErr("put", key, err)
	}
	if _, ok := g.MatchETag(); ok {
		info, err = ConfirmIfMatch(ctx, r.inner(), key, data, err)
		return info, opErr("put", key, err)
	}
	return info, err
}

func (r *Retry) Delete(ctx context.Context, key string, g Guard) error {
	ambiguous, err := r.do(ctx, "delete", key, func() error { return r.s.Delete(ctx, key, g) })
	if !ambiguous && errors.Is(err, ErrPreconditionFailed) {
		r.p.Log.Info("store precondition failed", "op", "delete", "key", key, "guard", g.String())
	}
	if ambiguous && errors.Is(err, ErrPreconditionFailed) {
		r.p.Log.Info("store precondition failed after an ambiguous attempt; checking whether ours landed", "op", "delete", "key", key, "guard", g.String())
		if _, herr := r.inner().Head(ctx, key); errors.Is(herr, ErrNotFound) {
			return nil
		}
	}
	return err
}

// inner is the store the confirmation reads go to: the decorated one,
// retried, so a transient error there does not turn a success into a
// failure.
func (r *Retry) inner() Store { return &Retry{s: r.s, p: r.p} }

func (r *Retry) ListAfter(ctx context.Context, prefix, startAfter string) (l []ObjectInfo, err error) {
	_, err = r.do(ctx, "list", prefix, func() error {
		l, err = r.s.ListAfter(ctx, prefix, startAfter)
		return err
	})
	return l, err
}

// ListRange retries like ListAfter (RangeLister).
func (r *Retry) ListRange(ctx context.Context, prefix, startAfter, before string) (l []ObjectInfo, err error) {
	_, err = r.do(ctx, "list", prefix, func() error {
		l, err = ListRange(ctx, r.s, prefix, startAfter, before)
		return err
	})
	return l, err
}
