package demo

import (
	"fmt"

	"github.com/nereusctl/nereusctl/internal/kafka/coord"
)

// internalRecord returns the next __consumer_offsets or __transaction_state
// record: real coordinator records, encoded as Kafka encodes them.
func (g *generator) internalRecord() (key, value []byte, err error) {
	g.internalN++
	if g.kind == "offsets" {
		return g.offsetsRecord()
	}
	return g.txnLogRecord()
}

// offsetsRecord: mostly OffsetCommit (key type 1, value v3), a GroupMetadata
// record (key type 2, value v3) every few records, and now and then a
// tombstone for an expired offset.
func (g *generator) offsetsRecord() ([]byte, []byte, error) {
	group := fmt.Sprintf("group-%d", g.rng.IntN(4))
	switch {
	case g.internalN%7 == 0:
		gen := int32(g.internalN / 7)
		leader := "consumer-1-" + group
		proto := "range"
		v := coord.GroupMetadataValue{
			Version: 3, ProtocolType: "consumer", Generation: gen, Protocol: &proto, Leader: &leader,
			CurrentStateTimestamp: g.clock,
			Members: []coord.MemberMetadata{{
				MemberID: leader, ClientID: "consumer-1", ClientHost: "/10.0.0.7",
				RebalanceTimeout: 300000, SessionTimeout: 45000,
				Subscription: []byte{0, 1, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 0},
				Assignment:   []byte{0, 1, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
			}},
		}
		r := &coord.OffsetsRecord{Type: 2, GroupMetadataKey: &coord.GroupMetadataKey{Group: group}, GroupMetadataValue: &v}
		return r.Encode()
	default:
		k := coord.OffsetCommitKey{Version: 1, Group: group, Topic: []string{"orders", "payments"}[g.rng.IntN(2)], Partition: int32(g.rng.IntN(2))}
		r := &coord.OffsetsRecord{Type: 1, OffsetCommitKey: &k}
		if g.internalN%23 == 0 {
			r.Tombstone = true
			return r.Encode()
		}
		v := coord.NewOffsetCommitValue(3)
		v.Offset = int64(g.internalN * 10)
		v.LeaderEpoch = g.leaderEpoch
		v.CommitTimestamp = g.clock
		r.OffsetCommitValue = &v
		return r.Encode()
	}
}

// txnLogRecord walks each transactional id of the payments topic through
// Ongoing → PrepareCommit/PrepareAbort → CompleteCommit/CompleteAbort.
func (g *generator) txnLogRecord() ([]byte, []byte, error) {
	id := g.rng.IntN(4)
	txnID := fmt.Sprintf("payments-tx-%d-%d", id/2, id%2)
	steps := []coord.TxnStatus{1, 2, 4, 1, 3, 5} // Ongoing, PrepareCommit, CompleteCommit, Ongoing, PrepareAbort, CompleteAbort
	status := steps[(g.internalN/4+id)%len(steps)]
	v := coord.NewTransactionLogValue(0)
	v.ProducerID = int64(14000 + id)
	v.ProducerEpoch = int16(g.internalN / 50)
	v.TransactionTimeoutMs = 60000
	v.TransactionStatus = status
	if status != 4 && status != 5 {
		v.TransactionPartitions = []coord.TxnPartitions{{Topic: "payments", PartitionIDs: []int32{int32(id / 2)}}}
	} else {
		v.TransactionPartitions = []coord.TxnPartitions{}
	}
	v.LastUpdateTimestampMs = g.clock
	v.StartTimestampMs = g.clock - 500
	r := &coord.TxnRecord{KeyVersion: 0, Key: &coord.TransactionLogKey{Version: 0, TransactionalID: txnID}, Value: &v}
	return r.Encode()
}
