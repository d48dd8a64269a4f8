package compaction_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/importer"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/kafka/coord"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
	"github.com/nereusctl/nereusctl/internal/testutil/importrun"
)

// TestCompactRealConsumerOffsets imports a real broker's uncleaned
// __consumer_offsets-18 (277 batches, 499 OffsetCommit/GroupMetadata
// records) and compacts it: the view keeps exactly the latest value per
// key, as decoded independently from the broker's files, and every record
// still decodes as a coordinator record.
func TestCompactRealConsumerOffsets(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join("..", "..", "testdata", "kafka", "kafka-uncompacted", "__consumer_offsets-18")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("fixture missing (testdata/kafka, see its README): %v", err)
	}
	// The model: the latest record per key, straight from the .log file.
	data, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	latest := map[string]kafka.Record{}
	total := 0
	sc := kafka.NewScannerVerify(data)
	for sc.Next() {
		b, err := kafka.DecodeBatch(sc.Batch(), kafka.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			latest[string(r.Key)] = r
			total++
		}
	}
	if total != 499 {
		t.Fatalf("fixture has %d records, want 499", total)
	}

	st := store.NewMem(t.Name())
	if _, err := importrun.Run(ctx, st, importer.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	b, _, err := layout.LoadBinding(ctx, st, "__consumer_offsets", 18)
	if err != nil {
		t.Fatal(err)
	}
	// The broker's last segment is the open one: close it (seal) as a
	// broker roll would, so that all of it can be compacted.
	w, err := stream.OpenWriter(ctx, st, b.StreamID, b.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := compaction.Compact(ctx, st, b, compaction.Options{NowMs: 1_700_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ = layout.LoadBinding(ctx, st, "__consumer_offsets", 18)
	var got []compaction.Record
	if _, err := compaction.Read(ctx, st, b, 0, func(rec compaction.Record) error {
		got = append(got, rec)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Records beyond the compacted end (the open segment) are served as
	// they are; below it, one per key.
	end := int64(0)
	if b.Coverage.State == layout.CoverageActive {
		end = b.Coverage.End
	}
	var want []kafka.Record
	seen := map[string]bool{}
	sc = kafka.NewScannerVerify(data)
	for sc.Next() {
		bt, _ := kafka.DecodeBatch(sc.Batch(), kafka.DefaultLimits())
		for _, rec := range bt.Records {
			if rec.Offset >= end {
				want = append(want, rec)
				continue
			}
			// the latest below the compacted end
			if l := latestBelow(data, rec.Key, end); l == rec.Offset && !seen[string(rec.Key)] {
				seen[string(rec.Key)] = true
				want = append(want, rec)
			}
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Offset < want[j].Offset })
	if len(got) != len(want) {
		t.Fatalf("read %d records, model %d (compacted end %d, %d keys, stats %+v)", len(got), len(want), end, len(latest), r.Stats)
	}
	for i := range got {
		if got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("record %d: offset %d, model %d", i, got[i].Offset, want[i].Offset)
		}
		if _, err := coord.DecodeOffsetsRecord(got[i].Key, got[i].Value); err != nil {
			t.Fatalf("offset %d no longer decodes: %v", got[i].Offset, err)
		}
	}
	if end != 499 || int(r.Stats.Keys) != len(latest) || len(got) != len(latest) {
		t.Fatalf("compacted end %d, %d keys kept, %d served; want 499, %d, %d", end, r.Stats.Keys, len(got), len(latest), len(latest))
	}
	t.Logf("499 records -> %d served (%d rows in the view below %d, %d distinct keys in the log)", len(got), r.Stats.RowsOut, end, len(latest))
}

// latestBelow is the offset of key's last record below end in a log.
func latestBelow(log []byte, key []byte, end int64) int64 {
	last := int64(-1)
	sc := kafka.NewScanner(log)
	for sc.Next() {
		b, _ := kafka.DecodeBatch(sc.Batch(), kafka.DefaultLimits())
		for _, r := range b.Records {
			if r.Offset < end && bytes.Equal(r.Key, key) {
				last = r.Offset
			}
		}
	}
	return last
}
