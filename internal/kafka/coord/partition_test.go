package coord

import (
	"math"
	"testing"
	"unicode/utf16"
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

// javaHash is Java's String.hashCode computed in 64-bit arithmetic and
// reduced mod 2^32 at the end: the reference the int32 loop must equal.
func javaHash(s string) int32 {
	var h uint64
	for _, u := range utf16.Encode([]rune(s)) {
		h = h*31 + uint64(u)
	}
	return int32(uint32(h))
}

// FuzzPartitionFor: for any id and partition count, the partition is in
// [0, n), equals Utils.abs(hashCode) % n with the hash computed another
// way, and GroupOf on any key never panics and, for a key that decodes as
// an offset commit, names its group.
func FuzzPartitionFor(f *testing.F) {
	for _, s := range []string{"", "my-first-application", "payments-tx-0-0", "polygenelubricants", "\U0001F600x", "\xff\xfe"} {
		f.Add(s, int32(50), []byte(nil))
	}
	k, _ := OffsetCommitKey{Version: 1, Group: "g1", Topic: "t"}.Encode()
	f.Add("g1", int32(1), k)
	f.Add("x", int32(7), []byte{0, 3, 0, 2, 'g', '2'})
	f.Fuzz(func(t *testing.T, id string, n int32, key []byte) {
		if n < 1 {
			if _, err := PartitionFor(id, n); err == nil {
				t.Fatalf("PartitionFor(%q, %d): no error", id, n)
			}
			return
		}
		p, err := PartitionFor(id, n)
		if err != nil {
			t.Fatal(err)
		}
		h := int64(javaHash(id))
		if h < 0 {
			h = -h
		}
		if h == 1<<31 {
			h = 0 // Utils.abs(Integer.MIN_VALUE)
		}
		if p < 0 || p >= n || int64(p) != h%int64(n) {
			t.Fatalf("PartitionFor(%q, %d) = %d, want %d", id, n, p, h%int64(n))
		}
		if JavaStringHashCode(id) != javaHash(id) {
			t.Fatalf("hash of %q: %d, reference %d", id, JavaStringHashCode(id), javaHash(id))
		}
		r, err := DecodeOffsetsRecord(key, nil)
		if err != nil {
			return
		}
		g, ok := r.GroupOf()
		if r.OffsetCommitKey != nil && (!ok || g != r.OffsetCommitKey.Group) {
			t.Fatalf("GroupOf = %q, %v; key group %q", g, ok, r.OffsetCommitKey.Group)
		}
	})
}
