package lease

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nereusctl/nereusctl/internal/layout"
)

// TestWithPartitionExcludes: of jobs on one partition at once, never two
// are inside fn together, and every one runs once the others release
// (each waits its turn); jobs on other partitions are not held up.
func TestWithPartitionExcludes(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			tp := layout.TopicPartition{Topic: "orders", Partition: 3}
			var inside, maxInside, runs atomic.Int32
			var g errgroup.Group
			for range 4 {
				g.Go(func() error {
					return WithPartition(context.Background(), st, tp, Options{Holder: Holder(), Wait: 20 * time.Second}, func(ctx context.Context) error {
						n := inside.Add(1)
						for {
							m := maxInside.Load()
							if n <= m || maxInside.CompareAndSwap(m, n) {
								break
							}
						}
						time.Sleep(30 * time.Millisecond)
						inside.Add(-1)
						runs.Add(1)
						return nil
					})
				})
			}
			// Another partition while they queue: taken at once.
			other := layout.TopicPartition{Topic: "orders", Partition: 4}
			if err := WithPartition(context.Background(), st, other, Options{Holder: Holder()}, func(context.Context) error { return nil }); err != nil {
				t.Fatalf("other partition: %v", err)
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if maxInside.Load() != 1 || runs.Load() != 4 {
				t.Fatalf("max %d inside at once over %d runs; want 1 over 4", maxInside.Load(), runs.Load())
			}
			if _, err := st.Head(context.Background(), layout.LeaseKey(PartitionName(tp))); err == nil {
				t.Fatal("lease left behind after every holder released")
			}
		})
	}
}

// TestAcquireWaitBounded: a live holder's lease is waited for no longer
// than Wait, then reported held (ErrHeld, naming the holder).
func TestAcquireWaitBounded(t *testing.T) {
	st := stores(t)["mem"]
	name := PartitionName(layout.TopicPartition{Topic: "t", Partition: 0})
	first, err := Acquire(context.Background(), st, name, "other-host/pid-1/unknown/x", time.Minute, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = AcquireWait(context.Background(), st, name, Options{Holder: Holder(), Wait: 300 * time.Millisecond})
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("got %v, want ErrHeld", err)
	}
	wantHeld(t, err, "other-host/pid-1/unknown/x")
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("gave up after %s, before the wait", d)
	}
	// Released during a wait: taken.
	go func() { time.Sleep(100 * time.Millisecond); first.Release(context.Background()) }()
	l, err := AcquireWait(context.Background(), st, name, Options{Holder: Holder(), Wait: 10 * time.Second})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l.Release(context.Background())
}

// TestKeepRenewsAndStopsOnLoss: a kept lease is renewed past its TTL; when
// another holder takes it over, the work's context is cancelled and
// WithPartition reports ErrLost.
func TestKeepRenewsAndStopsOnLoss(t *testing.T) {
	st := stores(t)["mem"]
	tp := layout.TopicPartition{Topic: "t", Partition: 1}
	name := PartitionName(tp)
	// A TTL of a second (the shortest --lease-ttl): renewals every third of
	// it keep the lease alive even on a loaded machine (300 ms failed now
	// and then under a parallel suite).
	ttl := time.Second
	err := WithPartition(context.Background(), st, tp, Options{Holder: "me/pid-1/unknown/a", TTL: ttl}, func(ctx context.Context) error {
		time.Sleep(2 * ttl) // renewed meanwhile: still ours
		me := FromContext(ctx).Holder()
		if !strings.HasPrefix(me, "me/pid-1/unknown/") {
			t.Errorf("acquired as %q, want the options' holder with a nonce", me)
		}
		if cur := load(t, st, name); cur.Holder != me || time.UnixMilli(cur.ExpiresMs).Before(time.Now()) {
			t.Errorf("lease not kept alive: %+v", cur)
		}
		// Another holder takes it over (as if ours had expired).
		doc := load(t, st, name)
		doc.Holder = "thief/pid-2/unknown/b"
		etag := ""
		if info, err := st.Head(ctx, layout.LeaseKey(name)); err == nil {
			etag = info.ETag
		}
		if _, err := layout.Replace(ctx, st, layout.LeaseKey(name), &doc, etag); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * ttl):
			t.Error("work not stopped after the lease was lost")
			return nil
		}
	})
	if !errors.Is(err, ErrLost) {
		t.Fatalf("got %v, want ErrLost", err)
	}
	if cur := load(t, st, name); cur.Holder != "thief/pid-2/unknown/b" {
		t.Fatalf("the loser released the new holder's lease: %+v", cur)
	}
}
