package cmd

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// importDir writes a partition directory: a segment at 0 of legacy
// messages (magic 0 at 0, magic 1 at 1), a segment at 2 of producer 7's v2
// batches (2..4), an empty segment file at 5, a segment at 8 of producer
// 7 again (8, 9); snapshots at 3 (not at a segment base: stray), at 8 (the
// one the loader uses: producer 7's last batch at 4, and producer 6 with a
// last batch at 1, where the segments hold a legacy message: a
// disagreement) and at 9 (stray but the largest: at or above the last base
// 8, and corrupt). The genesis is anchored at 5, the end of the data below
// the snapshot's offset (no batch in [5, 8)).
func importDir(t *testing.T, now time.Time) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs", "orders-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seal := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
		binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
		return b
	}
	v0 := kmsg.MessageV0{Offset: 0, Value: []byte("old")}
	v1 := kmsg.MessageV1{Offset: 1, Magic: 1, Timestamp: now.UnixMilli() - 1000, Key: []byte("k"), Value: []byte("v")}
	legacy := append(seal(v0.AppendTo(nil)), seal(v1.AppendTo(nil))...)
	batches := func(from, to int64, seq int32) []byte {
		var out []byte
		for off := from; off < to; off++ {
			s := kafka.NewBatchSpec(off, []kafka.Record{{Offset: off, Timestamp: now.UnixMilli(), Value: []byte("v")}})
			s.ProducerID, s.ProducerEpoch, s.BaseSequence = 7, 0, seq+int32(off-from)
			b, err := kafka.EncodeBatch(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
		return out
	}
	bad := kafka.WriteSnapshot(nil)
	bad[len(bad)-1] ^= 1
	for name, data := range map[string][]byte{
		"00000000000000000000.log":      legacy,
		"00000000000000000002.log":      batches(2, 5, 0),
		"00000000000000000005.log":      nil,
		"00000000000000000008.log":      batches(8, 10, 3),
		"00000000000000000003.snapshot": kafka.WriteSnapshot(nil),
		"00000000000000000008.snapshot": kafka.WriteSnapshot([]kafka.SnapshotEntry{
			{ProducerID: 7, LastSequence: 2, LastOffset: 4, Timestamp: now.UnixMilli(), CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
			{ProducerID: 6, LastSequence: 9, LastOffset: 1, Timestamp: now.UnixMilli(), CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		}),
		"00000000000000000009.snapshot": bad,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The import report says which snapshot Kafka's loader uses, which it
// ignores and why, and what else the import did (legacy message sets
// up-converted, the empty segment file kept as a segment), in the table
// and in JSON; a rerun is "already imported (same bytes)", exit 0.
func TestImportReportsSnapshotsLegacyAndEmptySegments(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	src := importDir(t, now)
	run := func(args ...string) (string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := Execute(context.Background(), append([]string{"--store", "file://" + t.TempDir() + "/store"}, args...), &out, &errb)
		return out.String() + errb.String(), code
	}
	out, code := run("import", "kafka-log", src, "--now", now.Format(time.RFC3339))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		`(?m)^Producer snapshot: 00000000000000000008\.snapshot \(offset 8\): 2 producers, 0 expired at 2026-11-29T03:00:00Z \(producer\.id\.expiration\.ms 86400000\), 2 loaded into streams/s-[0-9a-f]{16}/checkpoints/00000000000000000005-[0-9a-f]{12}\.nkc1; the segments from 8 on are replayed$`,
		`(?m)^  disagreement: producer 6: snapshot epoch 0, last sequence 9 at offset 1, txn -1; segments none: the snapshot puts producer 6's last batch at offset 1, which the segments hold, but no batch of that producer; the snapshot is imported$`,
		`(?m)^  ignored 00000000000000000003\.snapshot: not at a segment base, .*removeStraySnapshots deletes it\)$`,
		`(?m)^  ignored 00000000000000000009\.snapshot: corrupt \(.*crc.*\): the loader deletes it and tries the next newest \(loadFromSnapshot, CorruptSnapshotException\)$`,
		`(?m)^Note: 00000000000000000000\.log: 2 legacy message sets \(magic 0 or 1\) imported as Kafka reads them, each stored as a RecordBatch v2 `,
		`(?m)^Note: 00000000000000000005\.log holds no batches: it is a segment of its own \[5, 8\), as in Kafka, aged by its file's modification time `,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("no match for %s in:\n%s", want, out)
		}
	}
	js, code := run("import", "kafka-log", src, "--now", now.Format(time.RFC3339), "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d:\n%s", code, js)
	}
	var doc struct {
		Snapshot struct {
			File       string `json:"file"`
			ReplayFrom int64  `json:"replay_from"`
			Ignored    []struct {
				File, Reason string
			} `json:"ignored"`
			DisagreementsTotal int `json:"disagreements_total"`
		} `json:"producer_snapshot"`
		Segments []struct {
			LegacyBatches   int64  `json:"legacy_batches"`
			EmptySegmentEnd *int64 `json:"empty_segment_end"`
		} `json:"segments"`
	}
	if err := json.Unmarshal([]byte(js[:bytes.LastIndexByte([]byte(js), '}')+1]), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, js)
	}
	s := doc.Snapshot
	if s.File != "00000000000000000008.snapshot" || s.ReplayFrom != 8 || len(s.Ignored) != 2 || s.DisagreementsTotal != 1 ||
		doc.Segments[0].LegacyBatches != 2 || doc.Segments[2].EmptySegmentEnd == nil || *doc.Segments[2].EmptySegmentEnd != 8 {
		t.Fatalf("json report %+v", doc)
	}

	// The same store twice: already imported, exit 0.
	store := "file://" + t.TempDir()
	for i, want := range []string{"^Imported ", "^Already imported \\(same bytes\\): "} {
		var o, e bytes.Buffer
		if code := Execute(context.Background(), []string{"--store", store, "import", "kafka-log", src, "--now", now.Format(time.RFC3339)}, &o, &e); code != 0 || !regexp.MustCompile(want).MatchString(o.String()) {
			t.Fatalf("run %d: exit %d, want %q:\n%s%s", i, code, want, o.String(), e.String())
		}
	}
}

// noTimestampDir is a partition of one segment whose batches carry no
// timestamp (its open segment is aged by the file's mtime).
func noTimestampDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs", "nots-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := kafka.NewBatchSpec(0, []kafka.Record{{Offset: 0, Timestamp: -1, Value: []byte("v")}})
	s.BaseTimestamp, s.MaxTimestamp = -1, -1
	b, err := kafka.EncodeBatch(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// After an import whose genesis is anchored above the first offset (the
// loader's replay point), with legacy sets, an empty segment and a
// disagreement, every reader of the store accepts it: verify --deep,
// checkpoint verify, replay --compare (MATCH), status, checkpoint create
// and gc.
func TestImportedStoreReadersAgree(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	src := importDir(t, now)
	st := "file://" + t.TempDir()
	for _, args := range [][]string{
		{"import", "kafka-log", src, "--now", now.Format(time.RFC3339)},
		{"verify", "orders-0", "--deep"},
		{"checkpoint", "verify", "orders-0"},
		{"replay", "orders-0", "--compare", "--now", now.Format(time.RFC3339)},
		{"status"},
		{"checkpoint", "create", "orders-0", "--now", now.Format(time.RFC3339)},
		{"replay", "orders-0", "--compare", "--now", now.Format(time.RFC3339)},
		{"gc", "--grace", "0s"},
		{"replay", "orders-0", "--full", "--now", now.Format(time.RFC3339)},
	} {
		var out, errb bytes.Buffer
		if code := Execute(context.Background(), append([]string{"--store", st}, args...), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
		if args[0] == "replay" && args[2] == "--compare" && !regexp.MustCompile(`(?m)^Full replay digest: [0-9a-f]{64} \(MATCH`).MatchString(out.String()) {
			t.Fatalf("%v:\n%s", args, out.String())
		}
	}
}
