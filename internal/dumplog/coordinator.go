package dumplog

import (
	"context"
	"fmt"
	"sort"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka/coord"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Coordinator is the partition of a coordinator topic that holds a group's
// or a transactional id's records, and how it was found.
type Coordinator struct {
	Topic string `json:"topic"`
	// ID is the group id or the transactional id.
	ID        string `json:"id"`
	Partition int32  `json:"partition"`
	// PartitionCount is the topic's partition count the rule used;
	// CountSource says where it came from: "bindings" (the topic's
	// bindings in the store, partitions 0 to N-1) or "flag"
	// (--partition-count).
	PartitionCount int32  `json:"partition_count"`
	CountSource    string `json:"partition_count_source"`
	// HashCode is Java's String.hashCode of ID.
	HashCode int32 `json:"hash_code"`
}

// CoordinatorTopics maps each coordinator topic to the id its partitions
// are chosen by.
var CoordinatorTopics = map[string]string{
	"__consumer_offsets":  "group",
	"__transaction_state": "transactional id",
}

// CoordinatorPartition finds the partition of topic (__consumer_offsets
// or __transaction_state) that Kafka's coordinator writes id's records
// to: Utils.abs(id.hashCode()) % partitionCount (coord.PartitionFor).
// count > 0 is the topic's partition count as the operator gives it;
// otherwise it is the count of the topic's bindings in st, which must be
// partitions 0 to N-1 with none missing (a store holding only some of the
// cluster's partitions, as an import of a few does, cannot tell the count:
// a usage error asking for it). The partition must have a binding.
func CoordinatorPartition(ctx context.Context, st store.Store, topic, id string, count int32) (*Coordinator, error) {
	if _, ok := CoordinatorTopics[topic]; !ok {
		return nil, errkind.Markf(errkind.Usage, "%s is no coordinator topic: --group is for __consumer_offsets, --txn for __transaction_state", topic)
	}
	if id == "" {
		return nil, errkind.Markf(errkind.Usage, "%s: an empty %s", topic, CoordinatorTopics[topic])
	}
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("list bindings in %s: %w", st, err)
	}
	var have []int32
	for _, tp := range tps {
		if tp.Topic == topic {
			have = append(have, tp.Partition)
		}
	}
	sort.Slice(have, func(i, j int) bool { return have[i] < have[j] })
	c := &Coordinator{Topic: topic, ID: id, PartitionCount: count, CountSource: "flag", HashCode: coord.JavaStringHashCode(id)}
	if count <= 0 {
		if len(have) == 0 {
			return nil, errkind.Hint(fmt.Errorf("no binding of %s in this store", topic), "import or bind the topic's partitions first; 'nereusctl status' lists the bindings")
		}
		for i, p := range have {
			if p != int32(i) {
				return nil, errkind.MarkHint(fmt.Errorf("the store binds partitions %s of %s, not 0 to %d: the topic's partition count is unknown", partitionList(have), topic, have[len(have)-1]),
					errkind.Usage, fmt.Sprintf("pass --partition-count N, the cluster's %s (Kafka's default is 50)", countConfig(topic)))
			}
		}
		c.PartitionCount, c.CountSource = int32(len(have)), "bindings"
	}
	p, err := coord.PartitionFor(id, c.PartitionCount)
	if err != nil {
		return nil, errkind.Mark(fmt.Errorf("--partition-count: %w", err), errkind.Usage)
	}
	c.Partition = p
	i := sort.Search(len(have), func(i int) bool { return have[i] >= p })
	if i == len(have) || have[i] != p {
		return nil, errkind.Hint(fmt.Errorf("%s %q lives in %s-%d (Utils.abs(hashCode %d) %% %d partitions), which has no binding in this store", CoordinatorTopics[topic], id, topic, p, c.HashCode, c.PartitionCount),
			fmt.Sprintf("import %s-%d, or check --partition-count against the cluster's %s", topic, p, countConfig(topic)))
	}
	return c, nil
}

func countConfig(topic string) string {
	if topic == "__transaction_state" {
		return "transaction.state.log.num.partitions"
	}
	return "offsets.topic.num.partitions"
}

func partitionList(ps []int32) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		if i == 8 && len(ps) > 9 {
			return s + fmt.Sprintf("… (%d in all)", len(ps))
		}
		s += fmt.Sprint(p)
	}
	return s
}
