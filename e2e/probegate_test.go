package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/storeprobe"
	"github.com/nereusctl/nereusctl/internal/testutil/s3lax"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

// runCLI runs nereusctl in process with env and returns its exit code,
// stdout and stderr.
func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	code := cmd.Execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// seedLax copies every object of the file:// store dir under prefix/ into
// the lax server.
func seedLax(t *testing.T, srv *s3lax.Server, dir, prefix string) {
	t.Helper()
	ctx := context.Background()
	st := fileStore(t, dir)
	objs, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		data, err := st.Get(ctx, o.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv.Put(prefix+"/"+o.Key, data)
	}
}

// diffKeys lists the keys added, removed or changed from a to b.
func diffKeys(a, b map[string][]byte) []string {
	var out []string
	for k, v := range b {
		if w, ok := a[k]; !ok || !bytes.Equal(v, w) {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestMutationsRefusedOnLaxS3: on an S3 endpoint that stores objects but
// ignores If-None-Match and If-Match, trim, retention run, compact,
// repair, gc and every other mutating command refuse (exit 3, naming each
// broken guarantee and docs/s3.md) with the store unchanged: the first
// run probes and records the failed result (its only write), the others
// read it and send no PUT or DELETE at all. Read-only commands and dry
// runs still work and warn. Each refused command would have changed the
// store: rerun with --skip-store-probe (which says so) it does.
func TestMutationsRefusedOnLaxS3(t *testing.T) {
	// A demo store with work for every command: customers-0 not yet
	// compacted, __consumer_offsets-0 quarantined (an intact replica
	// beside it).
	dir := filepath.Join(t.TempDir(), "store")
	demoBase("--records", "3000", "--partitions", "1")(t, dir)
	uncompact(t, dir, "customers", 0)
	replica := dir + ".replica"
	quarantineMember(t, dir, replica, "__consumer_offsets", 0)

	srv := s3lax.Start(t, s3lax.Options{})
	srv.SetEnv(t)
	seedLax(t, srv, dir, "nereus")
	env := map[string]string{"NEREUSCTL_STORE": srv.URL("nereus"), "NEREUSCTL_S3_ENDPOINT": srv.Endpoint, "NEREUSCTL_S3_PATH_STYLE": "true",
		"XDG_CONFIG_HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()}
	offsets := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(offsets, []byte(`{"partitions": [{"topic": "orders", "partition": 0, "offset": 10}], "version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture, err := filepath.Abs(filepath.Join("..", "testdata", "kafka", "kafka-uncompacted", "first_topic-2"))
	if err != nil {
		t.Fatal(err)
	}
	now := "2027-06-01T00:00:00Z"
	compactNow := demo.CompactNow.UTC().Format(time.RFC3339)
	probeKey := "nereus/" + layout.StoreProbeKey
	broken := []string{storeprobe.CheckIfAbsent, storeprobe.CheckIfMatchRefuses}

	refused := func(t *testing.T, code int, stdout, stderr string) {
		t.Helper()
		if code != 3 {
			t.Fatalf("exit %d, want 3 (refused)\n%s%s", code, stdout, stderr)
		}
		for _, want := range append([]string{"refused: s3://lax/nereus failed its store probe", "nothing was changed", "docs/s3.md"}, broken...) {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
		}
		if strings.Contains(stderr, storeprobe.CheckCreate+":") {
			t.Errorf("stderr names a check that held:\n%s", stderr)
		}
	}

	// The first mutating run probes (no result stored) and refuses: its
	// only change is the failed result, and the scratch key is gone.
	s0 := srv.Snapshot()
	code, stdout, stderr := runCLI(t, env, "trim", "orders-0", "--to", "10", "--yes")
	refused(t, code, stdout, stderr)
	s1 := srv.Snapshot()
	if d := diffKeys(s0, s1); !slices.Equal(d, []string{probeKey}) {
		t.Fatalf("the refused trim changed %v, want only %s", d, probeKey)
	}
	var doc layout.StoreProbe
	if err := layout.Decode(probeKey, s1[probeKey], &doc); err != nil || doc.OK || doc.Store != "s3://lax/nereus" || doc.Endpoint != srv.Endpoint {
		t.Fatalf("stored result %+v, %v", doc, err)
	}

	mutating := map[string][]string{
		"trim":              {"trim", "orders-0", "--to", "10", "--yes"},
		"delete-records":    {"delete-records", "--offset-json-file", offsets, "--yes"},
		"retention run":     {"retention", "run", "--all", "--yes", "--now", now},
		"compact":           {"compact", "customers-0", "--now", compactNow},
		"repair":            {"repair", "--all-from", "file://" + replica},
		"gc":                {"gc", "--grace", "0s"},
		"checkpoint create": {"checkpoint", "create", "--all"},
		"config set":        {"config", "set", "orders-0", "retention.ms=1000"},
		"verify":            {"verify", "--all"},
		"import kafka-log":  {"import", "kafka-log", fixture},
		"demo":              {"demo", "--no-tour", "--records", "300", "--partitions", "1"},
		"store upgrade":     {"store", "upgrade"},
	}
	names := make([]string, 0, len(mutating))
	for n := range mutating {
		names = append(names, n)
	}
	slices.Sort(names)
	before, _ := srv.Requests()
	for _, name := range names {
		t.Run("refused/"+name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, env, mutating[name]...)
			refused(t, code, stdout, stderr)
			if d := diffKeys(s1, srv.Snapshot()); len(d) > 0 {
				t.Fatalf("the refused %s changed %v", name, d)
			}
		})
	}
	after, _ := srv.Requests()
	if after["PUT"] != before["PUT"] || after["DELETE"] != before["DELETE"] {
		t.Fatalf("refused commands sent PUT %d, DELETE %d (want none)", after["PUT"]-before["PUT"], after["DELETE"]-before["DELETE"])
	}

	// -o json: the error document names the exit code.
	code, stdout, _ = runCLI(t, env, "-o", "json", "gc")
	var errDoc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Hint    string `json:"hint"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &errDoc); err != nil || code != 3 || errDoc.Error.Code != 3 || !strings.Contains(errDoc.Error.Message, storeprobe.CheckIfAbsent) || !strings.Contains(errDoc.Error.Hint, "docs/s3.md") {
		t.Fatalf("gc -o json: exit %d, %+v (%v)\n%s", code, errDoc, err, stdout)
	}

	// Read-only commands and dry runs work, and warn.
	for _, args := range [][]string{
		{"status", "orders-0"},
		{"trim", "orders-0", "--to", "10", "--dry-run"},
		{"gc", "--dry-run"},
		{"verify", "orders-0", "--read-only"},
		{"store", "ls", "bindings/"},
	} {
		code, stdout, stderr := runCLI(t, env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		if !strings.Contains(stderr, "nereusctl: warning: s3://lax/nereus failed its store probe") || !strings.Contains(stderr, storeprobe.CheckIfMatchRefuses) {
			t.Errorf("%v: no warning on stderr:\n%s", args, stderr)
		}
	}
	if d := diffKeys(s1, srv.Snapshot()); len(d) > 0 {
		t.Fatalf("read-only commands changed %v", d)
	}

	// store probe: a table naming the failed checks, exit 3.
	code, stdout, stderr = runCLI(t, env, "store", "probe")
	if code != 3 || !strings.Contains(stdout, "2 of 9 checks FAILED (if-none-match-refuses, if-match-refuses)") || !strings.Contains(stderr, "store probe of s3://lax/nereus: 2 of 9 checks failed") {
		t.Fatalf("store probe: exit %d\n%s%s", code, stdout, stderr)
	}

	code, stdout, _ = runCLI(t, env, "-o", "json", "store", "probe")
	var probeDoc struct {
		Probe    layout.StoreProbe `json:"probe"`
		Broken   []string          `json:"broken"`
		Recorded bool              `json:"recorded"`
		Key      string            `json:"key"`
		Proved   bool              `json:"proved_by_construction"`
	}
	if err := json.Unmarshal([]byte(stdout), &probeDoc); err != nil || code != 3 || !slices.Equal(probeDoc.Broken, broken) ||
		!probeDoc.Recorded || probeDoc.Key != layout.StoreProbeKey || probeDoc.Proved || probeDoc.Probe.OK || probeDoc.Probe.Endpoint != srv.Endpoint {
		t.Fatalf("store probe -o json: exit %d, %+v (%v)\n%s", code, probeDoc, err, stdout)
	}

	// What was refused would have changed the store: with
	// --skip-store-probe (which says so) each of them does.
	for _, name := range []string{"repair", "compact", "trim", "retention run", "gc"} {
		t.Run("skipped/"+name, func(t *testing.T) {
			prev := srv.Snapshot()
			code, stdout, stderr := runCLI(t, env, append([]string{"--skip-store-probe"}, mutating[name]...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, "nereusctl: store probe skipped (--skip-store-probe): the conditional writes of s3://lax/nereus are trusted unproven") {
				t.Errorf("stderr does not say the probe was skipped:\n%s", stderr)
			}
			d := diffKeys(prev, srv.Snapshot())
			if len(d) == 0 {
				t.Fatalf("%s with --skip-store-probe changed nothing: its refusal proved nothing", name)
			}
			t.Logf("%s changed %d keys", name, len(d))
		})
	}
}

// TestProbeGateVersitygw: on versitygw the first mutating command probes
// and records a passed result, later ones trust it (no probe) until it is
// older than --probe-max-age; through a proxy that drops the conditional
// headers (and signs again) the result is for another endpoint, so the
// command probes again, fails and refuses with the store unchanged, while
// the direct endpoint still writes.
func TestProbeGateVersitygw(t *testing.T) {
	srv := s3server.Start(t)
	env := map[string]string{"NEREUSCTL_STORE": srv.URL("gate"), "NEREUSCTL_S3_ENDPOINT": srv.Endpoint, "NEREUSCTL_S3_PATH_STYLE": "true",
		"XDG_CONFIG_HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()}
	ctx := context.Background()
	direct, err := store.Open(ctx, srv.URL("gate"), store.OpenOptions{S3Endpoint: srv.Endpoint, S3PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	stored := func() *layout.StoreProbe {
		t.Helper()
		doc, _, err := layout.LoadStoreProbe(ctx, direct)
		if err != nil {
			t.Fatalf("stored result: %v", err)
		}
		return doc
	}
	mustRun := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(t, env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stderr
	}
	head := func() int64 {
		t.Helper()
		b, _, err := layout.LoadBinding(ctx, direct, "orders", 0)
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := layout.LoadHead(ctx, direct, b.StreamID)
		if err != nil {
			t.Fatal(err)
		}
		return h.Trim
	}

	mustRun("demo", "--no-tour", "--records", "600", "--partitions", "1")
	first := stored()
	if !first.OK || first.Endpoint != srv.Endpoint || first.Store != strings.TrimSuffix(srv.URL("gate"), "/") || !strings.HasPrefix(first.Build, "nereusctl ") {
		t.Fatalf("after demo: %+v", first)
	}
	mustRun("trim", "orders-0", "--to", "10", "--yes")
	if got := stored(); got.ProbedMs != first.ProbedMs {
		t.Fatalf("a fresh result was probed again: %d, then %d", first.ProbedMs, got.ProbedMs)
	}
	time.Sleep(2 * time.Millisecond)
	mustRun("--probe-max-age", "0s", "trim", "orders-0", "--to", "20", "--yes")
	second := stored()
	if second.ProbedMs <= first.ProbedMs || !second.OK {
		t.Fatalf("--probe-max-age 0s did not probe again: %+v after %+v", second, first)
	}
	if left, err := direct.List(ctx, "tasks/probe-"); err != nil || len(left) != 0 {
		t.Fatalf("probes left %v (%v)", left, err)
	}

	creds := aws.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	proxy := s3lax.StartStripProxy(t, s3lax.ProxyOptions{Target: srv.Endpoint, Resign: true, Credentials: creds, Region: srv.Region})
	viaProxy := map[string]string{"NEREUSCTL_S3_ENDPOINT": proxy.URL}
	code, stdout, stderr := runCLI(t, viaProxy, "trim", "orders-0", "--to", "30", "--yes")
	if code != 3 || !strings.Contains(stderr, storeprobe.CheckIfAbsent) || !strings.Contains(stderr, storeprobe.CheckIfMatchRefuses) {
		t.Fatalf("trim through the proxy: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := head(); got != 20 {
		t.Fatalf("the refused trim moved the trim to %d", got)
	}
	if got := stored(); got.OK || got.Endpoint != proxy.URL {
		t.Fatalf("after the proxy's probe: %+v", got)
	}
	// Straight to versitygw: the failed result is another endpoint's, so
	// no warning, and a mutation probes again and writes.
	env["NEREUSCTL_S3_ENDPOINT"] = srv.Endpoint
	if stderr := mustRun("status", "orders-0"); strings.Contains(stderr, "warning") {
		t.Fatalf("a warning about another endpoint's result:\n%s", stderr)
	}
	mustRun("trim", "orders-0", "--to", "30", "--yes")
	if got := head(); got != 30 {
		t.Fatalf("trim: %d, want 30", got)
	}
	if got := stored(); !got.OK || got.Endpoint != srv.Endpoint {
		t.Fatalf("after the direct trim: %+v", got)
	}
}
