package layout

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// ParseShard parses "i/n" (0 <= i < n).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

// ShardOf is the shard (of n) a partition belongs to: a stable hash of its
// name, so that every worker agrees without coordination.
func ShardOf(tp TopicPartition, n int) int {
	h := fnv.New64a()
	h.Write([]byte(tp.String()))
	return int(h.Sum64() % uint64(n))
}

// Shard keeps the partitions of shard i of n.
func Shard(tps []TopicPartition, i, n int) []TopicPartition {
	var out []TopicPartition
	for _, tp := range tps {
		if ShardOf(tp, n) == i {
			out = append(out, tp)
		}
	}
	return out
}
