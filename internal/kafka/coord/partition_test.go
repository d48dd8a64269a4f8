package coord

import (
	"math"
	"testing"
)

// The values are Java's: "abc".hashCode() == 96354, "".hashCode() == 0,
// and the strings below hash as a JVM computes them (a supplementary
// character counts as its two UTF-16 surrogates).
func TestJavaStringHashCode(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"abc", 96354},
		{"my-first-application", 1345035218},
		{"payments-tx-0-0", -1884898902},
		// U+1F600 is the surrogates 0xD83D 0xDE00: 0xD83D*31 + 0xDE00.
		{"\U0001F600", 0xD83D*31 + 0xDE00},
		// "polygenelubricants".hashCode() is Integer.MIN_VALUE.
		{"polygenelubricants", math.MinInt32},
	} {
		if got := JavaStringHashCode(c.s); got != c.want {
			t.Errorf("JavaStringHashCode(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestPartitionFor(t *testing.T) {
	for _, c := range []struct {
		id   string
		n    int32
		want int32
	}{
		// The fixture's groups sit in the partitions Kafka wrote them to.
		{"my-first-application", 50, 18},
		{"my-second-application", 50, 12},
		{"my-firstd-application", 50, 32},
		{"console-consumer-48266", 50, 17},
		{"console-consumer-43384", 50, 33},
		// A negative hash: Utils.abs, not Java's % (which gives -2).
		{"payments-tx-0-0", 50, 2},
		// Integer.MIN_VALUE: Utils.abs gives 0, where Math.abs would stay
		// negative (MinInt32 % 50 = -48).
		{"polygenelubricants", 50, 0},
		{"polygenelubricants", 7, 0},
	} {
		got, err := PartitionFor(c.id, c.n)
		if err != nil || got != c.want {
			t.Errorf("PartitionFor(%q, %d) = %d, %v; want %d", c.id, c.n, got, err, c.want)
		}
	}
	if _, err := PartitionFor("g", 0); err == nil {
		t.Error("PartitionFor with 0 partitions: no error")
	}
}

func TestGroupOf(t *testing.T) {
	k, _ := OffsetCommitKey{Version: 1, Group: "g1", Topic: "t", Partition: 0}.Encode()
	r, err := DecodeOffsetsRecord(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := r.GroupOf(); !ok || g != "g1" {
		t.Errorf("GroupOf offset commit = %q, %v", g, ok)
	}
	// A newer group record (type 3, ConsumerGroupMetadataKey): group id
	// first, int16-length.
	raw := []byte{0, 3, 0, 2, 'g', '2'}
	r, err = DecodeOffsetsRecord(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := r.GroupOf(); !ok || g != "g2" {
		t.Errorf("GroupOf type 3 = %q, %v", g, ok)
	}
	r, _ = DecodeOffsetsRecord([]byte{0, 3, 0, 9, 'g'}, nil)
	if _, ok := r.GroupOf(); ok {
		t.Error("GroupOf of a truncated type-3 key: ok")
	}
}
