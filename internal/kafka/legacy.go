package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
)

// Legacy message sets: magic 0 and 1, the formats before RecordBatch v2
// (Apache Kafka, clients/.../common/record/LegacyRecord.java,
// AbstractLegacyRecordBatch.java, FileLogInputStream.java). A segment file
// may hold them, alone or before v2 batches (a topic whose message format
// was upgraded); Kafka reads each entry by the magic byte at position 16,
// the same in every format.
//
// One entry is a log overhead (offset int64, size int32) and a message:
//
//	crc        uint32   CRC-32 (IEEE) of the rest of the message
//	magic      int8     0 or 1
//	attributes int8     bits 0-2 codec (none, gzip, snappy, lz4), bit 3
//	                    timestamp type (magic 1: LogAppendTime)
//	timestamp  int64    magic 1 only
//	key        int32 length (-1 null) and bytes
//	value      int32 length (-1 null) and bytes
//
// A compressed message is a wrapper: its value is the compressed message
// set of its inner messages. Kafka iterates it with DeepRecordsIterator:
// inner messages are not compressed; a magic 1 wrapper's inner offsets are
// relative, made absolute from the wrapper's offset (that of the last inner
// message: base = wrapper offset - last inner offset; a wrapper offset of 0
// takes the inner offsets as they are), a magic 0 wrapper's are absolute;
// a magic 1 inner message takes the wrapper's timestamp type, and its
// timestamp too under LogAppendTime; a magic 0 message has no timestamp.
// The batch Kafka sees (AbstractLegacyRecordBatch) has the first inner
// message's offset as its base, the wrapper's offset as its last, the
// wrapper's timestamp as its max timestamp, no producer (id, epoch and
// sequences -1), no partition leader epoch (-1), and is neither
// transactional nor a control batch.
//
// nereusctl stores only RecordBatch v2 (docs/formats/legacy.md):
// UpConvert writes each legacy entry as the v2 batch holding what Kafka
// reads from it, uncompressed, with the same offsets, timestamps and
// timestamp type, keys and values (legacy records have no headers).

// Legacy message layout (LegacyRecord).
const (
	legacyCRCOffset   = LogOverhead       // 12: the CRC follows the log overhead
	legacyMagicOffset = offMagic          // 16: the same position as a v2 batch's magic
	legacyAttrOffset  = offMagic + 1      // 17
	legacyTSOffset    = offMagic + 2      // 18: magic 1 only
	legacyOverheadV0  = 4 + 1 + 1 + 4 + 4 // RECORD_OVERHEAD_V0: crc, magic, attributes, key and value lengths
	legacyOverheadV1  = legacyOverheadV0 + 8
	// headerUpToMagic is Records.HEADER_SIZE_UP_TO_MAGIC: fewer bytes
	// than this at the end of a log cannot tell the entry's format, and
	// FileLogInputStream ends the log there.
	headerUpToMagic = offMagic + 1

	legacyCodecMask = 0x07
	legacyTSType    = 0x08
)

// ErrLegacyUnreadable marks a legacy entry whose wrapper is valid (its CRC
// passes, as LogSegment.recover checks, so Kafka keeps it in the log) but
// whose contents cannot be read: a compressed message set that does not
// decompress, an inner message that is compressed, fails its CRC or breaks
// the offset rules. Kafka's own recovery would not drop it; no consumer
// could read it. It is also ErrCorrupt.
var ErrLegacyUnreadable error = legacyUnreadable{}

type legacyUnreadable struct{}

func (legacyUnreadable) Error() string        { return "legacy message set cannot be read" }
func (legacyUnreadable) Is(target error) bool { return target == ErrCorrupt }

// LegacyMessage is one magic 0 or 1 message (LegacyRecord) with its
// offset. Key and Value alias the input; nil is null.
type LegacyMessage struct {
	Offset     int64
	Magic      int8
	Attributes int8
	// Timestamp is the message's own timestamp field (magic 1), NoTimestamp
	// for magic 0.
	Timestamp int64
	Key       []byte
	Value     []byte
	// CRC is the stored CRC-32 (IEEE) of the message after it.
	CRC uint32
}

// Codec is the message's compression codec (attribute bits 0-2).
func (m *LegacyMessage) Codec() Codec { return Codec(m.Attributes & legacyCodecMask) }

// TimestampType is the message's timestamp type: LogAppendTime when a
// magic 1 message sets attribute bit 3, else CreateTime (Kafka's
// NO_TIMESTAMP_TYPE of magic 0 has no v2 equivalent: CreateTime with no
// timestamp).
func (m *LegacyMessage) TimestampType() TimestampType {
	if m.Magic == 1 && m.Attributes&legacyTSType != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsLegacyEntry reports whether the log entry starting at b is a legacy
// message (magic 0 or 1 at position 16) rather than a v2 batch.
func IsLegacyEntry(b []byte) bool {
	return len(b) >= headerUpToMagic && (b[offMagic] == 0 || b[offMagic] == 1) && binary.BigEndian.Uint32(b[offLength:]) != 0
}

// ParseLegacyMessage parses the log entry at the start of b as a legacy
// message: the log overhead and the message it declares, which must lie
// within b, be at least the smallest message and pass its CRC, the checks
// Kafka's recovery makes (FileLogInputStream, LegacyRecord.ensureValid);
// then its magic, timestamp and key and value lengths must fit in it
// (bytes after the value are ignored, as LegacyRecord reads by the
// lengths). It returns the message and the entry's size. Errors:
// ErrTruncated when b ends inside the entry (a torn write), ErrCorrupt for
// a size below the minimum, ErrCRC, ErrLegacyUnreadable for a message
// that passes its CRC but cannot be read.
func ParseLegacyMessage(b []byte) (LegacyMessage, int, error) {
	var m LegacyMessage
	if len(b) < LogOverhead {
		return m, 0, fmt.Errorf("legacy message: %d bytes, less than the %d-byte offset and size: %w", len(b), LogOverhead, ErrTruncated)
	}
	m.Offset = int64(binary.BigEndian.Uint64(b))
	size := int32(binary.BigEndian.Uint32(b[offLength:]))
	if size < legacyOverheadV0 {
		return m, 0, fmt.Errorf("legacy message at offset %d: size %d, below the minimum record overhead %d: %w", m.Offset, size, legacyOverheadV0, ErrCorrupt)
	}
	total := LogOverhead + int(size)
	if total > len(b) {
		return m, 0, fmt.Errorf("legacy message at offset %d: %d bytes, %d remain: %w", m.Offset, total, len(b), ErrTruncated)
	}
	msg := b[legacyCRCOffset:total]
	m.CRC = binary.BigEndian.Uint32(msg)
	if got := crc32.ChecksumIEEE(msg[4:]); got != m.CRC {
		return m, 0, fmt.Errorf("legacy message at offset %d: stored crc %08x, computed %08x: %w", m.Offset, m.CRC, got, ErrCRC)
	}
	m.Magic, m.Attributes = int8(msg[4]), int8(msg[5])
	unreadable := func(format string, a ...any) error {
		return fmt.Errorf("legacy message at offset %d: %s: %w", m.Offset, fmt.Sprintf(format, a...), ErrLegacyUnreadable)
	}
	p := 6
	switch m.Magic {
	case 0:
		m.Timestamp = NoTimestamp
	case 1:
		if len(msg) < legacyOverheadV1 {
			return m, 0, unreadable("size %d, below the magic 1 record overhead %d", size, legacyOverheadV1)
		}
		m.Timestamp = int64(binary.BigEndian.Uint64(msg[p:]))
		p += 8
	default:
		return m, 0, unreadable("magic %d", m.Magic)
	}
	var err error
	if m.Key, p, err = legacyBytes(msg, p, "key"); err != nil {
		return m, 0, unreadable("%v", err)
	}
	if m.Value, _, err = legacyBytes(msg, p, "value"); err != nil {
		return m, 0, unreadable("%v", err)
	}
	return m, total, nil
}

// legacyBytes reads an int32-length-prefixed byte field at p (-1: null).
func legacyBytes(msg []byte, p int, what string) ([]byte, int, error) {
	if len(msg)-p < 4 {
		return nil, 0, fmt.Errorf("%s length cut short", what)
	}
	n := int32(binary.BigEndian.Uint32(msg[p:]))
	p += 4
	switch {
	case n == -1:
		return nil, p, nil
	case n < 0 || int(n) > len(msg)-p:
		return nil, 0, fmt.Errorf("%s length %d, %d bytes left", what, n, len(msg)-p)
	}
	return msg[p : p+int(n) : p+int(n)], p + int(n), nil
}

// LegacyBatch is a legacy entry as Kafka reads it (AbstractLegacyRecordBatch
// with its deep iteration): the shallow message, and its records with
// absolute offsets and the timestamps Kafka reports (the shallow message
// itself when it is not compressed).
type LegacyBatch struct {
	Wrapper LegacyMessage
	// Records hold Offset, Timestamp (as Kafka reports it: the wrapper's
	// under LogAppendTime), TimestampDelta (the record's own timestamp
	// minus the first record's: what a v2 LogAppendTime batch keeps),
	// Key and Value.
	Records []Record
	// BaseOffset is the first record's offset, LastOffset the wrapper's.
	BaseOffset, LastOffset int64
	MaxTimestamp           int64
	TimestampType          TimestampType
	// FirstTimestamp is the first record's own timestamp field
	// (NoTimestamp for magic 0), the base of the TimestampDeltas.
	FirstTimestamp int64
}

// DecodeLegacyBatch decodes the legacy entry that is all of b
// (ParseLegacyMessage's size must be len(b)); a compressed wrapper is
// inflated within lim.MaxDecodedBytes and read as DeepRecordsIterator
// reads it. An entry whose wrapper is valid but whose contents break
// Kafka's rules is ErrLegacyUnreadable; inner messages must also pass
// their CRC (the consumer's check.crcs checks each), have strictly
// increasing absolute offsets and none after the wrapper's offset (a v2
// batch must hold them).
func DecodeLegacyBatch(b []byte, lim Limits) (*LegacyBatch, error) {
	lim = lim.withDefaults()
	w, n, err := ParseLegacyMessage(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, fmt.Errorf("legacy message at offset %d: %d bytes, %d given: %w", w.Offset, n, len(b), ErrCorrupt)
	}
	lb := &LegacyBatch{Wrapper: w, LastOffset: w.Offset, MaxTimestamp: w.Timestamp, TimestampType: w.TimestampType()}
	unreadable := func(format string, a ...any) error {
		return fmt.Errorf("legacy message set at offset %d: %s: %w", w.Offset, fmt.Sprintf(format, a...), ErrLegacyUnreadable)
	}
	if w.Offset < 0 {
		return nil, unreadable("negative offset")
	}
	c := w.Codec()
	if c == CodecNone {
		lb.BaseOffset, lb.FirstTimestamp = w.Offset, w.Timestamp
		lb.Records = []Record{{Offset: w.Offset, Timestamp: w.Timestamp, Key: w.Key, Value: w.Value}}
		return lb, nil
	}
	switch {
	case c == CodecZstd || !c.Valid():
		return nil, unreadable("codec %s is not a legacy codec", c)
	case w.Value == nil:
		return nil, unreadable("compressed message set with a null value")
	}
	raw, err := decompressLegacy(c, w.Value, w.Magic, lim.MaxDecodedBytes)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("legacy message set at offset %d: %w", w.Offset, err)
		}
		return nil, unreadable("%v", err)
	}
	// DataLogInputStream.nextBatch: entries until fewer bytes remain than
	// a whole one (a partial tail ends the set); every entry at least the
	// smallest message.
	// Grown as messages come (bounded by the bytes and MaxRecords): a
	// capacity from the smallest message size would be tens of times the
	// count of real sets.
	var inner []LegacyMessage
	for p := 0; len(raw)-p >= LogOverhead; {
		size := int32(binary.BigEndian.Uint32(raw[p+offLength:]))
		if size < legacyOverheadV0 {
			return nil, unreadable("inner message at byte %d: size %d, below the minimum record overhead %d", p, size, legacyOverheadV0)
		}
		if LogOverhead+int(size) > len(raw)-p {
			break
		}
		m, n, err := ParseLegacyMessage(raw[p:])
		if err != nil {
			return nil, unreadable("inner message at byte %d: %v", p, err)
		}
		if m.Codec() != CodecNone {
			return nil, unreadable("inner message at byte %d is compressed (%s)", p, m.Codec())
		}
		if len(inner) == lim.MaxRecords {
			return nil, fmt.Errorf("legacy message set at offset %d: more than %d inner messages: %w", w.Offset, lim.MaxRecords, ErrTooLarge)
		}
		inner = append(inner, m)
		p += n
	}
	if len(inner) == 0 {
		return nil, unreadable("compressed message set with no inner messages")
	}
	base := int64(0)
	if w.Magic == 1 && w.Offset != 0 {
		last := inner[len(inner)-1].Offset
		if w.Offset < last {
			return nil, unreadable("wrapper offset %d is below the last inner relative offset %d", w.Offset, last)
		}
		base = w.Offset - last
	}
	lb.Records = make([]Record, 0, len(inner))
	for i, m := range inner {
		r := Record{Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: NoTimestamp}
		if w.Magic == 1 {
			if r.Offset > math.MaxInt64-base {
				return nil, unreadable("inner offset %d overflows", m.Offset)
			}
			r.Offset += base
		}
		if m.Magic == 1 {
			r.Timestamp = m.Timestamp
			if lb.TimestampType == LogAppendTime {
				r.Timestamp = w.Timestamp
			}
		}
		if i > 0 && r.Offset <= lb.Records[i-1].Offset {
			return nil, unreadable("inner offsets not increasing: %d after %d", r.Offset, lb.Records[i-1].Offset)
		}
		if r.Offset < 0 {
			return nil, unreadable("negative inner offset %d", r.Offset)
		}
		lb.Records = append(lb.Records, r)
	}
	if last := lb.Records[len(lb.Records)-1].Offset; last > w.Offset {
		return nil, unreadable("inner offset %d after the wrapper's offset %d", last, w.Offset)
	}
	if w.Offset-lb.Records[0].Offset > math.MaxInt32 {
		return nil, unreadable("inner offsets span more than 2^31-1")
	}
	lb.BaseOffset = lb.Records[0].Offset
	// The create-time deltas a v2 LogAppendTime batch keeps: the inner
	// messages' own timestamps, relative to the first.
	first := innerTimestamp(inner[0])
	lb.FirstTimestamp = first
	for i := range lb.Records {
		lb.Records[i].TimestampDelta = innerTimestamp(inner[i]) - first
	}
	return lb, nil
}

func innerTimestamp(m LegacyMessage) int64 {
	if m.Magic == 1 {
		return m.Timestamp
	}
	return NoTimestamp
}

// decompressLegacy inflates a wrapper's value. Kafka's magic 0 writer
// computed the LZ4 frame's header checksum over the frame magic too
// (KafkaLZ4BlockInputStream ignores the checksum for magic 0): the byte is
// replaced by the right one before the frame is read.
func decompressLegacy(c Codec, src []byte, magic int8, limit int) ([]byte, error) {
	if c == CodecLZ4 && magic == 0 {
		if fixed, ok := fixLZ4HeaderChecksum(src); ok {
			src = fixed
		}
	}
	return Decompress(c, src, limit)
}

// fixLZ4HeaderChecksum returns a copy of an LZ4 frame with its frame
// descriptor's checksum byte recomputed (xxh32 of the descriptor, second
// byte), false when src is not an LZ4 frame with a whole descriptor.
func fixLZ4HeaderChecksum(src []byte) ([]byte, bool) {
	if len(src) < 7 || binary.LittleEndian.Uint32(src) != 0x184D2204 {
		return nil, false
	}
	flg := src[4]
	n := 2 // FLG, BD
	if flg&0x08 != 0 {
		n += 8 // content size
	}
	if flg&0x01 != 0 {
		n += 4 // dictionary id
	}
	if len(src) < 4+n+1 {
		return nil, false
	}
	out := append([]byte(nil), src...)
	out[4+n] = byte(xxh32Small(out[4:4+n]) >> 8)
	return out, true
}

// xxh32Small is XXH32 with seed 0 of fewer than 16 bytes (an LZ4 frame
// descriptor), from the xxHash specification.
func xxh32Small(b []byte) uint32 {
	const (
		p1 = 2654435761
		p2 = 2246822519
		p3 = 3266489917
		p4 = 668265263
		p5 = 374761393
	)
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * p3
		h = bits.RotateLeft32(h, 17) * p4
	}
	for _, c := range b {
		h += uint32(c) * p5
		h = bits.RotateLeft32(h, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}

// UpConvert writes lb as the RecordBatch v2 holding what Kafka reads from
// it: base offset the first record's, last offset the wrapper's (offset
// gaps kept), the records' offsets, timestamps, keys and values, the
// timestamp type, max timestamp the wrapper's, no producer (id, epoch,
// sequence -1), no partition leader epoch (-1), uncompressed. Under
// CreateTime the base timestamp is the first record's (MemoryRecordsBuilder);
// under LogAppendTime, where a reader takes every record's timestamp from
// the max timestamp, the base and deltas keep the records' own create
// times, as a v2 batch stamped with LogAppendTime does (LogValidator sets
// only its max timestamp and timestamp type).
func (lb *LegacyBatch) UpConvert() ([]byte, error) {
	s := NewBatchSpec(lb.BaseOffset, lb.Records)
	s.TimestampType = lb.TimestampType
	s.LastOffsetDelta = int32(lb.LastOffset - lb.BaseOffset)
	b, err := EncodeBatch(s)
	if err != nil {
		return nil, fmt.Errorf("up-convert legacy message set at offset %d: %w", lb.Wrapper.Offset, err)
	}
	// EncodeBatch derives the base and max timestamps from the records (a
	// zero spec value means "derive"); set them to Kafka's view exactly.
	h, err := ParseHeader(b)
	if err != nil {
		return nil, fmt.Errorf("up-convert legacy message set at offset %d: %w", lb.Wrapper.Offset, err)
	}
	h.MaxTimestamp = lb.MaxTimestamp
	if lb.TimestampType == LogAppendTime {
		h.BaseTimestamp = lb.FirstTimestamp
	}
	putHeader(b, &h)
	h.CRC = ComputeCRC(b)
	putHeader(b, &h)
	return b, nil
}

// LogScanner walks the entries of a log byte stream of every format, as
// Kafka's FileLogInputStream does: a v2 batch (checked as a Scanner made
// with NewScannerVerify checks it), or a legacy message (magic 0 or 1 at
// position 16), which it decodes and up-converts (DecodeLegacyBatch,
// UpConvert) with the caps of lim. Batch is always a v2 batch: the entry's
// own bytes, aliasing data, or for a legacy entry the up-converted batch;
// Header is its header; Legacy says which; Pos and EntrySize are the
// entry's position and size in data. Next stops at the end or at the first
// bad entry with the Scanner's errors (ErrTruncated, ErrZeroTail,
// ErrCorrupt, ErrCRC) or ErrLegacyUnreadable, and ErrTooLarge for a legacy
// entry over lim.MaxBatchBytes.
type LogScanner struct {
	v2     Scanner
	data   []byte
	lim    Limits
	pos    int
	next   int
	h      BatchHeader
	batch  []byte
	legacy bool
	err    error
	done   bool
}

// NewLogScanner returns a LogScanner over data.
func NewLogScanner(data []byte, lim Limits) *LogScanner {
	return &LogScanner{data: data, lim: lim.withDefaults(), v2: Scanner{data: data, verify: true}}
}

// Next advances to the next entry and reports whether there is one.
func (s *LogScanner) Next() bool {
	if s.done {
		return false
	}
	s.pos = s.next
	s.batch, s.legacy, s.h = nil, false, BatchHeader{}
	rest := s.data[s.pos:]
	if len(rest) == 0 {
		s.done = true
		return false
	}
	if !IsLegacyEntry(rest) {
		s.v2.next, s.v2.done, s.v2.err = s.pos, false, nil
		if !s.v2.Next() {
			s.err, s.done = s.v2.err, true
			return false
		}
		s.h, s.batch, s.next = s.v2.h, s.v2.Batch(), s.v2.next
		return true
	}
	fail := func(err error) bool {
		s.err = fmt.Errorf("scan log: legacy message at position %d: %w", s.pos, err)
		s.done = true
		return false
	}
	_, n, err := ParseLegacyMessage(rest)
	if err != nil {
		return fail(err)
	}
	if n > s.lim.MaxBatchBytes {
		return fail(fmt.Errorf("%d bytes, more than the %d-byte cap: %w", n, s.lim.MaxBatchBytes, ErrTooLarge))
	}
	lb, err := DecodeLegacyBatch(rest[:n], s.lim)
	if err != nil {
		return fail(err)
	}
	b, err := lb.UpConvert()
	if err != nil {
		return fail(fmt.Errorf("%w: %w", err, ErrLegacyUnreadable))
	}
	if s.h, err = ParseHeader(b); err != nil {
		return fail(err)
	}
	s.batch, s.legacy, s.next = b, true, s.pos+n
	return true
}

// HeaderPtr is the current entry's v2 header; overwritten by Next.
func (s *LogScanner) HeaderPtr() *BatchHeader { return &s.h }

// Batch is the current entry as a v2 batch (nil after Next returned false).
func (s *LogScanner) Batch() []byte { return s.batch }

// Legacy reports whether the current entry is a legacy message set.
func (s *LogScanner) Legacy() bool { return s.legacy }

// Pos is the current entry's position in data; after Next returned false,
// where scanning stopped (len(data) at a clean end).
func (s *LogScanner) Pos() int64 { return int64(s.pos) }

// Err is the reason scanning stopped early, nil at a clean end.
func (s *LogScanner) Err() error { return s.err }
