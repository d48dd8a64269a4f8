package status

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// At 80 columns an LSO just below the head keeps its 'L' (it used to fall
// in the head's column and vanish) and its value; skipped checkpoints are
// '?', valid ones '|'; no line is wider than 80.
func TestMapAt80Columns(t *testing.T) {
	a := int64(271)
	rows := []Partition{
		{Topic: "payments", Partition: 0, LogStart: 0, Head: 820, LSO: 818, Coverage: "NONE", CheckpointAnchor: &a,
			Anchors: []int64{547, 271}, SkippedCheckpoints: []SkippedCheckpoint{{Anchor: 547, Reason: "corrupt checkpoint"}}},
		{Topic: "__transaction_state", Partition: 0, LogStart: 0, Head: 1200, LSO: 1199, Coverage: "NONE", Anchors: []int64{}},
	}
	lines := Map(rows, 80)
	for _, l := range lines {
		if len(l) > 80 {
			t.Errorf("%d columns: %q", len(l), l)
		}
	}
	pay := lines[1]
	if !strings.Contains(pay, "L]") || !strings.HasSuffix(pay, "0..820 LSO 818") {
		t.Errorf("LSO not visible: %q", pay)
	}
	if strings.Count(pay, "?") != 1 || strings.Count(pay, "|") != 1 {
		t.Errorf("skipped checkpoint not drawn apart from the valid one: %q", pay)
	}
	if !strings.Contains(lines[2], "L]") || !strings.HasSuffix(lines[2], "0..1200 LSO 1199") {
		t.Errorf("LSO not visible: %q", lines[2])
	}
	if !strings.Contains(strings.Join(lines, "\n"), "? skipped checkpoint") {
		t.Errorf("legend: %q", lines[len(lines)-2:])
	}
}

// Collect reports a checkpoint replay skipped (with why) and a binding
// whose log start lags the head's trim.
func TestCollectSkippedCheckpointAndTrimLag(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records, o.Partitions, o.Topics = 3000, 1, []string{"orders"}
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	b, _, err := layout.LoadBinding(ctx, st, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := st.List(ctx, layout.CheckpointsPrefix(b.StreamID))
	if err != nil || len(infos) < 2 {
		t.Fatalf("checkpoints: %v %d", err, len(infos))
	}
	newest := infos[len(infos)-1]
	data, err := st.Get(ctx, newest.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if _, err := st.Put(ctx, newest.Key, data, store.None()); err != nil {
		t.Fatal(err)
	}
	// The head trimmed to 100, the binding not (a trim stopped after its
	// head step).
	h, etag, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	h.Trim = 100
	h.Version++
	if _, err := st.Put(ctx, layout.HeadKey(b.StreamID), layout.Encode(h), store.IfMatch(etag)); err != nil {
		t.Fatal(err)
	}
	rows, err := Collect(ctx, st, []layout.TopicPartition{{Topic: "orders", Partition: 0}}, time.Now(), 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.Error != "" {
		t.Fatalf("row error: %s", r.Error)
	}
	if len(r.SkippedCheckpoints) != 1 || r.SkippedCheckpoints[0].Key != newest.Key || r.SkippedCheckpoints[0].Reason == "" {
		t.Fatalf("skipped = %+v, want %s with a reason", r.SkippedCheckpoints, newest.Key)
	}
	if r.CheckpointAnchor == nil || *r.CheckpointAnchor >= r.SkippedCheckpoints[0].Anchor {
		t.Fatalf("chosen %v, skipped anchor %d", r.CheckpointAnchor, r.SkippedCheckpoints[0].Anchor)
	}
	if r.LogStart != 100 || r.BindingLogStart != 0 || !r.BindingLagsTrim {
		t.Fatalf("log start %d, binding %d, lags %v", r.LogStart, r.BindingLogStart, r.BindingLagsTrim)
	}
}

// Long offsets narrow the bar, never push a line past the width.
func TestMapLongOffsetsFit(t *testing.T) {
	rows := []Partition{{Topic: "__consumer_offsets", Partition: 49, LogStart: 12_345_678_901, Head: 98_765_432_109, LSO: 98_765_432_100, Coverage: "NONE", Anchors: []int64{}}}
	for _, l := range Map(rows, 80) {
		if len(l) > 80 {
			t.Errorf("%d columns: %q", len(l), l)
		}
	}
	if l := Map(rows, 80)[1]; !strings.Contains(l, "L]") || !strings.HasSuffix(l, "LSO 98765432100") {
		t.Errorf("%q", l)
	}
}
