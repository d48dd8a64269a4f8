package cmd

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/status"
	"github.com/nereusctl/nereusctl/internal/verify"
)

// allocatedPerRow is what render allocates per row over n rows.
func allocatedPerRow(n int, render func() error) (float64, error) {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	err := render()
	runtime.ReadMemStats(&b)
	return float64(b.TotalAlloc-a.TotalAlloc) / float64(n), err
}

// TestFleetTablesCostTheirText: the tables of status, verify and
// retention run over many partitions allocate a small multiple of their
// text per row (the row's cells, text/tabwriter's cell records and
// copy), not tablewriter's working copies of every row (about 15 KB a
// status row), so that the table of a fleet does not set the command's
// peak memory.
func TestFleetTablesCostTheirText(t *testing.T) {
	const n = 3000
	const bound = 1536 // bytes allocated per row (tablewriter: 15,026 a status row)
	g := &globals{cfg: Config{Output: "table"}, stdout: io.Discard}
	anchor, age := int64(229), int64(40)
	rows := make([]status.Partition, n)
	reps := make([]*verify.Report, n)
	results := make([]*retention.Result, n)
	for i := range rows {
		rows[i] = status.Partition{Topic: "orders", Partition: int32(i), StreamID: fmt.Sprintf("s-%016x", i), LogStart: 12, Head: 4500, LSO: 4500,
			CheckpointAnchor: &anchor, CheckpointAgeSec: &age, TailObjects: 16, Coverage: "NONE", CleanupPolicy: "delete", ConfigSource: "demo"}
		reps[i] = &verify.Report{Partition: fmt.Sprintf("orders-%d", i), Coverage: "NONE", Findings: []verify.Finding{}, Objects: 120}
		results[i] = &retention.Result{Topic: "orders", Partition: int32(i), CurrentLogStart: 0, NewLogStart: 36, HW: 36,
			Plan: &retention.Plan{CurrentLogStart: 0, HW: 36, NewLogStart: 36, GarbageSize: 4446, OpenSegmentBytes: 1051}}
	}
	for name, render := range map[string]func() error{
		"status": func() error { return renderStatus(g, rows, nil) },
		"verify": func() error {
			out := newVerifyOut(g, &verifyOptions{})
			for i, r := range reps {
				out.tally.take(layout.TopicPartition{Topic: "orders", Partition: int32(i)}, r, nil)
				if err := out.emit(r); err != nil {
					return err
				}
			}
			return out.finish(nil, 1.5, &verify.Budget{})
		},
		"retention run": func() error {
			out := newRetentionOut(g, false)
			for _, r := range results {
				if err := out.emit(r); err != nil {
					return err
				}
			}
			return out.finish(&retention.JobReport{JobSummary: retention.JobSummary{Trimmed: n}})
		},
	} {
		per, err := allocatedPerRow(n, render)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.0f bytes allocated per row over %d rows", name, per, n)
		if per > bound {
			t.Errorf("%s: %.0f bytes allocated per row, want at most %d", name, per, bound)
		}
	}
}
