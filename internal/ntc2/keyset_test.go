package ntc2

import (
	"bytes"
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"testing"
)

// TestKeySetCounts: the set counts exactly the distinct hashes added,
// through growth, repeats and the all-zero hash.
func TestKeySetCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, hint := range []int64{0, 10, 5000} {
		s := newKeySet(hint)
		model := map[[2]uint64]bool{}
		for i := 0; i < 20_000; i++ {
			h := [2]uint64{rng.Uint64N(3000), rng.Uint64N(3)} // many repeats, zero included
			if i == 1234 {
				h = [2]uint64{}
			} else if i%7 == 0 {
				h = [2]uint64{rng.Uint64(), rng.Uint64()}
			}
			s.add(h)
			model[h] = true
			if s.len() != int64(len(model)) {
				t.Fatalf("hint %d, after %d adds: %d keys, want %d", hint, i+1, s.len(), len(model))
			}
		}
		if !model[[2]uint64{}] {
			t.Fatal("the zero hash was never added")
		}
	}
}

func buildWith(t *testing.T, meta Meta, rows []Row, o WriterOptions) []byte {
	t.Helper()
	w := NewWriterWith(meta, o)
	for i := range rows {
		if err := w.Add(rows[i]); err != nil {
			t.Fatalf("add row %d: %v", i, err)
		}
	}
	data, _, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestWriterOptions: a reused buffer and, for rows with distinct keys, the
// DistinctKeys promise write the very same bytes; a broken promise writes
// an object that Verify refuses for its key count.
func TestWriterOptions(t *testing.T) {
	rng := mrand.New(mrand.NewSource(5))
	distinct := genRows(rng, 3000, 100, rowShape{maxGap: 3, keySpace: 1 << 30, valueSize: 80})
	for i := range distinct {
		distinct[i].Key = fmt.Appendf(nil, "key-%d", i)
	}
	dups := genRows(rng, 3000, 100, rowShape{maxGap: 3, keySpace: 50, valueSize: 80})
	meta := testMeta(0, 1<<40)
	want, _ := build(t, meta, distinct)
	old := bytes.Repeat([]byte{0xee}, 1<<20)
	if got := buildWith(t, meta, distinct, WriterOptions{Buffer: old}); !bytes.Equal(got, want) {
		t.Fatal("a reused buffer changed the bytes")
	}
	if got := buildWith(t, meta, distinct, WriterOptions{DistinctKeys: true, Buffer: old[:10]}); !bytes.Equal(got, want) {
		t.Fatal("DistinctKeys changed the bytes of rows with distinct keys")
	}
	bad := buildWith(t, meta, dups, WriterOptions{DistinctKeys: true})
	r, err := Open(bad)
	if err != nil {
		t.Fatal(err)
	}
	fs := r.Verify()
	if len(fs) == 0 || fs[0].Check != CheckCount {
		t.Fatalf("a broken DistinctKeys promise: findings %v", fs)
	}
}
