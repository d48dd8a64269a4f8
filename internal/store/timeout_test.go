package store_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
)

// hanging is a store whose first hang calls never answer: they block until
// their context ends, as a stalled endpoint does.
type hanging struct {
	store.Store
	hang  int64
	calls atomic.Int64
}

func (h *hanging) wait(ctx context.Context) error {
	if h.calls.Add(1) <= h.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (h *hanging) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return h.Store.Get(ctx, key, r)
}

func (h *hanging) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	if err := h.wait(ctx); err != nil {
		return store.ObjectInfo{}, err
	}
	return h.Store.Put(ctx, key, data, g)
}

func quickRetry(s store.Store, attempts int) store.Store {
	return store.WithRetry(s, store.RetryPolicy{Attempts: attempts, Initial: time.Millisecond, Max: time.Millisecond})
}

// A call that hangs is cut at the request timeout and retried; the retry
// then gets the answer.
func TestTimeoutCutsAHungCallAndRetries(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMem(t.Name())
	if _, err := mem.Put(ctx, "k", []byte("v"), store.None()); err != nil {
		t.Fatal(err)
	}
	h := &hanging{Store: mem, hang: 1}
	st := quickRetry(store.WithTimeout(h, 50*time.Millisecond), 3)
	start := time.Now()
	b, err := st.Get(ctx, "k", nil)
	took := time.Since(start)
	if err != nil || string(b) != "v" {
		t.Fatalf("get after one hung attempt: %q, %v", b, err)
	}
	if h.calls.Load() != 2 {
		t.Errorf("%d calls, want 2 (the hung one, then the retry)", h.calls.Load())
	}
	if took < 50*time.Millisecond || took > 2*time.Second {
		t.Errorf("took %s, want the 50ms timeout and little more", took)
	}
}

// Every attempt hangs: the call fails, naming the timeout, after the
// retries; it does not hang.
func TestTimeoutGivesUpAfterRetries(t *testing.T) {
	ctx := context.Background()
	h := &hanging{Store: store.NewMem(t.Name()), hang: 100}
	st := quickRetry(store.WithTimeout(h, 20*time.Millisecond), 3)
	start := time.Now()
	_, err := st.Put(ctx, "k", []byte("v"), store.IfAbsent())
	if !store.IsRequestTimeout(err) || !strings.Contains(err.Error(), "no answer within 20ms (--request-timeout)") {
		t.Fatalf("err = %v, want a request timeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request timeout reads as the caller's deadline: %v", err)
	}
	if h.calls.Load() != 3 {
		t.Errorf("%d calls, want 3 attempts", h.calls.Load())
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s", took)
	}
}

// The caller's own deadline is not a request timeout: not retried, and
// reported as the caller's.
func TestTimeoutKeepsTheCallersDeadline(t *testing.T) {
	h := &hanging{Store: store.NewMem(t.Name()), hang: 100}
	st := quickRetry(store.WithTimeout(h, time.Hour), 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := st.Get(ctx, "k", nil)
	if !errors.Is(err, context.DeadlineExceeded) || store.IsRequestTimeout(err) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
	if h.calls.Load() != 1 {
		t.Errorf("%d calls, want 1 (the caller's deadline is not retried)", h.calls.Load())
	}
	if store.WithTimeout(h, 0) != store.Store(h) {
		t.Errorf("a 0 timeout decorates")
	}
}
