package layout

import (
	"fmt"
	"testing"
)

// TestShardsPartitionExactly: for any n, the n shards cover every partition
// exactly once, and the assignment does not depend on the listing order.
func TestShardsPartitionExactly(t *testing.T) {
	var tps []TopicPartition
	for _, topic := range []string{"orders", "payments", "__consumer_offsets", "a.b-c_d"} {
		for p := int32(0); p < 257; p++ {
			tps = append(tps, TopicPartition{Topic: topic, Partition: p})
		}
	}
	for _, n := range []int{1, 2, 3, 4, 7, 16, 50, 1000} {
		seen := map[TopicPartition]int{}
		sizes := make([]int, n)
		for i := 0; i < n; i++ {
			for _, tp := range Shard(tps, i, n) {
				seen[tp]++
				sizes[i]++
			}
		}
		if len(seen) != len(tps) {
			t.Fatalf("n=%d: %d of %d partitions covered", n, len(seen), len(tps))
		}
		for tp, c := range seen {
			if c != 1 {
				t.Fatalf("n=%d: %s in %d shards", n, tp, c)
			}
		}
		// reversed listing, same shards
		rev := make([]TopicPartition, len(tps))
		for i := range tps {
			rev[len(tps)-1-i] = tps[i]
		}
		for i := 0; i < n; i++ {
			a, b := Shard(tps, i, n), Shard(rev, i, n)
			if len(a) != len(b) {
				t.Fatalf("n=%d shard %d depends on listing order", n, i)
			}
		}
		if n <= 16 {
			for i, s := range sizes {
				if want := len(tps) / n; s < want/2 {
					t.Fatalf("n=%d: shard %d has %d partitions, expected about %d", n, i, s, want)
				}
			}
		}
	}
	for _, bad := range []string{"", "1", "2/2", "-1/3", "a/b", "0/0", "1/"} {
		if _, _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if i, n, err := ParseShard("3/8"); err != nil || i != 3 || n != 8 {
		t.Fatal(fmt.Sprint(i, n, err))
	}
}
