package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestBreakRefusesALiveHolder: Break removes an expired, dead or corrupt
// lease and refuses a live one (ErrLive, naming the holder), which is
// left as it was; a missing lease is nothing to break.
func TestBreakRefusesALiveHolder(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	now := time.Now()
	tp := func(p int32) string { return PartitionName(layout.TopicPartition{Topic: "t", Partition: p}) }

	live, err := Acquire(ctx, st, tp(0), "other-host/pid-1/unknown/x", time.Hour, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(ctx, st, tp(1), "other-host/pid-2/unknown/y", time.Second, func() time.Time { return now.Add(-time.Hour) }, nil); err != nil {
		t.Fatal(err)
	}
	if scope() != "unknown" {
		c := exec.Command(os.Args[0], "-test.run=^$")
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		if _, err := Acquire(ctx, st, tp(2), fmt.Sprintf("%s/pid-%d/%s/n", host, c.Process.Pid, scope()), time.Hour, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(ctx, layout.LeaseKey(tp(3)), []byte(`{"name": 3}`), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}

	ls, err := List(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, in := range ls {
		states[in.Name] = in.State
	}
	want := map[string]string{tp(0): StateLive, tp(1): StateExpired, tp(3): StateCorrupt}
	if scope() != "unknown" {
		want[tp(2)] = StateDead
	}
	for name, w := range want {
		if states[name] != w {
			t.Fatalf("lease %s listed %q, want %q (all: %v)", name, states[name], w, states)
		}
	}

	_, err = Break(ctx, st, tp(0), now)
	if !errors.Is(err, ErrLive) || !errkind.Is(err, errkind.Blocked) || !strings.Contains(err.Error(), "other-host/pid-1/unknown/x") {
		t.Fatalf("break of a live lease: %v, want ErrLive naming the holder", err)
	}
	if err := live.Renew(ctx); err != nil {
		t.Fatalf("the live holder lost its lease to a refused break: %v", err)
	}
	for name := range want {
		if name == tp(0) {
			continue
		}
		in, err := Break(ctx, st, name, now)
		if err != nil || in == nil || in.State != want[name] {
			t.Fatalf("break %s: %+v %v", name, in, err)
		}
		if _, err := st.Head(ctx, layout.LeaseKey(name)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s still there after its break: %v", name, err)
		}
		// Broken: a job takes the partition at once.
		l, err := Acquire(ctx, st, name, Holder(), time.Minute, nil, nil)
		if err != nil {
			t.Fatalf("acquire %s after its break: %v", name, err)
		}
		_ = l.Release(ctx)
	}
	if in, err := Break(ctx, st, tp(9), now); in != nil || err != nil {
		t.Fatalf("break of no lease: %+v %v, want nothing", in, err)
	}
}

// renewBeforeDelete renews the lease just before Break's delete reaches
// the store: the break's If-Match must then fail and the lease, live again,
// be refused.
type renewBeforeDelete struct {
	store.Store
	renew func()
}

func (s *renewBeforeDelete) Delete(ctx context.Context, key string, g store.Guard) error {
	if s.renew != nil {
		s.renew()
		s.renew = nil
	}
	return s.Store.Delete(ctx, key, g)
}

// TestBreakNeverBreaksARenewal: an expired lease whose holder renews it
// between Break's read and its delete is not broken (the delete is guarded
// by the ETag judged); judged again, it is live and refused.
func TestBreakNeverBreaksARenewal(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMem(t.Name())
	c := newClock()
	l, err := Acquire(ctx, mem, "job", "other-host/pid-1/unknown/x", time.Minute, c.now, nil)
	if err != nil {
		t.Fatal(err)
	}
	judged := c.now().Add(2 * time.Minute) // expired by this clock
	st := &renewBeforeDelete{Store: mem, renew: func() {
		c.add(2 * time.Minute)
		if err := l.Renew(ctx); err != nil {
			t.Error(err)
		}
	}}
	_, err = Break(ctx, st, "job", judged)
	if !errors.Is(err, ErrLive) {
		t.Fatalf("break over a renewal: %v, want ErrLive", err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("the renewed lease was broken: %v", err)
	}
}

// TestCorruptLeaseHintNamesBreak: an acquirer that meets a lease document
// that does not decode fails with corruption and a hint naming 'lease
// break' for the partition.
func TestCorruptLeaseHintNamesBreak(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	name := PartitionName(layout.TopicPartition{Topic: "orders", Partition: 4})
	if _, err := st.Put(ctx, layout.LeaseKey(name), []byte("{not json"), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(ctx, st, name, Holder(), time.Minute, nil, nil)
	if !errors.Is(err, layout.ErrCorruptDocument) || !errkind.Is(err, errkind.Corrupt) {
		t.Fatalf("acquire over a corrupt lease: %v", err)
	}
	if h := errkind.HintOf(err); !strings.Contains(h, "nereusctl lease break orders-4") {
		t.Fatalf("hint %q does not name 'nereusctl lease break orders-4'", h)
	}
}
