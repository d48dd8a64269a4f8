package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/testutil/latencyproxy"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

var (
	httpRe    = regexp.MustCompile(`(?m)^http: GET=(\d+) HEAD=(\d+) PUT=(\d+) DELETE=(\d+) POST=(\d+) total=(\d+)$`)
	retriesRe = regexp.MustCompile(`(?m)^retries: (\d+)$`)
	bytesRe   = regexp.MustCompile(`(?m)^bytes: sent=(\d+) received=(\d+)$`)
)

// faultyS3 is versitygw holding a demo store, reached through a loopback
// proxy that can fail first attempts with 503.
func faultyS3(t *testing.T) (*latencyproxy.Proxy, map[string]string) {
	t.Helper()
	srv := s3server.Start(t)
	base := map[string]string{"NEREUSCTL_STORE": srv.URL("faults"), "NEREUSCTL_S3_ENDPOINT": srv.Endpoint, "NEREUSCTL_S3_PATH_STYLE": "true", "XDG_CONFIG_HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()}
	runEnv(t, base, 0, "demo", "--records", "2000", "--partitions", "1", "--no-tour", "-q")
	p, err := latencyproxy.Start(srv.Endpoint, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	env := map[string]string{}
	for k, v := range base {
		env[k] = v
	}
	env["NEREUSCTL_S3_ENDPOINT"] = p.URL
	return p, env
}

// runEnv runs nereusctl in process and returns stdout and stderr.
func runEnv(t *testing.T, env map[string]string, want int, args ...string) (string, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	if code := cmd.Execute(context.Background(), args, &out, &errb); code != want {
		t.Fatalf("nereusctl %v: exit %d, want %d\n%s%s", args, code, want, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

func atoi(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// TestStatsCountHTTPRetriesS3: with one retry layer and the count at the
// HTTP client, --stats reports every attempt the wire carried: through a
// proxy that fails the first attempt of every third request with 503, the
// HTTP requests by method, the retries and the body bytes both ways equal
// what the proxy saw, under the table and under -o json, for a reading
// command and for a trim (guarded writes whose first attempt failed).
func TestStatsCountHTTPRetriesS3(t *testing.T) {
	p, env := faultyS3(t)
	for _, args := range [][]string{
		{"status"},
		{"trim", "orders-0", "--to", "300"},
	} {
		p.ResetCounts()
		p.FailFirstAttempts(3)
		_, stderr := runEnv(t, env, 0, append(args, "--stats")...)
		seen := p.Stats()
		t.Logf("%v: proxy saw %d requests %v, %d faults, %d bytes in, %d out\n%s", args, seen.Requests, seen.Methods, seen.Faults, seen.BytesIn, seen.BytesOut, stderr)
		h, r, b := httpRe.FindStringSubmatch(stderr), retriesRe.FindStringSubmatch(stderr), bytesRe.FindStringSubmatch(stderr)
		if h == nil || r == nil || b == nil {
			t.Fatalf("%v --stats: no http, retries or bytes line in:\n%s", args, stderr)
		}
		if seen.Faults == 0 {
			t.Fatalf("%v: the proxy injected no fault", args)
		}
		for i, m := range []string{"GET", "HEAD", "PUT", "DELETE", "POST"} {
			if atoi(h[i+1]) != seen.Methods[m] {
				t.Errorf("%v: --stats %s=%s, the proxy saw %d", args, m, h[i+1], seen.Methods[m])
			}
		}
		if atoi(h[6]) != seen.Requests {
			t.Errorf("%v: --stats total=%s, the proxy saw %d requests", args, h[6], seen.Requests)
		}
		if atoi(r[1]) != seen.Faults {
			t.Errorf("%v: --stats retries=%s, the proxy failed %d first attempts (one retry each)", args, r[1], seen.Faults)
		}
		if atoi(b[1]) != seen.BytesIn || atoi(b[2]) != seen.BytesOut {
			t.Errorf("%v: --stats bytes sent=%s received=%s, the proxy read %d and wrote %d", args, b[1], b[2], seen.BytesIn, seen.BytesOut)
		}
		if strings.Contains(args[0], "trim") && seen.Methods["PUT"] == 0 {
			t.Errorf("trim sent no PUT")
		}
	}

	// -o json: one stats line on stderr, the same figures.
	p.ResetCounts()
	p.FailFirstAttempts(3)
	stdout, stderr := runEnv(t, env, 0, "status", "--stats", "-o", "json")
	seen := p.Stats()
	if !json.Valid([]byte(stdout)) {
		t.Fatalf("stdout is not one JSON document:\n%s", stdout)
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Stats         struct {
			Requests map[string]int64 `json:"requests"`
			Retries  int64            `json:"retries"`
			HTTP     *struct {
				Requests      int64            `json:"requests"`
				Methods       map[string]int64 `json:"methods"`
				BytesSent     int64            `json:"bytes_sent"`
				BytesReceived int64            `json:"bytes_received"`
			} `json:"http"`
		} `json:"stats"`
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &doc); err != nil || doc.Stats.HTTP == nil {
		t.Fatalf("-o json --stats: last stderr line is no stats document (%v):\n%s", err, stderr)
	}
	h := doc.Stats.HTTP
	if doc.SchemaVersion != 1 || h.Requests != seen.Requests || doc.Stats.Retries != seen.Faults || seen.Faults == 0 ||
		h.Methods["GET"] != seen.Methods["GET"] || h.Methods["HEAD"] != seen.Methods["HEAD"] ||
		h.BytesSent != seen.BytesIn || h.BytesReceived != seen.BytesOut || doc.Stats.Requests["LIST"] == 0 {
		t.Errorf("-o json stats %+v %+v, the proxy saw %+v", doc.Stats, *h, seen)
	}
}

// TestRateLimitHoldsOverRetriesS3: --max-requests-per-second bounds the
// HTTP attempts the server sees, retries included: with every second
// request failing its first attempt, no stretch of the run carries more
// attempts than the budget allows (a burst of one second's worth plus the
// rate times the stretch's length).
func TestRateLimitHoldsOverRetriesS3(t *testing.T) {
	p, env := faultyS3(t)
	const rps = 5.0
	const burst = 5
	p.ResetCounts()
	p.FailFirstAttempts(2)
	_, stderr := runEnv(t, env, 0, "trim", "orders-0", "--to", "300", "--dry-run", "--stats", "--max-requests-per-second", "5")
	seen := p.Stats()
	t.Logf("proxy saw %d requests, %d faults\n%s", seen.Requests, seen.Faults, stderr)
	if seen.Faults < 3 || seen.Requests < 2*burst {
		t.Fatalf("too few requests (%d) or faults (%d) to test the budget", seen.Requests, seen.Faults)
	}
	a := seen.Arrivals
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			n := float64(j - i + 1)
			// 20 ms of slack for the proxy's own clock reading
			if allowed := burst + rps*(a[j].Sub(a[i]).Seconds()+0.02); n > allowed {
				t.Fatalf("%d attempts within %v (requests %d..%d), the budget allows %.1f", j-i+1, a[j].Sub(a[i]), i, j, allowed)
			}
		}
	}
	if total := a[len(a)-1].Sub(a[0]); total < time.Duration(float64(time.Second)*(float64(len(a))-burst)/rps)-50*time.Millisecond {
		t.Fatalf("%d attempts in %v", len(a), total)
	}
}

// httpCounts runs nereusctl --stats and returns its store-call total and
// its HTTP request total.
func httpCounts(t *testing.T, env map[string]string, args ...string) (calls, http int64) {
	t.Helper()
	_, stderr := runEnv(t, env, 0, append(args, "--stats")...)
	m, h := countsRe.FindStringSubmatch(stderr), httpRe.FindStringSubmatch(stderr)
	if m == nil || h == nil {
		t.Fatalf("%v --stats: no counts in\n%s", args, stderr)
	}
	for _, s := range m[1:] {
		calls += atoi(s)
	}
	return calls, atoi(h[6])
}

// TestRequestEconomyHTTPTwoSizes: the claim of TestRequestEconomyTwoSizes
// at the wire, on versitygw, at 2,000 and 20,000 records per partition.
// With fresh checkpoints status, trim --dry-run and retention run --all
// --dry-run send exactly the same HTTP requests at both sizes; with stale
// ones (a tail to replay) the HTTP requests beyond the store calls (further
// LIST pages, lost-response checks) are the same at both sizes: whatever
// grows is the tail the store-call test accounts for, nothing the HTTP
// layer adds.
func TestRequestEconomyHTTPTwoSizes(t *testing.T) {
	srv := s3server.Start(t)
	type measure struct{ staleExtra, fresh map[string]int64 }
	cmds := map[string][]string{
		"status":        {"status"},
		"trim-dry":      {"trim", "orders-0", "--to", "300", "--dry-run"},
		"retention-dry": {"retention", "run", "--all", "--dry-run", "--now", "2100-01-01T00:00:00Z"},
	}
	at := func(records string) measure {
		env := map[string]string{"NEREUSCTL_STORE": srv.URL("r" + records), "NEREUSCTL_S3_ENDPOINT": srv.Endpoint, "NEREUSCTL_S3_PATH_STYLE": "true", "XDG_CONFIG_HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()}
		runEnv(t, env, 0, "demo", "--records", records, "--partitions", "1", "--no-tour", "-q")
		m := measure{staleExtra: map[string]int64{}, fresh: map[string]int64{}}
		for name, args := range cmds {
			if name == "retention-dry" {
				continue // its dry run still writes nothing but reads every partition: measured fresh
			}
			calls, http := httpCounts(t, env, args...)
			t.Logf("%s records, stale checkpoints: %s: %d store calls, %d HTTP requests", records, name, calls, http)
			m.staleExtra[name] = http - calls
		}
		runEnv(t, env, 0, "checkpoint", "create", "--all", "-q")
		for name, args := range cmds {
			calls, http := httpCounts(t, env, args...)
			t.Logf("%s records, fresh checkpoints: %s: %d store calls, %d HTTP requests", records, name, calls, http)
			m.fresh[name] = http
		}
		return m
	}
	small, large := at("2000"), at("20000")
	for name := range cmds {
		if small.fresh[name] != large.fresh[name] {
			t.Errorf("%s with fresh checkpoints: %d HTTP requests at 2,000 records, %d at 20,000", name, small.fresh[name], large.fresh[name])
		}
		if small.staleExtra[name] != large.staleExtra[name] {
			t.Errorf("%s with stale checkpoints: %d HTTP requests beyond the store calls at 2,000 records, %d at 20,000", name, small.staleExtra[name], large.staleExtra[name])
		}
	}
}
