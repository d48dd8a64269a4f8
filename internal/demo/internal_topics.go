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

// coordIDs returns the first n ids of the form format (with 0, 1, …)
// whose coordinator partition among partitions is p, by Kafka's rule
// (coord.PartitionFor). The ids are deterministic.
func coordIDs(format string, p, partitions int32, n int) []string {
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprintf(format, i)
		if q, err := coord.PartitionFor(id, max(partitions, 1)); err == nil && q == p {
			out = append(out, id)
		}
	}
	return out
}

// offsetsRecord: mostly OffsetCommit (key type 1, value v3), a GroupMetadata
// record (key type 2, value v3) every few records, and now and then a
// tombstone for an expired offset.
func (g *generator) offsetsRecord() ([]byte, []byte, error) {
	// The demo's four groups shared among the partitions (the same draw
	// as ever), each written only to its coordinator partition, as a
	// group coordinator does: group-0 and group-2 to partition 0 of two,
	// group-1 and group-3 to partition 1.
	ids := coordIDs("group-%d", g.partition, g.partitions, max(1, 4/int(max(g.partitions, 1))))
	group := ids[g.rng.IntN(4)%len(ids)]
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
	if p, err := coord.PartitionFor(txnID, max(g.partitions, 1)); err != nil || p != g.partition {
		// Another coordinator partition's id: this partition's own, in
		// the same slot (a transactional id's records live only on the
		// partition Kafka's TransactionStateManager.partitionFor gives).
		txnID = coordIDs("payments-tx-%d", g.partition, g.partitions, 4)[id]
	}
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
