package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrHeld is what every *HeldError wraps: the lease is another live
// holder's (exit 4, blocked).
var ErrHeld = errors.New("lease held")

// ErrCorruptLease marks a lease document that does not decode (with the
// document's own error): it blocks every job that needs the lease until
// 'nereusctl lease break' removes it.
var ErrCorruptLease = errors.New("corrupt lease")

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
	// Holder names the holder of the acquisitions made with these
	// options: With gives each acquisition an id of its own, a fresh
	// Holder() when empty, else this id with a fresh nonce, so two jobs of
	// one process are distinct holders and exclude each other. A live
	// lease is never re-entered, whatever holder it names.
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
		l, err := Acquire(ctx, st, name, o.Holder, o.ttl(), o.Now, o.Log)
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
// called, and bounds the work done under it in time. The returned context
// (which carries l: FromContext, Fence) is cancelled with a cause wrapping
// ErrLost:
//
//   - at once when a renewal finds the lease taken over;
//   - when the time the holder may act on the lease runs out (ValidUntil:
//     the last confirmed write's send time plus TTL - Margin) before a
//     renewal was confirmed, whatever a renewal under way is doing: the
//     work stops before another holder can take the lease over, with
//     ErrExpired (and the last renewal's error, if one failed).
//
// Each renewal runs under a deadline of its own, the time left until
// ValidUntil, so a stalled store cannot hold one past the point where it
// could no longer help; a renewal that fails otherwise is tried again at
// the next tick while time is left. stop ends the renewals and cancels the
// returned context (so that it no longer hangs off ctx: a job over many
// partitions would keep one per partition) without waiting for a renewal
// still under way (a call that ignores its context included), and returns
// the cause the work was stopped with, if any.
func (l *Lease) Keep(ctx context.Context) (context.Context, func() error) {
	base, cancel := context.WithCancelCause(ctx)
	kctx := context.WithValue(base, ctxKey{}, l)
	var (
		mu    sync.Mutex
		cause error // why the work was stopped (nil: it was not)
		last  error // the last renewal failure
	)
	stopWith := func(err error) {
		mu.Lock()
		if cause == nil {
			cause = err
		}
		mu.Unlock()
		cancel(err)
	}
	// The watchdog: fires at ValidUntil, moved on by each confirmed
	// renewal, independent of the renewal calls.
	done := make(chan struct{})
	var watchdog *time.Timer
	expire := func() {
		select {
		case <-done:
			return // stopped: the work is over
		default:
		}
		if left := time.Until(l.ValidUntil()); left > 0 {
			watchdog.Reset(left) // a renewal confirmed meanwhile
			return
		}
		mu.Lock()
		why := last
		mu.Unlock()
		err := fmt.Errorf("lease %s: %w: the work was stopped %s before the lease's expiry (the margin), no renewal having been confirmed", l.name, ErrExpired, Margin(l.ttl))
		if why != nil {
			err = fmt.Errorf("%w; last renewal: %v", err, why)
		}
		stopWith(err)
	}
	watchdog = time.AfterFunc(time.Hour, expire)
	watchdog.Reset(max(time.Until(l.ValidUntil()), 0))
	every := l.ttl / 3
	if every <= 0 {
		every = time.Second
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-kctx.Done():
				return
			case <-t.C:
			}
			valid := l.ValidUntil()
			rctx, rcancel := context.WithDeadline(kctx, valid)
			err := l.Renew(rctx)
			rcancel()
			select {
			case <-done:
				return // stopped meanwhile: the timer stays stopped
			default:
			}
			switch {
			case err == nil:
				watchdog.Reset(max(time.Until(l.ValidUntil()), 0))
			case errors.Is(err, ErrLost):
				stopWith(err)
				return
			case kctx.Err() != nil:
				return
			default:
				// Transient, or cut at the deadline: tried again at the
				// next tick; the watchdog stops the work if none lands.
				mu.Lock()
				last = err
				mu.Unlock()
				if time.Now().After(valid) {
					expire()
				}
			}
		}
	}()
	var once sync.Once
	stop := func() error {
		once.Do(func() {
			close(done)
			watchdog.Stop()
			cancel(nil)
		})
		mu.Lock()
		defer mu.Unlock()
		return cause
	}
	return kctx, stop
}

// ctxKey is the context key of the lease work runs under (Keep).
type ctxKey struct{}

// FromContext is the lease the work of ctx runs under (Keep, With), or
// nil.
func FromContext(ctx context.Context) *Lease {
	l, _ := ctx.Value(ctxKey{}).(*Lease)
	return l
}

// Fence proves, before the destructive step named step, that the work of
// ctx may still act on the lease it runs under (Lease.Prove); an error
// wrapping ErrLost when it may not, or when ctx carries no lease at all
// (the caller promised one). Its signature is what the fenced packages'
// options take (gc, compaction, repair, the trim sequence), which need not
// import this package.
func Fence(ctx context.Context, step string) error {
	l := FromContext(ctx)
	if l == nil {
		return fmt.Errorf("%s: %w: no lease is held for it", step, ErrLost)
	}
	if err := l.Prove(ctx); err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	return nil
}

// WithPartition runs fn while holding tp's lease: taken (waiting up to
// o.Wait), renewed in the background, released when fn returns. fn's
// context is cancelled if the lease is lost or not renewed in time; the
// error then wraps ErrLost. A lease another job holds past the wait is a
// *HeldError (exit 4).
func WithPartition(ctx context.Context, st store.Store, tp layout.TopicPartition, o Options, fn func(ctx context.Context) error) error {
	return With(ctx, st, PartitionName(tp), o, fn)
}

// maxRelease bounds a release: a lease not released is waited out by the
// next holder (at most its TTL), so a stalled store never holds the
// command's end for longer.
const maxRelease = 10 * time.Second

// With is WithPartition for any lease name. Each call is an acquisition of
// its own, with a holder id of its own: a fresh Holder(), or o.Holder with
// a fresh nonce (acquisitionHolder).
func With(ctx context.Context, st store.Store, name string, o Options, fn func(ctx context.Context) error) error {
	o.Holder = acquisitionHolder(o.Holder)
	l, err := AcquireWait(ctx, st, name, o)
	if err != nil {
		return err
	}
	kctx, stop := l.Keep(ctx)
	ferr := fn(kctx)
	lost := stop()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(o.ttl(), maxRelease))
	rerr := l.Release(rctx)
	cancel()
	switch {
	case lost != nil:
		return fmt.Errorf("%w (the work under it was stopped: %v)", lost, ferr)
	case ferr != nil:
		return ferr
	}
	return rerr
}

// acquisitionHolder is the holder id of one acquisition: a fresh Holder()
// for "", h with its nonce replaced by a fresh one when h is a Holder()
// id, else h (a test's name). Two acquisitions with one holder id are
// indistinguishable: a lease document naming our holder and acquisition
// time is taken as our own write whose response was lost (store
// ConfirmIfAbsent), so the id must be the acquisition's, not the
// process's.
func acquisitionHolder(h string) string {
	if h == "" {
		return Holder()
	}
	if parts := strings.Split(h, "/"); len(parts) == 4 && strings.HasPrefix(parts[1], "pid-") {
		parts[3] = nonce()
		return strings.Join(parts, "/")
	}
	return h
}

// PartitionOf is the partition a lease name names (PartitionName), if it
// is a partition lease.
func PartitionOf(name string) (layout.TopicPartition, bool) {
	rest, ok := strings.CutPrefix(name, "partitions/")
	if !ok {
		return layout.TopicPartition{}, false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return layout.TopicPartition{}, false
	}
	p, err := strconv.ParseInt(rest[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != rest[i+1:] {
		return layout.TopicPartition{}, false
	}
	return layout.TopicPartition{Topic: rest[:i], Partition: int32(p)}, true
}

// corruptHint gives a failure to read lease name that is a document that
// does not decode its hint: break it (the lease runbook).
func corruptHint(name string, err error) error {
	if !errors.Is(err, layout.ErrCorruptDocument) && !errors.Is(err, layout.ErrLegacyDocument) && !errors.Is(err, store.ErrTooLarge) {
		return err
	}
	what := "--name " + name
	if tp, ok := PartitionOf(name); ok {
		what = tp.String()
	}
	return errkind.MarkHint(fmt.Errorf("%w: %w", ErrCorruptLease, err), errkind.Corrupt, fmt.Sprintf("the lease document %s does not decode and blocks every job that needs it; break it with 'nereusctl lease break %s' (docs/runbooks/leases.md)", layout.LeaseKey(name), what))
}
