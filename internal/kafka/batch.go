package kafka

import (
	"fmt"
	"math"

	"github.com/klauspost/compress/zstd"
)

// Limits caps what decoding one batch may cost. A zero field takes its
// DefaultLimits value.
type Limits struct {
	MaxBatchBytes   int // size of the batch as stored (12 + Length)
	MaxDecodedBytes int // size of the records section after decompression
	MaxRecords      int // records in one batch
}

// DefaultLimits are generous caps: 64 MiB stored or decoded per batch (a
// generous max.message.bytes; Kafka's default is about 1 MiB) and 2 Mi
// records.
func DefaultLimits() Limits {
	return Limits{
		MaxBatchBytes:   64 << 20,
		MaxDecodedBytes: 64 << 20,
		MaxRecords:      2 << 20,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBatchBytes <= 0 {
		l.MaxBatchBytes = d.MaxBatchBytes
	}
	if l.MaxDecodedBytes <= 0 {
		l.MaxDecodedBytes = d.MaxDecodedBytes
	}
	if l.MaxRecords <= 0 {
		l.MaxRecords = d.MaxRecords
	}
	return l
}

// Batch is a decoded RecordBatch v2.
type Batch struct {
	Header  BatchHeader
	Records []Record
}

// DecodeBatch decodes one whole batch: len(b) must equal the header's
// Size(). It verifies the CRC, decompresses with the caps of lim (a
// decompression bomb is ErrTooLarge), bounds RecordsCount by what the bytes
// can hold, checks every record's body against its declared length, that
// the records use up the section exactly and that offset deltas are
// strictly increasing within [0, LastOffsetDelta]. The result does not
// alias b.
func DecodeBatch(b []byte, lim Limits) (*Batch, error) {
	return decodeBatch(b, lim.withDefaults(), true, nil)
}

// A BatchDecoder decodes batches one after another into buffers it reuses:
// the records, their headers and the decompressed records section. It
// makes the same checks as DecodeBatch, with the same limits, and costs no
// allocation per batch once warm (a header key is made a string once while
// it stays among the last eight distinct ones). Not safe for concurrent
// use.
type BatchDecoder struct {
	lim   Limits
	batch Batch
	recs  []Record
	hdrs  []RecordHeader
	buf   []byte
	zstd  *zstd.Decoder
	keys  headerKeys
}

// NewBatchDecoder returns a decoder with the limits lim (zero fields take
// their DefaultLimits value).
func NewBatchDecoder(lim Limits) *BatchDecoder {
	return &BatchDecoder{lim: lim.withDefaults()}
}

// Decode decodes one whole batch as DecodeBatch does, checking the CRC
// unless verifiedCRC says the caller already has (a Scanner made with
// NewScannerVerify). The result aliases b and the decoder's buffers: it is
// valid until the next Decode, and the caller copies what it keeps.
func (d *BatchDecoder) Decode(b []byte, verifiedCRC bool) (*Batch, error) {
	return decodeBatch(b, d.lim, !verifiedCRC, d)
}

// decodeBatch is DecodeBatch with lim already defaulted; with d it reuses
// d's buffers and its result aliases b and them.
func decodeBatch(b []byte, lim Limits, checkCRC bool, d *BatchDecoder) (*Batch, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, fmt.Errorf("decode batch: %w", err)
	}
	if h.Size() > lim.MaxBatchBytes {
		return nil, fmt.Errorf("decode batch at base offset %d: %d bytes, limit %d: %w", h.BaseOffset, h.Size(), lim.MaxBatchBytes, ErrTooLarge)
	}
	if checkCRC {
		if err := VerifyCRC(b); err != nil {
			return nil, fmt.Errorf("decode batch: %w", err)
		}
	} else if len(b) != h.Size() {
		return nil, fmt.Errorf("decode batch at base offset %d: %d bytes, its header says %d: %w", h.BaseOffset, len(b), h.Size(), ErrCorrupt)
	}
	c := h.Codec()
	if !c.Valid() {
		return nil, fmt.Errorf("decode batch at base offset %d: unknown codec id %d: %w", h.BaseOffset, int8(c), ErrCorrupt)
	}
	var out *Batch
	if d != nil {
		d.batch = Batch{Header: h}
		out = &d.batch
	} else {
		out = &Batch{Header: h}
	}
	if h.RecordsCount == 0 {
		// Kafka reads no records when the count is 0, whatever follows.
		return out, nil
	}
	if int(h.RecordsCount) > lim.MaxRecords {
		return nil, fmt.Errorf("decode batch at base offset %d: %d records, limit %d: %w", h.BaseOffset, h.RecordsCount, lim.MaxRecords, ErrTooLarge)
	}
	if int64(h.RecordsCount) > int64(h.LastOffsetDelta)+1 {
		return nil, fmt.Errorf("decode batch at base offset %d: %d records for last offset delta %d: %w", h.BaseOffset, h.RecordsCount, h.LastOffsetDelta, ErrCorrupt)
	}
	payload := b[HeaderSize:]
	var data []byte
	if c == CodecNone {
		if int(h.RecordsCount) > len(payload)/minRecordSize {
			return nil, fmt.Errorf("decode batch at base offset %d: %d records cannot fit in %d bytes: %w", h.BaseOffset, h.RecordsCount, len(payload), ErrCorrupt)
		}
		if len(payload) > lim.MaxDecodedBytes {
			return nil, fmt.Errorf("decode batch at base offset %d: %d-byte records section, limit %d: %w", h.BaseOffset, len(payload), lim.MaxDecodedBytes, ErrTooLarge)
		}
		if d != nil {
			data = payload
		} else {
			data = append([]byte(nil), payload...)
		}
	} else {
		if int64(h.RecordsCount)*minRecordSize > int64(lim.MaxDecodedBytes) {
			return nil, fmt.Errorf("decode batch at base offset %d: %d records cannot fit in the %d-byte decode limit: %w", h.BaseOffset, h.RecordsCount, lim.MaxDecodedBytes, ErrTooLarge)
		}
		if d != nil && c == CodecZstd {
			data, err = d.unzstd(payload, lim.MaxDecodedBytes)
		} else {
			data, err = Decompress(c, payload, lim.MaxDecodedBytes)
		}
		if err != nil {
			return nil, fmt.Errorf("decode batch at base offset %d: %w", h.BaseOffset, err)
		}
	}
	if d == nil {
		out.Records, _, err = decodeRecordsInto(h, data, lim, nil, nil, nil)
	} else {
		d.recs, d.hdrs, err = decodeRecordsInto(h, data, lim, d.recs, d.hdrs, &d.keys)
		out.Records = d.recs
	}
	if err != nil {
		return nil, fmt.Errorf("decode batch: %w", err)
	}
	return out, nil
}

// BatchSpec describes a batch to encode. Mind the "none" values: Kafka
// writes -1 for no producer id, epoch, sequence or leader epoch, and the
// zero value of those fields is a real producer 0 / sequence 0. NewBatchSpec
// starts from Kafka's "none" values.
type BatchSpec struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Codec                Codec
	TimestampType        TimestampType
	Transactional        bool
	Control              bool
	// DeleteHorizonMs sets attribute bit 6 and replaces BaseTimestamp when
	// positive; -1 (or 0) means none.
	DeleteHorizonMs int64
	// BaseTimestamp is the base of the records' timestamp deltas. When 0
	// and records are given it is the first record's Timestamp (Kafka's
	// rule); an empty batch written by compaction has -1.
	BaseTimestamp int64
	// MaxTimestamp is computed when 0: the largest record Timestamp, or -1
	// without records. Under LogAppendTime it is the append time.
	MaxTimestamp  int64
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Records in offset order; Offset and Timestamp are absolute and the
	// deltas are computed from BaseOffset and BaseTimestamp (under
	// LogAppendTime TimestampDelta is written as given).
	Records []Record
	// LastOffsetDelta is the batch's last offset delta when Records is
	// empty (empty batches left by compaction). With records it is
	// computed from the last record, unless set larger: a batch cleaned by
	// compaction keeps its original last offset.
	LastOffsetDelta int32
}

// NewBatchSpec returns a CreateTime, uncompressed spec with no producer
// (id, epoch, sequence -1), no leader epoch (-1) and no delete horizon.
func NewBatchSpec(baseOffset int64, records []Record) BatchSpec {
	return BatchSpec{
		BaseOffset:           baseOffset,
		PartitionLeaderEpoch: NoPartitionLeaderEpoch,
		DeleteHorizonMs:      NoTimestamp,
		ProducerID:           NoProducerID,
		ProducerEpoch:        NoProducerEpoch,
		BaseSequence:         NoSequence,
		Records:              records,
	}
}

// EncodeBatch writes a RecordBatch v2. The bytes are deterministic for the
// same spec. Records must have strictly increasing offsets at or after
// BaseOffset, within 2^31-1 of it.
func EncodeBatch(s BatchSpec) ([]byte, error) {
	if !s.Codec.Valid() {
		return nil, fmt.Errorf("encode batch at base offset %d: unknown codec %d: %w", s.BaseOffset, int8(s.Codec), ErrCorrupt)
	}
	if s.TimestampType != CreateTime && s.TimestampType != LogAppendTime {
		return nil, fmt.Errorf("encode batch at base offset %d: unknown timestamp type %d: %w", s.BaseOffset, int8(s.TimestampType), ErrCorrupt)
	}
	if s.BaseOffset < 0 {
		return nil, fmt.Errorf("encode batch: negative base offset %d: %w", s.BaseOffset, ErrCorrupt)
	}
	h := BatchHeader{
		BaseOffset:           s.BaseOffset,
		PartitionLeaderEpoch: s.PartitionLeaderEpoch,
		Magic:                Magic,
		Attributes:           int16(s.Codec) & attrCodecMask,
		BaseTimestamp:        s.BaseTimestamp,
		MaxTimestamp:         s.MaxTimestamp,
		ProducerID:           s.ProducerID,
		ProducerEpoch:        s.ProducerEpoch,
		BaseSequence:         s.BaseSequence,
		RecordsCount:         int32(len(s.Records)),
	}
	if len(s.Records) > math.MaxInt32 {
		return nil, fmt.Errorf("encode batch at base offset %d: %d records: %w", s.BaseOffset, len(s.Records), ErrTooLarge)
	}
	if s.TimestampType == LogAppendTime {
		h.Attributes |= attrLogAppendTime
	}
	if s.Transactional {
		h.Attributes |= attrTransactional
	}
	if s.Control {
		h.Attributes |= attrControl
	}
	if s.DeleteHorizonMs > 0 {
		h.Attributes |= attrDeleteHorizon
		h.BaseTimestamp = s.DeleteHorizonMs
	} else if h.BaseTimestamp == 0 && len(s.Records) > 0 {
		h.BaseTimestamp = s.Records[0].Timestamp
	}
	if h.MaxTimestamp == 0 {
		h.MaxTimestamp = NoTimestamp
		for i := range s.Records {
			h.MaxTimestamp = max(h.MaxTimestamp, s.Records[i].Timestamp)
		}
	}

	// Offsets and the last offset delta.
	prev := int64(-1)
	for i := range s.Records {
		r := &s.Records[i]
		d := r.Offset - s.BaseOffset
		if d < 0 || d > math.MaxInt32 || d <= prev {
			return nil, fmt.Errorf("encode batch at base offset %d: record %d: offset %d not after the previous record within 2^31-1 of the base: %w",
				s.BaseOffset, i, r.Offset, ErrCorrupt)
		}
		prev = d
		if err := checkRecordSizes(r); err != nil {
			return nil, fmt.Errorf("encode batch at base offset %d: %w", s.BaseOffset, err)
		}
	}
	switch {
	case len(s.Records) == 0:
		if s.LastOffsetDelta < 0 {
			return nil, fmt.Errorf("encode batch at base offset %d: negative last offset delta %d: %w", s.BaseOffset, s.LastOffsetDelta, ErrCorrupt)
		}
		h.LastOffsetDelta = s.LastOffsetDelta
	case int64(s.LastOffsetDelta) > prev:
		h.LastOffsetDelta = s.LastOffsetDelta
	default:
		if s.LastOffsetDelta != 0 && int64(s.LastOffsetDelta) < prev {
			return nil, fmt.Errorf("encode batch at base offset %d: last offset delta %d below the last record's %d: %w", s.BaseOffset, s.LastOffsetDelta, prev, ErrCorrupt)
		}
		h.LastOffsetDelta = int32(prev)
	}
	if s.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1 {
		return nil, fmt.Errorf("encode batch: base offset %d leaves no room for %d more: %w", s.BaseOffset, h.LastOffsetDelta, ErrCorrupt)
	}

	// Records section.
	size := 0
	for i := range s.Records {
		r := &s.Records[i]
		n := recordBodySize(r, recordTSDelta(&s, &h, r), int32(r.Offset-s.BaseOffset))
		size += varintSize(int32(min(n, math.MaxInt32))) + n
	}
	var out []byte
	if s.Codec == CodecNone {
		out = make([]byte, HeaderSize, HeaderSize+size)
		for i := range s.Records {
			r := &s.Records[i]
			var err error
			if out, err = appendRecord(out, r, recordTSDelta(&s, &h, r), int32(r.Offset-s.BaseOffset)); err != nil {
				return nil, fmt.Errorf("encode batch at base offset %d: %w", s.BaseOffset, err)
			}
		}
	} else {
		raw := make([]byte, 0, size)
		for i := range s.Records {
			r := &s.Records[i]
			var err error
			if raw, err = appendRecord(raw, r, recordTSDelta(&s, &h, r), int32(r.Offset-s.BaseOffset)); err != nil {
				return nil, fmt.Errorf("encode batch at base offset %d: %w", s.BaseOffset, err)
			}
		}
		z, err := Compress(s.Codec, raw)
		if err != nil {
			return nil, fmt.Errorf("encode batch at base offset %d: %w", s.BaseOffset, err)
		}
		out = make([]byte, HeaderSize, HeaderSize+len(z))
		out = append(out, z...)
	}
	if len(out)-LogOverhead > math.MaxInt32 {
		return nil, fmt.Errorf("encode batch at base offset %d: %d bytes: %w", s.BaseOffset, len(out), ErrTooLarge)
	}
	h.Length = int32(len(out) - LogOverhead)
	putHeader(out, &h)
	h.CRC = ComputeCRC(out)
	putHeader(out, &h)
	return out, nil
}

func recordTSDelta(s *BatchSpec, h *BatchHeader, r *Record) int64 {
	if s.TimestampType == LogAppendTime {
		return r.TimestampDelta
	}
	return r.Timestamp - h.BaseTimestamp
}
