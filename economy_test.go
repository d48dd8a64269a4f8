package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

var countsRe = regexp.MustCompile(`requests: GET=(\d+) HEAD=(\d+) LIST=(\d+) PUT=(\d+) DELETE=(\d+)`)

// requests runs nereusctl with --stats and returns the total request count.
func requests(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	code := cmd.Execute(context.Background(), append(args, "--stats"), &out, &errb)
	if code != 0 {
		t.Fatalf("nereusctl %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	m := countsRe.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no request counts in %q", errb.String())
	}
	total := 0
	for _, s := range m[1:] {
		n, _ := strconv.Atoi(s)
		total += n
	}
	return total, strings.TrimPrefix(m[0], "requests: ")
}

// TestRequestEconomyS3 measures what commands cost in S3 requests against
// versitygw (docs/design.md §13: every command reports its counts; status and
// trim --dry-run are O(1) per partition once checkpoints are fresh) and
// keeps them within bounds.
func TestRequestEconomyS3(t *testing.T) {
	srv := s3server.Start(t)
	env := map[string]string{"NEREUSCTL_STORE": srv.URL("economy"), "NEREUSCTL_S3_ENDPOINT": srv.Endpoint, "NEREUSCTL_S3_PATH_STYLE": "true", "XDG_CONFIG_HOME": t.TempDir()}
	requests(t, env, "demo", "--records", "3000", "--partitions", "1", "--no-tour")
	// fresh checkpoints everywhere: the steady state of a cluster
	requests(t, env, "checkpoint", "create", "--all")
	n, counts := requests(t, env, "status")
	t.Logf("status, 6 partitions: %s (%.1f per partition)", counts, float64(n)/6)
	if n > 6*12 {
		t.Errorf("status cost %d requests for 6 partitions with fresh checkpoints", n)
	}
	n, counts = requests(t, env, "trim", "orders-0", "--to", "300", "--dry-run")
	t.Logf("trim --dry-run, 1 partition: %s", counts)
	if n > 15 {
		t.Errorf("trim --dry-run cost %d requests", n)
	}
	n, counts = requests(t, env, "trim", "orders-0", "--to", "300")
	t.Logf("trim, 1 partition: %s", counts)
	if n > 30 {
		t.Errorf("trim cost %d requests", n)
	}
	n1, counts := requests(t, env, "verify", "__consumer_offsets-0")
	t.Logf("verify (default), __consumer_offsets-0: %s", counts)
	n2, counts2 := requests(t, env, "verify", "__consumer_offsets-0", "--deep")
	t.Logf("verify --deep, __consumer_offsets-0: %s (the difference is one GET per object)", counts2)
	if n2 <= n1 {
		t.Errorf("deep verify (%d) did not cost more than default (%d)", n2, n1)
	}
}
