package coord

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"
)

// The default partition counts of the two coordinator topics
// (offsets.topic.num.partitions and transaction.state.log.num.partitions).
const (
	DefaultOffsetsPartitions = 50
	DefaultTxnPartitions     = 50
)

// JavaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + … + s[n-1]
// over the string's UTF-16 code units, in 32-bit two's-complement
// arithmetic (a character outside the BMP counts as its two surrogates).
// Kafka hashes group ids and transactional ids with it.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r1, r2 := utf16.EncodeRune(r); r1 != replacementChar {
			h = 31*h + int32(r1)
			h = 31*h + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// replacementChar is what utf16.EncodeRune returns for a rune that needs no
// surrogate pair.
const replacementChar = '\uFFFD'

// KafkaAbs is Kafka's Utils.abs: the absolute value, except that
// Integer.MIN_VALUE (whose absolute value does not fit) maps to 0, where
// Java's Math.abs would return it unchanged, negative.
func KafkaAbs(n int32) int32 {
	if n == math.MinInt32 {
		return 0
	}
	if n < 0 {
		return -n
	}
	return n
}

// PartitionFor is the coordinator partition of a group id or a
// transactional id, as Kafka's coordinators choose it
// (GroupCoordinatorService/GroupMetadataManager.partitionFor and
// TransactionStateManager.partitionFor): Utils.abs(id.hashCode()) %
// partitionCount.
func PartitionFor(id string, partitionCount int32) (int32, error) {
	if partitionCount < 1 {
		return 0, fmt.Errorf("partition count %d: want at least 1", partitionCount)
	}
	return KafkaAbs(JavaStringHashCode(id)) % partitionCount, nil
}

// GroupOf returns the group id an __consumer_offsets record belongs to:
// the key's group for the types this package decodes; for the newer group
// records (types 3–15, whose keys all start with the group id as an
// int16-length string) the id read from the raw key. ok is false when the
// key names no group this way.
func (r *OffsetsRecord) GroupOf() (string, bool) {
	switch {
	case r.OffsetCommitKey != nil:
		return r.OffsetCommitKey.Group, true
	case r.GroupMetadataKey != nil:
		return r.GroupMetadataKey.Group, true
	}
	k := r.RawKey
	if len(k) < 4 {
		return "", false
	}
	n := int(int16(binary.BigEndian.Uint16(k[2:4])))
	if n < 0 || len(k) < 4+n {
		return "", false
	}
	return string(k[4 : 4+n]), true
}

// TransactionalIDOf returns the transactional id of a __transaction_state
// record; ok is false for an unknown key version.
func (r *TxnRecord) TransactionalIDOf() (string, bool) {
	if r.Key == nil {
		return "", false
	}
	return r.Key.TransactionalID, true
}
