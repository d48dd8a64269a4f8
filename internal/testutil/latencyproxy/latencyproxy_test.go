package latencyproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

func TestFailFirstAttemptsAndRecords(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "ok "+string(b))
	}))
	defer backend.Close()
	p, err := Start(backend.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.FailFirstAttempts(2)
	do := func(method, path, body string) int {
		req, _ := http.NewRequest(method, p.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode
	}
	// distinct requests 1..4: the 2nd and 4th fail once, their retries pass
	got := []int{
		do("PUT", "/b/k1", "abc"), do("PUT", "/b/k2", "defg"), do("PUT", "/b/k2", "defg"),
		do("GET", "/b/k1", ""), do("GET", "/b/k3", ""), do("GET", "/b/k3", ""),
	}
	want := []int{200, 503, 200, 200, 503, 200}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses %v, want %v", got, want)
		}
	}
	s := p.Stats()
	if s.Requests != 6 || s.Faults != 2 || s.Methods["PUT"] != 3 || s.Methods["GET"] != 3 || len(s.Arrivals) != 6 {
		t.Fatalf("stats %+v", s)
	}
	if s.BytesIn != 3+4+4 {
		t.Fatalf("request body bytes %d, want 11", s.BytesIn)
	}
	// "ok abc" + 503 body + "ok defg" + "ok " + 503 body + "ok "
	if wantOut := int64(6 + len(unavailable) + 7 + 3 + len(unavailable) + 3); s.BytesOut != wantOut {
		t.Fatalf("response body bytes %d, want %d", s.BytesOut, wantOut)
	}
	p.ResetCounts()
	if s := p.Stats(); s.Requests != 0 || s.Faults != 0 || s.BytesIn != 0 || len(s.Arrivals) != 0 {
		t.Fatalf("after reset: %+v", s)
	}
}

// TestWaves: requests sent together (spread by less than three quarters of
// a delay) are one round; one sent after an answer opens the next.
func TestWaves(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms ...int) Stats {
		var s Stats
		for _, m := range ms {
			s.Arrivals = append(s.Arrivals, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return s
	}
	for _, c := range []struct {
		s    Stats
		want int
	}{{at(), 0}, {at(0), 1}, {at(0, 5, 14), 1}, {at(0, 5, 30, 31, 60), 3}, {at(0, 16, 32, 48), 4}} {
		if got := c.s.Waves(20 * time.Millisecond); got != c.want {
			t.Errorf("Waves(%v) = %d, want %d", c.s.Arrivals, got, c.want)
		}
	}
}
