package coord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// ErrCorrupt reports bytes that are not a valid record of the claimed
// type and version: cut short, a negative or oversized length, a null where
// the schema forbids one, trailing bytes. It is kafka.ErrCorrupt, so one
// errors.Is check covers batches and the records inside them.
var ErrCorrupt = kafka.ErrCorrupt

// ErrUnsupportedVersion reports a value version this package does not know
// for a known key type.
var ErrUnsupportedVersion = errors.New("unsupported version")

// TaggedField is a tagged field this package does not interpret, kept raw
// so that re-encoding gives back the bytes read.
type TaggedField struct {
	Tag  uint32 `json:"tag"`
	Data []byte `json:"data"`
}

// reader decodes Kafka's generated-message primitives. The first error
// sticks; later reads return zero values.
type reader struct {
	b        []byte
	p        int
	flexible bool
	err      error
}

func (r *reader) fail(field, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("field %s at byte %d: %s: %w", field, r.p, fmt.Sprintf(format, args...), ErrCorrupt)
	}
}

func (r *reader) need(field string, n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || n > len(r.b)-r.p {
		r.fail(field, "need %d bytes, %d left", n, len(r.b)-r.p)
		return false
	}
	return true
}

func (r *reader) int8(field string) int8 {
	if !r.need(field, 1) {
		return 0
	}
	v := int8(r.b[r.p])
	r.p++
	return v
}

func (r *reader) int16(field string) int16 {
	if !r.need(field, 2) {
		return 0
	}
	v := int16(binary.BigEndian.Uint16(r.b[r.p:]))
	r.p += 2
	return v
}

func (r *reader) int32(field string) int32 {
	if !r.need(field, 4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.b[r.p:]))
	r.p += 4
	return v
}

func (r *reader) int64(field string) int64 {
	if !r.need(field, 8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.b[r.p:]))
	r.p += 8
	return v
}

// uvarint follows ByteUtils.readUnsignedVarint: at most 5 bytes.
func (r *reader) uvarint(field string) uint32 {
	if r.err != nil {
		return 0
	}
	var v uint32
	var shift uint
	for i := r.p; i < len(r.b); i++ {
		c := r.b[i]
		if c&0x80 == 0 {
			v |= uint32(c) << shift
			r.p = i + 1
			return v
		}
		v |= uint32(c&0x7f) << shift
		shift += 7
		if shift > 28 {
			r.fail(field, "unsigned varint too long")
			return 0
		}
	}
	r.fail(field, "unsigned varint cut short")
	return 0
}

// length reads a string/bytes/array length: int16 (strings) or int32
// (bytes, arrays) in non-flexible versions, uvarint N+1 in flexible ones.
// It returns -1 for null.
func (r *reader) length(field string, wide bool) int {
	if r.flexible {
		n := r.uvarint(field)
		return int(n) - 1
	}
	if wide {
		return int(r.int32(field))
	}
	return int(r.int16(field))
}

func (r *reader) stringField(field string, nullable bool) (string, bool) {
	n := r.length(field, false)
	if r.err != nil {
		return "", false
	}
	switch {
	case n == -1:
		if !nullable {
			r.fail(field, "null in a non-nullable string")
		}
		return "", false
	case n < -1:
		r.fail(field, "negative length %d", n)
		return "", false
	case n > math.MaxInt16:
		r.fail(field, "string length %d over %d", n, math.MaxInt16)
		return "", false
	}
	if !r.need(field, n) {
		return "", false
	}
	s := string(r.b[r.p : r.p+n])
	r.p += n
	return s, true
}

func (r *reader) string(field string) string {
	s, _ := r.stringField(field, false)
	return s
}

func (r *reader) nullableString(field string) *string {
	s, ok := r.stringField(field, true)
	if !ok {
		return nil
	}
	return &s
}

func (r *reader) bytes(field string) []byte {
	n := r.length(field, true)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.fail(field, "length %d in non-nullable bytes", n)
		return nil
	}
	if !r.need(field, n) {
		return nil
	}
	b := make([]byte, n)
	copy(b, r.b[r.p:])
	r.p += n
	return b
}

// arrayLen reads an array length, -1 for null, refusing counts the
// remaining bytes cannot hold at minSize bytes per element.
func (r *reader) arrayLen(field string, nullable bool, minSize int) int {
	n := r.length(field, true)
	if r.err != nil {
		return 0
	}
	if n == -1 {
		if !nullable {
			r.fail(field, "null in a non-nullable array")
		}
		return -1
	}
	if n < -1 {
		r.fail(field, "negative array length %d", n)
		return 0
	}
	if n > (len(r.b)-r.p)/minSize {
		r.fail(field, "%d elements cannot fit in %d bytes", n, len(r.b)-r.p)
		return 0
	}
	return n
}

// tags reads a tagged-field section. known is called for tags the schema
// defines and returns false to leave the tag unknown; it must consume
// exactly size bytes.
func (r *reader) tags(field string, known func(tag uint32, size int) bool) []TaggedField {
	if !r.flexible || r.err != nil {
		return nil
	}
	n := r.uvarint(field + " tag count")
	if r.err != nil {
		return nil
	}
	if int64(n) > int64(len(r.b)-r.p)/2 {
		r.fail(field, "%d tagged fields cannot fit in %d bytes", n, len(r.b)-r.p)
		return nil
	}
	var unknown []TaggedField
	last := int64(-1)
	for i := uint32(0); i < n && r.err == nil; i++ {
		tag := r.uvarint(field + " tag")
		size := int(r.uvarint(field + " tag size"))
		if r.err != nil {
			return nil
		}
		if int64(tag) <= last {
			r.fail(field, "tag %d after tag %d: tags must ascend", tag, last)
			return nil
		}
		last = int64(tag)
		if !r.need(field, size) {
			return nil
		}
		end := r.p + size
		if known != nil && known(tag, size) {
			if r.err == nil && r.p != end {
				r.fail(field, "tag %d: read %d of %d bytes", tag, size-(end-r.p), size)
			}
			continue
		}
		unknown = append(unknown, TaggedField{Tag: tag, Data: append([]byte(nil), r.b[r.p:end]...)})
		r.p = end
	}
	return unknown
}

// done fails unless every byte was read.
func (r *reader) done(what string) error {
	if r.err == nil && r.p != len(r.b) {
		r.fail(what, "%d trailing bytes", len(r.b)-r.p)
	}
	return r.err
}

// writer encodes Kafka's generated-message primitives.
type writer struct {
	b        []byte
	flexible bool
	err      error
}

func (w *writer) int8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *writer) int16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *writer) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }

func (w *writer) uvarint(v uint32) {
	for v >= 0x80 {
		w.b = append(w.b, byte(v)|0x80)
		v >>= 7
	}
	w.b = append(w.b, byte(v))
}

func (w *writer) length(n int, wide bool) {
	switch {
	case w.flexible:
		w.uvarint(uint32(n + 1))
	case wide:
		w.int32(int32(n))
	default:
		w.int16(int16(n))
	}
}

func (w *writer) string(field, s string) {
	if len(s) > math.MaxInt16 {
		if w.err == nil {
			w.err = fmt.Errorf("field %s: string of %d bytes, limit %d: %w", field, len(s), math.MaxInt16, ErrCorrupt)
		}
		return
	}
	w.length(len(s), false)
	w.b = append(w.b, s...)
}

func (w *writer) nullableString(field string, s *string) {
	if s == nil {
		w.length(-1, false)
		return
	}
	w.string(field, *s)
}

func (w *writer) bytes(field string, b []byte) {
	if len(b) > math.MaxInt32-1 {
		if w.err == nil {
			w.err = fmt.Errorf("field %s: %d bytes: %w", field, len(b), ErrCorrupt)
		}
		return
	}
	w.length(len(b), true)
	w.b = append(w.b, b...)
}

func (w *writer) arrayLen(n int) { w.length(n, true) }

// knownTag is a tagged field the schema defines, already encoded.
type knownTag struct {
	tag  uint32
	data []byte
}

// tags writes known and unknown tagged fields in ascending tag order.
func (w *writer) tags(field string, known []knownTag, unknown []TaggedField) {
	if !w.flexible {
		return
	}
	all := make([]TaggedField, 0, len(known)+len(unknown))
	for _, k := range known {
		all = append(all, TaggedField{Tag: k.tag, Data: k.data})
	}
	all = append(all, unknown...)
	slices.SortStableFunc(all, func(a, b TaggedField) int {
		switch {
		case a.Tag < b.Tag:
			return -1
		case a.Tag > b.Tag:
			return 1
		}
		return 0
	})
	for i := 1; i < len(all); i++ {
		if all[i].Tag == all[i-1].Tag && w.err == nil {
			w.err = fmt.Errorf("field %s: tag %d given twice: %w", field, all[i].Tag, ErrCorrupt)
		}
	}
	w.uvarint(uint32(len(all)))
	for _, t := range all {
		w.uvarint(t.Tag)
		w.uvarint(uint32(len(t.Data)))
		w.b = append(w.b, t.Data...)
	}
}

func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func be16(v int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
