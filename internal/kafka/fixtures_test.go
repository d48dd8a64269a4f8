package kafka

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// fixtureRoot is the repository's real Kafka fixtures (testdata/kafka, with
// a README of their origin); this package is internal/kafka below the root.
const fixtureRoot = "../../testdata/kafka"

// fixtureFiles lists fixture files whose base name matches pattern, and
// fails the test when the fixtures are missing: they are required.
func fixtureFiles(t testing.TB, match func(name string) bool) []string {
	t.Helper()
	if _, err := os.Stat(fixtureRoot); err != nil {
		t.Fatalf("fixtures not found at %s (testdata/kafka, see its README): %v", fixtureRoot, err)
	}
	var out []string
	err := filepath.WalkDir(fixtureRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && match(d.Name()) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("no matching fixture files under %s", fixtureRoot)
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rel(path string) string { return strings.TrimPrefix(path, fixtureRoot+"/") }

// fixtureCounts is what the scanner must find in each fixture log (batches,
// records). The __consumer_offsets-18 numbers come from the fixtures'
// README; the others were counted once and pin the files.
var fixtureCounts = map[string][2]int{
	"kafka-2.7-compacted/__consumer_offsets-17/00000000000000000000.log": {1, 1},
	"kafka-2.7-compacted/__consumer_offsets-17/00000000000000000001.log": {2, 2},
	"kafka-2.7-compacted/__consumer_offsets-28/00000000000000000000.log": {1, 1},
	"kafka-2.7-compacted/__consumer_offsets-28/00000000000000000002.log": {1, 1},
	"kafka-2.7-compacted/__consumer_offsets-33/00000000000000000000.log": {3, 3},
	"kafka-2.7-compacted/__consumer_offsets-39/00000000000000000000.log": {3, 3},
	"kafka-2.7-compacted/__consumer_offsets-39/00000000000000000018.log": {1, 2},
	"kafka-2.7-compacted/__consumer_offsets-8/00000000000000000000.log":  {3, 3},
	"kafka-uncompacted/__consumer_offsets-12/00000000000000000000.log":   {162, 470},
	"kafka-uncompacted/__consumer_offsets-17/00000000000000000000.log":   {3, 3},
	"kafka-uncompacted/__consumer_offsets-18/00000000000000000000.log":   {277, 499},
	"kafka-uncompacted/__consumer_offsets-32/00000000000000000000.log":   {18, 50},
	"kafka-uncompacted/__consumer_offsets-33/00000000000000000000.log":   {3, 3},
	"kafka-uncompacted/first_topic-0/00000000000000000000.log":           {10, 11},
	"kafka-uncompacted/first_topic-1/00000000000000000000.log":           {12, 12},
	"kafka-uncompacted/first_topic-2/00000000000000000000.log":           {16, 18},
	"kafka-uncompacted/new_topic-0/00000000000000000000.log":             {2, 2},
}

func isLog(name string) bool { return strings.HasSuffix(name, ".log") }

// TestFixtureLogs decodes every broker-written .log, with CRCs verified, and
// re-encodes every batch: uncompressed batches must come back byte for
// byte, and every batch must survive a round trip through each codec with
// the same header fields and records.
func TestFixtureLogs(t *testing.T) {
	files := fixtureFiles(t, isLog)
	seen := map[string]bool{}
	for _, path := range files {
		name := rel(path)
		seen[name] = true
		data := readFile(t, path)
		sc := NewScannerVerify(data)
		batches, records := 0, 0
		for sc.Next() {
			raw := sc.Batch()
			h := sc.Header()
			batches++
			records += int(h.RecordsCount)
			if err := VerifyCRC(raw); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			b, err := DecodeBatch(raw, DefaultLimits())
			if err != nil {
				t.Errorf("%s: batch at %d: %v", name, sc.Pos(), err)
				continue
			}
			if len(b.Records) != int(h.RecordsCount) || b.Header != h {
				t.Errorf("%s: batch at %d: decoded header/records disagree with the scan", name, sc.Pos())
			}
			re, err := EncodeBatch(SpecOf(b))
			if err != nil {
				t.Errorf("%s: batch at %d: re-encode: %v", name, sc.Pos(), err)
				continue
			}
			if h.Codec() == CodecNone && !bytes.Equal(re, raw) {
				t.Errorf("%s: batch at base offset %d: re-encoding differs\n got %s\nwant %s", name, h.BaseOffset, hex.EncodeToString(re), hex.EncodeToString(raw))
			}
			for c := CodecNone; c <= CodecZstd; c++ {
				s := SpecOf(b)
				s.Codec = c
				enc, err := EncodeBatch(s)
				if err != nil {
					t.Fatalf("%s: encode with %s: %v", name, c, err)
				}
				back, err := DecodeBatch(enc, DefaultLimits())
				if err != nil {
					t.Fatalf("%s: decode %s re-encoding: %v", name, c, err)
				}
				wantH := h
				wantH.Attributes = h.Attributes&^attrCodecMask | int16(c)
				back.Header.Length, back.Header.CRC, wantH.Length, wantH.CRC = 0, 0, 0, 0
				if back.Header != wantH {
					t.Errorf("%s: %s round trip header\n got %+v\nwant %+v", name, c, back.Header, wantH)
				}
				if !recordsEqual(back.Records, b.Records) {
					t.Errorf("%s: %s round trip changed the records", name, c)
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if sc.Pos() != int64(len(data)) {
			t.Errorf("%s: scan stopped at %d of %d", name, sc.Pos(), len(data))
		}
		want, ok := fixtureCounts[name]
		if !ok {
			t.Errorf("%s: new fixture log, add its counts (%d batches, %d records)", name, batches, records)
		} else if want != [2]int{batches, records} {
			t.Errorf("%s: %d batches / %d records, want %d / %d", name, batches, records, want[0], want[1])
		}
	}
	for name := range fixtureCounts {
		if !seen[name] {
			t.Errorf("fixture %s missing", name)
		}
	}
}

func recordsEqual(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Attributes != y.Attributes || x.TimestampDelta != y.TimestampDelta || x.OffsetDelta != y.OffsetDelta ||
			x.Offset != y.Offset || x.Timestamp != y.Timestamp ||
			!nullableEqual(x.Key, y.Key) || !nullableEqual(x.Value, y.Value) || len(x.Headers) != len(y.Headers) {
			return false
		}
		for j := range x.Headers {
			if x.Headers[j].Key != y.Headers[j].Key || !nullableEqual(x.Headers[j].Value, y.Headers[j].Value) {
				return false
			}
		}
	}
	return true
}

func nullableEqual(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// TestFixtureKinds checks what the fixtures hold: no control or
// transactional batches, all uncompressed, CreateTime, no producer ids.
// It documents the fixtures; transactional cases come from our own encoder.
func TestFixtureKinds(t *testing.T) {
	codecs := map[Codec]int{}
	for _, path := range fixtureFiles(t, isLog) {
		sc := NewScanner(readFile(t, path))
		for sc.Next() {
			h := sc.Header()
			codecs[h.Codec()]++
			if h.IsControl() || h.IsTransactional() || h.TimestampType() != CreateTime || h.ProducerID != NoProducerID {
				t.Errorf("%s: unexpected batch kind %+v", rel(path), h)
			}
		}
	}
	if !reflect.DeepEqual(codecs, map[Codec]int{CodecNone: 518}) {
		t.Errorf("codecs in fixtures: %v", codecs)
	}
}

// TestFixtureSnapshots round-trips every producer snapshot byte for byte.
func TestFixtureSnapshots(t *testing.T) {
	empty, _ := hex.DecodeString("000148674bc700000000")
	if got := WriteSnapshot(nil); !bytes.Equal(got, empty) {
		t.Fatalf("empty snapshot = %x, want %x", got, empty)
	}
	files := fixtureFiles(t, func(n string) bool { return strings.HasSuffix(n, ".snapshot") })
	nonEmpty := 0
	for _, path := range files {
		data := readFile(t, path)
		entries, err := ReadSnapshot(data)
		if err != nil {
			t.Errorf("%s: %v", rel(path), err)
			continue
		}
		if got := WriteSnapshot(entries); !bytes.Equal(got, data) {
			t.Errorf("%s: rewrite differs\n got %x\nwant %x", rel(path), got, data)
		}
		if len(entries) > 0 {
			nonEmpty++
		} else if !bytes.Equal(data, empty) {
			t.Errorf("%s: empty snapshot bytes %x", rel(path), data)
		}
	}
	if nonEmpty != 1 {
		t.Errorf("%d non-empty snapshots, want 1 (myTopic-0)", nonEmpty)
	}
	entries, err := ReadSnapshot(readFile(t, fixtureRoot+"/kafka-2.7-compacted/myTopic-0/00000000000000000038.snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	want := []SnapshotEntry{
		{ProducerID: 4001, Epoch: 0, LastSequence: 11, LastOffset: 11, OffsetDelta: 2, Timestamp: 1670068129797, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 4002, Epoch: 0, LastSequence: 11, LastOffset: 23, OffsetDelta: 11, Timestamp: 1670068739452, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 4003, Epoch: 0, LastSequence: 13, LastOffset: 37, OffsetDelta: 13, Timestamp: 1670071262224, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
	}
	if !reflect.DeepEqual(entries, want) {
		t.Errorf("myTopic-0 snapshot:\n got %+v\nwant %+v", entries, want)
	}
	sorted := append([]SnapshotEntry(nil), entries...)
	sorted[0], sorted[2] = sorted[2], sorted[0]
	SortSnapshotEntries(sorted)
	if !reflect.DeepEqual(sorted, want) {
		t.Errorf("SortSnapshotEntries: %+v", sorted)
	}
	if got := SnapshotFileName(38); got != "00000000000000000038.snapshot" {
		t.Errorf("SnapshotFileName(38) = %q", got)
	}
}

// TestFixtureEpochCheckpoints round-trips every leader-epoch-checkpoint.
func TestFixtureEpochCheckpoints(t *testing.T) {
	files := fixtureFiles(t, func(n string) bool { return n == "leader-epoch-checkpoint" })
	for _, path := range files {
		data := readFile(t, path)
		entries, err := ReadEpochCheckpoint(data)
		if err != nil {
			t.Errorf("%s: %v", rel(path), err)
			continue
		}
		if len(entries) != 1 || entries[0].Epoch != 0 {
			t.Errorf("%s: entries %+v", rel(path), entries)
		}
		if got := WriteEpochCheckpoint(entries); !bytes.Equal(got, data) {
			t.Errorf("%s: rewrite %q, want %q", rel(path), got, data)
		}
	}
	e, err := ReadEpochCheckpoint(readFile(t, fixtureRoot+"/kafka-2.7-compacted/myTopic-0/leader-epoch-checkpoint"))
	if err != nil || !reflect.DeepEqual(e, []EpochEntry{{0, 38}}) {
		t.Errorf("myTopic-0 checkpoint = %+v, %v", e, err)
	}
}

func TestFixtureTopicDirs(t *testing.T) {
	for _, path := range fixtureFiles(t, isLog) {
		dir := filepath.Base(filepath.Dir(path))
		topic, p, err := ParseTopicPartition(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if TopicPartitionDir(topic, p) != dir {
			t.Errorf("%s: parsed as %q %d", dir, topic, p)
		}
	}
	if _, _, err := ParseTopicPartition("recovery-point-offset-checkpoint"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("checkpoint file name parsed as a partition dir: %v", err)
	}
}
