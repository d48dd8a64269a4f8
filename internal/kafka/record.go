package kafka

import (
	"fmt"
	"math"
)

// Record is one record of a v2 batch (DefaultRecord.java).
//
// Decoded records carry both the raw deltas and the absolute Offset and
// Timestamp. When encoding, Offset and Timestamp are authoritative for a
// CreateTime batch and the deltas are recomputed; in a LogAppendTime batch
// every record's Timestamp is the batch's MaxTimestamp, so the encoder keeps
// TimestampDelta as given (it holds the producer's create-time delta).
type Record struct {
	Attributes     int8 // unused by Kafka, always 0 in practice; kept as read
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte // nil = null key
	Value          []byte // nil = null value (tombstone)
	Headers        []RecordHeader

	Offset    int64 // absolute: BaseOffset + OffsetDelta
	Timestamp int64 // absolute: BaseTimestamp + TimestampDelta, or MaxTimestamp under LogAppendTime
}

// RecordHeader is one record header. Its key is UTF-8 text in Kafka; it is
// kept as the bytes read.
type RecordHeader struct {
	Key   string
	Value []byte // nil = null
}

// minRecordSize is the smallest encoded record: length, attributes,
// timestampDelta, offsetDelta, keyLength, valueLength and headerCount, one
// byte each.
const minRecordSize = 7

// decodeRecordsInto is DecodeRecords reusing recs and hdrs (arenas for the
// records and their headers; nil allocates). It returns both arenas, grown.
func decodeRecordsInto(h BatchHeader, data []byte, lim Limits, recs []Record, hdrs []RecordHeader, keys *headerKeys) ([]Record, []RecordHeader, error) {
	count := int(h.RecordsCount)
	if count < 0 {
		return recs, hdrs, fmt.Errorf("decode records of batch at base offset %d: negative records count %d: %w", h.BaseOffset, count, ErrCorrupt)
	}
	if count > lim.MaxRecords {
		return recs, hdrs, fmt.Errorf("decode records of batch at base offset %d: %d records, limit %d: %w", h.BaseOffset, count, lim.MaxRecords, ErrTooLarge)
	}
	if count > len(data)/minRecordSize {
		return recs, hdrs, fmt.Errorf("decode records of batch at base offset %d: %d records cannot fit in %d bytes: %w", h.BaseOffset, count, len(data), ErrCorrupt)
	}
	if int64(count) > int64(h.LastOffsetDelta)+1 {
		return recs, hdrs, fmt.Errorf("decode records of batch at base offset %d: %d records for last offset delta %d: %w", h.BaseOffset, count, h.LastOffsetDelta, ErrCorrupt)
	}
	if cap(recs) < count {
		recs = make([]Record, count)
	}
	recs = recs[:count]
	hdrs = hdrs[:0]
	logAppend := h.TimestampType() == LogAppendTime
	pos := 0
	prevDelta := int32(-1)
	for i := 0; i < count; i++ {
		r := &recs[i]
		n, err := decodeRecord(data[pos:], r, &hdrs, keys)
		if err != nil {
			return recs, hdrs, fmt.Errorf("decode records of batch at base offset %d: record %d at byte %d: %w", h.BaseOffset, i, pos, err)
		}
		if r.OffsetDelta <= prevDelta || r.OffsetDelta > h.LastOffsetDelta {
			return recs, hdrs, fmt.Errorf("decode records of batch at base offset %d: record %d: offset delta %d not in (%d, %d]: %w",
				h.BaseOffset, i, r.OffsetDelta, prevDelta, h.LastOffsetDelta, ErrCorrupt)
		}
		prevDelta = r.OffsetDelta
		r.Offset = h.BaseOffset + int64(r.OffsetDelta)
		if logAppend {
			r.Timestamp = h.MaxTimestamp
		} else {
			r.Timestamp = h.BaseTimestamp + r.TimestampDelta
		}
		pos += n
	}
	if pos != len(data) {
		return recs, hdrs, fmt.Errorf("decode records of batch at base offset %d: %d bytes left after %d records: %w", h.BaseOffset, len(data)-pos, count, ErrCorrupt)
	}
	return recs, hdrs, nil
}

// decodeRecord parses one length-prefixed record at the start of b into r
// and returns the bytes it used. Its headers are appended to *hdrs and
// r.Headers is their slice of it.
func decodeRecord(b []byte, r *Record, hdrs *[]RecordHeader, keys *headerKeys) (int, error) {
	length, n := readVarint(b)
	if n <= 0 {
		return 0, varintErr("length", n)
	}
	if length < 0 {
		return 0, fmt.Errorf("negative record length %d: %w", length, ErrCorrupt)
	}
	if int(length) > len(b)-n {
		return 0, fmt.Errorf("record length %d exceeds the %d bytes left: %w", length, len(b)-n, ErrCorrupt)
	}
	body := b[n : n+int(length)]
	p := 0
	if len(body) < 1 {
		return 0, fmt.Errorf("empty record body: %w", ErrCorrupt)
	}
	r.Attributes = int8(body[0])
	p = 1
	var m int
	r.TimestampDelta, m = readVarlong(body[p:])
	if m <= 0 {
		return 0, varintErr("timestamp delta", m)
	}
	p += m
	r.OffsetDelta, m = readVarint(body[p:])
	if m <= 0 {
		return 0, varintErr("offset delta", m)
	}
	p += m
	var err error
	if r.Key, p, err = readNullableBytes(body, p, "key"); err != nil {
		return 0, err
	}
	if r.Value, p, err = readNullableBytes(body, p, "value"); err != nil {
		return 0, err
	}
	nh, m := readVarint(body[p:])
	if m <= 0 {
		return 0, varintErr("header count", m)
	}
	p += m
	if nh < 0 {
		return 0, fmt.Errorf("negative header count %d: %w", nh, ErrCorrupt)
	}
	// Each header takes at least 2 bytes (key length, value length).
	if int(nh) > (len(body)-p)/2 {
		return 0, fmt.Errorf("header count %d exceeds the %d bytes left: %w", nh, len(body)-p, ErrCorrupt)
	}
	r.Headers = nil
	if nh > 0 {
		start := len(*hdrs)
		for j := 0; j < int(nh); j++ {
			kl, m := readVarint(body[p:])
			if m <= 0 {
				return 0, fmt.Errorf("header %d: %w", j, varintErr("key length", m))
			}
			p += m
			if kl < 0 {
				return 0, fmt.Errorf("header %d: negative key length %d: %w", j, kl, ErrCorrupt)
			}
			if int(kl) > len(body)-p {
				return 0, fmt.Errorf("header %d: key length %d exceeds the %d bytes left: %w", j, kl, len(body)-p, ErrCorrupt)
			}
			key := keys.get(body[p : p+int(kl)])
			p += int(kl)
			var val []byte
			if val, p, err = readNullableBytes(body, p, "value"); err != nil {
				return 0, fmt.Errorf("header %d: %w", j, err)
			}
			*hdrs = append(*hdrs, RecordHeader{Key: key, Value: val})
		}
		end := len(*hdrs)
		r.Headers = (*hdrs)[start:end:end]
	}
	if p != len(body) {
		return 0, fmt.Errorf("record body is %d bytes, length says %d: %w", p, len(body), ErrCorrupt)
	}
	return n + int(length), nil
}

// headerKeys remembers the last few distinct header keys, so that a decoder
// reading batch after batch (where the same few header names repeat) makes
// a string of each once. A nil *headerKeys makes a new string every time.
type headerKeys struct {
	ring [8]string
	next int
}

func (k *headerKeys) get(b []byte) string {
	if k == nil {
		return string(b)
	}
	for _, s := range k.ring {
		if s == string(b) { // compared without a copy
			return s
		}
	}
	s := string(b)
	k.ring[k.next] = s
	k.next = (k.next + 1) % len(k.ring)
	return s
}

func readNullableBytes(body []byte, p int, what string) ([]byte, int, error) {
	l, m := readVarint(body[p:])
	if m <= 0 {
		return nil, p, varintErr(what+" length", m)
	}
	p += m
	switch {
	case l == -1:
		return nil, p, nil
	case l < -1:
		return nil, p, fmt.Errorf("%s: negative length %d: %w", what, l, ErrCorrupt)
	case int(l) > len(body)-p:
		return nil, p, fmt.Errorf("%s: length %d exceeds the %d bytes left: %w", what, l, len(body)-p, ErrCorrupt)
	}
	end := p + int(l)
	return body[p:end:end], end, nil
}

func varintErr(what string, n int) error {
	if n == 0 {
		return fmt.Errorf("%s: varint cut short: %w", what, ErrCorrupt)
	}
	return fmt.Errorf("%s: varint too long: %w", what, ErrCorrupt)
}

// recordBodySize is the encoded size of a record without its length
// prefix.
func recordBodySize(r *Record, tsDelta int64, offDelta int32) int {
	n := 1 + varlongSize(tsDelta) + varintSize(offDelta)
	n += nullableBytesSize(r.Key)
	n += nullableBytesSize(r.Value)
	n += varintSize(int32(len(r.Headers)))
	for i := range r.Headers {
		n += varintSize(int32(len(r.Headers[i].Key))) + len(r.Headers[i].Key)
		n += nullableBytesSize(r.Headers[i].Value)
	}
	return n
}

func nullableBytesSize(b []byte) int {
	if b == nil {
		return 1
	}
	return varintSize(int32(len(b))) + len(b)
}

// checkRecordSizes rejects fields whose lengths cannot be written as an
// int32 varint.
func checkRecordSizes(r *Record) error {
	if len(r.Key) > math.MaxInt32 || len(r.Value) > math.MaxInt32 || len(r.Headers) > math.MaxInt32 {
		return fmt.Errorf("record at offset %d: field longer than %d bytes: %w", r.Offset, math.MaxInt32, ErrTooLarge)
	}
	for i := range r.Headers {
		if len(r.Headers[i].Key) > math.MaxInt32 || len(r.Headers[i].Value) > math.MaxInt32 {
			return fmt.Errorf("record at offset %d: header %d longer than %d bytes: %w", r.Offset, i, math.MaxInt32, ErrTooLarge)
		}
	}
	return nil
}

// appendRecord writes one record with the given deltas, as
// DefaultRecord.writeTo does.
func appendRecord(b []byte, r *Record, tsDelta int64, offDelta int32) ([]byte, error) {
	size := recordBodySize(r, tsDelta, offDelta)
	if size > math.MaxInt32 {
		return b, fmt.Errorf("record at offset %d: %d bytes: %w", r.Offset, size, ErrTooLarge)
	}
	b = appendVarint(b, int32(size))
	b = append(b, byte(r.Attributes))
	b = appendVarlong(b, tsDelta)
	b = appendVarint(b, offDelta)
	b = appendNullableBytes(b, r.Key)
	b = appendNullableBytes(b, r.Value)
	b = appendVarint(b, int32(len(r.Headers)))
	for i := range r.Headers {
		b = appendVarint(b, int32(len(r.Headers[i].Key)))
		b = append(b, r.Headers[i].Key...)
		b = appendNullableBytes(b, r.Headers[i].Value)
	}
	return b, nil
}

func appendNullableBytes(b, v []byte) []byte {
	if v == nil {
		return appendVarint(b, -1)
	}
	b = appendVarint(b, int32(len(v)))
	return append(b, v...)
}
