package store_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
)

// oneStep is a store whose Head and GetInto fail: only its one-step read
// (InfoGetter) answers, so a decorator that falls back to Head + GetInto
// shows.
type oneStep struct {
	store.Store
	calls int
}

var errTwoSteps = errors.New("read in two steps: Head then GetInto")

func (o *oneStep) Head(context.Context, string) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, errTwoSteps
}

func (o *oneStep) GetInto(context.Context, string, []byte) ([]byte, error) {
	return nil, errTwoSteps
}

func (o *oneStep) GetInfoInto(_ context.Context, key string, buf []byte) ([]byte, store.ObjectInfo, error) {
	o.calls++
	return append(buf[:0], "bytes"...), store.ObjectInfo{Key: key, Size: 5}, nil
}

// TestGetInfoIntoThroughEveryDecorator: the decorators cmd stacks on a
// store (timeout, log, rate limit, retry, counter) each pass the one-step
// read down, so verify --deep opens a file:// object once.
func TestGetInfoIntoThroughEveryDecorator(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	chains := map[string]func(store.Store) store.Store{
		"timeout":   func(s store.Store) store.Store { return store.WithTimeout(s, time.Minute) },
		"log":       func(s store.Store) store.Store { return store.WithLog(s, log) },
		"ratelimit": func(s store.Store) store.Store { return store.WithRateLimit(s, 1000) },
		"retry":     func(s store.Store) store.Store { return store.WithRetry(s, store.DefaultRetryPolicy()) },
		"counter":   func(s store.Store) store.Store { return store.NewCounter(s) },
		"as cmd opens it": func(s store.Store) store.Store {
			s = store.WithTimeout(s, time.Minute)
			s = store.WithLog(s, log)
			s = store.WithRateLimit(s, 1000)
			return store.WithRetry(s, store.DefaultRetryPolicy())
		},
	}
	for name, wrap := range chains {
		t.Run(name, func(t *testing.T) {
			inner := &oneStep{Store: store.NewMem("onestep")}
			s := wrap(inner)
			data, info, err := store.GetInfoInto(ctx, s, "streams/x/0.kb", make([]byte, 0, 8))
			if err != nil {
				t.Fatalf("GetInfoInto through %s: %v", name, err)
			}
			if string(data) != "bytes" || info.Size != 5 || inner.calls != 1 {
				t.Fatalf("through %s: data %q, info %+v, one-step calls %d", name, data, info, inner.calls)
			}
		})
	}
}
