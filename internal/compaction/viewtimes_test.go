package compaction

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestReadViewTimesMatchesRows: for random views (several objects, blocks
// of many rows, timestamps in any order, some negative) and random cuts,
// ReadViewTimes' largest timestamp of every range between two cuts is the
// largest non-negative row timestamp in it, computed from the rows
// themselves; a range without one says so. Damaged bytes are refused as
// a corrupt view.
func TestReadViewTimesMatchesRows(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		st := store.NewMem(fmt.Sprint("vt", seed))
		type row struct{ off, ts int64 }
		var rows []row
		var objs []layout.ObjectRef
		off := int64(rng.IntN(5))
		for o := 0; o < 1+rng.IntN(3); o++ {
			base := off
			var rs []ntc2.Row
			for i := 0; i < 1+rng.IntN(3000); i++ {
				off += 1 + int64(rng.IntN(3))
				ts := int64(rng.IntN(1_000_000)) - 1000 // some negative: no timestamp
				rs = append(rs, ntc2.Row{Offset: off, Timestamp: ts, TimestampType: kafka.CreateTime, Key: []byte(fmt.Sprint("k", off)), Value: make([]byte, rng.IntN(60)), DeleteHorizonMs: -1})
				rows = append(rows, row{off, ts})
			}
			off++
			w := ntc2.NewWriterWith(ntc2.Meta{Base: base, End: off, Sources: []ntc2.Source{{Gen: 0, ManifestSHA256: fmt.Sprintf("%064d", 0)}}}, ntc2.WriterOptions{})
			for _, r := range rs {
				if err := w.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			data, _, err := w.Finish()
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("streams/s/compacted/%d.ntc2", o)
			if _, err := st.Put(ctx, key, data, store.None()); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, layout.ObjectRef{Key: key, Base: base, End: off, Size: int64(len(data))})
		}
		cuts := []int64{0, off + 1}
		for i := 0; i < rng.IntN(30); i++ {
			cuts = append(cuts, int64(rng.IntN(int(off+1))))
		}
		sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
		vt, err := ReadViewTimes(ctx, st, objs, cuts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i := 0; i+1 < len(cuts); i++ {
			for j := i + 1; j < len(cuts) && j < i+4; j++ {
				from, to := cuts[i], cuts[j]
				want, wantOK := int64(-1), false
				for _, r := range rows {
					if r.off >= from && r.off < to && r.ts >= 0 && r.ts > want {
						want, wantOK = r.ts, true
					}
				}
				if got, ok := vt.MaxIn(from, to); got != want || ok != wantOK {
					t.Fatalf("seed %d: [%d, %d): %d %v, want %d %v", seed, from, to, got, ok, want, wantOK)
				}
			}
		}
		// A flipped byte in an object's tail is a corrupt view, named.
		data, _ := st.Get(ctx, objs[0].Key, nil)
		data[len(data)-20] ^= 1
		st.Put(ctx, objs[0].Key, data, store.None())
		if _, err := ReadViewTimes(ctx, st, objs, cuts); err == nil || !isCorrupt(err) {
			t.Fatalf("seed %d: damaged tail: %v", seed, err)
		}
	}
}

func isCorrupt(err error) bool {
	return errors.Is(err, ErrViewCorrupt) && errors.Is(err, ntc2.ErrCorrupt)
}
