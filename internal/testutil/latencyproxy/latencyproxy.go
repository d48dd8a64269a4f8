// Package latencyproxy is an HTTP reverse proxy for benchmarks and tests
// that makes a loopback S3 server behave like a remote one: every request
// waits a fixed delay before it is forwarded. It listens on loopback only
// and forwards to loopback only; it counts the requests it forwards.
//
// It exists so that request economy and concurrency are measured where a
// request costs what it costs on S3 (10-50 ms), not the microseconds of a
// local server.
package latencyproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
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
}

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
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.requests.Add(1)
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
			rp.ServeHTTP(w, r)
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
	p.requests.Store(0)
	p.peak.Store(0)
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
