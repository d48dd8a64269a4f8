package metrics

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/testutil/pushgateway"
)

func pushTarget(gw *pushgateway.Gateway, labels ...Label) Target {
	return Target{Gateway: &Gateway{URL: gw.URL(), Labels: labels}}
}

// TestPushGroupingAndSeries: a push goes to job nereusctl with the
// grouping labels command, shard and the extra ones (the shard's "/" sent
// base64, as the push package does), and its body, decoded with expfmt,
// holds the run's series without those labels.
func TestPushGroupingAndSeries(t *testing.T) {
	gw := pushgateway.Start(t)
	run := verifyRun(t1, true, LevelDeep, true, VerifiedPartition{"orders", 3, true})
	if err := pushTarget(gw, Label{"cluster", "prod"}).Write(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	p := gw.Last(t)
	want := map[string]string{"job": "nereusctl", "command": "verify", "shard": "0/4", "cluster": "prod"}
	if !sameLabels(p.Labels, want) {
		t.Errorf("grouping key %v (path %s), want %v", p.Labels, p.Path, want)
	}
	if !strings.Contains(p.Path, "/shard@base64/MC80") || !strings.HasPrefix(p.Path, "/metrics/job/nereusctl/") {
		t.Errorf("path %s", p.Path)
	}
	if p.Method != http.MethodPut {
		t.Errorf("a successful run pushed with %s, want PUT (it replaces the group)", p.Method)
	}
	for _, name := range []string{LastRun, LastSuccess, Duration, Partitions, Findings, StoreRequests, StoreRetries, VerifiedBytes, PartitionLastVerified} {
		mf := p.Families[name]
		if mf == nil {
			t.Errorf("pushed no %s", name)
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if _, ok := want[l.GetName()]; ok {
					t.Errorf("%s carries the grouping label %s itself", name, l.GetName())
				}
			}
		}
	}
	if v := mustValue(t, p.Families, PartitionLastVerified, map[string]string{TopicLabel: "orders", PartitionLabel: "3", LevelLabel: LevelDeep}); v != float64(t1.Unix()) {
		t.Errorf("verified at %v", v)
	}
	if v := mustValue(t, p.Families, StoreRequests, map[string]string{MethodLabel: "GET"}); v != 7 {
		t.Errorf("GET requests %v", v)
	}
	// No shard: no shard in the grouping key.
	st := &Run{Command: "status", Start: t1, End: t1, Success: true,
		Status: []PartitionStatus{{Topic: "orders", Partition: 0, Read: true, TailObjects: 4, LogStart: 10, HW: 99}}}
	if err := pushTarget(gw).Write(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	p = gw.Last(t)
	if !sameLabels(p.Labels, map[string]string{"job": "nereusctl", "command": "status"}) {
		t.Errorf("status grouping key %v", p.Labels)
	}
	if v := mustValue(t, p.Families, PartitionHighWatermark, map[string]string{TopicLabel: "orders", PartitionLabel: "0"}); v != 99 {
		t.Errorf("high watermark %v", v)
	}
}

// TestPushFailedRunKeepsLastSuccess: a failed run reads the group back
// from the gateway and pushes the previous last success time with its
// own run time; another shard's group is left alone.
func TestPushFailedRunKeepsLastSuccess(t *testing.T) {
	gw := pushgateway.Start(t)
	ctx := context.Background()
	first := &Run{Command: "retention_run", Shard: "0/2", Start: t1, End: t1, Success: true, Retention: &Retention{}}
	other := &Run{Command: "retention_run", Shard: "1/2", Start: t1, End: t1.Add(time.Hour), Success: true, Retention: &Retention{}}
	failed := &Run{Command: "retention_run", Shard: "0/2", Start: t2, End: t2, Success: false, Retention: &Retention{Errors: 1}}
	for _, r := range []*Run{first, other, failed} {
		if err := pushTarget(gw).Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	p := gw.Last(t)
	g := map[string]string{"job": "nereusctl", "command": "retention_run", "shard": "0/2"}
	if !sameLabels(p.Labels, g) {
		t.Fatalf("grouping key %v", p.Labels)
	}
	for name, want := range map[string]float64{LastRun: float64(t2.Unix()), LastSuccess: float64(t1.Unix()), DeprecatedRetentionLastSuccess: float64(t1.Unix()), DeprecatedRetentionErrors: 1} {
		if v := mustValue(t, p.Families, name, nil); v != want {
			t.Errorf("failed run pushed %s = %v, want %v", name, v, want)
		}
	}
	if v, _ := value(t, gw.Stored(map[string]string{"job": "nereusctl", "command": "retention_run", "shard": "1/2"}, LastSuccess), nil); v != float64(t1.Add(time.Hour).Unix()) {
		t.Errorf("the other shard's last success is %v", v)
	}
}

// TestPushFallsBackToAdd: when the gateway's exposition cannot be read, a
// failed run pushes with POST and without its last success time, so the
// gateway keeps the one it has.
func TestPushFallsBackToAdd(t *testing.T) {
	gw := pushgateway.Start(t)
	ctx := context.Background()
	g := map[string]string{"job": "nereusctl", "command": "gc"}
	if err := pushTarget(gw).Write(ctx, &Run{Command: "gc", Start: t1, End: t1, Success: true}); err != nil {
		t.Fatal(err)
	}
	gw.FailGet(true)
	var log bytes.Buffer
	tg := pushTarget(gw)
	tg.Log = slog.New(slog.NewTextHandler(&log, nil))
	if err := tg.Write(ctx, &Run{Command: "gc", Start: t2, End: t2}); err != nil {
		t.Fatal(err)
	}
	p := gw.Last(t)
	if p.Method != http.MethodPost {
		t.Errorf("method %s, want POST", p.Method)
	}
	if _, ok := p.Families[LastSuccess]; ok {
		t.Error("the fallback push sent a last success time")
	}
	if !strings.Contains(log.String(), "POST") || !strings.Contains(log.String(), "503") {
		t.Errorf("no warning: %q", log.String())
	}
	if v, _ := value(t, gw.Stored(g, LastSuccess), nil); v != float64(t1.Unix()) {
		t.Errorf("the gateway's last success is %v, want %v", v, t1.Unix())
	}
	if v, _ := value(t, gw.Stored(g, LastRun), nil); v != float64(t2.Unix()) {
		t.Errorf("the gateway's last run is %v, want %v", v, t2.Unix())
	}
}

// TestPushVerifiedCarryOver: a verify push keeps the group's other
// verification times, read back from the gateway (a run naming one
// partition does not wipe the rest).
func TestPushVerifiedCarryOver(t *testing.T) {
	gw := pushgateway.Start(t)
	ctx := context.Background()
	all := verifyRun(t1, true, LevelDefault, true, VerifiedPartition{"a", 0, true}, VerifiedPartition{"a", 1, true})
	all.Shard = ""
	named := verifyRun(t2, true, LevelDefault, false, VerifiedPartition{"a", 1, true})
	named.Shard = ""
	for _, r := range []*Run{all, named} {
		if err := pushTarget(gw).Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	mf := gw.Stored(map[string]string{"job": "nereusctl", "command": "verify"}, PartitionLastVerified)
	for part, want := range map[string]float64{"0": float64(t1.Unix()), "1": float64(t2.Unix())} {
		if v, ok := value(t, mf, map[string]string{TopicLabel: "a", PartitionLabel: part}); !ok || v != want {
			t.Errorf("a-%s verified at %v (%v), want %v", part, v, ok, want)
		}
	}
}

// TestPushErrorNamesTheGateway: a gateway that refuses the push is an
// error naming it.
func TestPushErrorNamesTheGateway(t *testing.T) {
	gw := pushgateway.Start(t)
	bad := &Gateway{URL: gw.URL() + "/nope"}
	err := Target{Gateway: bad}.Write(context.Background(), &Run{Command: "gc", Start: t1, End: t1, Success: true})
	if err == nil || !strings.Contains(err.Error(), bad.URL) {
		t.Errorf("err %v", err)
	}
}
