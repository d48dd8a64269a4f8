package dumplog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/importer"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
	"github.com/nereusctl/nereusctl/internal/testutil/importrun"
)

const fixtureRoot = "../../testdata/kafka"

// testStream writes a small stream of varied batches and returns its
// binding:
//
//	0..2   plain batch, 3 records (headers, a null key, a tombstone)
//	3..4   gzip batch, 2 records
//	5..6   transactional batch of producer 7 (epoch 2, sequences 10..11)
//	7      COMMIT marker of producer 7, coordinator epoch 5
//	8..10  empty batch left by compaction (count 0), delete horizon set
//	11     LogAppendTime batch
func testStream(t testing.TB, st store.Store) *layout.Binding {
	t.Helper()
	ctx := context.Background()
	sid := "s-test"
	if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	w, err := stream.OpenWriter(ctx, st, sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := int64(1_700_000_000_000)
	enc := func(s kafka.BatchSpec) []byte {
		b, err := kafka.EncodeBatch(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	plain := kafka.NewBatchSpec(0, []kafka.Record{
		{Key: []byte("a"), Value: []byte("1"), Offset: 0, Timestamp: ts, Headers: []kafka.RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2"}}},
		{Key: nil, Value: []byte("2"), Offset: 1, Timestamp: ts + 1},
		{Key: []byte("a"), Value: nil, Offset: 2, Timestamp: ts + 2},
	})
	plain.PartitionLeaderEpoch = 3
	gz := kafka.NewBatchSpec(3, []kafka.Record{{Key: []byte("g"), Value: []byte("zip"), Offset: 3, Timestamp: ts + 3}, {Key: []byte("g"), Value: []byte("zap"), Offset: 4, Timestamp: ts + 4}})
	gz.Codec = kafka.CodecGzip
	gz.PartitionLeaderEpoch = 3
	txn := kafka.NewBatchSpec(5, []kafka.Record{{Key: []byte("t"), Value: []byte("1"), Offset: 5, Timestamp: ts + 5}, {Key: []byte("t"), Value: []byte("2"), Offset: 6, Timestamp: ts + 6}})
	txn.Transactional, txn.ProducerID, txn.ProducerEpoch, txn.BaseSequence, txn.PartitionLeaderEpoch = true, 7, 2, 10, 4
	marker, err := kafka.MarkerBatch(7, 4, 7, 2, true, 5, ts+7)
	if err != nil {
		t.Fatal(err)
	}
	empty := kafka.NewBatchSpec(8, nil)
	empty.LastOffsetDelta, empty.DeleteHorizonMs, empty.BaseTimestamp, empty.MaxTimestamp = 2, ts+100, -1, -1
	lat := kafka.NewBatchSpec(11, []kafka.Record{{Key: []byte("l"), Value: []byte("at"), Offset: 11, Timestamp: ts + 11}})
	lat.TimestampType, lat.MaxTimestamp = kafka.LogAppendTime, ts+500
	if err := w.Append(ctx, [][]byte{enc(plain), enc(gz)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, [][]byte{enc(txn), marker}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, [][]byte{enc(empty), enc(lat)}); err != nil {
		t.Fatal(err)
	}
	return &layout.Binding{Topic: "t", Partition: 0, StreamID: sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
}

// dump runs a dump and returns its batch and record lines (dumpAll: the
// segment lines too).
func dump(t testing.TB, src Source, opt Options) ([]Line, *Summary, error) {
	t.Helper()
	all, sum, err := dumpAll(t, src, opt)
	var lines []Line
	for _, l := range all {
		if _, ok := l.(*SegmentLine); !ok {
			lines = append(lines, l)
		}
	}
	return lines, sum, err
}

func dumpAll(t testing.TB, src Source, opt Options) ([]Line, *Summary, error) {
	t.Helper()
	var lines []Line
	sum, err := Run(context.Background(), src, opt, func(l Line) error {
		lines = append(lines, clone(l))
		return nil
	})
	return lines, sum, err
}

// clone copies a line: Run reuses them.
func clone(l Line) Line {
	switch l := l.(type) {
	case *BatchLine:
		c := *l
		if l.Valid != nil {
			v := *l.Valid
			c.Valid = &v
		}
		if l.DeleteHorizonMs != nil {
			h := *l.DeleteHorizonMs
			c.DeleteHorizonMs = &h
		}
		if l.SegmentBase != nil {
			b, p := *l.SegmentBase, *l.SegmentPosition
			c.SegmentBase, c.SegmentPosition = &b, &p
		}
		return &c
	case *SegmentLine:
		c := *l
		return &c
	case *RecordLine:
		c := *l
		c.Headers = append([]Header{}, l.Headers...)
		return &c
	}
	panic("unknown line")
}

func texts(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text()
	}
	return out
}

func open(t testing.TB, st store.Store, b *layout.Binding) Source {
	t.Helper()
	src, note, err := SourceFor(context.Background(), st, b)
	if err != nil {
		t.Fatal(err)
	}
	if note != "" {
		t.Fatalf("note %q", note)
	}
	return src
}

func TestDumpBatches(t *testing.T) {
	st := store.NewMem("t")
	b := testStream(t, st)
	lines, sum, err := dump(t, open(t, st, b), Options{From: -1, ShowObjects: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 6 || sum.Batches != 6 || sum.Records != 0 || sum.Head != 12 || sum.LogStart != 0 {
		t.Fatalf("%d lines, summary %+v", len(lines), sum)
	}
	got := texts(lines)
	want := []string{
		"baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000002 size: ",
		"compresscodec: gzip",
		"baseOffset: 5 lastOffset: 6 count: 2 baseSequence: 10 lastSequence: 11 producerId: 7 producerEpoch: 2 partitionLeaderEpoch: 4 isTransactional: true isControl: false",
		"baseOffset: 7 lastOffset: 7 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 2 partitionLeaderEpoch: 4 isTransactional: true isControl: true",
		"baseOffset: 8 lastOffset: 10 count: 0 ",
		"LogAppendTime: 1700000000500",
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("line %d:\n%s\nwant it to contain\n%s", i, got[i], w)
		}
		if !strings.Contains(got[i], "isvalid: unchecked object: streams/s-test/objects/") {
			t.Errorf("line %d: %s", i, got[i])
		}
	}
	if !strings.Contains(got[4], "deleteHorizonMs: OptionalLong[1700000000100]") {
		t.Errorf("delete horizon: %s", got[4])
	}
	if !strings.Contains(got[1], " position: ") || strings.Contains(got[1], " position: 0 ") {
		t.Errorf("second batch of the object: %s", got[1])
	}
}

func TestDumpDeep(t *testing.T) {
	st := store.NewMem("t")
	b := testStream(t, st)
	lines, sum, err := dump(t, open(t, st, b), Options{From: -1, Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	// 6 batches, 3+2+2+1+0+1 records.
	if sum.Batches != 6 || sum.Records != 9 || len(lines) != 15 {
		t.Fatalf("%d lines, %+v", len(lines), sum)
	}
	got := strings.Join(texts(lines), "\n")
	for _, w := range []string{
		"| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [h1,h2]",
		"| offset: 1 CreateTime: 1700000000001 keySize: -1 valueSize: 1",
		"| offset: 2 CreateTime: 1700000000002 keySize: 1 valueSize: -1",
		"| offset: 6 CreateTime: 1700000000006 keySize: 1 valueSize: 1 sequence: 11 headerKeys: []",
		"| offset: 7 CreateTime: 1700000000007 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5",
		"| offset: 11 LogAppendTime: 1700000000500",
		"isvalid: true",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "unchecked") {
		t.Error("deep iteration left a batch unchecked")
	}
	// JSON shape.
	var m map[string]any
	js, _ := json.Marshal(lines[1])
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != "record" || m["key"] != "YQ==" || m["value"] != "MQ==" || m["offset"] != 0.0 {
		t.Fatalf("record JSON %s", js)
	}
	hs := m["headers"].([]any)
	if len(hs) != 2 || hs[1].(map[string]any)["value"] != nil {
		t.Fatalf("headers %v", hs)
	}
	js, _ = json.Marshal(lines[2])
	json.Unmarshal(js, &m)
	if m["key"] != nil {
		t.Fatalf("null key: %s", js)
	}
	js, _ = json.Marshal(lines[0])
	m = nil
	json.Unmarshal(js, &m)
	for _, k := range []string{"type", "base_offset", "last_offset", "count", "producer_id", "producer_epoch", "base_sequence", "transactional", "control", "codec", "object", "valid", "delete_horizon_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("batch JSON lacks %q: %s", k, js)
		}
	}
	if m["type"] != "batch" || m["codec"] != "none" || m["valid"] != true || m["delete_horizon_ms"] != nil {
		t.Fatalf("batch JSON %s", js)
	}
	for _, l := range lines {
		if r, ok := l.(*RecordLine); ok && r.Offset == 7 {
			js, _ := json.Marshal(r)
			if !strings.Contains(string(js), `"control":{"type":"COMMIT","coordinator_epoch":5}`) {
				t.Fatalf("marker JSON %s", js)
			}
		}
	}
}

func TestDumpFromAndCount(t *testing.T) {
	st := store.NewMem("t")
	b := testStream(t, st)
	src := open(t, st, b)
	// --from inside the gzip batch: that batch whole, then on.
	lines, sum, err := dump(t, src, Options{From: 4, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || !sum.Limited || lines[0].(*BatchLine).BaseOffset != 3 || lines[1].(*BatchLine).BaseOffset != 5 {
		t.Fatalf("%v %+v", texts(lines), sum)
	}
	// Deep: records below --from are skipped, --count counts records.
	lines, sum, err = dump(t, src, Options{From: 4, Count: 3, Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	got := texts(lines)
	if len(got) != 5 || !strings.HasPrefix(got[1], "| offset: 4 ") || !strings.HasPrefix(got[4], "| offset: 6 ") || sum.Records != 3 || !sum.Limited {
		t.Fatalf("%v %+v", got, sum)
	}
	// Count exactly the rest: not limited.
	_, sum, _ = dump(t, src, Options{From: 8, Count: 2})
	if sum.Limited || sum.Batches != 2 {
		t.Fatalf("%+v", sum)
	}
	// Beyond the head: nothing.
	lines, _, err = dump(t, src, Options{From: 12})
	if err != nil || len(lines) != 0 {
		t.Fatalf("%v %v", texts(lines), err)
	}
}

// Batches below the log start are not shown; records below it neither.
func TestDumpSkipsBelowLogStart(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("t")
	b := testStream(t, st)
	h, etag, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	h.Trim = 4
	h.Version++
	if _, err := layout.Replace(ctx, st, layout.HeadKey(b.StreamID), h, etag); err != nil {
		t.Fatal(err)
	}
	lines, sum, err := dump(t, open(t, st, b), Options{From: 1, Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	got := texts(lines)
	if !sum.Clamped || sum.From != 4 || sum.LogStart != 4 || !strings.HasPrefix(got[0], "baseOffset: 3 ") || !strings.HasPrefix(got[1], "| offset: 4 ") {
		t.Fatalf("%v %+v", got, sum)
	}
	if _, sum, _ := dump(t, open(t, st, b), Options{From: -1}); sum.Clamped || sum.Batches != 5 {
		t.Fatalf("%+v", sum)
	}
}

func TestDumpInvalidBatch(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("t")
	b := testStream(t, st)
	objs, _ := layout.ListObjects(ctx, st, b.StreamID)
	data, _ := st.Get(ctx, objs[0].Key, nil)
	bad := append([]byte(nil), data...)
	bad[70] ^= 0x55 // inside the first batch's records
	if _, err := st.Put(ctx, objs[0].Key, bad, store.None()); err != nil {
		t.Fatal(err)
	}
	src := open(t, st, b)
	// The header-only pass does not notice.
	if _, _, err := dump(t, src, Options{From: -1}); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []Options{{From: -1, VerifyCRC: true}, {From: -1, Deep: true}} {
		lines, sum, err := dump(t, src, opt)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, kafka.ErrCorrupt) || sum.Invalid != 1 || sum.Batches != 6 {
			t.Fatalf("%+v: err %v, %+v", opt, err, sum)
		}
		if l := lines[0].Text(); !strings.Contains(l, "isvalid: false") || !strings.Contains(l, "crc mismatch") {
			t.Fatalf("%s", l)
		}
	}
}

func TestDumpDecoderOffsets(t *testing.T) {
	st := store.NewMem("t")
	res, err := importrun.Run(context.Background(), st, importer.Options{Dir: filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18")})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := layout.LoadBinding(context.Background(), st, res.Topic, res.Partition)
	if err != nil {
		t.Fatal(err)
	}
	lines, sum, err := dump(t, open(t, st, b), Options{From: -1, Deep: true, Decoder: DecoderOffsets})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Batches != 277 || sum.Records != 499 || sum.DecodeErrors != 0 || len(lines) != 776 {
		t.Fatalf("%+v, %d lines", sum, len(lines))
	}
	kinds := map[string]int{}
	for _, l := range lines {
		if r, ok := l.(*RecordLine); ok {
			if r.Decoded == nil || !strings.Contains(r.Text(), " key: {\"type\":\"") {
				t.Fatalf("undecoded: %s", r.Text())
			}
			js, _ := json.Marshal(r)
			var m struct {
				Decoded struct{ Kind string }
			}
			json.Unmarshal(js, &m)
			kinds[m.Decoded.Kind]++
		}
	}
	if len(kinds) < 2 {
		t.Fatalf("kinds %v", kinds)
	}
	// The txn decoder on offsets records reports errors but goes on.
	_, sum, err = dump(t, open(t, st, b), Options{From: -1, Deep: true, Decoder: DecoderTxn, Count: 10})
	if err != nil || sum.Records != 10 {
		t.Fatalf("%v %+v", err, sum)
	}
}

// sliceSource is a Source over batches in memory: the seam a compacted
// view will use.
type sliceSource struct{ batches [][]byte }

func (s sliceSource) Bounds() (int64, int64) { return 0, 100 }
func (s sliceSource) Describe() string       { return "test batches" }
func (s sliceSource) Batches(ctx context.Context, from int64, fn func(Batch) error) error {
	for i, raw := range s.batches {
		h, err := kafka.ParseHeader(raw)
		if err != nil {
			return err
		}
		if h.LastOffset() < from {
			continue
		}
		if err := fn(Batch{Header: h, Raw: raw, Object: "view", Pos: int64(i)}); err != nil {
			return err
		}
	}
	return nil
}

func TestDumpOtherSource(t *testing.T) {
	var batches [][]byte
	for _, off := range []int64{0, 10, 20} {
		b, err := kafka.EncodeBatch(kafka.NewBatchSpec(off, []kafka.Record{{Key: []byte("k"), Value: []byte("v"), Offset: off, Timestamp: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	lines, sum, err := dump(t, sliceSource{batches}, Options{From: 5, Deep: true, ShowObjects: true})
	if err != nil || sum.Batches != 2 || sum.Records != 2 || sum.Source != "test batches" {
		t.Fatalf("%v %+v", err, sum)
	}
	if l := lines[0].Text(); !strings.HasSuffix(l, "object: view") {
		t.Fatal(l)
	}
}

func TestSourceForNotesCoverage(t *testing.T) {
	st := store.NewMem("t")
	b := testStream(t, st)
	b.Coverage = layout.Coverage{State: layout.CoverageActive, Start: 0, End: 5}
	_, note, err := SourceFor(context.Background(), st, b)
	if err != nil || !strings.Contains(note, "READ_COMMITTED") {
		t.Fatalf("%q %v", note, err)
	}
}

func TestDumpRendersToWriter(t *testing.T) {
	st := store.NewMem("t")
	b := testStream(t, st)
	w := bufio.NewWriter(io.Discard)
	_, err := Run(context.Background(), open(t, st, b), Options{From: -1, Deep: true}, func(l Line) error {
		_, err := w.WriteString(l.Text())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseDecoder("nope"); err == nil {
		t.Fatal("decoder nope accepted")
	}
	if _, err := Run(context.Background(), open(t, st, b), Options{Decoder: DecoderOffsets}, func(Line) error { return nil }); err == nil {
		t.Fatal("decoder without deep accepted")
	}
}
