package timecut

import (
	"context"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// writeStream writes one batch per slice of timestamps (offsets from 0)
// and returns the binding.
func writeStream(t *testing.T, batches ...[]int64) (store.Store, *layout.Binding) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem(t.Name())
	if err := stream.CreateStream(ctx, st, "s-tc", 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	b := &layout.Binding{Topic: "tc", TopicID: "tid", Partition: 0, StreamID: "s-tc", Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("tc", 0), b); err != nil {
		t.Fatal(err)
	}
	w, err := stream.OpenWriter(ctx, st, "s-tc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tss := range batches {
		next := w.Next()
		recs := make([]kafka.Record, len(tss))
		for i, ts := range tss {
			recs[i] = kafka.Record{Offset: next + int64(i), Timestamp: ts, Key: []byte("k"), Value: []byte("v")}
		}
		raw, err := kafka.EncodeBatch(kafka.NewBatchSpec(next, recs))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(ctx, [][]byte{raw}); err != nil {
			t.Fatal(err)
		}
	}
	return st, b
}

// reference is the rule stated plainly: the earliest offset in [from, hw)
// whose timestamp is >= tm, or hw.
func reference(ts []int64, from, hw, tm int64) int64 {
	for o := from; o < hw; o++ {
		if ts[o] >= tm {
			return o
		}
	}
	return hw
}

func TestFindEarliestOffsetAtOrAfter(t *testing.T) {
	// Offsets 0..9; offset 4 was written by a producer whose clock ran an
	// hour ahead (3_600_400), offsets 6 and 8 by one running behind.
	batches := [][]int64{{100, 200, 300}, {400, 3_600_400, 600}, {150, 800, 120, 1000}}
	var all []int64
	for _, b := range batches {
		all = append(all, b...)
	}
	st, b := writeStream(t, batches...)
	ctx := context.Background()
	hw := int64(len(all))
	for _, tm := range []int64{0, 100, 101, 300, 301, 450, 600, 601, 1000, 1001, 3_600_400, 5_000_000} {
		for _, from := range []int64{0, 2, 5} {
			c, err := Find(ctx, st, b, from, hw, tm)
			if err != nil {
				t.Fatal(err)
			}
			if want := reference(all, from, hw, tm); c.Offset != want {
				t.Errorf("Find(from %d, time %d) = %d, want %d", from, tm, c.Offset, want)
			}
			if c.Found != (c.Offset < hw) {
				t.Errorf("Find(from %d, time %d): found %v at %d", from, tm, c.Found, c.Offset)
			}
		}
	}
	// time 450: the cut is 4 (the skewed-ahead record); 5 (600) is newer;
	// 6 (150) and 8 (120) are older but kept; 7 (800) lies between them.
	c, err := Find(ctx, st, b, 0, hw, 450)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Preflight
	if c.Offset != 4 || *c.Timestamp != 3_600_400 || p.Deleted != 4 || *p.NewestDeleted != 400 {
		t.Errorf("cut %d (ts %v), deleted %d (newest %v); want 4 (3600400), 4 (400)", c.Offset, *c.Timestamp, p.Deleted, *p.NewestDeleted)
	}
	if p.KeptOlder != 2 || *p.FirstKeptOlder != 6 || *p.LastKeptOlder != 8 || *p.OldestKept != 120 || !p.OutOfOrder {
		t.Errorf("kept older %d [%v, %v] oldest %v out of order %v; want 2 [6, 8] 120 true", p.KeptOlder, *p.FirstKeptOlder, *p.LastKeptOlder, *p.OldestKept, p.OutOfOrder)
	}
	// 4, 5 and 7 are newer and lie before the last older record (8).
	if p.NewerBeforeLastOlder != 3 {
		t.Errorf("newer before the last older: %d, want 3", p.NewerBeforeLastOlder)
	}
	// In order: time 1001 finds nothing newer at or after; all deleted.
	c, err = Find(ctx, st, b, 0, hw, 3_600_401)
	if err != nil {
		t.Fatal(err)
	}
	if c.Found || c.Offset != hw || c.Preflight.Deleted != hw || c.Preflight.OutOfOrder {
		t.Errorf("time after every record: %+v", c)
	}
}

// A batch whose CRC fails is corruption, not a timestamp to trust.
func TestFindRefusesACorruptBatch(t *testing.T) {
	st, b := writeStream(t, []int64{1, 2, 3})
	ctx := context.Background()
	objs, err := layout.ListObjects(ctx, st, b.StreamID)
	if err != nil || len(objs) != 1 {
		t.Fatal(objs, err)
	}
	data, err := store.GetInto(ctx, st, objs[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if _, err := st.Put(ctx, objs[0].Key, data, store.Guard{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(ctx, st, b, 0, 3, 2); err == nil {
		t.Fatal("a flipped byte: no error")
	}
}
