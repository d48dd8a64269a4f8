package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrHeld is what every *HeldError wraps: the lease is another live
// holder's (exit 4, blocked).
var ErrHeld = errors.New("lease held")

// Unwrap lets errors.Is(err, ErrHeld) find a held lease.
func (e *HeldError) Unwrap() error { return ErrHeld }

// PartitionName is the lease of one partition, "partitions/<topic>/<p>"
// (leases/partitions/<topic>/<p>.json): every command that changes a
// partition's documents or objects holds it while it does (docs/design.md,
// "Leases").
func PartitionName(tp layout.TopicPartition) string {
	return fmt.Sprintf("partitions/%s/%d", tp.Topic, tp.Partition)
}

// Options are how a command takes partition leases.
type Options struct {
	// Holder names this process (Holder()); one per command run.
	Holder string
	// TTL is how long a lease lasts between renewals (DefaultTTL if 0).
	TTL time.Duration
	// Wait bounds how long a held lease is waited for before *HeldError
	// (0: not waited for at all).
	Wait time.Duration
	// Log receives the leases' life at info level; nil logs nothing.
	Log *slog.Logger
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// DefaultTTL is a partition lease's life between renewals. A holder that
// dies is waited out for at most this long (at once on the same host and
// PID namespace, see holderDeadHere).
const DefaultTTL = 2 * time.Minute

// DefaultWait is how long a command waits for a partition another job
// holds before it reports that partition blocked.
const DefaultWait = 30 * time.Second

func (o Options) ttl() time.Duration {
	if o.TTL <= 0 {
		return DefaultTTL
	}
	return o.TTL
}

// AcquireWait takes the lease name, waiting up to o.Wait while another
// live holder has it (polling with a growing pause, at most 2s); the last
// *HeldError when the wait runs out.
func AcquireWait(ctx context.Context, st store.Store, name string, o Options) (*Lease, error) {
	deadline := time.Now().Add(o.Wait)
	pause := 50 * time.Millisecond
	for {
		l, err := AcquireLogged(ctx, st, name, o.Holder, o.ttl(), o.Now, o.Log)
		if err == nil || !errors.Is(err, ErrHeld) {
			return l, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, err
		}
		if pause > left {
			pause = left
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		if pause *= 2; pause > 2*time.Second {
			pause = 2 * time.Second
		}
	}
}

// Keep renews l in the background every third of its TTL until stop is
// called. The returned context is cancelled (with cause ErrLost, or the
// renewal's error) when a renewal fails, so work done under the lease
// stops before another holder can take it: a renewal is attempted twice
// within a TTL before the lease can expire. stop ends the renewals,
// cancels the returned context (so that it no longer hangs off ctx: a job
// over many partitions would keep one per partition) and returns the
// first renewal failure, if any.
func (l *Lease) Keep(ctx context.Context) (context.Context, func() error) {
	kctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var (
		once sync.Once
		wg   sync.WaitGroup
		ferr error
	)
	every := l.ttl / 3
	if every <= 0 {
		every = time.Second
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-kctx.Done():
				return
			case <-t.C:
				if err := l.Renew(kctx); err != nil {
					if kctx.Err() != nil {
						return
					}
					ferr = err
					cancel(err)
					return
				}
			}
		}
	}()
	stop := func() error {
		once.Do(func() { close(done); wg.Wait(); cancel(nil) })
		return ferr
	}
	return kctx, stop
}

// WithPartition runs fn while holding tp's lease: taken (waiting up to
// o.Wait), renewed in the background, released when fn returns. fn's
// context is cancelled if the lease is lost; the error then wraps ErrLost.
// A lease another job holds past the wait is a *HeldError (exit 4).
func WithPartition(ctx context.Context, st store.Store, tp layout.TopicPartition, o Options, fn func(ctx context.Context) error) error {
	return With(ctx, st, PartitionName(tp), o, fn)
}

// With is WithPartition for any lease name.
func With(ctx context.Context, st store.Store, name string, o Options, fn func(ctx context.Context) error) error {
	if o.Holder == "" {
		o.Holder = Holder()
	}
	l, err := AcquireWait(ctx, st, name, o)
	if err != nil {
		return err
	}
	kctx, stop := l.Keep(ctx)
	ferr := fn(kctx)
	lost := stop()
	rerr := l.Release(context.WithoutCancel(ctx))
	switch {
	case lost != nil:
		return fmt.Errorf("%w (the work under it was stopped: %v)", lost, ferr)
	case ferr != nil:
		return ferr
	}
	return rerr
}
