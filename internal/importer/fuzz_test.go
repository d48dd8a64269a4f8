package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func FuzzParseOffsetCheckpoint(f *testing.F) {
	for _, name := range []string{"log-start-offset-checkpoint", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"} {
		for _, root := range []string{"kafka-2.7-compacted", "kafka-uncompacted"} {
			if b, err := os.ReadFile(filepath.Join(fixtureRoot, root, name)); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("0\n1\na 0 -5\n"))
	f.Add([]byte("version: 0\ntopic_id: y0EWqmsBVsL1z2Y4PH_Erw\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseOffsetCheckpoint(b)
		if err == nil {
			if m == nil {
				t.Fatal("nil map without error")
			}
			// What parses is what Kafka's writer would have written:
			// written back in its format, it parses to the same entries.
			var w strings.Builder
			fmt.Fprintf(&w, "0\n%d\n", len(m))
			for k, off := range m {
				if k.partition < 0 || k.topic == "" || strings.ContainsAny(k.topic, " \t\n\r") {
					t.Fatalf("accepted entry %q %d", k.topic, k.partition)
				}
				fmt.Fprintf(&w, "%s %d %d\n", k.topic, k.partition, off)
			}
			back, err := parseOffsetCheckpoint([]byte(w.String()))
			if err != nil || !reflect.DeepEqual(back, m) {
				t.Fatalf("entries %v do not round-trip: %v, %v", m, back, err)
			}
		}
		if id, err := parsePartitionMetadata(b); err == nil {
			if id == "" || len(id) > 64 || strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
				t.Fatalf("accepted topic id %q", id)
			}
			again, err := parsePartitionMetadata([]byte("version: 0\ntopic_id: " + id + "\n"))
			if err != nil || again != id {
				t.Fatalf("topic id %q does not round-trip: %q, %v", id, again, err)
			}
		}
	})
}

// FuzzImportSegment imports arbitrary bytes as the last (and only)
// segment: no panic, and whatever is kept is whole batches.
func FuzzImportSegment(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(fixtureRoot, "kafka-uncompacted", "new_topic-0", "00000000000000000000.log"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(append(append([]byte{}, seed...), make([]byte, 100)...))
	f.Add(seed[:len(seed)-7])
	f.Add([]byte{})
	// Legacy message sets (magic 0, magic 1, a gzip wrapper) before v2.
	legacy, _ := legacySegment(f)
	f.Add(legacy)
	f.Add(legacy[:len(legacy)-3])
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := filepath.Join(t.TempDir(), "fuzz-0")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), nil, Options{Dir: dir, DryRun: true})
		if err != nil {
			return
		}
		s := res.Segments[0]
		if s.Bytes+s.DroppedBytes != int64(len(b)) || res.Head < res.Start {
			t.Fatalf("kept %d + dropped %d of %d; head %d start %d", s.Bytes, s.DroppedBytes, len(b), res.Head, res.Start)
		}
	})
}
