package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

func TestCounter(t *testing.T) {
	ctx := context.Background()
	c := store.NewCounter(store.NewMem("counter"))
	if got := c.Counts().String(); got != "GET=0 HEAD=0 LIST=0 PUT=0 DELETE=0" {
		t.Fatalf("zero counts: %q", got)
	}
	c.Put(ctx, "a", []byte("x"), store.None())
	c.Get(ctx, "a", nil)
	c.Get(ctx, "a", nil)
	c.Get(ctx, "missing", nil) // failures count too: they are requests
	c.Head(ctx, "a")
	c.List(ctx, "")
	c.List(ctx, "../") // refused before I/O by the backend, still a call
	if got := c.Counts().String(); got != "GET=3 HEAD=1 LIST=2 PUT=1 DELETE=0" {
		t.Fatalf("counts: %q", got)
	}
	var m map[string]int64 = c.Counts() // usable as a plain map
	if m[store.VerbGet] != 3 || c.Total() != 7 {
		t.Fatalf("map %v, total %d", m, c.Total())
	}
	if c.String() != "mem://counter" {
		t.Fatalf("String names the store: %q", c.String())
	}
	c.Reset()
	if c.Total() != 0 {
		t.Fatal("reset")
	}
	sum := store.Counts{store.VerbGet: 1}.Add(store.Counts{store.VerbGet: 2, store.VerbPut: 1})
	if sum.String() != "GET=3 HEAD=0 LIST=0 PUT=1 DELETE=0" {
		t.Fatalf("add: %s", sum)
	}
}

func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	c := store.NewCounter(store.NewMem("rl"))
	s := store.WithRateLimit(c, 20)
	start := time.Now()
	for range 30 {
		s.Head(ctx, "x")
	}
	// 20 in the first burst, then 10 more at 20/s: at least ~0.5 s.
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("30 calls at 20/s took %v", d)
	}
	if c.Counts()[store.VerbHead] != 30 {
		t.Fatal("calls lost")
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	slow := store.WithRateLimit(c, 0.5)
	slow.Head(short, "x") // uses the only token
	if _, err := slow.Head(short, "x"); err == nil || !strings.Contains(err.Error(), "rate limit") {
		t.Fatalf("waiting past the deadline: %v", err)
	}
	if store.WithRateLimit(c, 0) != store.Store(c) {
		t.Fatal("a zero limit must not wrap")
	}
}

func TestFaultyReads(t *testing.T) {
	ctx := context.Background()
	f := faultstore.New(store.NewMem("faulty"))
	f.Put(ctx, "obj", []byte("abcdef"), store.None())
	f.Put(ctx, "other", []byte("abcdef"), store.None())
	f.FlipByteNth(2, "obj", 1)
	f.TruncateNth(3, "obj", 4)
	for i, want := range []string{"abcdef", "a\x9dcdef", "abcd", "abcdef"} {
		got, err := f.Get(ctx, "obj", nil)
		if err != nil || string(got) != want {
			t.Fatalf("get #%d: %q, %v; want %q", i+1, got, err, want)
		}
	}
	if got, _ := f.Get(ctx, "other", nil); string(got) != "abcdef" {
		t.Fatalf("the prefix rule hit another key: %q", got)
	}
	// The stored bytes are untouched.
	f.Clear()
	if got, _ := f.Get(ctx, "obj", nil); string(got) != "abcdef" {
		t.Fatalf("stored bytes changed: %q", got)
	}
	boom := errors.New("boom")
	f.FailNth(store.VerbHead, 0, "", boom)
	if _, err := f.Head(ctx, "obj"); !errors.Is(err, boom) || !strings.Contains(err.Error(), "obj") {
		t.Fatalf("failing head: %v", err)
	}
	var te interface{ Timeout() bool }
	f.Clear()
	f.LoseResponseNth(store.VerbList, 1, "")
	if _, err := f.List(ctx, ""); !errors.As(err, &te) || !te.Timeout() || !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("lost list response: %v", err)
	}
	if f.Fired() != 4 {
		t.Fatalf("fired %d", f.Fired())
	}
}

// strictIfAbsent is a Store that, unlike every backend here, does not apply
// the lost-response rule itself: it proves WithRetry does.
type strictIfAbsent struct {
	store.Store
	mu sync.Mutex
}

func (s *strictIfAbsent) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.IsIfAbsent() {
		if _, err := s.Store.Head(ctx, key); err == nil {
			return store.ObjectInfo{}, store.ErrPreconditionFailed
		}
		g = store.None()
	}
	return s.Store.Put(ctx, key, data, g)
}

func TestRetryConfirmsLostIfAbsent(t *testing.T) {
	ctx := context.Background()
	strict := &strictIfAbsent{Store: store.NewMem("strict")}
	c := store.NewCounter(strict)
	f := faultstore.New(c)
	r := store.WithRetry(f, store.RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: time.Millisecond})

	// Without a retry layer the strict store reports a conflict for its own
	// write once the response is lost.
	f.LoseResponseNth(store.VerbPut, 1, "k")
	if _, err := r.Put(ctx, "k", []byte("mine"), store.IfAbsent()); err != nil {
		t.Fatalf("lost if-absent through WithRetry: %v", err)
	}
	if got := c.Counts().String(); got != "GET=1 HEAD=1 LIST=0 PUT=2 DELETE=0" {
		t.Fatalf("confirmation requests: %s", got)
	}
	f.LoseResponseNth(store.VerbPut, 1, "k")
	if _, err := r.Put(ctx, "k", []byte("else"), store.IfAbsent()); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("other bytes: %v", err)
	}
	// No ambiguity, no confirmation: a plain 412 costs nothing more.
	c.Reset()
	if _, err := r.Put(ctx, "k", []byte("mine"), store.IfAbsent()); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("unambiguous 412: %v", err)
	}
	if c.Total() != 1 {
		t.Fatalf("unambiguous 412 made %s", c.Counts())
	}
}

func TestRetryBackoffAndContext(t *testing.T) {
	ctx := context.Background()
	f := faultstore.New(store.NewMem("backoff"))
	f.FailNth(store.VerbGet, 0, "", nil)
	r := store.WithRetry(f, store.RetryPolicy{Attempts: 100, Initial: 20 * time.Millisecond, Max: 40 * time.Millisecond})
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Get(short, "x", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("retrying past the deadline: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("retry ignored the context for %v", d)
	}
	if n := f.Fired(); n < 3 || n > 20 {
		t.Fatalf("%d attempts in 150 ms with 20-40 ms backoff", n)
	}
}

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{store.ErrNotFound, false},
		{store.ErrPreconditionFailed, false},
		{store.ErrInvalidKey, false},
		{store.ErrTooLarge, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{store.Permanent(errors.New("x")), false},
		{store.ErrConflict, true},
		{faultstore.ErrInjected, true},
		{errors.New("connection reset"), true},
	} {
		if got := store.Retryable(c.err); got != c.want {
			t.Errorf("Retryable(%v) = %v", c.err, got)
		}
	}
}

func TestCloseStoreThroughDecorators(t *testing.T) {
	f := newFile(t)
	s := store.WithRetry(store.NewCounter(store.WithRateLimit(f, 100)), store.DefaultRetryPolicy())
	if err := store.CloseStore(s); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Head(context.Background(), "x"); err == nil {
		t.Fatal("store still usable after close")
	}
	if err := store.CloseStore(store.NewMem("")); err != nil {
		t.Fatal(err)
	}
}
