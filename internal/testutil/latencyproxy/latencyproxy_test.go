package latencyproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestDelaysCountsAndForwards(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello "+r.URL.Path)
	}))
	defer backend.Close()
	const delay = 40 * time.Millisecond
	p, err := Start(backend.URL, delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(p.URL + "/bucket/key")
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if b, _ := io.ReadAll(resp.Body); string(b) != "hello /bucket/key" {
				t.Errorf("body %q", b)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Every request waited at least the delay; they waited concurrently.
	if elapsed < delay {
		t.Fatalf("8 requests took %v, less than one delay of %v", elapsed, delay)
	}
	if got := p.Requests(); got != 8 {
		t.Fatalf("counted %d requests, want 8", got)
	}
	if p.PeakInFlight() < 2 {
		t.Fatalf("peak in flight %d: concurrent requests were serialised", p.PeakInFlight())
	}
	p.ResetCounts()
	if p.Requests() != 0 {
		t.Fatal("ResetCounts left a count")
	}
}

func TestRefusesNonLoopbackTargets(t *testing.T) {
	for _, target := range []string{"http://10.0.0.1:80", "http://example.com", "https://127.0.0.1:1", "127.0.0.1:80"} {
		if p, err := Start(target, 0); err == nil {
			p.Close()
			t.Errorf("target %q accepted", target)
		}
	}
}
