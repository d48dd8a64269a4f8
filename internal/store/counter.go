package store

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
)

// Counter is the request-counting decorator: it counts the calls made to
// the store it wraps, by verb. Placed directly over a backend (under
// WithRetry), it counts every attempt. Requests a backend makes on its own
// (the HEAD/GET of the lost-response check after a 412, an If-Match
// Delete's HEAD) are not Store calls and are not counted here; on s3://
// the Meter counts every HTTP request.
type Counter struct {
	s                            Store
	get, head, list, put, delete atomic.Int64
}

var _ Store = (*Counter)(nil)

// NewCounter wraps s with zeroed counts.
func NewCounter(s Store) *Counter { return &Counter{s: s} }

// String names the wrapped store (the Store contract); the counts are
// Counts().String().
func (c *Counter) String() string { return c.s.String() }

// Unwrap returns the decorated store.
func (c *Counter) Unwrap() Store { return c.s }

// Counts are request counts by verb. Its String is the stable report form.
type Counts map[string]int64

// String formats the counts in a stable order:
// "GET=3 HEAD=1 LIST=2 PUT=1 DELETE=0".
func (n Counts) String() string {
	var b strings.Builder
	for i, v := range Verbs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", v, n[v])
	}
	return b.String()
}

// Add returns the sum of n and m.
func (n Counts) Add(m Counts) Counts {
	out := Counts{}
	for _, v := range Verbs {
		out[v] = n[v] + m[v]
	}
	return out
}

// Counts returns the calls so far by verb (GET, HEAD, LIST, PUT, DELETE;
// every verb present, zeros included). It converts to map[string]int64;
// Counts().String() is the report line.
func (c *Counter) Counts() Counts {
	return Counts{
		VerbGet:    c.get.Load(),
		VerbHead:   c.head.Load(),
		VerbList:   c.list.Load(),
		VerbPut:    c.put.Load(),
		VerbDelete: c.delete.Load(),
	}
}

// Total returns the number of calls so far.
func (c *Counter) Total() int64 {
	var n int64
	for _, v := range c.Counts() {
		n += v
	}
	return n
}

// Reset zeroes the counts.
func (c *Counter) Reset() {
	for _, a := range []*atomic.Int64{&c.get, &c.head, &c.list, &c.put, &c.delete} {
		a.Store(0)
	}
}

func (c *Counter) Head(ctx context.Context, key string) (ObjectInfo, error) {
	c.head.Add(1)
	return c.s.Head(ctx, key)
}

func (c *Counter) Get(ctx context.Context, key string, r *Range) ([]byte, error) {
	c.get.Add(1)
	return c.s.Get(ctx, key, r)
}

func (c *Counter) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	c.get.Add(1)
	return GetInto(ctx, c.s, key, buf)
}

func (c *Counter) Put(ctx context.Context, key string, data []byte, g Guard) (ObjectInfo, error) {
	c.put.Add(1)
	return c.s.Put(ctx, key, data, g)
}

func (c *Counter) Delete(ctx context.Context, key string, g Guard) error {
	c.delete.Add(1)
	return c.s.Delete(ctx, key, g)
}

func (c *Counter) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	c.list.Add(1)
	return c.s.List(ctx, prefix)
}

func (c *Counter) ListAfter(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	c.list.Add(1)
	return c.s.ListAfter(ctx, prefix, startAfter)
}

// ListRange counts one LIST (RangeLister).
func (c *Counter) ListRange(ctx context.Context, prefix, startAfter, before string) ([]ObjectInfo, error) {
	c.list.Add(1)
	return ListRange(ctx, c.s, prefix, startAfter, before)
}
