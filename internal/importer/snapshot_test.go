package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// idempotent writes one single-record batch per offset for producer pid
// (epoch 0), sequences from seq on, every record at timestamp ts.
func idempotent(t testing.TB, pid int64, seq int32, offsets []int64, ts int64) []byte {
	t.Helper()
	var out []byte
	for i, off := range offsets {
		s := kafka.NewBatchSpec(off, []kafka.Record{{Offset: off, Timestamp: ts, Key: []byte("k"), Value: []byte("v")}})
		s.ProducerID, s.ProducerEpoch, s.BaseSequence, s.PartitionLeaderEpoch = pid, 0, seq+int32(i), 0
		b, err := kafka.EncodeBatch(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

func offsets(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

func writeSnapshots(t testing.TB, dir string, snaps map[int64][]byte) {
	t.Helper()
	for off, data := range snaps {
		if err := os.WriteFile(filepath.Join(dir, kafka.SnapshotFileName(off)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func ignoredReasons(sn *SnapshotReport) map[int64]string {
	out := map[int64]string{}
	for _, ig := range sn.Ignored {
		out[ig.Offset] = ig.Reason
	}
	return out
}

// allReplaysAgree checks that the import, a full replay (from the genesis
// the binding names) and the checkpoint path give one state digest.
func allReplaysAgree(t *testing.T, st store.Store, res *Result) *recovery.Result {
	t.Helper()
	ctx := context.Background()
	b := loadBinding(t, st, res)
	cp, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Digest() != full.Digest() || cp.Digest() != res.StateDigest {
		t.Fatalf("checkpoint path %s, full %s (genesis %v), import %s", cp.Digest(), full.Digest(), full.Genesis, res.StateDigest)
	}
	return full
}

// loaderDir is a partition whose log starts at 12 (log-start-offset-
// checkpoint; DeleteRecords moved it into the segment at 10; the segments
// below 10 are gone): producer 1 writes [10, 15) and is no longer in the
// broker's snapshot at 20; producer 7 writes [15, 23); the snapshot at 20
// holds 7, 6 (an open transaction from 3, below the log start) and 9
// (idle two days). Snapshots at 5 and 21 are not at a segment base; the
// one at 10 is at the log start or below; the one at 23, the log end, is
// corrupt.
func loaderDir(t *testing.T, now time.Time) string {
	t.Helper()
	logs := filepath.Join(t.TempDir(), "logs")
	dir := filepath.Join(logs, "orders-0")
	ms, day := now.UnixMilli(), int64(86400000)
	t1 := ms - 3600_000
	writeSegments(t, dir, map[int64][]byte{
		10: append(idempotent(t, 1, 10, offsets(10, 15), t1), idempotent(t, 7, 0, offsets(15, 20), t1)...),
		20: idempotent(t, 7, 5, offsets(20, 23), ms-60_000),
	})
	if err := os.WriteFile(filepath.Join(logs, "log-start-offset-checkpoint"), []byte("0\n1\norders 0 12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap20 := kafka.WriteSnapshot([]kafka.SnapshotEntry{
		{ProducerID: 9, Epoch: 0, LastSequence: 2, LastOffset: 4, Timestamp: ms - 2*day, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 7, Epoch: 0, LastSequence: 4, LastOffset: 19, Timestamp: t1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 6, Epoch: 2, LastSequence: 0, LastOffset: 3, Timestamp: ms - 2*day, CoordinatorEpoch: 4, CurrentTxnFirstOffset: 3},
	})
	bad := kafka.WriteSnapshot([]kafka.SnapshotEntry{{ProducerID: 7, LastOffset: 22, CurrentTxnFirstOffset: -1}})
	bad[len(bad)-1] ^= 1
	writeSnapshots(t, dir, map[int64][]byte{5: kafka.WriteSnapshot(nil), 10: kafka.WriteSnapshot(nil), 20: snap20, 21: kafka.WriteSnapshot(nil), 23: bad})
	return dir
}

// TestImportSnapshotAsKafkaLoader: the snapshot used and the state are
// Kafka's log loader's (LogLoader.load, ProducerStateManager.
// removeStraySnapshots, truncateAndReload, loadFromSnapshot,
// isProducerExpired, loadProducerEntry; UnifiedLog.rebuildProducerState
// replays only the segments from the snapshot's offset): of the five
// snapshots only 20 survives the rules (23 is corrupt and skipped); its
// producers are the state at 20 (one batch each, as a snapshot holds; 9
// expired at the clock; 6's open transaction keeps its first offset 3,
// the LSO is the log start 12); producer 1, whose batches lie below 20
// but which the snapshot does not list, is not imported and the
// disagreement is reported; 7 continues from the snapshot's entry. Every
// replay path agrees, the full one starting from the genesis at 20.
func TestImportSnapshotAsKafkaLoader(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	dir := loaderDir(t, now)
	st := store.NewMem("snap")
	res := run(t, st, Options{Dir: dir, Now: now})
	sn := res.Snapshot
	if sn == nil || sn.File != "00000000000000000020.snapshot" || sn.ReplayFrom != 20 || sn.Entries != 3 || sn.Expired != 1 || sn.Producers != 2 {
		t.Fatalf("snapshot report %+v", sn)
	}
	if !strings.Contains(sn.Checkpoint, "/checkpoints/00000000000000000020-") {
		t.Fatalf("genesis checkpoint %q, want one anchored at 20", sn.Checkpoint)
	}
	want := map[int64]string{
		5:  "removeStraySnapshots",
		10: "at or below the log start 12 (ProducerStateManager.truncateAndReload",
		21: "removeStraySnapshots",
		23: "corrupt",
	}
	got := ignoredReasons(sn)
	for off, w := range want {
		if !strings.Contains(got[off], w) {
			t.Fatalf("snapshot %d ignored as %q, want %q (all: %v)", off, got[off], w, got)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("ignored %v", got)
	}
	if sn.DisagreementsTotal != 1 || sn.Disagreements[0].ProducerID != 1 || sn.Disagreements[0].Snapshot != nil || sn.Disagreements[0].Segments.LastOffset != 14 {
		t.Fatalf("disagreements %+v", sn.Disagreements)
	}
	full := allReplaysAgree(t, st, res)
	if !full.Genesis || full.Tail.From != 20 {
		t.Fatalf("full replay: genesis %v from %d, want the genesis at 20", full.Genesis, full.Tail.From)
	}
	p := full.State
	if len(p.Producers) != 2 || p.Producers[1] != nil || p.Producers[9] != nil {
		t.Fatalf("producers %v: want 6 and 7 (1 is not in the snapshot, 9 expired)", p.SortedProducers())
	}
	if pr := p.Producers[7]; len(pr.Batches) != 4 || pr.Batches[0] != (state.BatchMeta{LastSeq: 4, LastOffset: 19, Timestamp: now.UnixMilli() - 3600_000}) || pr.LastSeq() != 7 {
		t.Fatalf("producer 7 %+v: want the snapshot's batch, then 20, 21, 22", pr)
	}
	if pr := p.Producers[6]; pr.TxnFirstOffset != 3 || pr.CoordinatorEpoch != 4 || len(p.Ongoing) != 1 || p.LogStart != 12 || p.LSO() != 12 {
		t.Fatalf("producer 6 %+v, ongoing %v, log start %d, LSO %d: the open transaction keeps its first offset 3, the LSO is max(3, log start 12)", pr, p.Ongoing, p.LogStart, p.LSO())
	}
}

// TestImportSnapshotAtLogEnd: the snapshot a clean shutdown writes at the
// log end is the state (nothing is replayed after it): each producer has
// the one batch the snapshot holds, not the five the segments give. With
// --ignore-snapshots the state is rebuilt from the log start, as the
// loader does without a snapshot.
func TestImportSnapshotAtLogEnd(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	ms := now.UnixMilli()
	dir := filepath.Join(t.TempDir(), "logs", "orders-0")
	writeSegments(t, dir, map[int64][]byte{0: append(idempotent(t, 3, 0, offsets(0, 5), ms), idempotent(t, 4, 0, offsets(5, 10), ms)...)})
	writeSnapshots(t, dir, map[int64][]byte{10: kafka.WriteSnapshot([]kafka.SnapshotEntry{
		{ProducerID: 3, LastSequence: 4, LastOffset: 4, Timestamp: ms, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 4, LastSequence: 4, LastOffset: 9, Timestamp: ms, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
	})})
	st := store.NewMem("end")
	res := run(t, st, Options{Dir: dir, Now: now})
	if sn := res.Snapshot; sn == nil || sn.File != "00000000000000000010.snapshot" || sn.ReplayFrom != 10 || sn.DisagreementsTotal != 0 {
		t.Fatalf("snapshot %+v", sn)
	}
	full := allReplaysAgree(t, st, res)
	for _, id := range []int64{3, 4} {
		if pr := full.State.Producers[id]; pr == nil || len(pr.Batches) != 1 || pr.LastSeq() != 4 {
			t.Fatalf("producer %d %+v: want the snapshot's one batch", id, pr)
		}
	}
	ig := run(t, store.NewMem("ignore"), Options{Dir: dir, Now: now, IgnoreSnapshots: true})
	if ig.Snapshot == nil || ig.Snapshot.File != "" || !strings.Contains(ignoredReasons(ig.Snapshot)[10], "--ignore-snapshots") {
		t.Fatalf("--ignore-snapshots: %+v", ig.Snapshot)
	}
	if ig.StateDigest == res.StateDigest {
		t.Fatal("--ignore-snapshots gave the snapshot's state")
	}
}

// TestImportSnapshotAboveLogEnd: a snapshot above the log end makes the
// clean-shutdown one at the end a stray that is not the largest
// (removeStraySnapshots deletes it), and is itself deleted by
// truncateAndReload: no snapshot, the segments from the log start give the
// producers (five batches each).
func TestImportSnapshotAboveLogEnd(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	dir := filepath.Join(t.TempDir(), "logs", "orders-0")
	writeSegments(t, dir, map[int64][]byte{0: idempotent(t, 3, 0, offsets(0, 5), now.UnixMilli())})
	writeSnapshots(t, dir, map[int64][]byte{
		5: kafka.WriteSnapshot([]kafka.SnapshotEntry{{ProducerID: 3, LastSequence: 4, LastOffset: 4, Timestamp: now.UnixMilli(), CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}}),
		9: kafka.WriteSnapshot(nil),
	})
	st := store.NewMem("above")
	res := run(t, st, Options{Dir: dir, Now: now})
	got := ignoredReasons(res.Snapshot)
	if res.Snapshot.File != "" || !strings.Contains(got[5], "removeStraySnapshots") || !strings.Contains(got[9], "above the log end offset 5") {
		t.Fatalf("snapshot %+v", res.Snapshot)
	}
	full := allReplaysAgree(t, st, res)
	if pr := full.State.Producers[3]; pr == nil || len(pr.Batches) != 5 {
		t.Fatalf("producer 3 %+v: want the segments' five batches", pr)
	}
}

// TestImportNoSnapshotRebuildsFromLogStart: without a snapshot the loader
// replays from the log start (rebuildProducerState from max(segment base,
// log start)): a producer whose batches all lie below the log start is
// not loaded, though the segment holding them is still there.
func TestImportNoSnapshotRebuildsFromLogStart(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	ms := now.UnixMilli()
	logs := filepath.Join(t.TempDir(), "logs")
	dir := filepath.Join(logs, "orders-0")
	writeSegments(t, dir, map[int64][]byte{0: append(idempotent(t, 3, 0, offsets(0, 5), ms), idempotent(t, 4, 0, offsets(5, 8), ms)...)})
	if err := os.WriteFile(filepath.Join(logs, "log-start-offset-checkpoint"), []byte("0\n1\norders 0 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := store.NewMem("nosnap")
	res := run(t, st, Options{Dir: dir, Now: now})
	full := allReplaysAgree(t, st, res)
	if full.State.Producers[3] != nil || full.State.Producers[4] == nil || len(full.State.Producers) != 1 || full.State.LogStart != 5 {
		t.Fatalf("producers %v, log start %d: want only 4 (3's batches are below the log start 5)", full.State.SortedProducers(), full.State.LogStart)
	}
	if b := loadBinding(t, st, res); b.ImportGenesis() == nil || b.ImportGenesis().Anchor != 5 {
		t.Fatalf("binding import record %+v: want the genesis at 5", b.Import)
	}
}

// TestImportFixtureSnapshotOnly: the real kafka-2.7 myTopic-0 holds only a
// snapshot at 38 and no segment file; the log is empty at 38 (the highest
// offset the broker's files record), so the snapshot lies at the log start
// and Kafka's loader deletes it (truncateAndReload: offset <= log start):
// the import loads no producer, and says why.
func TestImportFixtureSnapshotOnly(t *testing.T) {
	dir := filepath.Join(fixtureRoot, "kafka-2.7-compacted", "myTopic-0")
	st := store.NewMem("fix")
	res := run(t, st, Options{Dir: dir, Now: time.Date(2022, 12, 4, 0, 0, 0, 0, time.UTC)})
	if res.Start != 38 || res.Head != 38 || res.Snapshot == nil || res.Snapshot.File != "" || !strings.Contains(ignoredReasons(res.Snapshot)[38], "at or below the log start 38") {
		t.Fatalf("start %d head %d snapshot %+v", res.Start, res.Head, res.Snapshot)
	}
	r, err := recovery.Replay(context.Background(), st, loadBinding(t, st, res), recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.State.Producers); n != 0 {
		t.Fatalf("%d producers after import", n)
	}
	if b := loadBinding(t, st, res); b.Import != nil {
		t.Fatalf("import record %+v: nothing needs a genesis", b.Import)
	}
	_ = layout.BindingKey
}

// The leader-epoch-checkpoint's entries where the batches are gone
// (§14.1) and a snapshot's producers share one genesis, at the loader's
// replay point: every replay agrees, and the imported cache is the
// file's epoch 2 (from 5, below every batch), truncated at the log start.
func TestImportSnapshotWithEpochFile(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	dir := loaderDir(t, now)
	if err := os.WriteFile(filepath.Join(dir, "leader-epoch-checkpoint"), []byte("0\n1\n2 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := store.NewMem("epochs")
	res := run(t, st, Options{Dir: dir, Now: now})
	if res.Epochs.FromFile != 1 || !strings.Contains(res.Epochs.GenesisCheckpoint, "/checkpoints/00000000000000000020-") {
		t.Fatalf("epochs %+v", res.Epochs)
	}
	full := allReplaysAgree(t, st, res)
	if e := full.State.Epochs; len(e) != 1 || e[0].Epoch != 2 || e[0].StartOffset != 12 || len(full.State.Producers) != 2 {
		t.Fatalf("epochs %v producers %v", e, full.State.SortedProducers())
	}
}
