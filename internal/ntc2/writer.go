package ntc2

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/nereusctl/nereusctl/internal/container"
)

// Writer builds one NTC2 object from rows given in strictly ascending offset
// order. Besides the object's bytes (which it returns whole from Finish), it
// holds one open block (about TargetBlockRaw raw bytes, or one larger row),
// 49 bytes per finished block, and the distinct-key set: 16-byte key
// hashes in a table at most half full, 32 to 64 bytes per distinct key (an
// object of 1 M keys costs at most 64 MB; compaction's objects of about 4
// MiB hold some tens of thousands).
//
// The output is deterministic: the same Meta and the same rows always give
// the same bytes (docs/formats/ntc2.md §7). A Writer is not safe for
// concurrent use.
type Writer struct {
	meta  Meta
	err   error // sticky: invalid meta, a compression failure, or finished
	out   []byte
	block []byte // the open block's raw bytes
	cur   entry  // the open block's first, last, maxTS and rows
	ctx   rowCtx
	index []entry
	keys  *keySet

	rows, tombstones int64
	first, last      int64 // offsets of the first and last row added; -1 before
}

// WriterOptions tune a Writer without changing the bytes it writes.
type WriterOptions struct {
	// Buffer, when not nil, is reused (from length 0) for the object's
	// bytes: Finish returns them in it, or in a bigger copy.
	Buffer []byte
	// DistinctKeys says that the caller adds every key at most once (a
	// compaction's output holds one row per key): the distinct-key count
	// is then the row count and the writer keeps no key set. Verify
	// recounts, so a caller that breaks the promise writes an object that
	// fails verification, never one that passes with a wrong count.
	DistinctKeys bool
}

// NewWriterWith is NewWriter with options.
func NewWriterWith(meta Meta, o WriterOptions) *Writer {
	w := &Writer{
		meta:  Meta{Base: meta.Base, End: meta.End, Sources: slices.Clone(meta.Sources)},
		first: -1, last: -1,
		ctx: rowCtx{first: true, base: meta.Base},
	}
	if !o.DistinctKeys {
		w.keys = newKeySet(0)
	}
	slices.SortStableFunc(w.meta.Sources, func(a, b Source) int { return cmp.Compare(a.Gen, b.Gen) })
	if err := checkMeta(&w.meta); err != nil {
		w.err = fmt.Errorf("ntc2: meta: %w", err)
		return w
	}
	buf := o.Buffer[:0:cap(o.Buffer)]
	if buf == nil {
		buf = make([]byte, 0, 4096)
	}
	w.out = appendHeader(buf, Version, 0)
	return w
}

// checkMeta checks a meta whose sources are sorted by gen.
func checkMeta(m *Meta) error {
	if m.Base < 0 || m.End < m.Base {
		return fmt.Errorf("range [%d, %d) (want 0 <= base <= end)", m.Base, m.End)
	}
	if len(m.Sources) == 0 || len(m.Sources) > MaxSources {
		return fmt.Errorf("%d sources (want 1..%d)", len(m.Sources), MaxSources)
	}
	for i, s := range m.Sources {
		if s.Gen < 0 {
			return fmt.Errorf("source gen %d is negative", s.Gen)
		}
		if i > 0 && s.Gen == m.Sources[i-1].Gen {
			return fmt.Errorf("source gen %d listed twice", s.Gen)
		}
		if _, err := parseDigest(s.ManifestSHA256); err != nil {
			return fmt.Errorf("source gen %d: manifest sha256: %w", s.Gen, err)
		}
	}
	return nil
}

// parseDigest parses a SHA-256 in its canonical form, 64 lowercase hex
// digits.
func parseDigest(s string) ([32]byte, error) {
	var d [32]byte
	if len(s) != 64 {
		return d, fmt.Errorf("%q is not 64 hex digits", s)
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil || hex.EncodeToString(d[:]) != s {
		return d, fmt.Errorf("%q is not 64 lowercase hex digits", s)
	}
	return d, nil
}

// Add appends a row. Offsets must be strictly ascending and inside [Base,
// End); the key must not be nil; a delete horizon only on a tombstone; the
// encoded row at most MaxBlockRaw bytes. A refused row leaves the writer as
// it was. Add copies what it needs: r may be reused once it returns.
func (w *Writer) Add(r Row) error {
	if w.err != nil {
		return w.err
	}
	if err := checkRow(&r); err != nil {
		return fmt.Errorf("ntc2: add offset %d: %w", r.Offset, err)
	}
	if r.Offset < w.meta.Base || r.Offset >= w.meta.End {
		return fmt.Errorf("ntc2: add offset %d: outside the view's range [%d, %d)", r.Offset, w.meta.Base, w.meta.End)
	}
	if w.last >= 0 && r.Offset <= w.last {
		return fmt.Errorf("ntc2: add offset %d: not above the previous row's offset %d", r.Offset, w.last)
	}
	n := encodedLen(&w.ctx, &r)
	newBlock := len(w.block) > 0 && len(w.block)+n > TargetBlockRaw
	if newBlock {
		n = encodedLen(&rowCtx{first: true, base: w.meta.Base}, &r)
	}
	if n > MaxBlockRaw {
		return fmt.Errorf("ntc2: add offset %d: the row encodes to %d bytes, the cap is %d", r.Offset, n, MaxBlockRaw)
	}
	if newBlock {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if len(w.block) == 0 {
		w.cur = entry{first: r.Offset, maxTS: r.Timestamp}
	}
	w.block = appendRow(w.block, &w.ctx, &r)
	w.ctx.first = false
	w.ctx.prevOf, w.ctx.prevTS = r.Offset, r.Timestamp
	w.cur.last = r.Offset
	w.cur.maxTS = max(w.cur.maxTS, r.Timestamp)
	w.cur.rows++
	if w.first < 0 {
		w.first = r.Offset
	}
	w.last = r.Offset
	w.rows++
	if r.Value == nil {
		w.tombstones++
	}
	if w.keys != nil {
		w.keys.add(keyHash(r.Key))
	}
	if len(w.block) >= TargetBlockRaw {
		return w.flush()
	}
	return nil
}

// flush closes the open block: compresses it by the rule, appends its
// stored bytes and records its index entry.
func (w *Writer) flush() error {
	if len(w.block) == 0 {
		return nil
	}
	off := len(w.out)
	if need := off + len(w.block) + len(w.block)/8 + 1024; need > cap(w.out) {
		// Double: append (and zstd's EncodeAll) would grow a large
		// object by a quarter at a time, copying it over and over.
		grown := make([]byte, off, max(need, 2*cap(w.out)))
		copy(grown, w.out)
		w.out = grown
	}
	out, codec, err := appendStored(w.out, w.block)
	if err != nil {
		w.err = fmt.Errorf("ntc2: block %d: %w", len(w.index), err)
		return w.err
	}
	w.out = out
	e := w.cur
	e.off, e.codec = uint64(off), codec
	e.stored, e.raw = uint32(len(out)-off), uint32(len(w.block))
	e.crc = crc32c(out[off:])
	w.index = append(w.index, e)
	if cap(w.block) > 2*TargetBlockRaw {
		w.block = nil // do not keep a big row's buffer
	} else {
		w.block = w.block[:0]
	}
	w.ctx = rowCtx{first: true, base: w.meta.Base}
	return nil
}

// Len is the number of bytes written so far: the header and the finished
// blocks. It excludes the open block (under TargetBlockRaw raw bytes unless
// it holds one larger row), the index (49 bytes a block) and the footer
// (120 bytes and 40 a source), so a caller splitting outputs by size
// overshoots its limit by at most about that much.
func (w *Writer) Len() int { return len(w.out) }

// SetEnd changes the view's exclusive end, for a caller that decides where
// an object ends only once it has its rows (splitting outputs by size). It
// must stay at or above Base and above every row added; later rows must be
// below it.
func (w *Writer) SetEnd(end int64) error {
	if w.err != nil {
		return w.err
	}
	if end < w.meta.Base {
		return fmt.Errorf("ntc2: set end %d: below the base %d", end, w.meta.Base)
	}
	if w.last >= 0 && end <= w.last {
		return fmt.Errorf("ntc2: set end %d: a row at offset %d was added", end, w.last)
	}
	w.meta.End = end
	return nil
}

var errFinished = errors.New("ntc2: writer already finished")

// Finish closes the open block, writes the block index and the footer and
// returns the object's bytes and its footer. The writer cannot be used
// afterwards.
func (w *Writer) Finish() ([]byte, *Footer, error) {
	if w.err != nil {
		return nil, nil, w.err
	}
	if err := w.flush(); err != nil {
		return nil, nil, err
	}
	if len(w.index) > 1<<32-1 {
		return nil, nil, fmt.Errorf("ntc2: finish: %d blocks", len(w.index))
	}
	data := w.out
	indexStart := len(data)
	for i := range w.index {
		data = w.index[i].appendTo(data)
	}
	keys := w.rows
	if w.keys != nil {
		keys = w.keys.len()
	}
	f := &Footer{
		Meta: w.meta, Rows: w.rows, Keys: keys, Tombstones: w.tombstones,
		FirstOffset: w.first, LastOffset: w.last, Blocks: len(w.index),
	}
	data = appendFooter(data, f, crc32c(data[indexStart:]))
	f.ContentSHA256 = hex.EncodeToString(data[len(data)-trailerSize-4-32 : len(data)-trailerSize-4])
	w.out, w.block, w.index, w.keys = nil, nil, nil, nil
	w.err = errFinished
	return data, f.clone(), nil
}

// appendFooter appends the footer of f after the index (f's source digests
// are valid: checkMeta), computing the content digest over every byte
// before it and then the footer CRC.
func appendFooter(data []byte, f *Footer, indexCRC uint32) []byte {
	start := len(data)
	data = appendHeader(data, Version, 0)
	for _, v := range []int64{f.Base, f.End, f.Rows, f.Keys, f.Tombstones, f.FirstOffset, f.LastOffset} {
		data = binary.BigEndian.AppendUint64(data, uint64(v))
	}
	data = binary.BigEndian.AppendUint32(data, uint32(f.Blocks))
	data = binary.BigEndian.AppendUint32(data, indexCRC)
	data = binary.BigEndian.AppendUint32(data, uint32(len(f.Sources)))
	for _, s := range f.Sources {
		d, _ := parseDigest(s.ManifestSHA256)
		data = binary.BigEndian.AppendUint64(data, uint64(s.Gen))
		data = append(data, d[:]...)
	}
	sum := sha256.Sum256(data)
	data = append(data, sum[:]...)
	data = binary.BigEndian.AppendUint32(data, crc32c(data[start:]))
	return container.AppendTrailer(data, uint32(len(data)+trailerSize-start), Magic)
}
