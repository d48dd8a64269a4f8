package kafka

import (
	"encoding/binary"
	"fmt"
)

// TimeIndexEntrySize is the size of one .timeindex entry: an 8-byte
// timestamp and a 4-byte offset relative to the segment's base
// (storage/.../log/TimeIndex.java, ENTRY_SIZE).
const TimeIndexEntrySize = 12

// TimeIndexEntry is one entry of a segment's time index: the largest
// timestamp so far and the offset of the batch holding it.
type TimeIndexEntry struct {
	Timestamp int64
	Offset    int64
}

// ReadTimeIndex decodes a segment's .timeindex file (TimeIndex.parseEntry:
// big-endian timestamp, then the offset relative to base). The file must
// hold whole entries. A preallocated index's unused tail (entries of zero
// bytes after the last one) ends it, as TimeIndex's entries count does.
func ReadTimeIndex(b []byte, base int64) ([]TimeIndexEntry, error) {
	if len(b)%TimeIndexEntrySize != 0 {
		return nil, fmt.Errorf("time index of %d bytes is not a whole number of %d-byte entries: %w", len(b), TimeIndexEntrySize, ErrCorrupt)
	}
	var out []TimeIndexEntry
	for i := 0; i+TimeIndexEntrySize <= len(b); i += TimeIndexEntrySize {
		ts := int64(binary.BigEndian.Uint64(b[i:]))
		rel := int64(binary.BigEndian.Uint32(b[i+8:]))
		if ts == 0 && rel == 0 && len(out) > 0 {
			break
		}
		out = append(out, TimeIndexEntry{Timestamp: ts, Offset: base + rel})
	}
	return out, nil
}
