package kafka

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
)

func TestCodecNames(t *testing.T) {
	for c, name := range map[Codec]string{CodecNone: "none", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLZ4: "lz4", CodecZstd: "zstd"} {
		if c.String() != name {
			t.Errorf("%d.String() = %q", c, c.String())
		}
	}
	if Codec(5).String() != "unknown(5)" || Codec(5).Valid() {
		t.Error("codec 5")
	}
	if CreateTime.String() != "CreateTime" || LogAppendTime.String() != "LogAppendTime" {
		t.Error("timestamp type names")
	}
}

func TestHeaderAccessors(t *testing.T) {
	h := BatchHeader{BaseOffset: 100, Length: 49, LastOffsetDelta: 9, BaseSequence: math.MaxInt32 - 3, Attributes: 0x78 | 3}
	if h.LastOffset() != 109 || h.NextOffset() != 110 || h.Size() != 61 {
		t.Errorf("offsets/size: %d %d %d", h.LastOffset(), h.NextOffset(), h.Size())
	}
	if h.Codec() != CodecLZ4 || !h.IsTransactional() || !h.IsControl() || !h.HasDeleteHorizon() || h.TimestampType() != LogAppendTime {
		t.Errorf("attributes %x decoded wrong", h.Attributes)
	}
	// Sequence wraps past MaxInt32 to 0: 2147483644 + 9 -> 5.
	if got := h.LastSequence(); got != 5 {
		t.Errorf("LastSequence = %d, want 5", got)
	}
	if got := h.RecordSequence(3); got != math.MaxInt32 {
		t.Errorf("RecordSequence(3) = %d", got)
	}
	if got := h.RecordSequence(4); got != 0 {
		t.Errorf("RecordSequence(4) = %d", got)
	}
	h.BaseTimestamp = 777
	if h.DeleteHorizonMs() != 777 {
		t.Error("DeleteHorizonMs with bit 6")
	}
	h.Attributes = 0
	if h.DeleteHorizonMs() != -1 || h.IsControl() || h.IsTransactional() || h.TimestampType() != CreateTime || h.Codec() != CodecNone {
		t.Error("attributes 0")
	}
	h.BaseSequence = -1
	if h.LastSequence() != -1 || h.RecordSequence(2) != -1 {
		t.Error("no sequence")
	}
}

func TestParseHeaderChecks(t *testing.T) {
	good := mustEncode(t, NewBatchSpec(5, []Record{{Offset: 5}}))
	h, err := ParseHeader(good[:HeaderSize]) // the whole batch is not required
	if err != nil || h.BaseOffset != 5 || h.RecordsCount != 1 || h.Size() != len(good) {
		t.Fatalf("ParseHeader: %+v %v", h, err)
	}
	neg := append([]byte(nil), good...)
	neg[0] = 0x80
	_, err = ParseHeader(neg)
	wantErr(t, "negative base offset", err, ErrCorrupt)
}

func TestEncodeDecodeShapes(t *testing.T) {
	t.Run("empty batch left by compaction", func(t *testing.T) {
		s := BatchSpec{BaseOffset: 40, PartitionLeaderEpoch: 3, ProducerID: 9, ProducerEpoch: 2, BaseSequence: 17,
			BaseTimestamp: -1, MaxTimestamp: 1234, LastOffsetDelta: 6, DeleteHorizonMs: -1, Transactional: true}
		b := mustEncode(t, s)
		if len(b) != HeaderSize {
			t.Fatalf("empty batch is %d bytes", len(b))
		}
		got, err := DecodeBatch(b, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		h := got.Header
		if h.RecordsCount != 0 || h.LastOffset() != 46 || h.LastSequence() != 23 || h.BaseTimestamp != -1 || h.MaxTimestamp != 1234 || !h.IsTransactional() {
			t.Errorf("empty batch header %+v", h)
		}
		if re := mustEncode(t, SpecOf(got)); !bytes.Equal(re, b) {
			t.Error("empty batch re-encoding differs")
		}
	})
	t.Run("compacted offsets keep the last offset delta", func(t *testing.T) {
		recs := []Record{{Offset: 101, Timestamp: 50, Key: []byte("a")}, {Offset: 104, Timestamp: 40, Key: []byte("b")}}
		s := NewBatchSpec(100, recs)
		s.LastOffsetDelta = 9
		got, err := DecodeBatch(mustEncode(t, s), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		h := got.Header
		if h.LastOffsetDelta != 9 || h.BaseTimestamp != 50 || h.MaxTimestamp != 50 || got.Records[1].Offset != 104 ||
			got.Records[1].Timestamp != 40 || got.Records[1].TimestampDelta != -10 || got.Records[0].OffsetDelta != 1 {
			t.Errorf("compacted batch: %+v %+v", h, got.Records)
		}
		s.LastOffsetDelta = 2
		if _, err := EncodeBatch(s); !errors.Is(err, ErrCorrupt) {
			t.Errorf("last offset delta below the last record: %v", err)
		}
	})
	t.Run("delete horizon replaces the base timestamp", func(t *testing.T) {
		s := NewBatchSpec(0, []Record{{Offset: 0, Timestamp: 1000, Key: []byte("k")}, {Offset: 1, Timestamp: 1500, Key: []byte("k2")}})
		s.DeleteHorizonMs = 99_000
		got, err := DecodeBatch(mustEncode(t, s), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if !got.Header.HasDeleteHorizon() || got.Header.DeleteHorizonMs() != 99_000 || got.Records[0].Timestamp != 1000 ||
			got.Records[1].Timestamp != 1500 || got.Header.MaxTimestamp != 1500 {
			t.Errorf("delete horizon: %+v %+v", got.Header, got.Records)
		}
	})
	t.Run("log append time", func(t *testing.T) {
		s := NewBatchSpec(0, []Record{{Offset: 0, TimestampDelta: 0, Value: []byte("x")}, {Offset: 1, TimestampDelta: 12, Value: []byte("y")}})
		s.TimestampType, s.BaseTimestamp, s.MaxTimestamp = LogAppendTime, 500, 9999
		b := mustEncode(t, s)
		got, err := DecodeBatch(b, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range got.Records {
			if r.Timestamp != 9999 {
				t.Errorf("LogAppendTime record timestamp %d", r.Timestamp)
			}
		}
		if got.Records[1].TimestampDelta != 12 {
			t.Error("create-time delta lost")
		}
		if re := mustEncode(t, SpecOf(got)); !bytes.Equal(re, b) {
			t.Error("LogAppendTime re-encoding differs")
		}
	})
	t.Run("bad specs", func(t *testing.T) {
		for name, s := range map[string]BatchSpec{
			"offsets not increasing":  NewBatchSpec(0, []Record{{Offset: 1}, {Offset: 1}}),
			"offset below base":       NewBatchSpec(5, []Record{{Offset: 4}}),
			"offset delta over int32": NewBatchSpec(0, []Record{{Offset: math.MaxInt32 + 1}}),
			"codec 6":                 {Codec: 6},
			"negative base offset":    {BaseOffset: -1},
			"negative last delta":     {LastOffsetDelta: -1},
		} {
			if _, err := EncodeBatch(s); err == nil {
				t.Errorf("%s: encoded", name)
			}
		}
	})
	t.Run("deterministic", func(t *testing.T) {
		for c := CodecNone; c <= CodecZstd; c++ {
			s := NewBatchSpec(7, sampleRecords(7, 1, 30))
			s.Codec = c
			if !bytes.Equal(mustEncode(t, s), mustEncode(t, s)) {
				t.Errorf("%s: two encodings differ", c)
			}
		}
	})
}

func TestDecodedRecordsDoNotAliasInput(t *testing.T) {
	b := oneRecordBatch(t, []byte("key"), []byte("value"))
	got, err := DecodeBatch(b, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0
	}
	if string(got.Records[0].Key) != "key" || string(got.Records[0].Value) != "value" {
		t.Error("decoded record changed with the input buffer")
	}
}

func TestControlRecords(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b, err := MarkerBatch(500, 4, 77, 3, commit, 12, 1_700_000_000_123)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeBatch(b, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		h := got.Header
		if !h.IsControl() || !h.IsTransactional() || h.Codec() != CodecNone || h.BaseSequence != -1 || h.ProducerID != 77 ||
			h.ProducerEpoch != 3 || h.PartitionLeaderEpoch != 4 || h.RecordsCount != 1 || h.LastOffsetDelta != 0 ||
			h.BaseTimestamp != 1_700_000_000_123 || h.MaxTimestamp != 1_700_000_000_123 || h.TimestampType() != CreateTime {
			t.Errorf("marker header %+v", h)
		}
		r := got.Records[0]
		v, typ, err := ParseControlKey(r.Key)
		want := ControlAbort
		if commit {
			want = ControlCommit
		}
		if err != nil || v != 0 || typ != want || r.Offset != 500 {
			t.Errorf("marker key %x: %d %v %v", r.Key, v, typ, err)
		}
		m, err := ParseEndTxnMarker(r.Value)
		if err != nil || m != (EndTxnMarker{Version: 0, CoordinatorEpoch: 12}) {
			t.Errorf("marker value %x: %+v %v", r.Value, m, err)
		}
		if len(r.Headers) != 0 || !bytes.Equal(m.Encode(), r.Value) || !bytes.Equal(ControlRecordKey(want), r.Key) {
			t.Error("marker record encodings")
		}
	}
	// The exact bytes of a COMMIT marker, laid out by hand from
	// DefaultRecordBatch / DefaultRecord / EndTransactionMarker.
	b, _ := MarkerBatch(0, 0, 1, 0, true, 5, 0)
	want := "0000000000000000" + "00000042" + "00000000" + "02" + "00000000" + "0030" + "00000000" +
		"0000000000000000" + "0000000000000000" + "0000000000000001" + "0000" + "ffffffff" + "00000001" +
		"20" + "00" + "00" + "00" + "08" + "00000001" + "0c" + "000000000005" + "00"
	wb, _ := hex.DecodeString(want)
	binary := append([]byte(nil), wb...)
	fixCRC(binary)
	if !bytes.Equal(b, binary) {
		t.Errorf("marker bytes\n got %x\nwant %x", b, binary)
	}

	if _, _, err := ParseControlKey([]byte{0, 0, 0}); !errors.Is(err, ErrCorrupt) {
		t.Error("3-byte control key")
	}
	if _, _, err := ParseControlKey([]byte{0x80, 0, 0, 1}); !errors.Is(err, ErrCorrupt) {
		t.Error("negative control key version")
	}
	if v, typ, err := ParseControlKey([]byte{0, 3, 0, 9, 0xff}); err != nil || v != 3 || typ != 9 || typ.Known() || typ.String() != "UNKNOWN(9)" {
		t.Errorf("future key version / unknown type: %d %v %v", v, typ, err)
	}
	if LeaderChange.String() != "LEADER_CHANGE" || ControlKRaftVoters.String() != "KRAFT_VOTERS" || !ControlCommit.IsTxnMarker() || ControlLeaderChange.IsTxnMarker() {
		t.Error("control type names")
	}
	if _, err := ParseEndTxnMarker([]byte{0, 0, 0, 0, 1}); !errors.Is(err, ErrCorrupt) {
		t.Error("5-byte marker")
	}
	if _, err := ParseEndTxnMarker([]byte{0xff, 0xff, 0, 0, 0, 1}); !errors.Is(err, ErrCorrupt) {
		t.Error("negative marker version")
	}
	if m, err := ParseEndTxnMarker([]byte{0, 1, 0, 0, 0, 7, 9, 9}); err != nil || m.CoordinatorEpoch != 7 || m.Version != 1 {
		t.Errorf("future marker version: %+v %v", m, err)
	}
}

func TestVarints(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, -64, 64, 300, -300, math.MaxInt32, math.MinInt32} {
		b := appendVarint(nil, v)
		got, n := readVarint(b)
		if got != v || n != len(b) || n != varintSize(v) {
			t.Errorf("varint %d: %x -> %d (%d)", v, b, got, n)
		}
	}
	for _, v := range []int64{0, -1, math.MaxInt64, math.MinInt64, 1 << 40} {
		b := appendVarlong(nil, v)
		got, n := readVarlong(b)
		if got != v || n != len(b) || n != varlongSize(v) {
			t.Errorf("varlong %d: %x -> %d (%d)", v, b, got, n)
		}
	}
	if _, n := readVarint([]byte{0x80, 0x80}); n != 0 {
		t.Error("cut varint")
	}
	if _, n := readVarint([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}); n != -1 {
		t.Error("6-byte varint accepted")
	}
	if _, n := readVarlong(bytes.Repeat([]byte{0x80}, 10)); n != -1 {
		t.Error("11-byte varlong accepted")
	}
}

// TestLZ4FrameLikeKafka: the frame descriptor is the one Kafka's
// Lz4BlockOutputStream writes (version 1, independent blocks, no
// checksums, 64 KiB blocks, header checksum 0x82).
func TestLZ4FrameLikeKafka(t *testing.T) {
	for i := 0; i < 2; i++ { // the pooled writer keeps its options
		z, err := Compress(CodecLZ4, bytes.Repeat([]byte("kafka "), 30000))
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(z[:7]); got != "04224d18604082" {
			t.Errorf("lz4 frame header %s", got)
		}
		if !bytes.Equal(z[len(z)-4:], []byte{0, 0, 0, 0}) {
			t.Errorf("lz4 frame does not end with an end mark and no content checksum: %x", z[len(z)-8:])
		}
	}
	x, _ := Compress(CodecSnappy, []byte("abc"))
	if got := hex.EncodeToString(x[:16]); got != "82534e415050590000000001"+"00000001" {
		t.Errorf("xerial header %s", got)
	}
}

// TestConcurrentCodecs runs the pooled compressors and decompressors from
// many goroutines (meaningful under -race).
func TestConcurrentCodecs(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for c := CodecNone; c <= CodecZstd; c++ {
				s := NewBatchSpec(int64(g), sampleRecords(int64(g), 1, 12))
				s.Codec = c
				b, err := EncodeBatch(s)
				if err != nil {
					errs <- err
					return
				}
				got, err := DecodeBatch(b, DefaultLimits())
				if err != nil {
					errs <- err
					return
				}
				if !sameContent(got.Records, s.Records) {
					errs <- fmt.Errorf("%s: records differ", c)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
