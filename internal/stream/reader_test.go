package stream

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
)

func objs(ranges ...[2]int64) []layout.StreamObject {
	out := make([]layout.StreamObject, len(ranges))
	for i, r := range ranges {
		out[i] = layout.StreamObject{Key: layout.ObjectKey("s-1", r[0], r[1]), Base: r[0], End: r[1]}
	}
	return out
}

func TestMissing(t *testing.T) {
	type R = [2]int64
	for _, c := range []struct {
		name       string
		objs       []layout.StreamObject
		from, head int64
		want       [][2]int64
	}{
		{"whole", objs(R{0, 10}, R{10, 20}, R{20, 30}), 0, 30, nil},
		{"from inside the first", objs(R{0, 10}, R{10, 20}), 5, 20, nil},
		{"gone below from", objs(R{10, 20}, R{20, 30}), 12, 30, nil},
		{"middle", objs(R{0, 10}, R{20, 30}), 0, 30, [][2]int64{{10, 20}}},
		{"at the head", objs(R{0, 10}, R{10, 20}), 0, 30, [][2]int64{{20, 30}}},
		{"at from, the straddler gone", objs(R{0, 10}, R{20, 30}), 15, 30, [][2]int64{{15, 20}}},
		{"two holes", objs(R{0, 10}, R{20, 30}, R{40, 50}), 0, 50, [][2]int64{{10, 20}, {30, 40}}},
		{"two adjacent objects gone", objs(R{0, 10}, R{30, 40}), 0, 40, [][2]int64{{10, 30}}},
		{"nothing", nil, 5, 30, [][2]int64{{5, 30}}},
		{"beyond the head ignored", objs(R{0, 10}, R{20, 30}, R{30, 35}), 0, 30, [][2]int64{{10, 20}}},
		// a failed append's leftover overlapping the real chain does not
		// fill the hole it overlaps
		{"leftover", objs(R{0, 10}, R{10, 25}, R{20, 30}), 0, 30, [][2]int64{{10, 20}}},
		// two objects ending at the same offset: Chain reports that
		{"ambiguous", objs(R{0, 10}, R{10, 20}, R{15, 20}), 0, 20, nil},
		{"empty range", objs(R{0, 10}), 10, 10, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Missing(c.objs, c.from, c.head)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Missing = %v, want %v", got, c.want)
			}
			if len(c.want) > 0 {
				if _, err := Chain(c.objs, c.from, c.head); !errors.Is(err, ErrMissing) {
					t.Fatalf("Chain over a hole: %v", err)
				}
			}
		})
	}
}

func TestMissingErrorMessage(t *testing.T) {
	err := fmt.Errorf("replay t-0: %w", &MissingError{Ranges: [][2]int64{{10, 20}, {30, 40}}, Trim: 5, Head: 50})
	if !errors.Is(err, ErrMissing) {
		t.Fatal("not ErrMissing")
	}
	want := "replay t-0: missing objects for offsets [10, 20), [30, 40) between the durable trim 5 and the head 50"
	if err.Error() != want {
		t.Fatalf("%q, want %q", err.Error(), want)
	}
}

// batchAt encodes one batch of n records at base.
func batchAt(t *testing.T, base int64, n int) []byte {
	t.Helper()
	recs := make([]kafka.Record, n)
	for i := range recs {
		recs[i] = kafka.Record{Offset: base + int64(i), Timestamp: 1000, Key: []byte("k"), Value: []byte("v")}
	}
	b, err := kafka.EncodeBatch(kafka.NewBatchSpec(base, recs))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScanObjectCorruptionIsCorrupt: inside a stored object a batch that
// runs past the end (a flipped batchLength), a zero-filled rest and a CRC
// mismatch are all kafka.ErrCorrupt, naming the object and the batch.
func TestScanObjectCorruptionIsCorrupt(t *testing.T) {
	good := append(batchAt(t, 100, 3), batchAt(t, 103, 2)...)
	o := layout.StreamObject{Key: layout.ObjectKey("s-1", 100, 105), Base: 100, End: 105}
	if err := ScanObject(o, good, true, func(Batch) error { return nil }); err != nil {
		t.Fatal(err)
	}
	second := len(batchAt(t, 100, 3))
	flip := func(at int, bit byte) []byte {
		d := append([]byte(nil), good...)
		d[at] ^= bit
		return d
	}
	zeroTail := append(append([]byte(nil), good[:second]...), make([]byte, len(good)-second)...)
	for _, c := range []struct {
		name string
		data []byte
		want string
		crc  bool
	}{
		{"batchLength of the last batch", flip(second+8, 0x40), "batch at offset 103 (byte " + fmt.Sprint(second) + ") does not fit in the object's", false},
		{"batchLength of the first batch", flip(8, 0x40), "batch at offset 100 (byte 0) does not fit", false},
		{"zero-filled rest", zeroTail, "at byte " + fmt.Sprint(second), false},
		{"producerEpoch", flip(second+51, 0x01), "batch at offset 103 (byte " + fmt.Sprint(second) + "): batch CRC mismatch", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := ScanObject(o, c.data, true, func(Batch) error { return nil })
			if !errors.Is(err, kafka.ErrCorrupt) || errors.Is(err, kafka.ErrCRC) != c.crc {
				t.Fatalf("%v: want corruption (crc %v)", err, c.crc)
			}
			if !strings.Contains(err.Error(), o.Key) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%q does not name %s and %q", err, o.Key, c.want)
			}
			// the header-only scan (dump) sees a damaged length too
			if !c.crc {
				if err := ScanObject(o, c.data, false, func(Batch) error { return nil }); !errors.Is(err, kafka.ErrCorrupt) {
					t.Fatalf("header-only: %v", err)
				}
			}
		})
	}
}
