package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

// clock is a settable test clock.
type clock struct{ t atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.t.Store(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	return c
}
func (c *clock) now() time.Time      { return time.UnixMilli(c.t.Load()) }
func (c *clock) add(d time.Duration) { c.t.Add(d.Milliseconds()) }
func (c *clock) at(d time.Duration) func() time.Time {
	return func() time.Time { return c.now().Add(d) }
}

// stores returns a fresh mem:// and file:// store.
func stores(t *testing.T) map[string]store.Store {
	t.Helper()
	fs, err := store.NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]store.Store{"mem": store.NewMem("lease-test"), "file": fs}
}

func load(t *testing.T, st store.Store, name string) layout.Lease {
	t.Helper()
	var l layout.Lease
	if _, err := layout.Load(context.Background(), st, layout.LeaseKey(name), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func wantHeld(t *testing.T, err error, holder string) {
	t.Helper()
	var he *HeldError
	if !errors.As(err, &he) {
		t.Fatalf("got %v, want the lease held by %s", err, holder)
	}
	if he.Holder != holder {
		t.Fatalf("held by %q, want %q", he.Holder, holder)
	}
}

// TestExpiryAndTakeover: a live lease refuses a second holder, naming the
// holder and its expiry; once expired it is taken over, and the first
// holder's renewal then reports the loss.
func TestExpiryAndTakeover(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			a, err := Acquire(ctx, st, "job", "host-a/pid-1", 10*time.Second, c.now, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := a.Expires(), c.now().Add(10*time.Second); !got.Equal(want) {
				t.Fatalf("expires %v, want %v", got, want)
			}
			c.add(9 * time.Second)
			_, err = Acquire(ctx, st, "job", "host-b/pid-2", 10*time.Second, c.now, nil)
			wantHeld(t, err, "host-a/pid-1")
			var he *HeldError
			errors.As(err, &he)
			if !he.Until.Equal(a.Expires()) {
				t.Fatalf("held until %v, want %v", he.Until, a.Expires())
			}
			c.add(time.Second) // exactly at expiry: no longer held
			b, err := Acquire(ctx, st, "job", "host-b/pid-2", 10*time.Second, c.now, nil)
			if err != nil {
				t.Fatalf("take over an expired lease: %v", err)
			}
			if got := load(t, st, "job"); got.Holder != "host-b/pid-2" {
				t.Fatalf("stored holder %q after takeover", got.Holder)
			}
			if err := a.Renew(ctx); !errors.Is(err, ErrLost) {
				t.Fatalf("renew by the old holder: %v, want ErrLost", err)
			}
			// The old holder's release leaves the new holder's lease alone.
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if got := load(t, st, "job"); got.Holder != "host-b/pid-2" {
				t.Fatalf("old holder's release removed the new lease: %+v", got)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Head(ctx, layout.LeaseKey("job")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("released lease still there: %v", err)
			}
		})
	}
}

// TestRenewExtends: a renewal moves the expiry by a whole TTL from the
// renewal time, so a second holder stays out past the original expiry.
func TestRenewExtends(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			a, err := Acquire(ctx, st, "job", "a", 10*time.Second, c.now, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.add(8 * time.Second)
			if err := a.Renew(ctx); err != nil {
				t.Fatal(err)
			}
			if got, want := load(t, st, "job").ExpiresMs, c.now().Add(10*time.Second).UnixMilli(); got != want {
				t.Fatalf("stored expiry %d, want %d", got, want)
			}
			c.add(5 * time.Second) // past the first expiry, inside the renewed one
			_, err = Acquire(ctx, st, "job", "b", 10*time.Second, c.now, nil)
			wantHeld(t, err, "a")
			if err := a.Renew(ctx); err != nil {
				t.Fatalf("second renewal: %v", err)
			}
			c.add(11 * time.Second)
			if _, err := Acquire(ctx, st, "job", "b", 10*time.Second, c.now, nil); err != nil {
				t.Fatalf("after the renewed expiry: %v", err)
			}
		})
	}
}

// TestLostRenewalRereads: a renewal lands but its response is lost; the
// holder's next renewal meets a failed If-Match on its stale ETag. That is
// not a takeover: Renew re-reads the lease, sees it is still ours, renews,
// and Release then deletes it.
func TestLostRenewalRereads(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			f := faultstore.New(st)
			a, err := Acquire(ctx, f, "job", "a", 10*time.Second, c.now, nil)
			if err != nil {
				t.Fatal(err)
			}
			f.LoseResponseNth(store.VerbPut, 1, "leases/")
			c.add(6 * time.Second)
			if err := a.Renew(ctx); !errors.Is(err, faultstore.ErrInjected) {
				t.Fatalf("renewal with a lost response: %v", err)
			}
			if f.Fired() != 1 {
				t.Fatalf("%d faults fired, want 1", f.Fired())
			}
			if got, want := load(t, st, "job").ExpiresMs, c.now().Add(10*time.Second).UnixMilli(); got != want {
				t.Fatalf("the lost renewal did not land: expiry %d, want %d", got, want)
			}
			c.add(2 * time.Second)
			if err := a.Renew(ctx); err != nil {
				t.Fatalf("renewal after a lost response: %v (the lease is still ours)", err)
			}
			if got, want := load(t, st, "job").ExpiresMs, c.now().Add(10*time.Second).UnixMilli(); got != want {
				t.Fatalf("expiry %d, want %d", got, want)
			}
			_, err = Acquire(ctx, st, "job", "b", 10*time.Second, c.now, nil)
			wantHeld(t, err, "a")

			// Lose the next renewal's response again, then release with
			// the stale ETag: the lease is still ours and goes.
			f.LoseResponseNth(store.VerbPut, 1, "leases/")
			if err := a.Renew(ctx); !errors.Is(err, faultstore.ErrInjected) {
				t.Fatalf("renewal with a lost response: %v", err)
			}
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Head(ctx, layout.LeaseKey("job")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("lease still there after release: %v", err)
			}
		})
	}
}

// TestDeadHolderHere: a lease whose holder is a process of this host,
// PID namespace and boot that no longer exists is taken over at once; the
// same process id from another host or another PID namespace is waited out
// (its pid means nothing here), as is a live process of this host.
func TestDeadHolderHere(t *testing.T) {
	if scope() == "unknown" {
		t.Skip("this platform does not name PID namespaces; dead holders are waited out")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid // reaped: no such process now
	host, _ := os.Hostname()
	live := os.Getppid()
	cases := []struct {
		holder   string
		takeOver bool
	}{
		{fmt.Sprintf("%s/pid-%d/%s/n1", host, dead, scope()), true},
		{fmt.Sprintf("other-%s/pid-%d/%s/n1", host, dead, scope()), false},
		{fmt.Sprintf("%s/pid-%d/pidns-1.boot-000000000000/n1", host, dead), false},
		{fmt.Sprintf("%s/pid-%d/%s/n1", host, live, scope()), false},
		{fmt.Sprintf("%s/pid-%d", host, dead), false}, // no scope: cannot tell
	}
	for name, st := range stores(t) {
		for i, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				ctx := context.Background()
				c := newClock()
				lname := fmt.Sprintf("job-%d", i)
				if _, err := Acquire(ctx, st, lname, tc.holder, time.Hour, c.now, nil); err != nil {
					t.Fatal(err)
				}
				_, err := Acquire(ctx, st, lname, Holder(), time.Hour, c.now, nil)
				if tc.takeOver {
					if err != nil {
						t.Fatalf("dead holder %s not taken over: %v", tc.holder, err)
					}
					return
				}
				wantHeld(t, err, tc.holder)
			})
		}
	}
}

// TestHolderIDs: Holder names host, pid and scope, and two calls in one
// process are distinct holders (so two jobs in one process exclude each
// other too).
func TestHolderIDs(t *testing.T) {
	a, b := Holder(), Holder()
	if a == b {
		t.Fatalf("two Holder() calls gave the same id %q", a)
	}
	host, _ := os.Hostname()
	if want := fmt.Sprintf("%s/pid-%d/%s/", host, os.Getpid(), scope()); len(a) <= len(want) || a[:len(want)] != want {
		t.Fatalf("holder %q, want the prefix %q", a, want)
	}
	st := store.NewMem("holders")
	ctx := context.Background()
	if _, err := Acquire(ctx, st, "job", a, time.Hour, nil, nil); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(ctx, st, "job", b, time.Hour, nil, nil)
	wantHeld(t, err, a)
}

// TestNeverTwoHolders races acquirers for one lease, on mem:// and
// file://: for a fresh lease (IfAbsent) and for an expired one (takeover
// If-Match), exactly one acquirer wins each round, and the stored lease
// names the winner.
func TestNeverTwoHolders(t *testing.T) {
	const rounds, racers = 25, 6
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			for r := range rounds {
				lname := fmt.Sprintf("race-%d", r)
				if r%2 == 1 {
					// An expired lease left by a crashed run.
					if _, err := Acquire(ctx, st, lname, "crashed", time.Second, c.at(-time.Hour), nil); err != nil {
						t.Fatal(err)
					}
				}
				won := make([]*Lease, racers)
				var g errgroup.Group
				g.SetLimit(racers)
				start := make(chan struct{})
				for i := range racers {
					g.Go(func() error {
						<-start
						l, err := Acquire(ctx, st, lname, fmt.Sprintf("racer-%d", i), time.Hour, c.now, nil)
						var he *HeldError
						switch {
						case err == nil:
							won[i] = l
						case errors.As(err, &he):
						default:
							return err
						}
						return nil
					})
				}
				close(start)
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
				winner := -1
				for i, l := range won {
					if l == nil {
						continue
					}
					if winner >= 0 {
						t.Fatalf("round %d: racers %d and %d both hold %s", r, winner, i, lname)
					}
					winner = i
				}
				if winner < 0 {
					t.Fatalf("round %d: nobody holds %s", r, lname)
				}
				if got := load(t, st, lname).Holder; got != fmt.Sprintf("racer-%d", winner) {
					t.Fatalf("round %d: stored holder %q, winner racer-%d", r, got, winner)
				}
				// Only the winner can renew.
				if err := won[winner].Renew(ctx); err != nil {
					t.Fatalf("round %d: winner's renewal: %v", r, err)
				}
			}
		})
	}
}
