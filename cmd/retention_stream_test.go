package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/retention"
)

// sampleResults are partitions of every shape a run reports: planned
// with garbage segments and candidates, trimmed, resumed (no plan), and
// failed with a detail YAML must quote.
func sampleResults(n int) []*retention.Result {
	var rs []*retention.Result
	for i := 0; i < n; i++ {
		r := &retention.Result{Topic: "orders", Partition: int32(i), CurrentLogStart: int64(i), NewLogStart: int64(10 * i), HW: 4000, Checkpoint: "streams/s-1/checkpoints/x.nkc1 (existing)", RequestsEstimate: 60, Requests: 9}
		switch i % 4 {
		case 0:
			r.Plan = &retention.Plan{CurrentLogStart: int64(i), HW: 4000, NewLogStart: int64(10 * i), GarbageSize: 1234,
				Candidates: []retention.Candidate{{Rule: retention.RuleRetentionMs, Offset: 100, Segments: 2, Bytes: 1234, Detail: "segments older than 7d <&>"}},
				Garbage:    []retention.Segment{{Base: 0, End: 50, Bytes: 600, MaxTimestamp: 17, Gen: 1}, {Base: 50, End: 100, Bytes: 634, MaxTimestamp: 18, Gen: 2}}}
			r.Trim = &retention.TrimResult{CurrentLogStart: int64(i), NewLogStart: int64(10 * i), HeadMutated: true, BindingMutated: true}
		case 1:
			// resumed: the progress record only
			r.Checkpoint, r.RequestsEstimate, r.Requests = "", 0, 0
		case 2:
			r.Error, r.ErrorDetail = "ERROR", "retention run orders-2: partition lease: held by \"host-1/pid 7: nonce\" until 2026-12-02T03:00:00Z: "+strings.Repeat("long text ", 20)
			r.Err = errors.New(r.ErrorDetail)
			r.NewLogStart = r.CurrentLogStart
		}
		rs = append(rs, r)
	}
	return rs
}

// TestRetentionStreamedOutputIsTheWholeDocument: the document retention
// run writes partition by partition (so that it keeps none of them) is,
// byte for byte, the one writeJSON writes for the whole report, under -o
// json and -o yaml, with no partition, one and several, interrupted or
// not.
func TestRetentionStreamedOutputIsTheWholeDocument(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		for _, n := range []int{0, 1, 2, 7} {
			for _, interrupted := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%d/%v", format, n, interrupted), func(t *testing.T) {
					rs := sampleResults(n)
					rep := &retention.JobReport{JobSummary: retention.JobSummary{DryRun: n == 2, NowMs: 1700000000000, Resumed: 1, Trimmed: 3, Unchanged: 2, Errors: 1,
						GarbageBytes: 99, Seconds: 1.5, ProgressFile: "/tmp/p.json", ProgressKey: "tasks/retention/0123456789abcdef.json", Interrupted: interrupted}}
					var want, got bytes.Buffer
					wantW := &trackedWriter{w: &want, yaml: format == "yaml"}
					if err := writeJSON(wantW, retentionJSON{
						trimJSON: trimJSON{SchemaVersion: SchemaVersion, DryRun: rep.DryRun, Partitions: nonNil(rs)},
						Summary:  rep.JobSummary,
					}); err != nil {
						t.Fatal(err)
					}
					g := &globals{cfg: Config{Output: format}, stdout: &trackedWriter{w: &got, yaml: format == "yaml"}}
					out := newRetentionOut(g, rep.DryRun)
					for _, r := range rs {
						if err := out.emit(r); err != nil {
							t.Fatal(err)
						}
					}
					if err := out.finish(rep); err != nil {
						t.Fatal(err)
					}
					if got.String() != want.String() {
						t.Fatalf("streamed output differs from the whole document\n--- streamed\n%s\n--- whole\n%s", got.String(), want.String())
					}
				})
			}
		}
	}
}
