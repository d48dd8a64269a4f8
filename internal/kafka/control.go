package kafka

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, from its key
// (ControlRecordType.java).
type ControlType int16

// Control record types.
const (
	ControlAbort          ControlType = 0
	ControlCommit         ControlType = 1
	ControlLeaderChange   ControlType = 2
	ControlSnapshotHeader ControlType = 3
	ControlSnapshotFooter ControlType = 4
	ControlKRaftVersion   ControlType = 5
	ControlKRaftVoters    ControlType = 6
)

// LeaderChange is the name the package contract uses for
// ControlLeaderChange.
const LeaderChange = ControlLeaderChange

var controlNames = [...]string{"ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"}

// String returns Kafka's name for the type, or "UNKNOWN(n)".
func (t ControlType) String() string {
	if t >= 0 && int(t) < len(controlNames) {
		return controlNames[t]
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// Known reports whether t is a type Kafka defines; consumers ignore the
// others.
func (t ControlType) Known() bool { return t >= 0 && int(t) < len(controlNames) }

// IsTxnMarker reports whether t is COMMIT or ABORT.
func (t ControlType) IsTxnMarker() bool { return t == ControlAbort || t == ControlCommit }

const (
	controlKeySize      = 4 // int16 version + int16 type
	endTxnMarkerSize    = 6 // int16 version + int32 coordinatorEpoch
	controlKeyVersion   = 0
	endTxnMarkerVersion = 0
)

// ParseControlKey reads a control record key: int16 version, int16 type.
// As in Kafka, a negative version is an error, a version above 0 is read as
// version 0, bytes after the first four are ignored, and an unknown type is
// returned as is (check Known).
func ParseControlKey(key []byte) (version int16, t ControlType, err error) {
	if len(key) < controlKeySize {
		return 0, 0, fmt.Errorf("parse control key: %d bytes, need %d: %w", len(key), controlKeySize, ErrCorrupt)
	}
	version = int16(binary.BigEndian.Uint16(key))
	if version < 0 {
		return 0, 0, fmt.Errorf("parse control key: negative version %d: %w", version, ErrCorrupt)
	}
	return version, ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// ControlRecordKey returns the 4-byte key of a control record of type t.
func ControlRecordKey(t ControlType) []byte {
	b := make([]byte, controlKeySize)
	binary.BigEndian.PutUint16(b, controlKeyVersion)
	binary.BigEndian.PutUint16(b[2:], uint16(t))
	return b
}

// EndTxnMarker is the value of a COMMIT or ABORT control record
// (EndTransactionMarker.java).
type EndTxnMarker struct {
	Version          int16
	CoordinatorEpoch int32
}

// ParseEndTxnMarker reads a marker value: int16 version, int32
// coordinatorEpoch. As in Kafka, a negative version is an error, a higher
// version is read as version 0 and trailing bytes are ignored.
func ParseEndTxnMarker(value []byte) (EndTxnMarker, error) {
	if len(value) < endTxnMarkerSize {
		return EndTxnMarker{}, fmt.Errorf("parse end txn marker: %d bytes, need %d: %w", len(value), endTxnMarkerSize, ErrCorrupt)
	}
	m := EndTxnMarker{
		Version:          int16(binary.BigEndian.Uint16(value)),
		CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:])),
	}
	if m.Version < 0 {
		return EndTxnMarker{}, fmt.Errorf("parse end txn marker: negative version %d: %w", m.Version, ErrCorrupt)
	}
	return m, nil
}

// Encode returns the 6-byte marker value.
func (m EndTxnMarker) Encode() []byte {
	b := make([]byte, endTxnMarkerSize)
	binary.BigEndian.PutUint16(b, uint16(m.Version))
	binary.BigEndian.PutUint32(b[2:], uint32(m.CoordinatorEpoch))
	return b
}

// MarkerBatch builds the end-transaction marker batch Kafka writes
// (MemoryRecords.withEndTransactionMarker): uncompressed, CreateTime,
// control and transactional, the producer's id and epoch, base sequence -1,
// one record at baseOffset with a COMMIT or ABORT key and a version-0
// marker value, timestamp as both base and max timestamp.
func MarkerBatch(baseOffset int64, leaderEpoch int32, pid int64, epoch int16, commit bool, coordinatorEpoch int32, timestamp int64) ([]byte, error) {
	t := ControlAbort
	if commit {
		t = ControlCommit
	}
	rec := Record{
		Key:       ControlRecordKey(t),
		Value:     EndTxnMarker{Version: endTxnMarkerVersion, CoordinatorEpoch: coordinatorEpoch}.Encode(),
		Offset:    baseOffset,
		Timestamp: timestamp,
	}
	spec := BatchSpec{
		BaseOffset:           baseOffset,
		PartitionLeaderEpoch: leaderEpoch,
		Codec:                CodecNone,
		TimestampType:        CreateTime,
		Transactional:        true,
		Control:              true,
		DeleteHorizonMs:      NoTimestamp,
		BaseTimestamp:        timestamp,
		MaxTimestamp:         timestamp,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		BaseSequence:         NoSequence,
		Records:              []Record{rec},
	}
	b, err := EncodeBatch(spec)
	if err != nil {
		return nil, fmt.Errorf("marker batch at offset %d: %w", baseOffset, err)
	}
	return b, nil
}
