package importer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Legacy message sets (magic 0 and 1) built with franz-go's kmsg and
// compressed with kgo: what an old broker wrote, and what a topic whose
// message format was upgraded holds before its first v2 batch.

func legacySeal(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

func legacyV0(off int64, attrs int8, key, value []byte) []byte {
	m := kmsg.MessageV0{Offset: off, Attributes: attrs, Key: key, Value: value}
	return legacySeal(m.AppendTo(nil))
}

func legacyV1(off int64, attrs int8, ts int64, key, value []byte) []byte {
	m := kmsg.MessageV1{Offset: off, Magic: 1, Attributes: attrs, Timestamp: ts, Key: key, Value: value}
	return legacySeal(m.AppendTo(nil))
}

func gzipped(t testing.TB, src []byte) []byte {
	t.Helper()
	comp, err := kgo.DefaultCompressor(kgo.GzipCompression())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := comp.Compress(new(bytes.Buffer), src)
	return append([]byte(nil), out...)
}

type legacyRec struct {
	off, ts    int64
	key, value string
}

// legacySegment is a segment an upgraded broker left: magic 0 messages
// at 0 and 1 (no timestamps), a gzip magic 1 wrapper holding 2, 3 and 5
// (relative offsets 0, 1, 3; CreateTime), a LogAppendTime magic 1 message
// at 6, then v2 batches of producer 5 at 7 and 8 (leader epoch 3). It
// returns the records as Kafka reads them.
func legacySegment(t testing.TB) ([]byte, []legacyRec) {
	t.Helper()
	inner := append(append(legacyV1(0, 0, 1002, []byte("k2"), []byte("v2")), legacyV1(1, 0, 1003, []byte("k3"), nil)...), legacyV1(3, 0, 1005, nil, []byte("v5"))...)
	seg := append(legacyV0(0, 0, []byte("k0"), []byte("v0")), legacyV0(1, 0, nil, []byte("v1"))...)
	seg = append(seg, legacyV1(5, 1, 1005, nil, gzipped(t, inner))...)
	seg = append(seg, legacyV1(6, 0x08, 2006, []byte("k6"), []byte("v6"))...)
	for _, off := range []int64{7, 8} {
		s := kafka.NewBatchSpec(off, []kafka.Record{{Offset: off, Timestamp: 3000 + off, Key: []byte("kv2"), Value: []byte("v")}})
		s.ProducerID, s.ProducerEpoch, s.BaseSequence, s.PartitionLeaderEpoch = 5, 0, int32(off-7), 3
		b, err := kafka.EncodeBatch(s)
		if err != nil {
			t.Fatal(err)
		}
		seg = append(seg, b...)
	}
	return seg, []legacyRec{{0, -1, "k0", "v0"}, {1, -1, "", "v1"}, {2, 1002, "k2", "v2"}, {3, 1003, "k3", ""}, {5, 1005, "", "v5"}, {6, 2006, "k6", "v6"}, {7, 3007, "kv2", "v"}, {8, 3008, "kv2", "v"}}
}

// TestImportLegacyMessageSets: a segment of legacy message sets and v2
// batches imports as Kafka reads it (FileLogInputStream by magic,
// AbstractLegacyRecordBatch, DeepRecordsIterator): the stream holds v2
// batches only, with the same offsets (the gap at 4 kept), timestamps,
// timestamp types, keys and values; the producer and the leader epoch come
// from the v2 batches alone (LogSegment.recover updates them only for
// magic >= 2); every replay agrees. Before, import refused the segment as
// corrupt and pointed at --recover, which dropped all of it.
func TestImportLegacyMessageSets(t *testing.T) {
	ctx := context.Background()
	seg, want := legacySegment(t)
	dir := filepath.Join(t.TempDir(), "logs", "old-0")
	writeSegments(t, dir, map[int64][]byte{0: seg, 9: segment(t, []int64{9}, []int32{3})})
	st := store.NewMem("legacy")
	res := run(t, st, Options{Dir: dir})
	s0 := res.Segments[0]
	if s0.LegacyBatches != 4 || s0.Batches != 6 || s0.Records != 8 || s0.DroppedBytes != 0 || s0.StoredBytes == s0.Bytes || res.Head != 10 {
		t.Fatalf("segment report %+v, head %d", s0, res.Head)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "legacy message sets") {
		t.Fatalf("notes %q", res.Notes)
	}
	// The stored objects are v2 only, and hold what Kafka reads.
	objs, err := layout.ListObjects(ctx, st, res.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	var got []legacyRec
	for _, o := range objs {
		data, err := stream.ReadObject(ctx, st, o)
		if err != nil {
			t.Fatal(err)
		}
		sc := kafka.NewScannerVerify(data)
		for sc.Next() {
			b, err := kafka.DecodeBatch(sc.Batch(), kafka.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			h := b.Header
			if h.BaseOffset < 7 && (h.ProducerID != -1 || h.PartitionLeaderEpoch != -1) {
				t.Fatalf("up-converted batch %+v carries a producer or a leader epoch", h)
			}
			if h.BaseOffset == 6 && h.TimestampType() != kafka.LogAppendTime || h.BaseOffset == 2 && (h.LastOffset() != 5 || h.TimestampType() != kafka.CreateTime) {
				t.Fatalf("batch %+v", h)
			}
			for _, r := range b.Records {
				got = append(got, legacyRec{r.Offset, r.Timestamp, string(r.Key), string(r.Value)})
			}
		}
		if sc.Err() != nil {
			t.Fatal(sc.Err())
		}
	}
	if len(got) != len(want)+1 {
		t.Fatalf("records %v, want %v and 9", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("record %d: %+v, want %+v", i, got[i], w)
		}
	}
	full := allReplaysAgree(t, st, res)
	p := full.State
	if len(p.Producers) != 1 || p.Producers[5] == nil || len(p.Epochs) != 1 || p.Epochs[0].Epoch != 3 || p.Epochs[0].StartOffset != 7 {
		t.Fatalf("producers %v, epochs %v: want producer 5 and epoch 3 from 7, from the v2 batches only", p.SortedProducers(), p.Epochs)
	}
	// --recover from the recovery point 0 keeps every valid legacy batch.
	rec := run(t, store.NewMem("recover"), Options{Dir: dir, Recover: true})
	if rec.BytesDropped != 0 || rec.StateDigest != res.StateDigest {
		t.Fatalf("--recover dropped %d bytes (digest %s, plain import %s)", rec.BytesDropped, rec.StateDigest, res.StateDigest)
	}
}

// A legacy wrapper whose CRC passes but whose compressed contents cannot
// be read: Kafka's recovery keeps it (LogSegment.recover checks only the
// wrapper), so the import refuses it as unreadable, never as a defect
// --recover may truncate, and --recover does not drop it. A legacy
// message whose CRC fails is what Kafka's recovery truncates: --recover
// does the same.
func TestImportLegacyUnreadableAndCRC(t *testing.T) {
	bad := legacyV1(1, 1, 5, nil, []byte("not gzip at all"))
	dir := filepath.Join(t.TempDir(), "logs", "bad-0")
	writeSegments(t, dir, map[int64][]byte{0: append(legacyV0(0, 0, nil, []byte("a")), bad...)})
	for _, recover := range []bool{false, true} {
		_, err := Run(context.Background(), store.NewMem("x"), Options{Dir: dir, Recover: recover})
		if !errors.Is(err, kafka.ErrLegacyUnreadable) || errors.Is(err, ErrNeedsRecovery) || !strings.Contains(err.Error(), "byte 27") {
			t.Fatalf("--recover %v: %v", recover, err)
		}
	}
	crc := legacyV0(1, 0, nil, []byte("b"))
	crc[len(crc)-1] ^= 1
	path := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(path, append(legacyV0(0, 0, nil, []byte("a")), crc...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), store.NewMem("y"), Options{Dir: dir}); !errors.Is(err, ErrNeedsRecovery) || !errors.Is(err, kafka.ErrCRC) {
		t.Fatalf("a legacy CRC failure: %v", err)
	}
	rec := run(t, store.NewMem("z"), Options{Dir: dir, Recover: true})
	if rec.BytesDropped != int64(len(crc)) || rec.Head != 1 {
		t.Fatalf("--recover: dropped %d, head %d", rec.BytesDropped, rec.Head)
	}
}
