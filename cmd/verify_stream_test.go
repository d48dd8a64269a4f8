package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/verify"
)

// sampleVerifyReports are partitions of every shape verify reports: clean
// with a proof report, with findings, failed, and planned.
func sampleVerifyReports(n int) []*verify.Report {
	var rs []*verify.Report
	for i := 0; i < n; i++ {
		r := &verify.Report{Partition: fmt.Sprintf("orders-%d", i), StreamID: fmt.Sprintf("s-%d", i), Coverage: "NONE", Findings: []verify.Finding{}, Objects: 10 + i, BytesHashed: int64(100 * i)}
		switch i % 4 {
		case 0:
			r.Proof = &verify.ProofReport{Ledger: "streams/s-0/proof.json", LedgerBytes: 900, Written: true, Objects: 10, Bytes: 1000, Hashed: 4, HashedBytes: 400, Fresh: 6, Left: 1, LeftBytes: 50, WindowSeconds: 3600, Unproved: 1, UnprovedBytes: 50, OldestProofMs: 1700000000000, OldestProofAgeSeconds: 9}
		case 1:
			r.Findings = []verify.Finding{{Partition: r.Partition, Scope: verify.ScopeProof, Gen: -1, Object: "streams/s-1/proof.json", Check: verify.CheckProofStale, Detail: "detail with: a colon & <text>"}}
		case 2:
			r.Error = "verify orders-2: load binding: connection reset"
		case 3:
			r.Proof = &verify.ProofReport{Ledger: "streams/s-3/proof.json"}
			r.Plan = &verify.Plan{Objects: 3, Bytes: 300, Requests: 9, ReadRequests: 3, CheckRequests: 2, DocumentRequests: 4}
		}
		rs = append(rs, r)
	}
	return rs
}

// TestVerifyStreamedOutputIsTheWholeDocument: the document verify writes
// partition by partition (so that it keeps none of them) is, byte for
// byte, the one writeJSON writes for the whole run, under -o json and -o
// yaml, with no partition, one and several.
func TestVerifyStreamedOutputIsTheWholeDocument(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		for _, n := range []int{0, 1, 2, 7} {
			t.Run(fmt.Sprintf("%s/%d", format, n), func(t *testing.T) {
				rs := sampleVerifyReports(n)
				o := &verifyOptions{deep: true, incremental: n == 2}
				var got bytes.Buffer
				g := &globals{cfg: Config{Output: format}, stdout: &trackedWriter{w: &got, yaml: format == "yaml"}}
				out := newVerifyOut(g, o)
				for i, r := range rs {
					out.tally.take(layout.TopicPartition{Topic: "orders", Partition: int32(i)}, r, nil)
					if err := out.emit(r); err != nil {
						t.Fatal(err)
					}
				}
				sf := []health.Finding{{Scope: "store", Gen: -1, Object: "bindings/README", Check: health.CheckStrayKey, Detail: "x"}}
				if err := out.finish(sf, 1.5, &verify.Budget{MaxBytes: 1 << 20}); err != nil {
					t.Fatal(err)
				}
				t2 := out.tally
				want := verifyJSON{SchemaVersion: SchemaVersion, Deep: true, Incremental: o.incremental, Partitions: rs, OK: false,
					Findings: t2.findings + 1, Blocked: t2.blocked, Errors: t2.failed, BytesHashed: t2.hashed, Seconds: 1.5, Proof: t2.proof, StoreFindings: sf}
				if want.Partitions == nil {
					want.Partitions = []*verify.Report{}
				}
				var wantB bytes.Buffer
				if err := writeJSON(&trackedWriter{w: &wantB, yaml: format == "yaml"}, want); err != nil {
					t.Fatal(err)
				}
				if got.String() != wantB.String() {
					t.Fatalf("streamed output differs from the whole document\n--- streamed\n%s\n--- whole\n%s", got.String(), wantB.String())
				}
			})
		}
	}
}

// TestVerifyJSONIsWrittenAsPartitionsFinish: under -o json, one at a time,
// the first partitions are on stdout before the last is read.
func TestVerifyJSONIsWrittenAsPartitionsFinish(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	mem := demoMem(t)
	tps, err := layout.ListBindings(context.Background(), mem)
	if err != nil || len(tps) < 3 {
		t.Fatalf("%v %d", err, len(tps))
	}
	last := tps[len(tps)-1]
	var out, errb bytes.Buffer
	w := &firstReadWatch{Store: mem, key: layout.BindingKey(last.Topic, last.Partition), out: &out}
	g := &globals{stderr: &errb, st: w}
	if code := execute(context.Background(), g, []string{"--store", "mem://" + t.Name(), "-o", "json", "--parallel", "1", "verify", "--all", "--deep"}, &out); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if w.seen == nil || !strings.Contains(*w.seen, `"partition": "`+tps[0].String()+`"`) || strings.Contains(*w.seen, `"store_findings"`) {
		t.Fatalf("when the last partition was first read, stdout held:\n%v", w.seen)
	}
}
