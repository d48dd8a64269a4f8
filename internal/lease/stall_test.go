package lease

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// stallStore hangs every PUT of a lease once stalled is set: until
// release is closed, whatever the call's context says (a store that
// ignores its deadline), or, with honour, until the context ends. It
// records the deadline each stalled PUT was given.
type stallStore struct {
	store.Store
	stalled   atomic.Bool
	honour    bool
	release   chan struct{}
	mu        sync.Mutex
	deadlines []time.Time
	calls     atomic.Int32
}

func (s *stallStore) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	if s.stalled.Load() && strings.HasPrefix(key, layout.LeasesPrefix) {
		s.calls.Add(1)
		d, ok := ctx.Deadline()
		s.mu.Lock()
		if ok {
			s.deadlines = append(s.deadlines, d)
		} else {
			s.deadlines = append(s.deadlines, time.Time{})
		}
		s.mu.Unlock()
		if s.honour {
			select {
			case <-ctx.Done():
				return store.ObjectInfo{}, ctx.Err()
			case <-s.release:
			}
		} else {
			<-s.release
		}
	}
	return s.Store.Put(ctx, key, data, g)
}

// TestStalledStoreStopsTheWork is the stalled-store probe: with every
// renewal hanging (a store that ignores the call's context), the work's
// context is cancelled before the lease's expiry, at expiry less the
// margin, and the command ends at once: stop waits for no hung call. The
// renewal that lands after the release recreates no lease. Before, the
// work ran on past the expiry (a renewal could take --request-timeout x
// retries) and stop waited for the hung renewal.
func TestStalledStoreStopsTheWork(t *testing.T) {
	st := &stallStore{Store: store.NewMem(t.Name()), release: make(chan struct{})}
	defer close(st.release)
	tp := layout.TopicPartition{Topic: "t", Partition: 0}
	ttl := 600 * time.Millisecond
	var acquired, cancelled time.Time
	var expires time.Time
	var cause error
	start := time.Now()
	err := WithPartition(context.Background(), st, tp, Options{TTL: ttl}, func(ctx context.Context) error {
		acquired = time.Now()
		expires = FromContext(ctx).Expires()
		st.stalled.Store(true)
		select {
		case <-ctx.Done():
			cancelled = time.Now()
			cause = context.Cause(ctx)
			return ctx.Err()
		case <-time.After(10 * ttl):
			t.Error("the work was not stopped while no renewal landed")
			return nil
		}
	})
	ended := time.Now()
	if !errors.Is(err, ErrExpired) || !errors.Is(err, ErrLost) {
		t.Fatalf("WithPartition: %v, want ErrExpired (an ErrLost)", err)
	}
	if !errors.Is(cause, ErrExpired) {
		t.Fatalf("the work's context was cancelled with %v, want ErrExpired", cause)
	}
	if st.calls.Load() == 0 {
		t.Fatal("no renewal was attempted")
	}
	if !cancelled.Before(expires) {
		t.Fatalf("work cancelled at %s, not before the lease's expiry %s", cancelled.Format(time.StampMilli), expires.Format(time.StampMilli))
	}
	if lo := acquired.Add(ttl - Margin(ttl) - 50*time.Millisecond); cancelled.Before(lo) {
		t.Fatalf("work cancelled %s after the acquisition, want about %s (TTL less the margin)", cancelled.Sub(acquired), ttl-Margin(ttl))
	}
	if d := ended.Sub(cancelled); d > 200*time.Millisecond {
		t.Fatalf("WithPartition returned %s after the work stopped: it waited on the hung renewal", d)
	}
	t.Logf("acquired +%s, cancelled +%s, expiry +%s, returned +%s", acquired.Sub(start), cancelled.Sub(start), expires.Sub(start), ended.Sub(start))
	// The lease was released; the hung renewal, let go now, finds its
	// If-Match target gone and recreates nothing.
	if _, err := st.Store.Head(context.Background(), layout.LeaseKey(PartitionName(tp))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lease after the release: %v, want none", err)
	}
}

// TestRenewalBoundedByTheLease: each renewal runs under a deadline of its
// own no later than the time the holder may act on the lease (expiry less
// the margin), not the request timeout times the retries; one cut at its
// deadline stops the work before the expiry.
func TestRenewalBoundedByTheLease(t *testing.T) {
	st := &stallStore{Store: store.NewMem(t.Name()), honour: true, release: make(chan struct{})}
	defer close(st.release)
	ctx := context.Background()
	ttl := 600 * time.Millisecond
	l, err := Acquire(ctx, st, "job", Holder(), ttl, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	valid := l.ValidUntil()
	if lim := l.Expires(); !valid.Before(lim) {
		t.Fatalf("valid until %s, not before the expiry %s", valid, lim)
	}
	st.stalled.Store(true)
	kctx, stop := l.Keep(ctx)
	select {
	case <-kctx.Done():
	case <-time.After(5 * ttl):
		t.Fatal("work not stopped")
	}
	if err := stop(); !errors.Is(err, ErrExpired) {
		t.Fatalf("stop: %v, want ErrExpired", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.deadlines) == 0 {
		t.Fatal("no renewal attempted")
	}
	for i, d := range st.deadlines {
		if d.IsZero() {
			t.Fatalf("renewal %d ran without a deadline", i)
		}
		if d.After(valid) {
			t.Fatalf("renewal %d's deadline %s is past the time the holder may act (%s)", i, d.Format(time.StampMilli), valid.Format(time.StampMilli))
		}
	}
}

// TestProveBoundsTheHolder: a holder proves its lease while its last
// confirmed write leaves more than the margin, and no longer once it sat
// still past that (a process paused by SIGSTOP, whose renewals could not
// run): Prove then fails with ErrExpired although the work's context was
// never cancelled. A renewal restores the proof.
func TestProveBoundsTheHolder(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	ttl := 400 * time.Millisecond
	l, err := Acquire(ctx, st, "job", Holder(), ttl, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Prove(ctx); err != nil {
		t.Fatalf("fresh lease: %v", err)
	}
	time.Sleep(ttl - Margin(ttl) + 20*time.Millisecond) // no Keep: paused
	if err := l.Prove(ctx); !errors.Is(err, ErrExpired) {
		t.Fatalf("after sitting past the margin: %v, want ErrExpired", err)
	}
	if err := Fence(context.WithValue(ctx, ctxKey{}, l), "gc delete"); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "gc delete") {
		t.Fatalf("Fence: %v, want ErrExpired naming the step", err)
	}
	if err := Fence(ctx, "gc delete"); !errors.Is(err, ErrLost) {
		t.Fatalf("Fence without a lease: %v, want ErrLost", err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Prove(ctx); err != nil {
		t.Fatalf("after a renewal: %v", err)
	}
}

// TestNeverReentersALiveLease: a live lease is refused even to an
// acquirer naming the same holder (two jobs of one process sharing a
// holder id), and WithPartition makes each acquisition a holder of its
// own. Before, a matching holder took over even a live lease, so two
// goroutines of one command both held one partition.
func TestNeverReentersALiveLease(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	h := Holder()
	a, err := Acquire(ctx, st, "job", h, time.Hour, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // another acquisition time: not our own lost write
	_, err = Acquire(ctx, st, "job", h, time.Hour, nil, nil)
	wantHeld(t, err, h)
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}

	tp := layout.TopicPartition{Topic: "t", Partition: 7}
	inside := make(chan struct{})
	out := make(chan struct{})
	var first string
	go func() {
		_ = WithPartition(ctx, st, tp, Options{}, func(ctx context.Context) error {
			first = FromContext(ctx).Holder()
			close(inside)
			<-out
			return nil
		})
	}()
	<-inside
	err = WithPartition(ctx, st, tp, Options{}, func(context.Context) error { return nil })
	close(out)
	wantHeld(t, err, first)
	// The same holder id given to both: each acquisition gets a nonce of
	// its own, still one at a time.
	o := Options{Holder: Holder()}
	inside2 := make(chan struct{})
	out2 := make(chan struct{})
	go func() {
		_ = WithPartition(ctx, st, layout.TopicPartition{Topic: "t", Partition: 8}, o, func(context.Context) error {
			close(inside2)
			<-out2
			return nil
		})
	}()
	<-inside2
	err = WithPartition(ctx, st, layout.TopicPartition{Topic: "t", Partition: 8}, o, func(context.Context) error { return nil })
	close(out2)
	var he *HeldError
	if !errors.As(err, &he) || he.Holder == o.Holder || he.Holder[:strings.LastIndexByte(he.Holder, '/')] != o.Holder[:strings.LastIndexByte(o.Holder, '/')] {
		t.Fatalf("second acquisition with holder %s: %v, want held by the first, under a nonce of its own", o.Holder, err)
	}
}
