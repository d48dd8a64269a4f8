package store

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// Meter accounts for what a run sends to its store at the wire: every
// HTTP attempt of the s3:// backend by method, with the bytes sent (request
// bodies) and received (response bodies), and the retries WithRetry made
// (on every backend). It also holds the process's request budget
// (--max-requests-per-second): on s3:// every HTTP attempt waits for a
// token, retries and the reads of a lost-response check included, so the
// budget bounds what the server really sees.
//
// It is shared: one Meter per process, safe for concurrent use. A nil
// *Meter counts and limits nothing.
type Meter struct {
	limiter *rate.Limiter

	mu      sync.Mutex
	methods map[string]*atomic.Int64

	requests, retries, sent, received atomic.Int64
}

// NewMeter returns a zeroed Meter whose budget is perSecond HTTP attempts
// per second (bursts of one second's worth); perSecond <= 0 is unlimited.
func NewMeter(perSecond float64) *Meter {
	m := &Meter{methods: map[string]*atomic.Int64{}}
	if perSecond > 0 {
		m.limiter = rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)))
	}
	return m
}

// Limited reports whether the meter enforces a request budget.
func (m *Meter) Limited() bool { return m != nil && m.limiter != nil }

// wait takes a token of the budget (none when unlimited).
func (m *Meter) wait(ctx context.Context) error {
	if m == nil || m.limiter == nil {
		return nil
	}
	return m.limiter.Wait(ctx)
}

func (m *Meter) method(name string) *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.methods[name]
	if !ok {
		c = new(atomic.Int64)
		m.methods[name] = c
	}
	return c
}

// retry counts one retry made by WithRetry.
func (m *Meter) retry() {
	if m != nil {
		m.retries.Add(1)
	}
}

// MeterStats is a snapshot of a Meter.
type MeterStats struct {
	// HTTP is the number of HTTP attempts sent (0 on file:// and mem://).
	HTTP int64
	// Methods splits HTTP by request method (GET, HEAD, PUT, DELETE, POST).
	Methods map[string]int64
	// Retries is the number of store calls WithRetry attempted again.
	Retries int64
	// BytesSent and BytesReceived are HTTP body bytes: the bodies sent
	// (by their Content-Length) and the response bytes read.
	BytesSent, BytesReceived int64
}

// Stats returns the counts so far (zero for a nil Meter).
func (m *Meter) Stats() MeterStats {
	s := MeterStats{Methods: map[string]int64{}}
	if m == nil {
		return s
	}
	m.mu.Lock()
	for k, v := range m.methods {
		s.Methods[k] = v.Load()
	}
	m.mu.Unlock()
	s.HTTP = m.requests.Load()
	s.Retries = m.retries.Load()
	s.BytesSent = m.sent.Load()
	s.BytesReceived = m.received.Load()
	return s
}

// MethodsString formats Methods in a stable order: GET, HEAD, PUT, DELETE,
// POST, then any other method by name: "GET=3 HEAD=1 PUT=0 DELETE=0 POST=0".
func (s MeterStats) MethodsString() string {
	names := []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodPost}
	var extra []string
	for k := range s.Methods {
		switch k {
		case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodPost:
		default:
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	var b strings.Builder
	for i, k := range append(names, extra...) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, s.Methods[k])
	}
	return b.String()
}

// HTTPDoer is the SDK's HTTP client interface (smithy-go's HTTPClient).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// MeteredClient wraps an HTTP client so that every request it sends waits
// for the meter's budget and is counted, with its body bytes. The SDK sends
// each attempt through it, so nothing reaches the server uncounted.
func (m *Meter) MeteredClient(c HTTPDoer) HTTPDoer {
	if m == nil {
		return c
	}
	return &meteredClient{c: c, m: m}
}

type meteredClient struct {
	c HTTPDoer
	m *Meter
}

func (mc *meteredClient) Do(req *http.Request) (*http.Response, error) {
	if err := mc.m.wait(req.Context()); err != nil {
		return nil, fmt.Errorf("%s %s: rate limit: %w", strings.ToLower(req.Method), req.URL.Path, err)
	}
	mc.m.requests.Add(1)
	mc.m.method(req.Method).Add(1)
	if req.ContentLength > 0 {
		// The SDK always sets the length of what it sends (a Put's body).
		mc.m.sent.Add(req.ContentLength)
	}
	resp, err := mc.c.Do(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &mc.m.received}
	}
	return resp, err
}

// countingBody adds the bytes read through it to n.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n.Add(int64(k))
	return k, err
}
