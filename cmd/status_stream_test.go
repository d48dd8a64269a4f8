package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/status"
	"github.com/nereusctl/nereusctl/internal/store"
)

// sampleStatusRows are rows of every shape status prints: clean with a
// checkpoint, unreadable, with data loss, blocked with findings and a
// skipped checkpoint.
func sampleStatusRows(n int) []status.Partition {
	var rs []status.Partition
	for i := 0; i < n; i++ {
		anchor, age := int64(100+i), int64(60*i)
		r := status.Partition{Topic: "orders", Partition: int32(i), StreamID: fmt.Sprintf("s-%d", i), LogStart: 12, Head: 4500, LSO: 4500,
			Coverage: "NONE", CleanupPolicy: "delete", ConfigSource: "demo", Anchors: []int64{}, SkippedCheckpoints: []status.SkippedCheckpoint{}, Findings: []health.Finding{}}
		switch i % 4 {
		case 0:
			r.CheckpointAnchor, r.CheckpointAgeSec, r.Anchors, r.TailObjects, r.Producers = &anchor, &age, []int64{anchor}, 3, 2
		case 1:
			r.Error = "read head: connection reset <&>"
		case 2:
			r.DataLoss, r.LSO = &status.DataLoss{Missing: [][2]int64{{20, 40}}}, -1
		case 3:
			r.Blocked, r.BlockedReason, r.Coverage = true, "coverage quarantined", layout.CoverageQuarantined
			r.Findings = []health.Finding{{Scope: "coverage", Gen: -1, Object: "streams/s-3/compacted/x", Check: "sha256", Detail: "partitions: []\nmismatch"}}
			r.SkippedCheckpoints = []status.SkippedCheckpoint{{Key: "streams/s-3/checkpoints/1", Anchor: 50, Reason: "corrupt checkpoint", Detail: "crc"}}
		}
		rs = append(rs, r)
	}
	return rs
}

// TestStatusStreamedOutputIsTheWholeDocument: the document status writes
// row by row (so that it keeps none of them) is, byte for byte, the one
// writeJSON writes for the whole run, under -o json and -o yaml, with no
// partition, one and several, with and without store findings.
func TestStatusStreamedOutputIsTheWholeDocument(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		for _, n := range []int{0, 1, 2, 7} {
			for _, sf := range [][]health.Finding{nil, {}, {{Scope: "store", Gen: -1, Object: "bindings/README", Check: health.CheckStrayKey, Detail: `"partitions": []`}}} {
				t.Run(fmt.Sprintf("%s/%d/%d", format, n, len(sf)), func(t *testing.T) {
					rs := sampleStatusRows(n)
					var got bytes.Buffer
					g := &globals{cfg: Config{Output: format}, stdout: &trackedWriter{w: &got, yaml: format == "yaml"}}
					out := newStatusOut(g, false, true)
					for _, r := range rs {
						if err := out.emit(r); err != nil {
							t.Fatal(err)
						}
					}
					if err := out.finish(sf); err != nil {
						t.Fatal(err)
					}
					want := statusJSON{SchemaVersion: SchemaVersion, Partitions: rs, StoreFindings: sf}
					if want.Partitions == nil {
						want.Partitions = []status.Partition{}
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
}

// firstReadWatch is a store that, the first time key is read, records
// what stdout held by then.
type firstReadWatch struct {
	store.Store
	key  string
	out  *bytes.Buffer
	mu   sync.Mutex
	seen *string
}

func (s *firstReadWatch) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	if key == s.key {
		s.mu.Lock()
		if s.seen == nil {
			v := s.out.String()
			s.seen = &v
		}
		s.mu.Unlock()
	}
	return s.Store.Get(ctx, key, r)
}

// TestStatusJSONIsWrittenAsPartitionsFinish: under -o json and -o yaml,
// one at a time, the first partitions are on stdout before the last is
// read, and the document is the same as with every row held.
func TestStatusJSONIsWrittenAsPartitionsFinish(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	mem := demoMem(t)
	tps, err := layout.ListBindings(context.Background(), mem)
	if err != nil || len(tps) < 3 {
		t.Fatalf("%v %d", err, len(tps))
	}
	last := tps[len(tps)-1]
	for format, first := range map[string]string{
		"json": fmt.Sprintf("\"topic\": %q,\n      \"partition\": %d,", tps[0].Topic, tps[0].Partition),
		"yaml": fmt.Sprintf("  - topic: %s\n    partition: %d\n", tps[0].Topic, tps[0].Partition),
	} {
		var out, errb bytes.Buffer
		w := &firstReadWatch{Store: mem, key: layout.BindingKey(last.Topic, last.Partition), out: &out}
		g := &globals{stderr: &errb, st: w}
		if code := execute(context.Background(), g, []string{"--store", "mem://" + t.Name(), "-o", format, "--parallel", "1", "status", "--now", "2030-01-01T00:00:00Z"}, &out); code != 0 {
			t.Fatalf("%s: exit %d\n%s", format, code, errb.String())
		}
		if w.seen == nil || !strings.Contains(*w.seen, first) || strings.Contains(*w.seen, "store_findings") {
			t.Fatalf("%s: when the last partition was read, stdout held:\n%v", format, w.seen)
		}
		if !strings.Contains(out.String(), "store_findings") {
			t.Fatalf("%s: no store findings in\n%s", format, out.String())
		}
	}
}
