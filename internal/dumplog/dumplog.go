// Package dumplog owns `dump`: walking a partition's batches in offset
// order and describing each batch, and with deep iteration each record,
// the way kafka-dump-log does (DumpLogSegments.scala: the batch line, the
// "| offset: …" record line, end-transaction markers, the offsets and
// transaction-log decoders). It produces structured lines; the command
// renders them as text (Line.Text) or as one JSON object per line.
//
// Batches come from a Source (source.go), the seam that lets a later
// READ_COMMITTED view of a compacted topic replace the COMMITTED objects
// without touching the dump itself.
//
// It never writes to the store and never changes what it reads. Everything
// it reads is untrusted: records are decoded with kafka.DefaultLimits and a
// batch that fails its CRC or cannot be decoded is reported, not trusted.
package dumplog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/kafka/coord"
)

// Decoder names a coordinator-record decoder for --decoder.
type Decoder string

// The decoders: kafka-dump-log's --offsets-decoder and
// --transaction-log-decoder.
const (
	DecoderNone    Decoder = ""
	DecoderOffsets Decoder = "offsets"
	DecoderTxn     Decoder = "txn"
)

// ParseDecoder accepts "", "offsets" and "txn".
func ParseDecoder(s string) (Decoder, error) {
	switch d := Decoder(s); d {
	case DecoderNone, DecoderOffsets, DecoderTxn:
		return d, nil
	}
	return DecoderNone, fmt.Errorf("decoder %q: want offsets or txn", s)
}

// Options steer a dump.
type Options struct {
	// From is the first offset to show; -1 (or anything below the log
	// start) means the log start. The batch containing From is shown whole;
	// with Deep its records below From are skipped.
	From int64
	// Count limits the output to Count batches, or Count records with Deep;
	// 0 means no limit.
	Count int64
	// Deep decodes every batch and shows one line per record.
	Deep bool
	// Decoder decodes record keys and values as coordinator records (needs
	// Deep).
	Decoder Decoder
	// VerifyCRC checks every batch's CRC (Deep always does).
	VerifyCRC bool
	// PrintData adds each record's key and value as text to its line
	// (kafka-dump-log's --print-data-log; needs Deep).
	PrintData bool
	// ShowObjects adds " object: KEY" (the stream object holding the
	// batch) to each batch line's text, after kafka-dump-log's fields.
	ShowObjects bool
	// Filter keeps only some records (a group's, a transactional id's,
	// a time range); the zero Filter keeps all.
	Filter Filter
}

// ErrInvalid reports that the dump met batches that failed their CRC or
// could not be decoded; they were shown with isvalid: false. It wraps
// kafka.ErrCorrupt.
var ErrInvalid = fmt.Errorf("invalid batches: %w", kafka.ErrCorrupt)

// Summary says what a dump showed.
type Summary struct {
	Source   string `json:"source"`
	LogStart int64  `json:"log_start"`
	Head     int64  `json:"head"`
	From     int64  `json:"from"`
	// Clamped is true when the requested From was below the log start.
	Clamped bool  `json:"clamped"`
	Batches int64 `json:"batches"`
	Records int64 `json:"records"`
	// Invalid counts batches that failed their CRC or could not be decoded.
	Invalid int64 `json:"invalid"`
	// DecodeErrors counts records the --decoder could not decode.
	DecodeErrors int64 `json:"decode_errors"`
	// Limited is true when Count stopped the dump before the head.
	Limited bool `json:"limited"`
}

// Line is one line of dump output: a *SegmentLine, a *BatchLine or a
// *RecordLine. Text and
// AppendLine give the kafka-dump-log form (AppendLine without allocating);
// the JSON form is the struct itself. Run reuses its lines: a Line is only
// valid during the emit call it was passed to.
type Line interface {
	Text() string
	AppendLine(dst []byte) []byte
}

var errStop = errors.New("dump: count reached")

// Run dumps src from opt.From to the head, calling emit for every line.
// Batches wholly below the log start are skipped: after DeleteRecords the
// records below it are unreadable. A batch that fails its CRC (with
// VerifyCRC or Deep) or cannot be decoded (Deep) is shown as invalid and
// the dump goes on; Run then returns the summary with an error wrapping
// ErrInvalid.
func Run(ctx context.Context, src Source, opt Options, emit func(Line) error) (*Summary, error) {
	if opt.Decoder != DecoderNone && !opt.Deep {
		return nil, fmt.Errorf("dump: a decoder needs deep iteration")
	}
	if opt.Count < 0 {
		return nil, fmt.Errorf("dump: negative count %d", opt.Count)
	}
	logStart, head := src.Bounds()
	from := opt.From
	sum := &Summary{Source: src.Describe(), LogStart: logStart, Head: head}
	if from < logStart {
		sum.Clamped = opt.From >= 0
		from = logStart
	}
	sum.From = from
	d := &dumper{opt: opt, from: from, sum: sum, emit: emit}
	err := src.Batches(ctx, from, d.batch)
	if errors.Is(err, errStop) {
		sum.Limited = true
		err = nil
	}
	if err != nil {
		return sum, err
	}
	if sum.Invalid > 0 {
		return sum, fmt.Errorf("dump: %d of %d batches failed their CRC or could not be decoded: %w", sum.Invalid, sum.Batches, ErrInvalid)
	}
	return sum, nil
}

type dumper struct {
	opt  Options
	from int64
	sum  *Summary
	emit func(Line) error
	// Reused for every line: the header-only pass allocates nothing per
	// batch.
	bl    BatchLine
	valid bool
	rl    RecordLine
	sl    SegmentLine
	seg   *Segment // the segment of the last batch shown
}

func (d *dumper) full() bool {
	if d.opt.Count == 0 {
		return false
	}
	if d.opt.Deep {
		return d.sum.Records >= d.opt.Count
	}
	return d.sum.Batches >= d.opt.Count
}

func (d *dumper) batch(b Batch) error {
	if b.Header.LastOffset() < d.from {
		return nil
	}
	if d.full() {
		return errStop
	}
	line := &d.bl
	fillBatchLine(line, b)
	line.showObject = d.opt.ShowObjects
	filter := d.opt.Filter.Active()
	var decoded *kafka.Batch
	if d.opt.Deep || d.opt.VerifyCRC || filter {
		crcErr := kafka.VerifyCRC(b.Raw)
		d.valid = crcErr == nil
		line.Valid = &d.valid
		if crcErr != nil {
			line.Error = crcErr.Error()
		} else if d.opt.Deep || filter {
			var err error
			if decoded, err = kafka.DecodeBatch(b.Raw, kafka.DefaultLimits()); err != nil {
				line.Error = err.Error()
			}
		}
	}
	if filter && decoded != nil && !d.keepsAny(decoded) {
		// No record of the batch is wanted: neither it nor (when it is
		// the first shown) its segment's lines. A batch that failed
		// stays: the filter cannot see into it.
		return nil
	}
	if b.Segment != nil && b.Segment != d.seg {
		// kafka-dump-log opens each .log file with these two lines.
		d.seg = b.Segment
		d.sl = SegmentLine{Type: "segment", File: b.Segment.File(), Base: b.Segment.Base}
		if err := d.emit(&d.sl); err != nil {
			return err
		}
	}
	if line.Error != "" {
		d.sum.Invalid++
	}
	d.sum.Batches++
	if err := d.emit(line); err != nil {
		return err
	}
	if decoded == nil || !d.opt.Deep {
		return nil
	}
	for i := range decoded.Records {
		r := &decoded.Records[i]
		if r.Offset < d.from {
			continue
		}
		if filter && !d.opt.Filter.keeps(&decoded.Header, r) {
			continue
		}
		if d.full() {
			return errStop
		}
		rl := d.record(&decoded.Header, r)
		d.sum.Records++
		if err := d.emit(rl); err != nil {
			return err
		}
	}
	return nil
}

// keepsAny reports whether the filter keeps a record of the batch at or
// after the dump's first offset.
func (d *dumper) keepsAny(b *kafka.Batch) bool {
	for i := range b.Records {
		if r := &b.Records[i]; r.Offset >= d.from && d.opt.Filter.keeps(&b.Header, r) {
			return true
		}
	}
	return false
}

func (d *dumper) record(h *kafka.BatchHeader, r *kafka.Record) *RecordLine {
	rl := &d.rl
	*rl = RecordLine{
		Type:          "record",
		Offset:        r.Offset,
		Timestamp:     r.Timestamp,
		TimestampType: h.TimestampType().String(),
		KeySize:       nullableLen(r.Key),
		ValueSize:     nullableLen(r.Value),
		Sequence:      h.RecordSequence(r.OffsetDelta),
		Key:           r.Key,
		Value:         r.Value,
		Headers:       rl.Headers[:0],
		printData:     d.opt.PrintData,
	}
	if rl.Headers == nil {
		rl.Headers = make([]Header, 0, 4)
	}
	for _, hd := range r.Headers {
		rl.Headers = append(rl.Headers, Header{Key: hd.Key, Value: hd.Value})
	}
	if h.IsControl() {
		rl.Control = controlInfo(r)
		return rl
	}
	switch d.opt.Decoder {
	case DecoderOffsets:
		rec, err := coord.DecodeOffsetsRecord(r.Key, r.Value)
		if err != nil {
			rl.DecodeError = err.Error()
			d.sum.DecodeErrors++
		} else {
			rl.Decoded = rec
			rl.decodedText = rec.String()
		}
	case DecoderTxn:
		rec, err := coord.DecodeTxnRecord(r.Key, r.Value)
		if err != nil {
			rl.DecodeError = err.Error()
			d.sum.DecodeErrors++
		} else {
			rl.Decoded = rec
			rl.decodedText = rec.String()
		}
	}
	return rl
}

func controlInfo(r *kafka.Record) *ControlInfo {
	_, t, err := kafka.ParseControlKey(r.Key)
	if err != nil {
		return &ControlInfo{Type: "INVALID", Error: err.Error()}
	}
	ci := &ControlInfo{Type: t.String(), TypeID: int16(t)}
	if t.IsTxnMarker() {
		m, err := kafka.ParseEndTxnMarker(r.Value)
		if err != nil {
			ci.Error = err.Error()
		} else {
			e := m.CoordinatorEpoch
			ci.CoordinatorEpoch = &e
		}
	}
	return ci
}

func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// BatchLine describes one batch: kafka-dump-log's batch line plus the
// object holding it.
type BatchLine struct {
	Type          string `json:"type"` // "batch"
	BaseOffset    int64  `json:"base_offset"`
	LastOffset    int64  `json:"last_offset"`
	Count         int32  `json:"count"`
	ProducerID    int64  `json:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch"`
	BaseSequence  int32  `json:"base_sequence"`
	Transactional bool   `json:"transactional"`
	Control       bool   `json:"control"`
	Codec         string `json:"codec"`

	LastSequence         int32 `json:"last_sequence"`
	PartitionLeaderEpoch int32 `json:"partition_leader_epoch"`
	// DeleteHorizonMs is null unless the log cleaner set one (attribute bit 6).
	DeleteHorizonMs *int64 `json:"delete_horizon_ms"`
	// Position is the batch's byte position within Object (the JSON
	// key's meaning since schema version 1); the text's "position:" is
	// SegmentPosition, kafka-dump-log's, when known.
	Position int64 `json:"position"`
	// SegmentBase and SegmentPosition are the batch's virtual segment
	// (its .log file's base offset) and its byte position within it, as
	// kafka-dump-log prints it; null when the source does not know them.
	SegmentBase     *int64 `json:"segment_base"`
	SegmentPosition *int64 `json:"segment_position"`
	TimestampType   string `json:"timestamp_type"`
	BaseTimestamp   int64  `json:"base_timestamp"`
	MaxTimestamp    int64  `json:"max_timestamp"`
	Size            int    `json:"size"`
	Magic           int8   `json:"magic"`
	CRC             uint32 `json:"crc"`
	// Valid is null when the CRC was not checked.
	Valid  *bool  `json:"valid"`
	Object string `json:"object"`
	// Error says why the batch failed its CRC or why its records could
	// not be decoded (Deep).
	Error string `json:"error,omitempty"`

	horizon, segBase, segPos int64
	showObject               bool
}

func fillBatchLine(l *BatchLine, b Batch) {
	h := &b.Header
	*l = BatchLine{
		Type:                 "batch",
		BaseOffset:           h.BaseOffset,
		LastOffset:           h.LastOffset(),
		Count:                h.RecordsCount,
		BaseSequence:         h.BaseSequence,
		LastSequence:         h.LastSequence(),
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Transactional:        h.IsTransactional(),
		Control:              h.IsControl(),
		Position:             b.Pos,
		TimestampType:        h.TimestampType().String(),
		BaseTimestamp:        h.BaseTimestamp,
		MaxTimestamp:         h.MaxTimestamp,
		Size:                 h.Size(),
		Magic:                h.Magic,
		Codec:                h.Codec().String(),
		CRC:                  h.CRC,
		Object:               b.Object,
	}
	if h.HasDeleteHorizon() {
		l.horizon = h.DeleteHorizonMs()
		l.DeleteHorizonMs = &l.horizon
	}
	if b.Segment != nil {
		l.segBase, l.segPos = b.Segment.Base, b.SegmentPos
		l.SegmentBase, l.SegmentPosition = &l.segBase, &l.segPos
	}
}

// Text is kafka-dump-log's batch line (DumpLogSegments.printBatchLevel),
// with position the byte position in the virtual segment:
//
//	baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1620000000000 size: 120 magic: 2 compresscodec: none crc: 123 isvalid: true
//
// isvalid is "unchecked" when the CRC was not verified. nereusctl's extras
// follow Kafka's fields: " object: KEY" with ShowObjects, " error: …" for
// an invalid batch.
func (l *BatchLine) Text() string { return string(l.AppendLine(make([]byte, 0, 400+len(l.Object)))) }

// AppendLine appends Text's line to b.
func (l *BatchLine) AppendLine(b []byte) []byte {
	b = append(b, "baseOffset: "...)
	b = strconv.AppendInt(b, l.BaseOffset, 10)
	b = append(b, " lastOffset: "...)
	b = strconv.AppendInt(b, l.LastOffset, 10)
	b = append(b, " count: "...)
	b = strconv.AppendInt(b, int64(l.Count), 10)
	b = append(b, " baseSequence: "...)
	b = strconv.AppendInt(b, int64(l.BaseSequence), 10)
	b = append(b, " lastSequence: "...)
	b = strconv.AppendInt(b, int64(l.LastSequence), 10)
	b = append(b, " producerId: "...)
	b = strconv.AppendInt(b, l.ProducerID, 10)
	b = append(b, " producerEpoch: "...)
	b = strconv.AppendInt(b, int64(l.ProducerEpoch), 10)
	b = append(b, " partitionLeaderEpoch: "...)
	b = strconv.AppendInt(b, int64(l.PartitionLeaderEpoch), 10)
	b = append(b, " isTransactional: "...)
	b = strconv.AppendBool(b, l.Transactional)
	b = append(b, " isControl: "...)
	b = strconv.AppendBool(b, l.Control)
	b = append(b, " deleteHorizonMs: "...)
	if l.DeleteHorizonMs == nil {
		b = append(b, "OptionalLong.empty"...)
	} else {
		b = append(b, "OptionalLong["...)
		b = strconv.AppendInt(b, *l.DeleteHorizonMs, 10)
		b = append(b, ']')
	}
	b = append(b, " position: "...)
	if l.SegmentPosition != nil {
		b = strconv.AppendInt(b, *l.SegmentPosition, 10)
	} else {
		b = strconv.AppendInt(b, l.Position, 10)
	}
	b = append(b, ' ')
	b = append(b, l.TimestampType...)
	b = append(b, ": "...)
	b = strconv.AppendInt(b, l.MaxTimestamp, 10)
	b = append(b, " size: "...)
	b = strconv.AppendInt(b, int64(l.Size), 10)
	b = append(b, " magic: "...)
	b = strconv.AppendInt(b, int64(l.Magic), 10)
	b = append(b, " compresscodec: "...)
	b = append(b, l.Codec...)
	b = append(b, " crc: "...)
	b = strconv.AppendUint(b, uint64(l.CRC), 10)
	b = append(b, " isvalid: "...)
	if l.Valid == nil {
		b = append(b, "unchecked"...)
	} else {
		b = strconv.AppendBool(b, *l.Valid)
	}
	if l.showObject {
		b = append(b, " object: "...)
		b = append(b, l.Object...)
	}
	if l.Error != "" {
		b = append(b, " error: "...)
		b = append(b, l.Error...)
	}
	return b
}

// SegmentLine opens the batches of one virtual segment as kafka-dump-log
// opens each .log file (DumpLogSegments.main and dumpLog):
//
//	Dumping orders-0/00000000000000000000.log
//	Log starting offset: 0
//
// It is text only: the JSON stream has no segment line (each batch line
// carries segment_base and segment_position instead).
type SegmentLine struct {
	Type string `json:"type"` // "segment"
	File string `json:"file"` // TOPIC-PARTITION/<base, 20 digits>.log
	Base int64  `json:"base"`
}

// Text is the two lines, joined by a newline.
func (l *SegmentLine) Text() string { return string(l.AppendLine(nil)) }

// AppendLine appends Text's lines to b.
func (l *SegmentLine) AppendLine(b []byte) []byte {
	b = append(b, "Dumping "...)
	b = append(b, l.File...)
	b = append(b, "\nLog starting offset: "...)
	return strconv.AppendInt(b, l.Base, 10)
}

// Header is one record header.
type Header struct {
	Key   string `json:"key"`
	Value []byte `json:"value"` // base64; null when absent
}

// ControlInfo describes a control record: its type, and for COMMIT and
// ABORT markers the coordinator epoch.
type ControlInfo struct {
	Type             string `json:"type"`
	TypeID           int16  `json:"-"`
	CoordinatorEpoch *int32 `json:"coordinator_epoch,omitempty"`
	Error            string `json:"error,omitempty"`
}

// RecordLine describes one record (deep iteration).
type RecordLine struct {
	Type          string       `json:"type"` // "record"
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	TimestampType string       `json:"timestamp_type"`
	KeySize       int          `json:"key_size"`   // -1: null key
	ValueSize     int          `json:"value_size"` // -1: null value (tombstone)
	Sequence      int32        `json:"sequence"`
	Key           []byte       `json:"key"`   // base64; null when absent
	Value         []byte       `json:"value"` // base64; null when absent
	Headers       []Header     `json:"headers"`
	Control       *ControlInfo `json:"control,omitempty"`
	// Decoded is the coordinator record (--decoder): a
	// *coord.OffsetsRecord or a *coord.TxnRecord.
	Decoded     any    `json:"decoded,omitempty"`
	DecodeError string `json:"decode_error,omitempty"`
	// Source is "view" or "committed" in a READ_COMMITTED dump of a
	// compacted partition (empty for a dump of raw batches).
	Source string `json:"source,omitempty"`

	decodedText string
	// printData adds " key: K payload: V" as text (AppendData).
	printData bool
}

// Text is kafka-dump-log's record line:
//
//	| offset: 5 CreateTime: 1620000000000 keySize: 3 valueSize: 10 sequence: -1 headerKeys: [a,b]
//
// followed by "endTxnMarker: COMMIT coordinatorEpoch: N" for a marker,
// "controlType: T" for other control records, the decoded "key: …
// payload: …" with a decoder, and else, with PrintData, the key and value
// as text (AppendData).
func (l *RecordLine) Text() string {
	return string(l.AppendLine(make([]byte, 0, 128+len(l.decodedText))))
}

// AppendLine appends Text's line to b.
func (l *RecordLine) AppendLine(b []byte) []byte {
	b = append(b, "| offset: "...)
	b = strconv.AppendInt(b, l.Offset, 10)
	b = append(b, ' ')
	b = append(b, l.TimestampType...)
	b = append(b, ": "...)
	b = strconv.AppendInt(b, l.Timestamp, 10)
	b = append(b, " keySize: "...)
	b = strconv.AppendInt(b, int64(l.KeySize), 10)
	b = append(b, " valueSize: "...)
	b = strconv.AppendInt(b, int64(l.ValueSize), 10)
	b = append(b, " sequence: "...)
	b = strconv.AppendInt(b, int64(l.Sequence), 10)
	b = append(b, " headerKeys: ["...)
	for i, h := range l.Headers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, h.Key...)
	}
	b = append(b, ']')
	switch c := l.Control; {
	case c != nil && c.Error != "":
		b = append(b, " controlType: "...)
		b = append(b, c.Type...)
		b = append(b, " error: "...)
		b = append(b, c.Error...)
	case c != nil && c.CoordinatorEpoch != nil:
		b = append(b, " endTxnMarker: "...)
		b = append(b, c.Type...)
		b = append(b, " coordinatorEpoch: "...)
		b = strconv.AppendInt(b, int64(*c.CoordinatorEpoch), 10)
	case c != nil:
		// Kafka: " controlType: $controlType($controlTypeId)"; an
		// unknown type's String already reads UNKNOWN(id).
		b = append(b, " controlType: "...)
		b = append(b, c.Type...)
		if kafka.ControlType(c.TypeID).Known() {
			b = append(b, '(')
			b = strconv.AppendInt(b, int64(c.TypeID), 10)
			b = append(b, ')')
		}
	case l.DecodeError != "":
		b = append(b, " decodeError: "...)
		b = append(b, l.DecodeError...)
	case l.decodedText != "":
		b = append(b, ' ')
		b = append(b, l.decodedText...)
	case l.printData:
		b = l.AppendData(b)
	}
	return b
}

// AppendData appends the record's key and value as kafka-dump-log's
// --print-data-log prints them, " key: K payload: V", each left out when
// null (as Kafka does; keySize and valueSize say -1), as text: UTF-8 as it
// is, everything that would not read back as the same bytes on one line
// escaped (EscapeText).
func (l *RecordLine) AppendData(b []byte) []byte {
	if l.Key != nil {
		b = append(b, " key: "...)
		b = EscapeText(b, l.Key)
	}
	if l.Value != nil {
		b = append(b, " payload: "...)
		b = EscapeText(b, l.Value)
	}
	return b
}

// EscapeText appends data as one line of text: valid, printable UTF-8 as
// it is; a byte that is not UTF-8 as \xNN; a backslash as \\; newline,
// carriage return and tab as \n, \r, \t; other control and unprintable
// characters as \xNN (below 0x80) or \u{NNNN}. Unlike Kafka's decoding
// (which replaces bad bytes with U+FFFD) no byte is lost: the escapes give
// the bytes back.
func EscapeText(b, data []byte) []byte {
	const hexDigits = "0123456789abcdef"
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && n <= 1:
			b = append(b, '\\', 'x', hexDigits[data[0]>>4], hexDigits[data[0]&0xf])
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x80 && !unicode.IsPrint(r):
			b = append(b, '\\', 'x', hexDigits[byte(r)>>4], hexDigits[byte(r)&0xf])
		case r >= 0x80 && !unicode.IsPrint(r):
			b = append(b, "\\u{"...)
			b = strconv.AppendUint(b, uint64(r), 16)
			b = append(b, '}')
		default:
			b = append(b, data[:n]...)
		}
		data = data[n:]
	}
	return b
}
