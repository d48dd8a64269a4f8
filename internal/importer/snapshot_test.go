package importer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
)

// snapshotDir writes a partition directory whose log starts at 10 (the
// batches below were deleted): a snapshot at 10 with producer 7 (fresh,
// seq 4 at offset 9), 9 (idle two days) and 6 (an open transaction from 5,
// idle two days); a segment at 10 where producer 7 writes seq 5 and a new
// producer 8 writes; an older snapshot at 3 and a newer one at 12 (the log
// end) that must not be used.
func snapshotDir(t *testing.T, now time.Time) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs", "orders-0")
	ms := now.UnixMilli()
	var seg []byte
	for i, pid := range []int64{7, 8} {
		off := int64(10 + i)
		s := kafka.NewBatchSpec(off, []kafka.Record{{Offset: off, Timestamp: ms - 60_000, Key: []byte("k"), Value: []byte("v")}})
		s.ProducerID, s.ProducerEpoch, s.BaseSequence = pid, 0, int32(5*(1-i))
		b, err := kafka.EncodeBatch(s)
		if err != nil {
			t.Fatal(err)
		}
		seg = append(seg, b...)
	}
	writeSegments(t, dir, map[int64][]byte{10: seg})
	day := int64(86400000)
	snap := kafka.WriteSnapshot([]kafka.SnapshotEntry{
		{ProducerID: 9, Epoch: 0, LastSequence: 2, LastOffset: 4, Timestamp: ms - 2*day, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 7, Epoch: 0, LastSequence: 4, LastOffset: 9, Timestamp: ms - 3600_000, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 6, Epoch: 2, LastSequence: 0, LastOffset: 5, Timestamp: ms - 2*day, CoordinatorEpoch: 4, CurrentTxnFirstOffset: 5},
	})
	for name, data := range map[string][]byte{
		kafka.SnapshotFileName(10): snap,
		kafka.SnapshotFileName(3):  kafka.WriteSnapshot(nil),
		kafka.SnapshotFileName(12): kafka.WriteSnapshot(nil),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestImportHydratesSnapshot: the producers of the newest snapshot at or
// below the first offset are imported (expired ones dropped at the import
// clock, one kept by its open transaction), the segments continue them,
// and every replay path (checkpoint, full, compare) agrees.
func TestImportHydratesSnapshot(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	dir := snapshotDir(t, now)
	st := store.NewMem("snap")
	res := run(t, st, Options{Dir: dir, Now: now})
	sn := res.Snapshot
	if sn == nil || sn.File != "00000000000000000010.snapshot" || sn.Entries != 3 || sn.Expired != 1 || sn.Producers != 2 || sn.Checkpoint == "" {
		t.Fatalf("snapshot report %+v", sn)
	}
	if len(sn.Skipped) != 2 {
		t.Fatalf("skipped %v, want the snapshots at 3 and 12", sn.Skipped)
	}
	b := loadBinding(t, st, res)
	cp, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Digest() != full.Digest() || cp.Digest() != res.StateDigest || !full.Genesis {
		t.Fatalf("checkpoint path %s, full %s (genesis %v), import %s", cp.Digest(), full.Digest(), full.Genesis, res.StateDigest)
	}
	p := cp.State
	if len(p.Producers) != 3 || p.Producers[9] != nil {
		t.Fatalf("producers %v: want 6, 7, 8 (9 expired)", p.SortedProducers())
	}
	if pr := p.Producers[7]; len(pr.Batches) != 2 || pr.Batches[0].LastOffset != 9 || pr.LastSeq() != 5 {
		t.Fatalf("producer 7 %+v: want the snapshot's batch then the segment's", pr)
	}
	if pr := p.Producers[6]; pr.TxnFirstOffset != 5 || pr.CoordinatorEpoch != 4 || len(p.Ongoing) != 1 || p.LSO() != 10 {
		t.Fatalf("producer 6 %+v, ongoing %v, LSO %d: the open transaction is kept, clamped to the log start", pr, p.Ongoing, p.LSO())
	}

	// At a clock two days later, 7 expired too: only 6 comes from the
	// snapshot.
	st2 := store.NewMem("later")
	res2 := run(t, st2, Options{Dir: dir, Now: now.Add(48 * time.Hour)})
	if res2.Snapshot.Expired != 2 || res2.Snapshot.Producers != 1 {
		t.Fatalf("later clock: %+v", res2.Snapshot)
	}
	// --ignore-snapshots: none used.
	st3 := store.NewMem("ignore")
	res3 := run(t, st3, Options{Dir: dir, Now: now, IgnoreSnapshots: true})
	if res3.Snapshot != nil || !strings.Contains(strings.Join(res3.Notes, "\n"), "--ignore-snapshots") {
		t.Fatalf("ignored: %+v %v", res3.Snapshot, res3.Notes)
	}
}

// TestImportCorruptSnapshot: a snapshot with a bad CRC is exit 3 naming the
// file, and nothing is written.
func TestImportCorruptSnapshot(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	dir := snapshotDir(t, now)
	path := filepath.Join(dir, kafka.SnapshotFileName(10))
	b := readFile(t, path)
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	st := store.NewMem("bad")
	_, err := Run(context.Background(), st, Options{Dir: dir, Now: now})
	if !errors.Is(err, kafka.ErrCRC) || !errkind.IsData(err) || !strings.Contains(err.Error(), path) {
		t.Fatalf("corrupt snapshot: %v (kind %v)", err, errkind.Of(err))
	}
	assertEmpty(t, st)
}

// TestImportFixtureSnapshotOnly: the real kafka-2.7 myTopic-0 (only a
// snapshot: its 3 producers' batches are gone) imports with them within
// producer.id.expiration.ms of their timestamps, without them at today's
// clock.
func TestImportFixtureSnapshotOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(fixtureRoot, "kafka-2.7-compacted", "myTopic-0")
	st := store.NewMem("fix")
	res := run(t, st, Options{Dir: dir, Now: time.Date(2022, 12, 4, 0, 0, 0, 0, time.UTC)})
	if res.Start != 38 || res.Head != 38 || res.Snapshot == nil || res.Snapshot.Producers != 3 {
		t.Fatalf("start %d head %d snapshot %+v", res.Start, res.Head, res.Snapshot)
	}
	r, err := recovery.Replay(ctx, st, loadBinding(t, st, res), recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.State.Producers); n != 3 || r.State.Producers[4003].LastSeq() != 13 {
		t.Fatalf("%d producers after import", n)
	}
	st2 := store.NewMem("today")
	res2 := run(t, st2, Options{Dir: dir, Now: time.Now()})
	if res2.Snapshot == nil || res2.Snapshot.Producers != 0 || res2.Snapshot.Expired != 3 || res2.Snapshot.Checkpoint != "" {
		t.Fatalf("today: %+v", res2.Snapshot)
	}
}
