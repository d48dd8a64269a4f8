package recovery_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/importer"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/importrun"
)

// TestReplayMatchesBrokerSnapshots imports every real broker partition that
// has a producer snapshot at its log end and checks that replay rebuilds the
// producer state the broker saved there (Kafka keeps the last batch of each
// producer in a .snapshot).
func TestReplayMatchesBrokerSnapshots(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join("..", "..", "testdata", "kafka")
	dirs, err := filepath.Glob(filepath.Join(root, "*", "*-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures under %s (testdata/kafka, see its README): %v", root, err)
	}
	checked := 0
	for _, dir := range dirs {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		if len(logs) == 0 {
			continue
		}
		st := store.NewMem(dir)
		if _, err := importrun.Run(ctx, st, importer.Options{Dir: dir}); err != nil {
			t.Fatalf("%s: import: %v", dir, err)
		}
		tp := filepath.Base(dir)
		i := strings.LastIndexByte(tp, '-')
		b, _, err := layout.LoadBinding(ctx, st, tp[:i], mustAtoi(t, tp[i+1:]))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true, VerifyCRC: true})
		if err != nil {
			t.Fatalf("%s: replay: %v", dir, err)
		}
		snapPath := filepath.Join(dir, kafka.SnapshotFileName(rep.Head.Head))
		data, err := os.ReadFile(snapPath)
		if err != nil {
			continue // no snapshot at the log end
		}
		want, err := kafka.ReadSnapshot(data)
		if err != nil {
			t.Fatalf("%s: %v", snapPath, err)
		}
		var got []kafka.SnapshotEntry
		for _, p := range rep.State.SortedProducers() {
			got = append(got, kafka.SnapshotEntry{ProducerID: p.ID, Epoch: p.Epoch, LastSequence: p.LastSeq(), LastOffset: p.LastOffset(),
				OffsetDelta: p.LastOffsetDelta(), Timestamp: p.LastTimestamp, CoordinatorEpoch: p.CoordinatorEpoch, CurrentTxnFirstOffset: p.TxnFirstOffset})
		}
		kafka.SortSnapshotEntries(want)
		if len(got) != len(want) {
			t.Fatalf("%s: replay has %d producers, the broker's snapshot %d", dir, len(got), len(want))
		}
		for k := range got {
			if got[k] != want[k] {
				t.Fatalf("%s: producer %d: replay %+v, broker %+v", dir, k, got[k], want[k])
			}
		}
		// and the snapshot written from the replayed state is the broker's file
		if string(kafka.WriteSnapshot(got)) != string(data) && len(want) == 0 {
			t.Fatalf("%s: the empty snapshot written from replay differs from the broker's", dir)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d partitions had a snapshot at their log end", checked)
	}
	t.Logf("%d partitions: replayed producer state equals the broker's snapshot", checked)
}

func mustAtoi(t *testing.T, s string) int32 {
	t.Helper()
	n := int32(0)
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("bad partition %q", s)
		}
		n = n*10 + int32(c-'0')
	}
	return n
}
