package ntc2

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// Row is one record of a compacted view: a kept record with its original
// offset, or a tombstone (Value nil).
type Row struct {
	Offset        int64
	Timestamp     int64
	TimestampType kafka.TimestampType
	Key           []byte // never nil: keyless records are dropped by compaction
	Value         []byte // nil = tombstone; an empty non-nil slice is an empty value
	// DeleteHorizonMs is the tombstone's delete horizon (Kafka's
	// deleteHorizonMs: the first compaction that kept it set it), or -1 for
	// none. Only tombstones carry one.
	DeleteHorizonMs int64
	Headers         []kafka.RecordHeader // a header Value nil is a null header value
}

// Row attribute bits (docs/formats/ntc2.md §5).
const (
	attrLogAppendTime = 1 << 0
	attrTombstone     = 1 << 1
	attrHorizon       = 1 << 2
	knownAttrs        = attrLogAppendTime | attrTombstone | attrHorizon
)

// NoDeleteHorizon is DeleteHorizonMs of a row without a horizon.
const NoDeleteHorizon = -1

// checkRow returns why a row cannot be written, ignoring its offset.
func checkRow(r *Row) error {
	if r.Key == nil {
		return errors.New("nil key (a compacted view holds keyed records only)")
	}
	if r.TimestampType != kafka.CreateTime && r.TimestampType != kafka.LogAppendTime {
		return fmt.Errorf("timestamp type %d (want CreateTime 0 or LogAppendTime 1)", r.TimestampType)
	}
	switch {
	case r.DeleteHorizonMs == NoDeleteHorizon:
	case r.DeleteHorizonMs < 0:
		return fmt.Errorf("delete horizon %d (want -1 for none or a time >= 0)", r.DeleteHorizonMs)
	case r.Value != nil:
		return fmt.Errorf("delete horizon %d on a record with a value (only tombstones carry one)", r.DeleteHorizonMs)
	}
	if len(r.Headers) > MaxHeaders {
		return fmt.Errorf("%d headers, the cap is %d", len(r.Headers), MaxHeaders)
	}
	return nil
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func zigzag(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// rowCtx is what a row's encoding is relative to: for the first row of a
// block the view's base and timestamp 0, else the previous row.
type rowCtx struct {
	first  bool
	base   int64 // the view's Base
	prevOf int64 // the previous row's offset
	prevTS int64 // the previous row's timestamp
}

func (c *rowCtx) offsetField(off int64) uint64 {
	if c.first {
		return uint64(off - c.base)
	}
	return uint64(off - c.prevOf - 1)
}

func (c *rowCtx) tsField(ts int64) uint64 {
	if c.first {
		return zigzag(ts)
	}
	return zigzag(ts - c.prevTS) // wraps, and unwraps on decode
}

// encodedLen is the size of a row's encoding in context c; it fits an int
// for any row checkRow accepts that fits in memory.
func encodedLen(c *rowCtx, r *Row) int {
	n := uvarintLen(c.offsetField(r.Offset)) + 1 + uvarintLen(c.tsField(r.Timestamp))
	if r.Value == nil && r.DeleteHorizonMs >= 0 {
		n += uvarintLen(uint64(r.DeleteHorizonMs))
	}
	n += uvarintLen(uint64(len(r.Key))) + len(r.Key)
	if r.Value != nil {
		n += uvarintLen(uint64(len(r.Value))) + len(r.Value)
	}
	n += uvarintLen(uint64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += uvarintLen(uint64(len(h.Key))) + len(h.Key)
		if h.Value == nil {
			n++
		} else {
			n += uvarintLen(uint64(len(h.Value))+1) + len(h.Value)
		}
	}
	return n
}

// appendRow appends a row's encoding in context c (docs/formats/ntc2.md §5).
func appendRow(b []byte, c *rowCtx, r *Row) []byte {
	b = binary.AppendUvarint(b, c.offsetField(r.Offset))
	var attrs byte
	if r.TimestampType == kafka.LogAppendTime {
		attrs |= attrLogAppendTime
	}
	if r.Value == nil {
		attrs |= attrTombstone
		if r.DeleteHorizonMs >= 0 {
			attrs |= attrHorizon
		}
	}
	b = append(b, attrs)
	b = binary.AppendUvarint(b, c.tsField(r.Timestamp))
	if attrs&attrHorizon != 0 {
		b = binary.AppendUvarint(b, uint64(r.DeleteHorizonMs))
	}
	b = binary.AppendUvarint(b, uint64(len(r.Key)))
	b = append(b, r.Key...)
	if r.Value != nil {
		b = binary.AppendUvarint(b, uint64(len(r.Value)))
		b = append(b, r.Value...)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		if h.Value == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(h.Value))+1)
			b = append(b, h.Value...)
		}
	}
	return b
}

// rowDecoder reads the rows of one raw block. Every length is checked
// against the bytes left before anything is sliced or allocated; byte
// slices alias raw.
type rowDecoder struct {
	raw []byte
	pos int
	ctx rowCtx
}

var errShort = errors.New("truncated")

func (d *rowDecoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.raw[d.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, errShort
		}
		return 0, errors.New("varint overflows 64 bits")
	}
	d.pos += n
	return v, nil
}

// length reads a uvarint length and checks that many bytes remain.
func (d *rowDecoder) length(what string) (int, error) {
	v, err := d.uvarint()
	if err != nil {
		return 0, fmt.Errorf("%s length: %w", what, err)
	}
	if v > uint64(len(d.raw)-d.pos) {
		return 0, fmt.Errorf("%s length %d, %d bytes left", what, v, len(d.raw)-d.pos)
	}
	return int(v), nil
}

func (d *rowDecoder) bytes(n int) []byte {
	b := d.raw[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b
}

// next decodes one row into r.
func (d *rowDecoder) next(r *Row) error {
	c := &d.ctx
	v, err := d.uvarint()
	if err != nil {
		return fmt.Errorf("offset: %w", err)
	}
	if c.first {
		if v > uint64(maxOffset-c.base) {
			return fmt.Errorf("offset delta %d overflows", v)
		}
		r.Offset = c.base + int64(v)
	} else {
		if v >= uint64(maxOffset-c.prevOf) {
			return fmt.Errorf("offset gap %d overflows", v)
		}
		r.Offset = c.prevOf + 1 + int64(v)
	}
	if d.pos >= len(d.raw) {
		return fmt.Errorf("attributes: %w", errShort)
	}
	attrs := d.raw[d.pos]
	d.pos++
	if attrs&^knownAttrs != 0 {
		return fmt.Errorf("unknown attribute bits 0x%02x", attrs)
	}
	if attrs&attrHorizon != 0 && attrs&attrTombstone == 0 {
		return errors.New("delete horizon on a record with a value")
	}
	r.TimestampType = kafka.CreateTime
	if attrs&attrLogAppendTime != 0 {
		r.TimestampType = kafka.LogAppendTime
	}
	if v, err = d.uvarint(); err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	if c.first {
		r.Timestamp = unzigzag(v)
	} else {
		r.Timestamp = c.prevTS + unzigzag(v)
	}
	r.DeleteHorizonMs = NoDeleteHorizon
	if attrs&attrHorizon != 0 {
		if v, err = d.uvarint(); err != nil {
			return fmt.Errorf("delete horizon: %w", err)
		}
		if v > maxOffset {
			return fmt.Errorf("delete horizon %d overflows", v)
		}
		r.DeleteHorizonMs = int64(v)
	}
	n, err := d.length("key")
	if err != nil {
		return err
	}
	r.Key = d.bytes(n)
	r.Value = nil
	if attrs&attrTombstone == 0 {
		if n, err = d.length("value"); err != nil {
			return err
		}
		r.Value = d.bytes(n)
	}
	v, err = d.uvarint()
	if err != nil {
		return fmt.Errorf("header count: %w", err)
	}
	// Each header takes at least two bytes.
	if v > MaxHeaders || v > uint64(len(d.raw)-d.pos)/2 {
		return fmt.Errorf("header count %d, %d bytes left (cap %d)", v, len(d.raw)-d.pos, MaxHeaders)
	}
	r.Headers = nil
	if v > 0 {
		r.Headers = make([]kafka.RecordHeader, v)
		for i := range r.Headers {
			h := &r.Headers[i]
			if n, err = d.length("header key"); err != nil {
				return fmt.Errorf("header %d: %w", i, err)
			}
			h.Key = string(d.bytes(n))
			hv, err := d.uvarint()
			if err != nil {
				return fmt.Errorf("header %d value length: %w", i, err)
			}
			if hv > 0 {
				if hv-1 > uint64(len(d.raw)-d.pos) {
					return fmt.Errorf("header %d value length %d, %d bytes left", i, hv-1, len(d.raw)-d.pos)
				}
				h.Value = d.bytes(int(hv - 1))
			}
		}
	}
	c.first = false
	c.prevOf, c.prevTS = r.Offset, r.Timestamp
	return nil
}

const maxOffset = 1<<63 - 1
