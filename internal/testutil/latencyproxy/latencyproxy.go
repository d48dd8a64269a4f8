// Package latencyproxy is an HTTP reverse proxy for benchmarks and tests
// that makes a loopback S3 server behave like a remote one: every request
// waits a fixed delay before it is forwarded. It listens on loopback only
// and forwards to loopback only; it counts the requests it forwards.
//
// It can also inject faults (FailFirstAttempts): the first attempt of some
// requests is answered 503 without being forwarded, so a client's retries
// can be seen and counted. It records every request's method, arrival time
// and body bytes in both directions, so a client's own accounting can be
// checked against what the wire carried.
//
// It exists so that request economy and concurrency are measured where a
// request costs what it costs on S3 (10-50 ms), not the microseconds of a
// local server.
package latencyproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a running proxy.
type Proxy struct {
	// URL is http://127.0.0.1:PORT, the endpoint to give clients.
	URL string

	delay    time.Duration
	srv      *http.Server
	ln       net.Listener
	requests atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64

	mu       sync.Mutex
	every    int              // fail the first attempt of every every-th new request (0: none)
	distinct int              // new requests seen since faults were set
	failed   map[string]bool  // requests whose first attempt was failed
	faults   int64            // 503s injected
	methods  map[string]int64 // requests by method
	arrivals []time.Time      // arrival time of every request
	targets  []string         // method and request URI of every request
	served   []time.Duration  // each request's time in the proxy (delay included)
	bytesIn  int64            // request body bytes read from clients
	bytesOut int64            // response body bytes written to clients
}

// Stats is what the proxy saw since the last ResetCounts.
type Stats struct {
	Requests int64
	// Methods splits Requests by HTTP method.
	Methods map[string]int64
	// Faults is the number of 503s injected (FailFirstAttempts).
	Faults int64
	// BytesIn is request body bytes read from clients; BytesOut response
	// body bytes written to them (injected 503 bodies included).
	BytesIn, BytesOut int64
	// Arrivals is every request's arrival time, in order.
	Arrivals []time.Time
	// Targets is every request's method and request URI ("GET
	// /bucket/key?query"), in the order of Arrivals.
	Targets []string
	// Served is each request's time from arrival to the end of its
	// response (the delay included), in the order of Arrivals; zero for a
	// request still in flight.
	Served []time.Duration
}

// Waves counts the dependent rounds among the arrivals at a proxy of the
// given delay: a request that waited for another's answer arrives at least
// a delay after it, so an arrival more than three quarters of a delay after
// the first of the current round starts a new one (requests sent together,
// spread by the client's work between them, stay one round).
func (s Stats) Waves(delay time.Duration) int {
	n := 0
	var start time.Time
	for _, a := range s.Arrivals {
		if n == 0 || a.Sub(start) > delay*3/4 {
			n++
			start = a
		}
	}
	return n
}

// Lists counts the requests of Targets that are S3 LISTs (a GET of a
// bucket with list-type=2 or a prefix query).
func (s Stats) Lists() int64 {
	n := int64(0)
	for _, t := range s.Targets {
		if IsList(t) {
			n++
		}
	}
	return n
}

// IsList reports whether a Targets entry is an S3 LIST request.
func IsList(target string) bool {
	m, uri, _ := strings.Cut(target, " ")
	if m != http.MethodGet {
		return false
	}
	_, q, ok := strings.Cut(uri, "?")
	if !ok {
		return false
	}
	v, err := url.ParseQuery(q)
	return err == nil && (v.Get("list-type") != "" || v.Has("prefix"))
}

// FailFirstAttempts makes the proxy answer 503 (an S3 ServiceUnavailable
// error, not forwarded) to the first attempt of every every-th distinct
// request, a request being its method and URL: the client's retry of it,
// the same method and URL, is forwarded. 0 turns faults off.
func (p *Proxy) FailFirstAttempts(every int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.every, p.distinct = every, 0
	p.failed = map[string]bool{}
}

// Stats returns what the proxy saw since the last ResetCounts.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Requests: p.requests.Load(), Methods: map[string]int64{}, Faults: p.faults, BytesIn: p.bytesIn, BytesOut: p.bytesOut,
		Arrivals: append([]time.Time(nil), p.arrivals...), Targets: append([]string(nil), p.targets...),
		Served: append([]time.Duration(nil), p.served...)}
	for k, v := range p.methods {
		s.Methods[k] = v
	}
	return s
}

// inject records r's arrival and reports whether its first attempt is to
// fail, and the request's index in the arrivals.
func (p *Proxy) inject(r *http.Request) (bool, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.methods == nil {
		p.methods = map[string]int64{}
	}
	p.methods[r.Method]++
	i := len(p.arrivals)
	p.arrivals = append(p.arrivals, time.Now())
	p.targets = append(p.targets, r.Method+" "+r.URL.RequestURI())
	p.served = append(p.served, 0)
	if p.every <= 0 {
		return false, i
	}
	id := r.Method + " " + r.URL.RequestURI()
	if _, seen := p.failed[id]; seen {
		return false, i
	}
	p.distinct++
	fail := p.distinct%p.every == 0
	p.failed[id] = fail
	if fail {
		p.faults++
	}
	return fail, i
}

// done records how long request i (an index into the arrivals) took.
func (p *Proxy) done(i int, start time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i < len(p.served) {
		p.served[i] = time.Since(start)
	}
}

func (p *Proxy) addBytes(in, out int64) {
	p.mu.Lock()
	p.bytesIn += in
	p.bytesOut += out
	p.mu.Unlock()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	io.ReadCloser
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	k, err := c.ReadCloser.Read(b)
	c.n += int64(k)
	return k, err
}

// countingWriter counts the body bytes written through it.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	k, err := c.ResponseWriter.Write(b)
	c.n += int64(k)
	return k, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

const unavailable = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>ServiceUnavailable</Code><Message>injected by latencyproxy</Message></Error>`

// Start listens on 127.0.0.1 (a free port) and forwards every request to
// target after delay. target must be an http:// URL on loopback.
func Start(target string, delay time.Duration) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("latencyproxy: target %q: %w", target, err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("latencyproxy: target %q: want http://", target)
	}
	if !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("latencyproxy: target %q is not on loopback", target)
	}
	if delay < 0 {
		return nil, errors.New("latencyproxy: negative delay")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("latencyproxy: listen: %w", err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), delay: delay, ln: ln}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second}
	// Copy buffers are reused: the proxy stands in for the network, and
	// the CPU it burns is taken from the client and the server it sits
	// between (a 32 KiB buffer per request was most of its cost).
	rp.BufferPool = &bufferPool{}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.requests.Add(1)
			arrived := time.Now()
			fail, idx := p.inject(r)
			defer p.done(idx, arrived)
			n := p.inFlight.Add(1)
			defer p.inFlight.Add(-1)
			for {
				old := p.peak.Load()
				if n <= old || p.peak.CompareAndSwap(old, n) {
					break
				}
			}
			if p.delay > 0 {
				t := time.NewTimer(p.delay)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
					return
				}
			}
			body := &countingReader{ReadCloser: r.Body}
			r.Body = body
			cw := &countingWriter{ResponseWriter: w}
			defer func() { p.addBytes(body.n, cw.n) }()
			if fail {
				_, _ = io.Copy(io.Discard, r.Body)
				cw.Header().Set("Content-Type", "application/xml")
				cw.WriteHeader(http.StatusServiceUnavailable)
				if r.Method != http.MethodHead {
					// (a HEAD response has no body: the server
					// would drop it, yet count it written)
					_, _ = io.WriteString(cw, unavailable)
				}
				return
			}
			rp.ServeHTTP(cw, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Requests is the number of requests forwarded so far.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// PeakInFlight is the most requests that were in the proxy at once: the
// concurrency a client really achieved.
func (p *Proxy) PeakInFlight() int64 { return p.peak.Load() }

// ResetCounts zeroes the counters (between measured runs).
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests.Store(0)
	p.peak.Store(0)
	p.faults, p.bytesIn, p.bytesOut = 0, 0, 0
	p.methods, p.arrivals, p.targets, p.served = nil, nil, nil, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bufferPool is httputil.BufferPool over a sync.Pool of 32 KiB buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
