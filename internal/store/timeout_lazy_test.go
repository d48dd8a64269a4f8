package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
)

// polling is a store whose Head never waits on its context: it polls
// Err (as the file:// backend does) until the context ends, or answers at
// once when poll is false. It keeps the context it was given.
type polling struct {
	store.Store
	poll bool
	ctx  context.Context
}

func (p *polling) Head(ctx context.Context, key string) (store.ObjectInfo, error) {
	p.ctx = ctx
	for p.poll {
		if err := ctx.Err(); err != nil {
			return store.ObjectInfo{}, err
		}
		time.Sleep(time.Millisecond)
	}
	return store.ObjectInfo{Key: key}, ctx.Err()
}

// TestTimeoutMakesNoTimerForACallThatNeverWaits: a call whose store only
// polls Err (file://) costs one allocation under --request-timeout, no
// deadline timer (context.WithTimeout costs four: its context, timer and
// registration with the parent); such a call is still cut at the timeout
// with a RequestTimeoutError, and its context carries the deadline and
// ends with the call, as under WithTimeout.
func TestTimeoutMakesNoTimerForACallThatNeverWaits(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &polling{}
	s := store.WithTimeout(p, time.Minute)
	if n := testing.AllocsPerRun(200, func() { s.Head(parent, "k") }); n > 1 {
		t.Fatalf("%v allocations a call that never waits, want at most 1 (no timer)", n)
	}
	if d, ok := p.ctx.Deadline(); !ok || time.Until(d) > time.Minute || time.Until(d) < 50*time.Second {
		t.Fatalf("the call's context has deadline %v (%v), want about a minute from now", d, ok)
	}
	if !errors.Is(p.ctx.Err(), context.Canceled) {
		t.Fatalf("after the call its context says %v, want canceled", p.ctx.Err())
	}
	select {
	case <-p.ctx.Done():
	default:
		t.Fatal("the context of a call that ended is not done")
	}

	// Polling only, it is cut at the timeout all the same.
	p = &polling{poll: true}
	s = store.WithTimeout(p, 30*time.Millisecond)
	start := time.Now()
	_, err := s.Head(parent, "k")
	if !store.IsRequestTimeout(err) || time.Since(start) > 5*time.Second {
		t.Fatalf("a polling call after %v: %v, want a request timeout", time.Since(start), err)
	}
	// The caller's own cancellation is never taken for the timeout.
	gone, stop := context.WithCancel(parent)
	stop()
	s = store.WithTimeout(&polling{poll: true}, time.Minute)
	if _, err := s.Head(gone, "k"); !errors.Is(err, context.Canceled) || store.IsRequestTimeout(err) {
		t.Fatalf("a call under a cancelled context: %v", err)
	}

	// A context derived from the call's (as an HTTP client derives one)
	// ends when the deadline passes.
	w := &deriving{}
	s = store.WithTimeout(w, 30*time.Millisecond)
	if _, err := s.Head(parent, "k"); !store.IsRequestTimeout(err) || !errors.Is(w.err, context.DeadlineExceeded) {
		t.Fatalf("a derived context: %v (derived ended with %v)", err, w.err)
	}
}

// deriving waits on a context derived from the call's.
type deriving struct {
	store.Store
	err error
}

func (d *deriving) Head(ctx context.Context, key string) (store.ObjectInfo, error) {
	c, cancel := context.WithCancel(ctx)
	defer cancel()
	<-c.Done()
	d.err = c.Err()
	return store.ObjectInfo{}, c.Err()
}
