package recovery

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// FromSplit lists exactly what From lists, whatever the split points (on
// object bases, between them, repeated, out of range), with at most
// maxListRanges ranges at once.
func TestFromSplitEqualsFrom(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	const sid = "s-0123456789abcdef"
	var bases []int64
	off := int64(0)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		end := off + 1 + rng.Int64N(9)
		if _, err := st.Put(ctx, layout.ObjectKey(sid, off, end), []byte("x"), store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		bases = append(bases, off)
		off = end
	}
	counter := store.NewCounter(st)
	splitRuns, splitRanges := 0, 0
	for trial := range 50 {
		base := bases[rng.IntN(len(bases))]
		if trial%7 == 0 {
			base++ // not an object base
		}
		var splits []int64
		for range []int{0, 5, 1500, 4000, 9000}[trial%5] {
			switch rng.IntN(3) {
			case 0:
				splits = append(splits, bases[rng.IntN(len(bases))])
			case 1:
				splits = append(splits, rng.Int64N(off+100)-50)
			default:
				if len(splits) > 0 {
					splits = append(splits, splits[len(splits)-1])
				}
			}
		}
		slices.Sort(splits)
		want, err := NewObjects(st, sid).From(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		before := counter.Counts()["LIST"]
		got, err := NewObjects(counter, sid).FromSplit(ctx, base, splits)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: FromSplit(%d, %v) gave %d objects, From gave %d", trial, base, splits, len(got), len(want))
		}
		n := counter.Counts()["LIST"] - before
		if n > maxListRanges {
			t.Fatalf("trial %d: %d LISTs, want at most %d", trial, n, maxListRanges)
		}
		if len(splits) <= rangeKeys && n != 1 {
			t.Fatalf("trial %d: %d LISTs for %d known bases, want one", trial, n, len(splits))
		}
		if len(splits) >= 4000 && n < 2 {
			splitRuns++
		}
		if len(splits) >= 4000 && n >= 2 {
			splitRanges++
		}
	}
	if splitRanges == 0 {
		t.Fatalf("no trial listed in several ranges (%d listed in one)", splitRuns)
	}
}
