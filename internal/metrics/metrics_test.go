package metrics

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nereusctl/nereusctl/internal/errkind"
)

var (
	t1 = time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	t2 = t1.Add(24 * time.Hour)
	t3 = t2.Add(24 * time.Hour)
)

// parseFile parses a metrics file with the text parser.
func parseFile(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", path, err, b)
	}
	return fams
}

// value is the value of the one series of mf whose labels include want;
// ok is false when there is none.
func value(t *testing.T, mf *dto.MetricFamily, want map[string]string) (float64, bool) {
	t.Helper()
	var found []float64
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if have[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			found = append(found, m.GetGauge().GetValue())
		case m.Counter != nil:
			found = append(found, m.GetCounter().GetValue())
		}
	}
	if len(found) > 1 {
		t.Fatalf("%s: %d series match %v", mf.GetName(), len(found), want)
	}
	if len(found) == 0 {
		return 0, false
	}
	return found[0], true
}

func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	mf := fams[name]
	if mf == nil {
		t.Fatalf("no %s", name)
	}
	v, ok := value(t, mf, want)
	if !ok {
		t.Fatalf("%s: no series with %v", name, want)
	}
	return v
}

func verifyRun(end time.Time, success bool, level string, complete bool, parts ...VerifiedPartition) *Run {
	return &Run{
		Command: "verify", Shard: "0/4", Start: end.Add(-90 * time.Second), End: end, Success: success,
		Partitions: map[string]int{ResultOK: 1, ResultFailed: 0, ResultBlocked: 0},
		Findings:   map[string]int{"member-sha256": 2},
		Requests:   map[string]int64{"GET": 7, "HEAD": 3, "LIST": 1, "PUT": 0, "DELETE": 0},
		Retries:    2,
		Verify:     &Verify{Level: level, BytesHashed: 4096, Partitions: parts, Complete: complete},
	}
}

// TestFileSeries: a run's file holds every documented series, with the
// command and shard labels, from client_golang (the text format).
func TestFileSeries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "verify.prom")
	run := verifyRun(t1, true, LevelDeep, true, VerifiedPartition{"orders", 0, true}, VerifiedPartition{"orders", 1, false})
	if err := (Target{File: path}).Write(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	fams := parseFile(t, path)
	g := map[string]string{CommandLabel: "verify", ShardLabel: "0/4"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range g {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{LastRun, g, float64(t1.Unix())},
		{LastSuccess, g, float64(t1.Unix())},
		{Duration, g, 90},
		{Partitions, with(ResultLabel, ResultOK), 1},
		{Partitions, with(ResultLabel, ResultFailed), 0},
		{Findings, with(CheckLabel, "member-sha256"), 2},
		{StoreRequests, with(MethodLabel, "GET"), 7},
		{StoreRequests, with(MethodLabel, "DELETE"), 0},
		{StoreRetries, g, 2},
		{VerifiedBytes, g, 4096},
		{PartitionLastVerified, with(TopicLabel, "orders", PartitionLabel, "0", LevelLabel, LevelDeep), float64(t1.Unix())},
	}
	for _, c := range checks {
		if v := mustValue(t, fams, c.name, c.labels); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if _, ok := value(t, fams[PartitionLastVerified], with(PartitionLabel, "1")); ok {
		t.Error("a partition that failed verification has a verification time")
	}
	if fams[StoreRequests].GetType() != dto.MetricType_COUNTER || fams[LastRun].GetType() != dto.MetricType_GAUGE {
		t.Error("wrong metric types")
	}
	for name, mf := range fams {
		if mf.GetHelp() == "" || mf.GetHelp() != help[name] {
			t.Errorf("%s: help %q", name, mf.GetHelp())
		}
	}
}

// TestFailedRunKeepsLastSuccess: a failed run writes its run time and
// keeps the previous file's last success time (retention's deprecated one
// too); a success after it moves both.
func TestFailedRunKeepsLastSuccess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retention.prom")
	run := func(end time.Time, ok bool) *Run {
		return &Run{Command: "retention_run", Start: end.Add(-time.Minute), End: end, Success: ok,
			Partitions: map[string]int{ResultTrimmed: 1, ResultUnchanged: 2, ResultFailed: 0, ResultBlocked: 0},
			Retention:  &Retention{GarbageBytes: 100, Trimmed: 1, Unchanged: 2}}
	}
	write := func(r *Run) map[string]*dto.MetricFamily {
		t.Helper()
		if err := (Target{File: path}).Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		return parseFile(t, path)
	}
	g := map[string]string{CommandLabel: "retention_run"}
	write(run(t1, true))
	fams := write(run(t2, false))
	for name, want := range map[string]time.Time{LastRun: t2, LastSuccess: t1, DeprecatedRetentionLastRun: t2, DeprecatedRetentionLastSuccess: t1} {
		if v := mustValue(t, fams, name, g); v != float64(want.Unix()) {
			t.Errorf("after a failed run: %s = %v, want %v", name, v, want.Unix())
		}
	}
	if _, ok := fams[ShardLabel]; ok {
		t.Error("no --shard, yet a shard label")
	}
	fams = write(run(t3, true))
	if v := mustValue(t, fams, LastSuccess, g); v != float64(t3.Unix()) {
		t.Errorf("after a success: last success %v, want %v", v, t3.Unix())
	}
	if v := mustValue(t, fams, DeprecatedRetentionPartitions, map[string]string{ResultLabel: "trimmed", "dry_run": "false"}); v != 1 {
		t.Errorf("deprecated partitions{trimmed} = %v", v)
	}
	if v := mustValue(t, fams, RetentionGarbageBytes, g); v != 100 {
		t.Errorf("garbage bytes %v", v)
	}
}

// TestFailedFirstRunHasNoSuccess: a failed run with no previous file
// writes no last success time (there was none).
func TestFailedFirstRunHasNoSuccess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gc.prom")
	if err := (Target{File: path}).Write(context.Background(), &Run{Command: "gc", Start: t1, End: t1}); err != nil {
		t.Fatal(err)
	}
	fams := parseFile(t, path)
	if _, ok := fams[LastSuccess]; ok {
		t.Error("a failed first run wrote a last success time")
	}
	if _, ok := fams[Partitions]; ok {
		t.Error("a run with no partition results wrote nereusctl_partitions")
	}
	mustValue(t, fams, LastRun, nil)
}

// TestPreviousOfAnotherGroupIgnored: the previous file's series of another
// shard (or command) are not carried into this group.
func TestPreviousOfAnotherGroupIgnored(t *testing.T) {
	prev := `# TYPE nereusctl_last_success_timestamp_seconds gauge
nereusctl_last_success_timestamp_seconds{command="verify",shard="1/4"} 111
nereusctl_last_success_timestamp_seconds{command="status",shard="0/4"} 222
nereusctl_last_success_timestamp_seconds{command="verify",shard="0/4",cluster="x"} 333
# TYPE nereusctl_partition_last_verified_timestamp_seconds gauge
nereusctl_partition_last_verified_timestamp_seconds{command="verify",shard="1/4",topic="a",partition="0",level="deep"} 444
nereusctl_partition_last_verified_timestamp_seconds{command="verify",shard="0/4",topic="b",partition="0",level="deep"} 555
`
	path := filepath.Join(t.TempDir(), "v.prom")
	if err := os.WriteFile(path, []byte(prev), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (Target{File: path}).Write(context.Background(), verifyRun(t2, false, LevelDeep, false)); err != nil {
		t.Fatal(err)
	}
	fams := parseFile(t, path)
	if _, ok := fams[LastSuccess]; ok {
		t.Errorf("another group's last success was carried: %v", fams[LastSuccess])
	}
	mf := fams[PartitionLastVerified]
	if n := len(mf.GetMetric()); n != 1 {
		t.Fatalf("%d verification series, want b-0's only", n)
	}
	if v := mustValue(t, fams, PartitionLastVerified, map[string]string{TopicLabel: "b"}); v != 555 {
		t.Errorf("b-0: %v, want 555", v)
	}
}

// TestVerifiedCarryOver: the verification time moves for partitions found
// clean at the run's level only; a failed partition, the other level and
// partitions not named keep theirs; a complete run drops the partitions
// it did not look at (gone from the store or the shard).
func TestVerifiedCarryOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.prom")
	write := func(r *Run) map[string]*dto.MetricFamily {
		t.Helper()
		if err := (Target{File: path}).Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		return parseFile(t, path)
	}
	get := func(fams map[string]*dto.MetricFamily, topic, part, level string) (float64, bool) {
		return value(t, fams[PartitionLastVerified], map[string]string{TopicLabel: topic, PartitionLabel: part, LevelLabel: level})
	}
	// t1: a deep run over a-0, a-1, a-2.
	write(verifyRun(t1, true, LevelDeep, true, VerifiedPartition{"a", 0, true}, VerifiedPartition{"a", 1, true}, VerifiedPartition{"a", 2, true}))
	// t2: a default run naming a-0 and a-1; a-1 fails.
	fams := write(verifyRun(t2, false, LevelDefault, false, VerifiedPartition{"a", 0, true}, VerifiedPartition{"a", 1, false}))
	want := []struct {
		part, level string
		at          time.Time
		ok          bool
	}{
		{"0", LevelDefault, t2, true},
		{"0", LevelDeep, t1, true},
		{"1", LevelDefault, time.Time{}, false},
		{"1", LevelDeep, t1, true},
		{"2", LevelDeep, t1, true}, // not named: kept
	}
	for _, w := range want {
		v, ok := get(fams, "a", w.part, w.level)
		if ok != w.ok || (ok && v != float64(w.at.Unix())) {
			t.Errorf("after t2: a-%s %s = %v (present %v), want %v (present %v)", w.part, w.level, v, ok, w.at.Unix(), w.ok)
		}
	}
	// t3: a complete deep run that finds only a-0 (a-1 and a-2 are gone).
	fams = write(verifyRun(t3, true, LevelDeep, true, VerifiedPartition{"a", 0, true}))
	if v, _ := get(fams, "a", "0", LevelDeep); v != float64(t3.Unix()) {
		t.Errorf("after t3: a-0 deep %v", v)
	}
	if v, ok := get(fams, "a", "0", LevelDefault); !ok || v != float64(t2.Unix()) {
		t.Errorf("after t3: a-0 default %v %v: the other level is kept", v, ok)
	}
	for _, p := range []string{"1", "2"} {
		if _, ok := get(fams, "a", p, LevelDeep); ok {
			t.Errorf("after a complete run: a-%s, which it did not find, still has a series", p)
		}
	}
}

// TestCorruptPreviousFileReplaced: a previous file that does not parse is
// replaced (and logged), never a reason to fail the run's metrics.
func TestCorruptPreviousFileReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.prom")
	if err := os.WriteFile(path, []byte("nereusctl_last_success_timestamp_seconds{ 12 garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	err := (Target{File: path, Log: slog.New(slog.NewTextHandler(&log, nil))}).Write(context.Background(), &Run{Command: "status", Start: t1, End: t1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "does not parse") || !strings.Contains(log.String(), path) {
		t.Errorf("no warning naming the file: %q", log.String())
	}
	mustValue(t, parseFile(t, path), LastRun, nil)
}

// TestWriteFileIsAtomic: the file is replaced by rename (a reader never
// sees a torn one), left readable by node_exporter, and a folder that does
// not exist is an error naming the file.
func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.prom")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path) // a reader of the old file
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := (Target{File: path}).Write(context.Background(), &Run{Command: "compact", Start: t1, End: t1, Success: true}); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(f.Name())
	var held bytes.Buffer
	if _, err := held.ReadFrom(f); err != nil || held.String() != "old\n" {
		t.Errorf("the open file changed under its reader: %q %v", held.String(), err)
	}
	if bytes.Equal(old, []byte("old\n")) {
		t.Error("the file was not replaced")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v %v, want 0644", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
	missing := filepath.Join(dir, "no", "such", "c.prom")
	err = (Target{File: missing}).Write(context.Background(), &Run{Command: "compact", Start: t1, End: t1})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing folder: %v", err)
	}
}

func TestParseGatewayURL(t *testing.T) {
	good := map[string]string{
		"http://pushgateway:9091":                     "http://pushgateway:9091",
		"https://pgw.example.com/":                    "https://pgw.example.com",
		"http://10.0.0.1:9091/prefix/pushgateway":     "http://10.0.0.1:9091/prefix/pushgateway",
		"http://pushgateway.monitoring.svc:9091/root": "http://pushgateway.monitoring.svc:9091/root",
	}
	for in, want := range good {
		got, err := ParseGatewayURL(in)
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"pushgateway:9091":                       "want http://",
		"ftp://pgw:21":                           "want http://",
		"http://":                                "no host",
		"http://:9091":                           "no host",
		"http://user:secret@pgw:9091":            "credentials",
		"http://pgw:9091?x=1":                    "query",
		"http://pgw:9091#frag":                   "fragment",
		"http://pgw:9091/metrics/job/nereusctl":  "URL of a group",
		"http://pgw:9091/metrics":                "URL of a group",
		"http://pgw:9091/%zz":                    "not a URL",
		"":                                       "want http://",
		" http://pgw:9091":                       "not a URL",
		"http://pgw:9091/metrics/job/x/command/": "URL of a group",
	}
	for in, want := range bad {
		_, err := ParseGatewayURL(in)
		if err == nil || !strings.Contains(err.Error(), want) || !errkind.Is(err, errkind.Usage) {
			t.Errorf("%q: %v, want a usage error containing %q", in, err, want)
		}
	}
}

func TestParseLabels(t *testing.T) {
	ls, err := ParseLabels([]string{"cluster=prod", "instance=node-1", "env=eu:west/1"})
	if err != nil || len(ls) != 3 || ls[0] != (Label{"cluster", "prod"}) || ls[2] != (Label{"env", "eu:west/1"}) {
		t.Fatalf("%v %v", ls, err)
	}
	bad := map[string]string{
		"cluster":          "want KEY=VALUE",
		"=prod":            "not a label name",
		"1cluster=prod":    "not a label name",
		"clus-ter=prod":    "not a label name",
		"__name__=x":       "reserves",
		"__x=y":            "reserves",
		"job=other":        "sets itself",
		"command=x":        "sets itself",
		"shard=0/1":        "sets itself",
		"topic=orders":     "sets itself",
		"cluster=":         "empty VALUE",
		"cluster=a b":      "spaces",
		"cluster=a,b":      "commas",
		"cluster=a\tb":     "control",
		"cluster=\xff\xfe": "UTF-8",
	}
	for in, want := range bad {
		_, err := ParseLabels([]string{in})
		if err == nil || !strings.Contains(err.Error(), want) || !errkind.Is(err, errkind.Usage) {
			t.Errorf("%q: %v, want a usage error containing %q", in, err, want)
		}
	}
	if _, err := ParseLabels([]string{"cluster=a", "cluster=b"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a key twice: %v", err)
	}
}
