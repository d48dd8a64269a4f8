package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/metrics"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/promtool"
	"github.com/nereusctl/nereusctl/internal/testutil/pushgateway"
)

// metricsDemo makes a demo store in a temp folder (file://, so that the
// store's request counts are real) and returns its URL.
func metricsDemo(t *testing.T) (dir, url string) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir = filepath.Join(t.TempDir(), "store")
	url = "file://" + dir
	if code, _, errOut := runCode(t, "--store", url, "demo", "--records", "600", "--partitions", "2", "--no-tour", "-q"); code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, errOut)
	}
	return dir, url
}

// runCode runs one command line as the binary does (execute: the metrics
// are written when the command returns).
func runCode(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(context.Background(), &globals{stderr: &errb}, args, &out)
	return code, out.String(), errb.String()
}

func readMetrics(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return fams
}

// series returns the values of name's series, keyed by their labels other
// than command and shard ("result=ok", "" for none).
func series(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		var kv []string
		for _, l := range m.GetLabel() {
			if l.GetName() != metrics.CommandLabel && l.GetName() != metrics.ShardLabel {
				kv = append(kv, l.GetName()+"="+l.GetValue())
			}
		}
		sort.Strings(kv)
		v := m.GetGauge().GetValue()
		if m.Counter != nil {
			v = m.GetCounter().GetValue()
		}
		out[strings.Join(kv, ",")] = v
	}
	return out
}

// labelsOf checks that every series of fams has exactly the group labels
// want (command, and shard when given).
func labelsOf(t *testing.T, what string, fams map[string]*dto.MetricFamily, want map[string]string) {
	t.Helper()
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				if l.GetName() == metrics.CommandLabel || l.GetName() == metrics.ShardLabel {
					have[l.GetName()] = l.GetValue()
				}
			}
			if fmt.Sprint(have) != fmt.Sprint(want) {
				t.Errorf("%s: %s has group labels %v, want %v", what, name, have, want)
			}
		}
	}
}

// TestScheduledCommandsWriteMetrics runs every scheduled command on a demo
// store with --metrics-file and checks what each wrote: the common series
// with the command (and shard) label, the partitions by result adding up
// to the partitions the run took, real request counts, and each command's
// own series. promtool check metrics then lints every file (a loud skip
// without promtool; CI fails instead).
func TestScheduledCommandsWriteMetrics(t *testing.T) {
	_, url := metricsDemo(t)
	out := t.TempDir()
	bindings, err := layout.ListBindings(context.Background(), mustFile(t, strings.TrimPrefix(url, "file://")))
	if err != nil {
		t.Fatal(err)
	}
	n := len(bindings)
	shard0 := len(layout.Shard(bindings, 0, 2))
	cases := []struct {
		label string
		args  []string
		// partitions is how many partitions the run reports.
		partitions int
		shard      string
		check      func(t *testing.T, fams map[string]*dto.MetricFamily)
	}{
		{"status", []string{"status"}, n, "", func(t *testing.T, fams map[string]*dto.MetricFamily) {
			hw := series(fams, metrics.PartitionHighWatermark)
			if len(hw) != n || hw["partition=0,topic=orders"] <= 0 {
				t.Errorf("high watermarks %v, want %d partitions with orders-0's above 0", hw, n)
			}
			for _, name := range []string{metrics.PartitionLogStart, metrics.PartitionTailObjects, metrics.PartitionDataLoss, metrics.PartitionBlocked, metrics.PartitionCheckpointAge} {
				if len(series(fams, name)) == 0 {
					t.Errorf("no %s", name)
				}
			}
			if v := series(fams, metrics.Findings)["check=data_loss"]; v != 0 {
				t.Errorf("data loss findings %v on the demo", v)
			}
		}},
		{"verify", []string{"verify", "--all", "--shard", "0/2"}, shard0, "0/2", func(t *testing.T, fams map[string]*dto.MetricFamily) {
			v := series(fams, metrics.PartitionLastVerified)
			if len(v) != shard0 {
				t.Errorf("%d partitions verified, want the shard's %d: %v", len(v), shard0, v)
			}
			for k := range v {
				if !strings.HasPrefix(k, "level=default,") {
					t.Errorf("verified series %s: want level default", k)
				}
			}
			if _, ok := fams[metrics.VerifiedBytes]; !ok {
				t.Error("no verified bytes")
			}
		}},
		{"retention_run", []string{"retention", "run", "--all", "--yes", "--now", "2027-06-01T00:00:00Z"}, n, "", func(t *testing.T, fams map[string]*dto.MetricFamily) {
			p := series(fams, metrics.Partitions)
			if p["result=trimmed"] < 1 {
				t.Errorf("partitions %v: want a trim", p)
			}
			if g := series(fams, metrics.RetentionGarbageBytes)[""]; g <= 0 {
				t.Errorf("garbage bytes %v", g)
			}
			dep := series(fams, metrics.DeprecatedRetentionPartitions)
			if dep["dry_run=false,result=trimmed"] != p["result=trimmed"] || dep["dry_run=false,result=unchanged"] != p["result=unchanged"] {
				t.Errorf("deprecated partitions %v disagree with %v", dep, p)
			}
			for _, name := range []string{metrics.DeprecatedRetentionErrors, metrics.DeprecatedRetentionDuration, metrics.DeprecatedRetentionLastRun, metrics.DeprecatedRetentionLastSuccess} {
				if len(series(fams, name)) != 1 {
					t.Errorf("no %s", name)
				}
			}
		}},
		{"gc", []string{"gc", "--grace", "0s"}, n, "", nil},
		{"compact", []string{"compact", "--all"}, -1, "", nil},
		{"checkpoint_create", []string{"checkpoint", "create", "--all"}, n, "", func(t *testing.T, fams map[string]*dto.MetricFamily) {
			if p := series(fams, metrics.Partitions); p["result=ok"] < 1 {
				t.Errorf("partitions %v: want a checkpoint published", p)
			}
		}},
	}
	files := map[string]string{}
	for _, c := range cases {
		path := filepath.Join(out, c.label+".prom")
		files[c.label] = path
		before := time.Now().Unix()
		args := append([]string{"--store", url, "-q", "--metrics-file", path}, c.args...)
		if code, _, errOut := runCode(t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", c.args, code, errOut)
		}
		fams := readMetrics(t, path)
		want := map[string]string{metrics.CommandLabel: c.label}
		if c.shard != "" {
			want[metrics.ShardLabel] = c.shard
		}
		labelsOf(t, c.label, fams, want)
		for _, name := range []string{metrics.LastRun, metrics.LastSuccess} {
			if v := series(fams, name)[""]; v < float64(before) || v > float64(time.Now().Unix()) {
				t.Errorf("%s: %s = %v, want the run's end", c.label, name, v)
			}
		}
		total := 0.0
		for _, v := range series(fams, metrics.Partitions) {
			total += v
		}
		if c.partitions >= 0 && int(total) != c.partitions {
			t.Errorf("%s: partitions by result %v add up to %v, want %d", c.label, series(fams, metrics.Partitions), total, c.partitions)
		}
		req := series(fams, metrics.StoreRequests)
		if len(req) != len(store.Verbs) || req["method=LIST"] < 1 {
			t.Errorf("%s: store requests %v", c.label, req)
		}
		if _, ok := series(fams, metrics.StoreRetries)[""]; !ok {
			t.Errorf("%s: no retries", c.label)
		}
		if c.check != nil {
			c.check(t, fams)
		}
	}
	t.Run("promtool", func(t *testing.T) {
		bin := promtool.Require(t)
		for label, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := promtool.CheckMetrics(bin, b); err != nil {
				t.Errorf("%s: %v", label, err)
			}
		}
	})
}

func mustFile(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDryRunWritesNoMetrics: a dry run writes no file and pushes nothing,
// and says so.
func TestDryRunWritesNoMetrics(t *testing.T) {
	_, url := metricsDemo(t)
	gw := pushgateway.Start(t)
	path := filepath.Join(t.TempDir(), "dry.prom")
	for _, args := range [][]string{
		{"retention", "run", "--all", "--dry-run"},
		{"gc", "--dry-run"},
		{"compact", "--all", "--dry-run"},
		{"checkpoint", "create", "--all", "--dry-run"},
	} {
		code, _, errOut := runCode(t, append([]string{"--store", url, "-q", "--metrics-file", path, "--push-gateway", gw.URL()}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		if !strings.Contains(errOut, "dry run: no metrics written or pushed") {
			t.Errorf("%v: stderr does not say so: %q", args, errOut)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote %s (%v)", path, err)
	}
	if p := gw.Pushes(); len(p) != 0 {
		t.Errorf("a dry run pushed %d times", len(p))
	}
}

// TestFailedVerifyKeepsPreviousTimes: verify with a damaged object exits
// 3 and its file keeps the previous last success time and the damaged
// partition's last verification, while the clean partitions' move.
func TestFailedVerifyKeepsPreviousTimes(t *testing.T) {
	dir, url := metricsDemo(t)
	ctx := context.Background()
	st := mustFile(t, dir)
	b, _, err := layout.LoadBinding(ctx, st, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx, layout.StreamPrefix(b.StreamID)+"objects/")
	if err != nil || len(objs) == 0 {
		t.Fatalf("objects of orders-0: %d, %v", len(objs), err)
	}
	data, err := st.Get(ctx, objs[len(objs)/2].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if _, err := st.Put(ctx, objs[len(objs)/2].Key, data, store.None()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "verify.prom")
	prev := `# TYPE nereusctl_last_success_timestamp_seconds gauge
nereusctl_last_success_timestamp_seconds{command="verify"} 1000
# TYPE nereusctl_partition_last_verified_timestamp_seconds gauge
nereusctl_partition_last_verified_timestamp_seconds{command="verify",level="deep",partition="0",topic="orders"} 1000
nereusctl_partition_last_verified_timestamp_seconds{command="verify",level="deep",partition="1",topic="orders"} 1000
`
	if err := os.WriteFile(path, []byte(prev), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCode(t, "--store", url, "-q", "--metrics-file", path, "verify", "--all", "--deep", "--read-only")
	if code != 3 {
		t.Fatalf("verify of a damaged store: exit %d, want 3\n%s", code, errOut)
	}
	fams := readMetrics(t, path)
	if v := series(fams, metrics.LastSuccess)[""]; v != 1000 {
		t.Errorf("last success %v after a failed run, want the previous 1000", v)
	}
	if v := series(fams, metrics.LastRun)[""]; v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last run %v, want now", v)
	}
	ver := series(fams, metrics.PartitionLastVerified)
	if v := ver["level=deep,partition=0,topic=orders"]; v != 1000 {
		t.Errorf("the damaged orders-0 verified at %v, want its previous 1000", v)
	}
	if v := ver["level=deep,partition=1,topic=orders"]; v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("the clean orders-1 verified at %v, want now", v)
	}
	p := series(fams, metrics.Partitions)
	if p["result=failed"] != 1 {
		t.Errorf("partitions %v: want orders-0 failed", p)
	}
	findings := 0.0
	for _, v := range series(fams, metrics.Findings) {
		findings += v
	}
	if findings < 1 {
		t.Errorf("findings %v", series(fams, metrics.Findings))
	}
}

// TestVerifyPushes: verify --push-gateway pushes to job nereusctl grouped
// by command, shard and the extra labels, with its series.
func TestVerifyPushes(t *testing.T) {
	_, url := metricsDemo(t)
	gw := pushgateway.Start(t)
	code, _, errOut := runCode(t, "--store", url, "-q", "--push-gateway", gw.URL(), "--push-gateway-label", "cluster=test", "--push-gateway-label", "region=eu-1",
		"verify", "--all", "--deep", "--shard", "1/2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	p := gw.Last(t)
	want := map[string]string{"job": "nereusctl", "command": "verify", "shard": "1/2", "cluster": "test", "region": "eu-1"}
	if fmt.Sprint(p.Labels) != fmt.Sprint(want) {
		t.Errorf("grouping key %v (%s), want %v", p.Labels, p.Path, want)
	}
	if p.Method != "PUT" {
		t.Errorf("method %s", p.Method)
	}
	if len(series(p.Families, metrics.PartitionLastVerified)) == 0 || series(p.Families, metrics.VerifiedBytes)[""] <= 0 {
		t.Errorf("no verification series or bytes hashed: %v", p.Families)
	}
	for k := range series(p.Families, metrics.PartitionLastVerified) {
		if !strings.HasPrefix(k, "level=deep,") {
			t.Errorf("series %s: want level deep", k)
		}
	}
}

// TestMetricsSettings: --push-gateway and its labels as settings, from
// the environment (a comma-separated list) and a config file (a list),
// checked strictly; the push flags on a command that writes no metrics
// and a missing metrics folder are usage errors before any work.
func TestMetricsSettings(t *testing.T) {
	_, url := metricsDemo(t)
	gw := pushgateway.Start(t)
	t.Run("env", func(t *testing.T) {
		t.Setenv("NEREUSCTL_PUSH_GATEWAY", gw.URL())
		t.Setenv("NEREUSCTL_PUSH_GATEWAY_LABEL", "cluster=env,zone=a")
		if code, _, errOut := runCode(t, "--store", url, "-q", "gc"); code != 0 {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		if l := gw.Last(t).Labels; l["cluster"] != "env" || l["zone"] != "a" || l["command"] != "gc" {
			t.Errorf("labels %v", l)
		}
	})
	t.Run("config file", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(cfg, []byte("push-gateway: "+gw.URL()+"\npush-gateway-label: [cluster=file]\n"), 0o644)
		if code, _, errOut := runCode(t, "--store", url, "-q", "--config", cfg, "status"); code != 0 {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		if l := gw.Last(t).Labels; l["cluster"] != "file" || l["command"] != "status" {
			t.Errorf("labels %v", l)
		}
		os.WriteFile(cfg, []byte("push-gateway-label: cluster=file\n"), 0o644)
		if code, _, errOut := runCode(t, "--store", url, "--config", cfg, "status"); code != 2 || !strings.Contains(errOut, `key "push-gateway-label": want a list of strings`) {
			t.Errorf("a string for a list: exit %d\n%s", code, errOut)
		}
	})
	before := len(gw.Pushes())
	refused := []struct {
		args []string
		want string
	}{
		{[]string{"dump", "orders-0", "--push-gateway", gw.URL()}, "dump writes no metrics"},
		{[]string{"status", "--push-gateway", "pgw:9091"}, "want http://"},
		{[]string{"status", "--push-gateway", gw.URL(), "--push-gateway-label", "job=x"}, "sets itself"},
		{[]string{"status", "--push-gateway", gw.URL(), "--push-gateway-label", "a=1", "--push-gateway-label", "a=2"}, "twice"},
		{[]string{"status", "--push-gateway-label", "a=1"}, "goes with --push-gateway"},
		{[]string{"gc", "--metrics-file", filepath.Join(t.TempDir(), "no", "gc.prom")}, "--metrics-file"},
	}
	for _, c := range refused {
		code, _, errOut := runCode(t, append([]string{"--store", url}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", c.args, code, c.want, errOut)
		}
	}
	if n := len(gw.Pushes()); n != before {
		t.Errorf("a refused run pushed (%d pushes)", n-before)
	}
}

// TestPushFailureFailsASuccessfulRun: a run that succeeded but could not
// push exits 1, naming the gateway.
func TestPushFailureFailsASuccessfulRun(t *testing.T) {
	_, url := metricsDemo(t)
	gw := pushgateway.Start(t)
	code, _, errOut := runCode(t, "--store", url, "-q", "--push-gateway", gw.URL()+"/wrong", "status")
	if code != 1 || !strings.Contains(errOut, gw.URL()+"/wrong") {
		t.Errorf("exit %d, want 1 naming the gateway\n%s", code, errOut)
	}
}

// TestScheduledCommandsExist: every scheduled command is a real command
// with --metrics-file, and no other command has it.
func TestScheduledCommandsExist(t *testing.T) {
	root := newRootCmd(&globals{})
	found := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		_, scheduled := scheduledCommands[commandPath(c)]
		if has := c.Flags().Lookup(metricsFileFlag) != nil; has != scheduled {
			t.Errorf("%s: --metrics-file %v, scheduled %v", c.CommandPath(), has, scheduled)
		}
		if scheduled {
			found++
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if found != len(scheduledCommands) {
		t.Errorf("%d of %d scheduled commands found", found, len(scheduledCommands))
	}
	for _, label := range scheduledCommands {
		if !regexp.MustCompile(`^[a-z_]+$`).MatchString(label) {
			t.Errorf("command label %q: letters and _ only (a push path escapes a space as +)", label)
		}
	}
}

// TestBlockedPartitionsCounted: a partition whose lease another job holds
// is counted blocked (exit 4), the others ok, by every command that takes
// partition leases.
func TestBlockedPartitionsCounted(t *testing.T) {
	dir, url := metricsDemo(t)
	ctx := context.Background()
	held := layout.TopicPartition{Topic: "orders", Partition: 0}
	if _, err := lease.Acquire(ctx, mustFile(t, dir), lease.PartitionName(held), "cron@other-host", time.Hour, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		label string
		args  []string
	}{
		{"checkpoint_create", []string{"checkpoint", "create", "--all"}},
		{"gc", []string{"gc"}},
		{"retention_run", []string{"retention", "run", "--all", "--yes"}},
	} {
		path := filepath.Join(t.TempDir(), c.label+".prom")
		code, _, errOut := runCode(t, append([]string{"--store", url, "-q", "--lease-wait", "0s", "--metrics-file", path}, c.args...)...)
		if code != 4 {
			t.Fatalf("%v: exit %d, want 4\n%s", c.args, code, errOut)
		}
		fams := readMetrics(t, path)
		p := series(fams, metrics.Partitions)
		if p["result=blocked"] != 1 || p["result=failed"] != 0 {
			t.Errorf("%s: partitions %v, want orders-0 blocked and none failed", c.label, p)
		}
		if _, ok := fams[metrics.LastSuccess]; ok {
			t.Errorf("%s: a failed first run wrote a last success", c.label)
		}
	}
}

// deployMetricNames are the nereusctl_* names a file of docs/deploy uses.
func deployMetricNames(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsDir, "deploy", file))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range regexp.MustCompile(`nereusctl_[a-z_]+`).FindAllString(string(b), -1) {
		out[n] = true
	}
	return out
}

// TestDeployMetricNames: the alert rules, their tests and the dashboard
// use only names nereusctl writes (a renamed metric breaks them here), the
// alerts cover what docs/deploy/README.md promises, and the dashboard
// shows every current name.
func TestDeployMetricNames(t *testing.T) {
	known := map[string]bool{}
	for _, n := range metrics.Names() {
		known[n] = true
	}
	for _, f := range []string{"prometheus-rules.yaml", "prometheus-rules.test.yaml", "grafana-dashboard.json", "README.md"} {
		for n := range deployMetricNames(t, f) {
			if !known[n] {
				t.Errorf("%s uses %s, which nereusctl does not write", f, n)
			}
		}
	}
	rules := deployMetricNames(t, "prometheus-rules.yaml")
	for _, n := range []string{metrics.LastSuccess, metrics.Findings, metrics.PartitionBlocked, metrics.PartitionDataLoss, metrics.PartitionCheckpointAge, metrics.PartitionLastVerified} {
		if !rules[n] {
			t.Errorf("no alert over %s", n)
		}
	}
	dash := deployMetricNames(t, "grafana-dashboard.json")
	readme := deployMetricNames(t, "README.md")
	for _, n := range metrics.Names() {
		if !strings.HasPrefix(n, "nereusctl_retention_") || n == metrics.RetentionGarbageBytes {
			if !dash[n] {
				t.Errorf("the dashboard does not show %s", n)
			}
		}
		if !readme[n] {
			t.Errorf("docs/deploy/README.md does not name %s", n)
		}
	}
}

// dashboardQueries are the dashboard's PromQL expressions, its variables
// replaced by ".*".
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsDir, "deploy", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			e := regexp.MustCompile(`\$\{?([a-z_]+)\}?`).ReplaceAllStringFunc(tg.Expr, func(m string) string {
				name := strings.Trim(m, "${}")
				if !vars[name] {
					t.Errorf("panel %q: %s is no dashboard variable", p.Title, m)
				}
				return ".*"
			})
			out = append(out, e)
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d queries in the dashboard", len(out))
	}
	return out
}

// TestDeployRulesPromtool: promtool checks the alert rules and runs their
// unit tests, and parses every dashboard query (as recording rules).
func TestDeployRulesPromtool(t *testing.T) {
	queries := dashboardQueries(t)
	bin := promtool.Require(t)
	dir := filepath.Join(docsDir, "deploy")
	if out, err := promtool.Run(bin, nil, "check", "rules", filepath.Join(dir, "prometheus-rules.yaml")); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "test", "rules", "prometheus-rules.test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range queries {
		qj, _ := json.Marshal(q)
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", i, qj)
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(f, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool.Run(bin, nil, "check", "rules", f); err != nil {
		t.Errorf("a dashboard query does not parse: %v\n%s", err, out)
	}
}
