package kafka

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
)

// Producer-state snapshot files, <20-digit offset>.snapshot
// (ProducerStateManager.readSnapshot/writeSnapshot, ProducerSnapshot.json):
//
//	int16  version (1)
//	uint32 crc      CRC-32C of bytes [6, end)
//	int32  count
//	count × 46-byte entries: producerId int64, epoch int16,
//	  lastSequence int32, lastOffset int64, offsetDelta int32,
//	  timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64
//
// Kafka writes the entries in the iteration order of its producers map (a
// java.util.HashMap keyed by producer id), which is not a defined order:
// readers must not depend on it. ReadSnapshot keeps file order and
// WriteSnapshot writes the order given, so broker files round-trip byte for
// byte; SortSnapshotEntries gives nereusctl's own deterministic order.

const (
	snapshotVersion    = 1
	snapshotHeaderSize = 10 // version + crc + count
	snapshotEntrySize  = 46
	snapshotCRCOffset  = 2
	snapshotDataOffset = 6 // PRODUCER_ENTRIES_OFFSET: the CRC covers [6, end)
)

// SnapshotEntry is one producer of a .snapshot file: its epoch, its last
// batch (lastSequence, lastOffset, offsetDelta, timestamp), the coordinator
// epoch of its last marker and the first offset of its open transaction
// (-1 none). A LastOffset below 0 means the producer has no batch metadata.
type SnapshotEntry struct {
	ProducerID            int64
	Epoch                 int16
	LastSequence          int32
	LastOffset            int64
	OffsetDelta           int32
	Timestamp             int64
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
}

// ReadSnapshot parses a producer snapshot, checking version 1, the CRC and
// that the file holds exactly the declared entries.
func ReadSnapshot(b []byte) ([]SnapshotEntry, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("read producer snapshot: %d bytes, header is %d: %w", len(b), snapshotHeaderSize, ErrTruncated)
	}
	be := binary.BigEndian
	if v := int16(be.Uint16(b)); v != snapshotVersion {
		return nil, fmt.Errorf("read producer snapshot: version %d, want %d: %w", v, snapshotVersion, ErrCorrupt)
	}
	stored := be.Uint32(b[snapshotCRCOffset:])
	if got := crc32.Checksum(b[snapshotDataOffset:], castagnoli); got != stored {
		return nil, fmt.Errorf("read producer snapshot: stored crc %08x, computed %08x: %w", stored, got, ErrCRC)
	}
	count := int32(be.Uint32(b[snapshotDataOffset:]))
	if count < 0 {
		return nil, fmt.Errorf("read producer snapshot: negative entry count %d: %w", count, ErrCorrupt)
	}
	body := b[snapshotHeaderSize:]
	if want := int64(count) * snapshotEntrySize; int64(len(body)) != want {
		if int64(len(body)) < want {
			return nil, fmt.Errorf("read producer snapshot: %d entries need %d bytes, %d present: %w", count, want, len(body), ErrTruncated)
		}
		return nil, fmt.Errorf("read producer snapshot: %d bytes after %d entries: %w", int64(len(body))-want, count, ErrCorrupt)
	}
	entries := make([]SnapshotEntry, count)
	for i := range entries {
		e := body[i*snapshotEntrySize:]
		entries[i] = SnapshotEntry{
			ProducerID:            int64(be.Uint64(e[0:])),
			Epoch:                 int16(be.Uint16(e[8:])),
			LastSequence:          int32(be.Uint32(e[10:])),
			LastOffset:            int64(be.Uint64(e[14:])),
			OffsetDelta:           int32(be.Uint32(e[22:])),
			Timestamp:             int64(be.Uint64(e[26:])),
			CoordinatorEpoch:      int32(be.Uint32(e[34:])),
			CurrentTxnFirstOffset: int64(be.Uint64(e[38:])),
		}
	}
	return entries, nil
}

// WriteSnapshot encodes entries, in the order given, as a version-1
// producer snapshot.
func WriteSnapshot(entries []SnapshotEntry) []byte {
	be := binary.BigEndian
	b := make([]byte, snapshotHeaderSize+len(entries)*snapshotEntrySize)
	be.PutUint16(b, snapshotVersion)
	be.PutUint32(b[snapshotDataOffset:], uint32(len(entries)))
	for i, en := range entries {
		e := b[snapshotHeaderSize+i*snapshotEntrySize:]
		be.PutUint64(e[0:], uint64(en.ProducerID))
		be.PutUint16(e[8:], uint16(en.Epoch))
		be.PutUint32(e[10:], uint32(en.LastSequence))
		be.PutUint64(e[14:], uint64(en.LastOffset))
		be.PutUint32(e[22:], uint32(en.OffsetDelta))
		be.PutUint64(e[26:], uint64(en.Timestamp))
		be.PutUint32(e[34:], uint32(en.CoordinatorEpoch))
		be.PutUint64(e[38:], uint64(en.CurrentTxnFirstOffset))
	}
	be.PutUint32(b[snapshotCRCOffset:], crc32.Checksum(b[snapshotDataOffset:], castagnoli))
	return b
}

// SortSnapshotEntries orders entries by producer id, nereusctl's canonical
// order for snapshots it writes itself.
func SortSnapshotEntries(entries []SnapshotEntry) {
	slices.SortFunc(entries, func(a, b SnapshotEntry) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
}

// SnapshotFileName is the name Kafka gives a snapshot taken at offset: the
// offset as 20 digits (the exclusive end of the state it holds) +
// ".snapshot".
func SnapshotFileName(offset int64) string { return fmt.Sprintf("%020d.snapshot", offset) }
