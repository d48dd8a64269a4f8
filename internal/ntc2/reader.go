package ntc2

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/container"
)

// TailLen reads the end of an object (the last len(tail) bytes, at least
// the 8-byte trailer) and returns how many bytes from the end OpenTail
// needs: the footer and the block index. When tail does not hold the whole
// footer yet it returns the footer's length; read that much and call it
// again (at most two rounds; SuggestedTailRead usually needs none).
func TailLen(tail []byte) (int, error) {
	n, err := container.ParseTrailer(tail, Magic, "an NTC2 object")
	if err != nil {
		return 0, corrupt("footer", CheckStructure, "%v", err)
	}
	if n < footerFixed+sourceSize || n > maxFooterBytes || (n-footerFixed)%sourceSize != 0 {
		return 0, corrupt("footer", CheckStructure, "footer length %d is not %d + 40·sources with 1..%d sources", n, footerFixed, MaxSources)
	}
	if int(n) > len(tail) {
		return int(n), nil
	}
	foot := tail[len(tail)-int(n):]
	if err := checkFooterCRC(foot); err != nil {
		return 0, err
	}
	blocks := binary.BigEndian.Uint32(foot[offBlocks:])
	return int(n) + int(blocks)*entrySize, nil
}

func checkFooterCRC(foot []byte) error {
	body := len(foot) - trailerSize - 4
	stored := binary.BigEndian.Uint32(foot[body:])
	if got := crc32c(foot[:body]); got != stored {
		return corrupt("footer", CheckCRC, "crc32c mismatch: stored 0x%08x, computed 0x%08x", stored, got)
	}
	return nil
}

// Index is the parsed footer and block index of an object: what OpenTail
// returns from a ranged read of the tail, and what a Reader is built on.
type Index struct {
	l        layout
	footer   Footer
	sha      [32]byte
	entries  []entry
	header   []byte // the footer's header copy
	size     int64
	footLen  int
	shaPos   int64 // where the content digest is stored: it covers [0, shaPos)
	idxStart int64
}

// OpenTail parses the footer and the block index from tail, the last
// len(tail) bytes of an object of size bytes. It checks the footer's and
// the index's CRC-32C, the version, and the structure and bounds of every
// index entry against size; it reads no block and does not check the
// content digest (Reader.Verify does). When tail is too short it returns an
// error wrapping ErrShortTail: read TailLen(tail) bytes and retry.
func OpenTail(tail []byte, size int64) (*Index, error) {
	if int64(len(tail)) > size {
		return nil, fmt.Errorf("ntc2: footer: a tail of %d bytes is longer than the %d-byte object", len(tail), size)
	}
	need, err := TailLen(tail)
	if err != nil {
		return nil, err
	}
	if int64(need) > size-headerSize {
		return nil, corrupt("footer", CheckStructure, "footer and index of %d bytes leave no room for the header in %d bytes", need, size)
	}
	if need > len(tail) {
		return nil, fmt.Errorf("ntc2: footer: %w: have %d bytes, need %d", ErrShortTail, len(tail), need)
	}
	n := int(binary.BigEndian.Uint32(tail[len(tail)-trailerSize:]))
	foot := tail[len(tail)-n:]
	if string(foot[:4]) != Magic {
		return nil, corrupt("footer", CheckStructure, "header copy: magic %q, want %q", foot[:4], Magic)
	}
	l, err := resolveVersion(binary.BigEndian.Uint16(foot[4:]))
	if err != nil {
		return nil, err
	}
	if flags := binary.BigEndian.Uint16(foot[6:]); flags != 0 {
		return nil, corrupt("footer", CheckStructure, "header copy: flags 0x%04x, version %d defines none", flags, l.version)
	}
	ix := &Index{l: l, header: foot[:l.headerSize:l.headerSize], size: size, footLen: n}
	if err := ix.parseFooter(foot); err != nil {
		return nil, err
	}
	ix.idxStart = size - int64(n) - int64(len(ix.entries))*int64(l.entrySize)
	idx := tail[len(tail)-need : len(tail)-n]
	if got, want := crc32c(idx), binary.BigEndian.Uint32(foot[offIndexCRC:]); got != want {
		return nil, corrupt("index", CheckCRC, "crc32c mismatch: stored 0x%08x, computed 0x%08x", want, got)
	}
	for i := range ix.entries {
		ix.entries[i] = parseEntry(idx[i*l.entrySize:])
	}
	if err := ix.checkIndex(); err != nil {
		return nil, err
	}
	return ix, nil
}

// parseFooter reads the footer fields (its CRC is checked) and checks them
// on their own.
func (ix *Index) parseFooter(foot []byte) error {
	u64 := func(off int) int64 { return int64(binary.BigEndian.Uint64(foot[off:])) }
	f := &ix.footer
	f.Base, f.End = u64(offBase), u64(offEnd)
	f.Rows, f.Keys, f.Tombstones = u64(offRows), u64(offKeys), u64(offTombstones)
	f.FirstOffset, f.LastOffset = u64(offFirst), u64(offLast)
	blocks := binary.BigEndian.Uint32(foot[offBlocks:])
	nsrc := binary.BigEndian.Uint32(foot[offSources:])
	if want := footerFixed + int(nsrc)*sourceSize; nsrc == 0 || nsrc > MaxSources || len(foot) != want {
		return corrupt("footer", CheckStructure, "%d sources in a footer of %d bytes", nsrc, len(foot))
	}
	f.Sources = make([]Source, nsrc)
	for i := range f.Sources {
		b := foot[offSourceList+i*sourceSize:]
		f.Sources[i] = Source{Gen: int64(binary.BigEndian.Uint64(b)), ManifestSHA256: hex.EncodeToString(b[8:40])}
		if f.Sources[i].Gen < 0 || i > 0 && f.Sources[i].Gen <= f.Sources[i-1].Gen {
			return corrupt("footer", CheckStructure, "source %d: gen %d is negative or not strictly ascending", i, f.Sources[i].Gen)
		}
	}
	ix.shaPos = ix.size - int64(len(foot)) + int64(offSourceList+int(nsrc)*sourceSize)
	copy(ix.sha[:], foot[offSourceList+int(nsrc)*sourceSize:])
	f.ContentSHA256 = hex.EncodeToString(ix.sha[:])
	if f.Base < 0 || f.End < f.Base {
		return corrupt("footer", CheckStructure, "range [%d, %d) (want 0 <= base <= end)", f.Base, f.End)
	}
	if f.Rows < 0 || f.Keys < 0 || f.Tombstones < 0 || f.Keys > f.Rows || f.Tombstones > f.Rows || (f.Rows == 0) != (f.Keys == 0) {
		return corrupt("footer", CheckCount, "rows %d, keys %d, tombstones %d do not fit together", f.Rows, f.Keys, f.Tombstones)
	}
	if int64(blocks) > (ix.size-int64(len(foot))-headerSize)/entrySize {
		return corrupt("footer", CheckStructure, "%d blocks cannot fit in %d bytes", blocks, ix.size)
	}
	f.Blocks = int(blocks)
	ix.entries = make([]entry, blocks)
	return nil
}

// checkIndex checks every entry against the layout, the caps, the view's
// range and its neighbours, and the footer's totals against the entries.
func (ix *Index) checkIndex() error {
	f := &ix.footer
	next := uint64(ix.l.headerSize)
	end := uint64(ix.idxStart)
	var rows uint64
	for i := range ix.entries {
		e := &ix.entries[i]
		switch e.codec {
		case CodecNone:
			if e.stored != e.raw {
				return entryCorrupt(i, CheckStructure, "uncompressed, but stored length %d differs from raw length %d", e.stored, e.raw)
			}
		case CodecZstd:
			if e.stored == 0 {
				return entryCorrupt(i, CheckStructure, "zstd with no stored bytes")
			}
		default:
			return entryCorrupt(i, CheckStructure, "unknown codec %d", e.codec)
		}
		if e.rows == 0 || uint64(e.rows)*minRowBytes > uint64(e.raw) {
			return entryCorrupt(i, CheckStructure, "%d rows in %d raw bytes (a row takes at least %d)", e.rows, e.raw, minRowBytes)
		}
		if e.raw > MaxBlockRaw || e.rows > 1 && e.raw > MaxMultiRowBlockRaw {
			return entryCorrupt(i, CheckStructure, "%d raw bytes in %d rows exceed the cap (%d for one row, %d for more)", e.raw, e.rows, MaxBlockRaw, MaxMultiRowBlockRaw)
		}
		if e.off != next {
			return entryCorrupt(i, CheckStructure, "byte offset %d, want %d (blocks lie back to back)", e.off, next)
		}
		if uint64(e.stored) > end-next {
			return entryCorrupt(i, CheckStructure, "%d bytes at %d run past the index at %d", e.stored, e.off, end)
		}
		next += uint64(e.stored)
		if e.first < f.Base || e.last >= f.End || e.first > e.last {
			return entryCorrupt(i, CheckOrder, "offsets %d..%d outside the view's range [%d, %d)", e.first, e.last, f.Base, f.End)
		}
		if uint64(e.last-e.first) < uint64(e.rows)-1 {
			return entryCorrupt(i, CheckStructure, "%d rows cannot have distinct offsets in %d..%d", e.rows, e.first, e.last)
		}
		if i > 0 && e.first <= ix.entries[i-1].last {
			return entryCorrupt(i, CheckOrder, "first offset %d not above the previous block's last offset %d", e.first, ix.entries[i-1].last)
		}
		rows += uint64(e.rows)
	}
	if next != end {
		return corrupt("index", CheckStructure, "blocks end at %d, the index starts at %d", next, end)
	}
	if rows != uint64(f.Rows) {
		return corrupt("footer", CheckCount, "%d rows, the index holds %d", f.Rows, rows)
	}
	first, last := int64(-1), int64(-1)
	if n := len(ix.entries); n > 0 {
		first, last = ix.entries[0].first, ix.entries[n-1].last
	}
	if f.FirstOffset != first || f.LastOffset != last {
		return corrupt("footer", CheckCount, "first and last offsets %d, %d; the index says %d, %d", f.FirstOffset, f.LastOffset, first, last)
	}
	return nil
}

// Footer returns a copy of the footer.
func (ix *Index) Footer() *Footer { return ix.footer.clone() }

// Blocks describes the block index in order (Offset and StoredLen are the
// byte range to fetch for DecodeBlock).
func (ix *Index) Blocks() []BlockInfo {
	out := make([]BlockInfo, len(ix.entries))
	for i := range ix.entries {
		out[i] = ix.entries[i].info()
	}
	return out
}

// DecodeBlock checks and decodes the stored bytes of block i (fetched by a
// ranged read of its BlockInfo range): length, CRC-32C, decompression
// capped at the index's raw length, every row, and the rows against the
// index entry (count, first and last offset, largest timestamp). The rows'
// byte slices alias stored or a fresh decompression buffer, never reused:
// they stay valid, and must not be modified.
func (ix *Index) DecodeBlock(i int, stored []byte) ([]Row, error) {
	rows, _, err := ix.decodeBlock(i, stored, nil, nil)
	return rows, err
}

// decodeBlock is DecodeBlock decoding into the reused buffers rows and raw
// (nil: new ones), which it returns grown; the rows alias raw or stored.
func (ix *Index) decodeBlock(i int, stored []byte, rows []Row, raw []byte) ([]Row, []byte, error) {
	if i < 0 || i >= len(ix.entries) {
		return rows, raw, fmt.Errorf("ntc2: block %d: the view has %d blocks", i, len(ix.entries))
	}
	e := &ix.entries[i]
	if len(stored) != int(e.stored) {
		return rows, raw, blockCorrupt(i, CheckStructure, nil, "stored bytes are %d long, the index says %d", len(stored), e.stored)
	}
	if got := crc32c(stored); got != e.crc {
		return rows, raw, blockCorrupt(i, CheckCRC, nil, "crc32c mismatch: stored 0x%08x, computed 0x%08x", e.crc, got)
	}
	plain := stored
	if e.codec == CodecZstd {
		out, err := decompressZstd(stored, e.raw, raw)
		if err != nil {
			return rows, raw, blockCorrupt(i, CheckDecode, err, "cannot rebuild the raw bytes")
		}
		plain, raw = out, out
	}
	if cap(rows) < int(e.rows) {
		rows = make([]Row, e.rows)
	}
	rows = rows[:e.rows]
	d := rowDecoder{raw: plain, ctx: rowCtx{first: true, base: ix.footer.Base}}
	maxTS := int64(-1 << 63)
	for j := range rows {
		if err := d.next(&rows[j]); err != nil {
			return rows, raw, blockCorrupt(i, CheckDecode, err, "row %d of %d", j, e.rows)
		}
		maxTS = max(maxTS, rows[j].Timestamp)
	}
	if d.pos != len(plain) {
		return rows, raw, blockCorrupt(i, CheckDecode, nil, "%d bytes after the last of %d rows", len(plain)-d.pos, e.rows)
	}
	if first, last := rows[0].Offset, rows[len(rows)-1].Offset; first != e.first || last != e.last {
		return rows, raw, blockCorrupt(i, CheckDecode, nil, "rows span offsets %d..%d, the index says %d..%d", first, last, e.first, e.last)
	}
	if maxTS != e.maxTS {
		return rows, raw, blockCorrupt(i, CheckDecode, nil, "largest timestamp %d, the index says %d", maxTS, e.maxTS)
	}
	return rows, raw, nil
}

// Reader reads a whole object held in memory.
type Reader struct {
	*Index
	data []byte
}

// Open parses the header, the trailer, the footer and the block index of
// a whole object and checks their structure, checksums and bounds. It
// decompresses no block and does not check the content digest (Block,
// Rows and Verify do the rest).
func Open(data []byte) (*Reader, error) {
	if err := container.CheckMagic(data, Magic, "an NTC2 object"); err != nil {
		return nil, corrupt("header", CheckStructure, "%v", err)
	}
	version, flags, err := container.ParsePrefix(data)
	if err != nil {
		return nil, corrupt("header", CheckStructure, "%v", err)
	}
	l, err := resolveVersion(version)
	if err != nil {
		return nil, err
	}
	if len(data) < l.headerSize {
		return nil, corrupt("header", CheckStructure, "truncated: %d bytes", len(data))
	}
	if flags != 0 {
		return nil, corrupt("header", CheckStructure, "flags 0x%04x, version %d defines none", flags, l.version)
	}
	ix, err := OpenTail(data, int64(len(data)))
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(data[:l.headerSize], ix.header) {
		return nil, corrupt("header", CheckStructure, "header % x differs from the footer's copy % x", data[:l.headerSize], ix.header)
	}
	return &Reader{Index: ix, data: data}, nil
}

// Block checks and decodes block i (see DecodeBlock).
func (r *Reader) Block(i int) ([]Row, error) {
	if i < 0 || i >= len(r.entries) {
		return nil, fmt.Errorf("ntc2: block %d: the view has %d blocks", i, len(r.entries))
	}
	e := &r.entries[i]
	return r.DecodeBlock(i, r.data[e.off:e.off+uint64(e.stored)])
}

// Rows calls fn for every row in offset order, one block decoded at a
// time. It stops at the first corrupt block (a *CorruptError) or at the
// first error fn returns, which it returns as is. Rows passed to fn alias
// buffers that are never reused (see DecodeBlock).
func (r *Reader) Rows(fn func(Row) error) error {
	for i := range r.entries {
		rows, err := r.Block(i)
		if err != nil {
			return err
		}
		for _, row := range rows {
			if err := fn(row); err != nil {
				return err
			}
		}
	}
	return nil
}

// Finding is one failed check of Verify.
type Finding struct {
	Check  string `json:"check"` // CheckStructure, CheckCRC, CheckSHA256, CheckDecode, CheckCount, CheckOrder
	Block  int    `json:"block"` // the block (or index entry) concerned, -1 for none
	Detail string `json:"detail"`
}

// FindingOf turns an error of this package (from Open, OpenTail, Block,
// Rows) into a Finding.
func FindingOf(err error) Finding {
	var ce *CorruptError
	if errors.As(err, &ce) {
		d := ce.Detail
		if ce.Err != nil {
			d += ": " + ce.Err.Error()
		}
		if ce.Part != "block" {
			d = ce.Part + ": " + d
		}
		return Finding{Check: ce.Check, Block: ce.Block, Detail: d}
	}
	return Finding{Check: CheckStructure, Block: -1, Detail: err.Error()}
}

// Verify checks what Open did not: every block (CRC-32C, decompression,
// rows decode, rows against the index entry), the footer's tombstone and
// distinct-key counts against the rows (when every block decodes), and the
// content SHA-256. No findings: valid. Its memory is one block plus the
// distinct-key set (see Writer).
func (r *Reader) Verify() []Finding {
	var out []Finding
	keys := newKeySet(min(r.footer.Keys, 1<<20))
	var tombstones int64
	ok := true
	var rows []Row // reused from block to block, with raw
	var raw []byte
	for i := range r.entries {
		e := &r.entries[i]
		var err error
		rows, raw, err = r.decodeBlock(i, r.data[e.off:e.off+uint64(e.stored)], rows, raw)
		if err != nil {
			out = append(out, FindingOf(err))
			ok = false
			continue
		}
		for j := range rows {
			if rows[j].Value == nil {
				tombstones++
			}
			keys.add(keyHash(rows[j].Key))
		}
	}
	if ok {
		if n := keys.len(); n != r.footer.Keys {
			out = append(out, Finding{Check: CheckCount, Block: -1, Detail: fmt.Sprintf("footer: %d distinct keys, the rows hold %d", r.footer.Keys, n)})
		}
		if tombstones != r.footer.Tombstones {
			out = append(out, Finding{Check: CheckCount, Block: -1, Detail: fmt.Sprintf("footer: %d tombstones, the rows hold %d", r.footer.Tombstones, tombstones)})
		}
	}
	if got := sha256.Sum256(r.data[:r.shaPos]); got != r.sha {
		out = append(out, Finding{Check: CheckSHA256, Block: -1, Detail: fmt.Sprintf("content sha256 mismatch: stored %x, computed %x", r.sha, got)})
	}
	return out
}
