package kafka

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Layout of the RecordBatch v2 header (DefaultRecordBatch.java). All fields
// are big-endian.
const (
	// HeaderSize is the size of a v2 batch header, up to and including
	// recordsCount; records (or the compressed records stream) follow.
	HeaderSize = 61

	// LogOverhead is the baseOffset and length fields, which length does not
	// count: a batch occupies LogOverhead + Length bytes.
	LogOverhead = 12

	// MinLength is the smallest legal Length field: a header without records.
	MinLength = HeaderSize - LogOverhead

	// Magic is the only batch format version this package reads or writes.
	Magic = 2

	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordsCount    = 57
)

// Attribute bits of the batch header.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// Kafka's "none" values for header fields.
const (
	NoProducerID           int64 = -1
	NoProducerEpoch        int16 = -1
	NoSequence             int32 = -1
	NoPartitionLeaderEpoch int32 = -1
	NoTimestamp            int64 = -1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Codec is a batch's compression codec, attribute bits 0–2. The ids are
// Kafka's and are never reused.
type Codec int8

// Kafka's compression codec ids.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

var codecNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

// String returns Kafka's name for the codec ("none", "gzip", "snappy",
// "lz4", "zstd"), or "unknown(N)".
func (c Codec) String() string {
	if c >= 0 && int(c) < len(codecNames) {
		return codecNames[c]
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

// Valid reports whether c is one of the five codecs Kafka defines.
func (c Codec) Valid() bool { return c >= CodecNone && c <= CodecZstd }

// TimestampType is attribute bit 3 of a batch.
type TimestampType int8

// Timestamp types.
const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

// String returns "CreateTime" or "LogAppendTime", as kafka-dump-log prints
// them.
func (t TimestampType) String() string {
	switch t {
	case CreateTime:
		return "CreateTime"
	case LogAppendTime:
		return "LogAppendTime"
	}
	return fmt.Sprintf("unknown(%d)", int8(t))
}

// BatchHeader is the 61-byte header of a RecordBatch v2, field for field.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // bytes after the Length field; the batch is 12+Length bytes
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64 // the delete horizon when HasDeleteHorizon
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordsCount         int32
}

// LastOffset is the offset of the batch's last record (also of the last
// record removed by compaction: empty batches keep it).
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is LastOffset+1, the offset the next batch starts at.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Size is the number of bytes the whole batch occupies: 12 + Length.
func (h BatchHeader) Size() int { return LogOverhead + int(h.Length) }

// Codec is the compression codec of the records stream.
func (h BatchHeader) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// IsTransactional reports attribute bit 4.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports attribute bit 5: the batch holds control records
// (transaction markers), which consumers never see.
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// HasDeleteHorizon reports attribute bit 6: BaseTimestamp holds the delete
// horizon set by the log cleaner.
func (h BatchHeader) HasDeleteHorizon() bool { return h.Attributes&attrDeleteHorizon != 0 }

// TimestampType reports attribute bit 3.
func (h BatchHeader) TimestampType() TimestampType {
	if h.Attributes&attrLogAppendTime != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// DeleteHorizonMs is the delete horizon (BaseTimestamp) when bit 6 is set,
// else -1.
func (h BatchHeader) DeleteHorizonMs() int64 {
	if h.HasDeleteHorizon() {
		return h.BaseTimestamp
	}
	return NoTimestamp
}

// HasProducerID reports whether the batch carries a producer id
// (idempotent or transactional producer).
func (h BatchHeader) HasProducerID() bool { return h.ProducerID >= 0 }

// LastSequence is BaseSequence + LastOffsetDelta, wrapping past MaxInt32 to
// 0 as Kafka does; -1 when the batch has no sequence.
func (h BatchHeader) LastSequence() int32 {
	if h.BaseSequence == NoSequence {
		return NoSequence
	}
	return IncrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// RecordSequence is the sequence number of the record with the given
// offset delta, -1 when the batch has no sequence.
func (h BatchHeader) RecordSequence(offsetDelta int32) int32 {
	if h.BaseSequence < 0 {
		return NoSequence
	}
	return IncrementSequence(h.BaseSequence, offsetDelta)
}

// IncrementSequence adds increment to sequence, wrapping past MaxInt32 to 0
// (DefaultRecordBatch.incrementSequence).
func IncrementSequence(sequence, increment int32) int32 {
	if sequence > math.MaxInt32-increment {
		return increment - (math.MaxInt32 - sequence) - 1
	}
	return sequence + increment
}

// ParseHeader reads the 61-byte header at the start of b. It checks the
// magic (2), that Length is at least 49, that RecordsCount and
// LastOffsetDelta are not negative and that BaseOffset is not negative and
// leaves room for LastOffsetDelta. It does not check the CRC and does not
// require the whole batch to be in b.
func ParseHeader(b []byte) (BatchHeader, error) {
	var h BatchHeader
	if err := parseHeaderInto(b, &h); err != nil {
		return BatchHeader{}, err
	}
	return h, nil
}

// headerError describes what is wrong with a header without formatting,
// so that the scanner's hot path stays allocation-free until it fails.
type headerError uint8

const (
	hdrOK headerError = iota
	hdrShort
	hdrMagic
	hdrLength
	hdrCount
	hdrDelta
	hdrBaseOffset
)

func parseHeaderInto(b []byte, h *BatchHeader) error {
	if e := decodeHeader(b, h); e != hdrOK {
		return headerErr(e, h, len(b))
	}
	return nil
}

func decodeHeader(b []byte, h *BatchHeader) headerError {
	if len(b) < HeaderSize {
		if len(b) > offMagic {
			h.Magic = int8(b[offMagic])
			if h.Magic != Magic {
				return hdrMagic
			}
		}
		return hdrShort
	}
	be := binary.BigEndian
	h.BaseOffset = int64(be.Uint64(b[offBaseOffset:]))
	h.Length = int32(be.Uint32(b[offLength:]))
	h.PartitionLeaderEpoch = int32(be.Uint32(b[offLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	h.CRC = be.Uint32(b[offCRC:])
	h.Attributes = int16(be.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(be.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(be.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(be.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(be.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(be.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(be.Uint32(b[offBaseSequence:]))
	h.RecordsCount = int32(be.Uint32(b[offRecordsCount:]))
	switch {
	case h.Magic != Magic:
		return hdrMagic
	case h.Length < MinLength:
		return hdrLength
	case h.RecordsCount < 0:
		return hdrCount
	case h.LastOffsetDelta < 0:
		return hdrDelta
	case h.BaseOffset < 0 || h.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1:
		return hdrBaseOffset
	}
	return hdrOK
}

func headerErr(e headerError, h *BatchHeader, have int) error {
	switch e {
	case hdrShort:
		return fmt.Errorf("batch header: %d of %d bytes: %w", have, HeaderSize, ErrTruncated)
	case hdrMagic:
		return fmt.Errorf("batch header: magic %d, want %d: %w", h.Magic, Magic, ErrCorrupt)
	case hdrLength:
		return fmt.Errorf("batch header at base offset %d: length %d below minimum %d: %w", h.BaseOffset, h.Length, MinLength, ErrCorrupt)
	case hdrCount:
		return fmt.Errorf("batch header at base offset %d: negative records count %d: %w", h.BaseOffset, h.RecordsCount, ErrCorrupt)
	case hdrDelta:
		return fmt.Errorf("batch header at base offset %d: negative last offset delta %d: %w", h.BaseOffset, h.LastOffsetDelta, ErrCorrupt)
	case hdrBaseOffset:
		return fmt.Errorf("batch header: base offset %d out of range: %w", h.BaseOffset, ErrCorrupt)
	}
	return nil
}

// VerifyCRC checks the CRC-32C stored at bytes 17–20 of a whole batch
// against bytes [21, end). batch must be exactly one batch (len(batch) equal
// to its header's Size); a shorter or longer slice is an error.
func VerifyCRC(batch []byte) error {
	if len(batch) < HeaderSize {
		return fmt.Errorf("verify crc: %d-byte batch, header alone is %d: %w", len(batch), HeaderSize, ErrTruncated)
	}
	length := int32(binary.BigEndian.Uint32(batch[offLength:]))
	base := int64(binary.BigEndian.Uint64(batch[offBaseOffset:]))
	if length < MinLength {
		return fmt.Errorf("verify crc: batch at base offset %d: length %d below minimum %d: %w", base, length, MinLength, ErrCorrupt)
	}
	size := LogOverhead + int(length)
	if len(batch) < size {
		return fmt.Errorf("verify crc: batch at base offset %d: %d of %d bytes: %w", base, len(batch), size, ErrTruncated)
	}
	if len(batch) > size {
		return fmt.Errorf("verify crc: batch at base offset %d: %d bytes given for a %d-byte batch: %w", base, len(batch), size, ErrCorrupt)
	}
	stored := binary.BigEndian.Uint32(batch[offCRC:])
	if got := crc32.Checksum(batch[offAttributes:], castagnoli); got != stored {
		return fmt.Errorf("verify crc: batch at base offset %d: stored %08x, computed %08x: %w", base, stored, got, ErrCRC)
	}
	return nil
}

// ComputeCRC returns the CRC-32C of batch[21:], the value a valid batch
// stores at bytes 17–20.
func ComputeCRC(batch []byte) uint32 {
	if len(batch) < offAttributes {
		return 0
	}
	return crc32.Checksum(batch[offAttributes:], castagnoli)
}

func putHeader(b []byte, h *BatchHeader) {
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offLength:], uint32(h.Length))
	be.PutUint32(b[offLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = byte(h.Magic)
	be.PutUint32(b[offCRC:], h.CRC)
	be.PutUint16(b[offAttributes:], uint16(h.Attributes))
	be.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offRecordsCount:], uint32(h.RecordsCount))
}
