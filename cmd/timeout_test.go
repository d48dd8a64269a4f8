package cmd

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hungS3 is an S3 endpoint on loopback that accepts every request and
// never answers it (until the client gives up), as a stalled gateway does.
func hungS3(t *testing.T) (endpoint string, requests *atomic.Int64) {
	t.Helper()
	requests = &atomic.Int64{}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return srv.URL, requests
}

// A request that hangs is cut at --request-timeout and retried; when every
// attempt hangs the command fails (exit 1) naming the timeout, in seconds,
// not never.
func TestRequestTimeoutCutsHungRequests(t *testing.T) {
	url, requests := hungS3(t)
	start := time.Now()
	_, errOut, code := runTTY(t, false, nil, "--store", "s3://bucket/p", "--s3-endpoint", url, "--s3-path-style", "--request-timeout", "200ms", "status")
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "no answer within 200ms (--request-timeout)") {
		t.Errorf("stderr does not name the request timeout:\n%s", errOut)
	}
	if n := requests.Load(); n < 2 {
		t.Errorf("%d requests: the hung one was not retried", n)
	}
	if took > 20*time.Second {
		t.Errorf("took %s", took)
	}
}

// --timeout ends the whole command (exit 1, "timed out"), even when no
// request timeout would.
func TestTimeoutEndsTheCommand(t *testing.T) {
	url, _ := hungS3(t)
	for _, o := range []string{"table", "json"} {
		start := time.Now()
		out, errOut, code := runTTY(t, false, nil, "--store", "s3://bucket/p", "--s3-endpoint", url, "--s3-path-style", "--request-timeout", "0s", "--timeout", "700ms", "status", "-o", o)
		took := time.Since(start)
		if code != 1 {
			t.Fatalf("-o %s: exit %d, want 1\n%s", o, code, errOut)
		}
		if !strings.Contains(errOut, "nereusctl: status: timed out after 700ms (--timeout)") || !strings.Contains(errOut, "hint: the work done so far is kept") {
			t.Errorf("-o %s: stderr:\n%s", o, errOut)
		}
		if took < 700*time.Millisecond || took > 10*time.Second {
			t.Errorf("-o %s: took %s, want the 700ms deadline", o, took)
		}
		if o == "json" {
			var doc errorDocument
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Error.Code != 1 || !strings.Contains(doc.Error.Message, "timed out after 700ms") {
				t.Errorf("error document %q: %v", out, err)
			}
		}
	}
}

// A command that finishes inside its --timeout is not touched by it; a
// negative timeout is a usage error.
func TestTimeoutFlags(t *testing.T) {
	if _, errOut, code := runTTY(t, false, nil, "--timeout", "1m", "--request-timeout", "1s", "version"); code != 0 {
		t.Errorf("version under --timeout 1m: exit %d %s", code, errOut)
	}
	for _, f := range []string{"--timeout", "--request-timeout"} {
		_, errOut, code := runTTY(t, false, nil, f, "-1s", "version")
		if code != 2 || !strings.Contains(errOut, f+" -1s: want 0s (no limit) or more") {
			t.Errorf("%s -1s: exit %d %s", f, code, errOut)
		}
	}
}
