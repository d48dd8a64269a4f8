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

// twoSteps is a store whose Head and GetInto fail, so a decorator that
// falls back to reading in two steps shows.
type twoSteps struct{ store.Store }

var errTwoSteps = errors.New("read in two steps: Head then GetInto")

func (twoSteps) Head(context.Context, string) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, errTwoSteps
}

func (twoSteps) GetInto(context.Context, string, []byte) ([]byte, error) {
	return nil, errTwoSteps
}

// cheapOnly is a store whose List, Head and GetInto fail:
// only its digest-free read (SizedGetter) and its key listing (KeyLister)
// answer, so a decorator that falls back to the costlier calls shows.
type cheapOnly struct {
	twoSteps
	sized, keys int
}

func (c *cheapOnly) GetSizedInto(_ context.Context, key string, buf []byte) ([]byte, store.ObjectInfo, error) {
	c.sized++
	return append(buf[:0], "bytes"...), store.ObjectInfo{Key: key, Size: 5}, nil
}

func (c *cheapOnly) List(context.Context, string) ([]store.ObjectInfo, error) {
	return nil, errors.New("listed with sizes")
}

func (c *cheapOnly) ListKeys(context.Context, string) ([]store.ObjectInfo, error) {
	c.keys++
	return []store.ObjectInfo{{Key: "streams/x/objects/0.kb", Size: -1}}, nil
}

// TestSizedReadAndKeyListingThroughEveryDecorator: the decorators cmd
// stacks each pass the digest-free read and the key listing down, so
// verify --deep neither hashes in the store nor stats a listing on
// file://, whatever wraps it; and a store without them is read and listed
// the usual way (Head then GetInto, List).
func TestSizedReadAndKeyListingThroughEveryDecorator(t *testing.T) {
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
			return store.NewCounter(store.WithRetry(s, store.DefaultRetryPolicy()))
		},
	}
	for name, wrap := range chains {
		t.Run(name, func(t *testing.T) {
			inner := &cheapOnly{twoSteps: twoSteps{Store: store.NewMem("cheap")}}
			s := wrap(inner)
			data, info, err := store.GetSizedInto(ctx, s, "streams/x/0.kb", make([]byte, 0, 8))
			if err != nil || string(data) != "bytes" || info.Size != 5 || inner.sized != 1 {
				t.Fatalf("GetSizedInto through %s: %q %+v %v (sized reads %d)", name, data, info, err, inner.sized)
			}
			keys, err := store.ListKeys(ctx, s, "streams/x/objects/")
			if err != nil || len(keys) != 1 || keys[0].Size != -1 || inner.keys != 1 {
				t.Fatalf("ListKeys through %s: %+v %v (key listings %d)", name, keys, err, inner.keys)
			}
		})
	}
	// Without them: Head then GetInto (the digests included) and List.
	mem := store.NewMem("plain")
	if _, err := mem.Put(ctx, "streams/x/objects/0.kb", []byte("abc"), store.None()); err != nil {
		t.Fatal(err)
	}
	data, info, err := store.GetSizedInto(ctx, store.WithRetry(mem, store.DefaultRetryPolicy()), "streams/x/objects/0.kb", nil)
	if err != nil || string(data) != "abc" || info.ETag != store.ETagOf(data) || info.Size != 3 {
		t.Fatalf("GetSizedInto of a store without it: %q %+v %v", data, info, err)
	}
	keys, err := store.ListKeys(ctx, mem, "streams/")
	if err != nil || len(keys) != 1 || keys[0].Size != 3 {
		t.Fatalf("ListKeys of a store without it: %+v %v", keys, err)
	}
}
