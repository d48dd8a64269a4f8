package ntc2

import (
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// fuzzSeeds are valid objects of several shapes, plus the golden file.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, s := range []struct {
		seed int64
		n    int
	}{{1, 0}, {2, 1}, {3, 12}, {4, 60}} {
		rng := rand.New(rand.NewSource(s.seed))
		rows := genRows(rng, s.n, 10, rowShape{maxGap: 3, keySpace: 20, valueSize: 8})
		data, _ := build(f, testMeta(10, endAfter(rows, 10)), rows)
		seeds = append(seeds, data)
	}
	seeds = append(seeds, smallObject(f))
	if g, err := os.ReadFile(filepath.Join("testdata", "v1-small.ntc2")); err == nil {
		seeds = append(seeds, g)
	}
	return seeds
}

func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("Open error %v wraps neither sentinel", err)
			}
			if len(VerifyBytes(data)) == 0 {
				t.Fatal("VerifyBytes found nothing in what Open refused")
			}
			return
		}
		findings := r.Verify()
		blockBad := false
		for _, fd := range findings {
			blockBad = blockBad || fd.Block >= 0
		}
		var n, tombs int64
		rerr := r.Rows(func(row Row) error {
			n++
			if row.Value == nil {
				tombs++
			}
			return nil
		})
		if rerr != nil && !errors.Is(rerr, ErrCorrupt) {
			t.Fatalf("Rows error %v wraps no sentinel", rerr)
		}
		if (rerr != nil) != blockBad {
			t.Fatalf("Rows error %v, Verify findings %v", rerr, findings)
		}
		ft := r.Footer()
		if rerr == nil && n != ft.Rows {
			t.Fatalf("%d rows read, the footer says %d", n, ft.Rows)
		}
		if len(findings) == 0 && tombs != ft.Tombstones {
			t.Fatalf("Verify passed with %d tombstones read, footer %d", tombs, ft.Tombstones)
		}
		// Tail-only reading agrees with the whole-object reader.
		ix, err := OpenTail(data[len(data)-r.TailLen():], int64(len(data)))
		if err != nil {
			t.Fatalf("OpenTail disagrees with Open: %v", err)
		}
		if need, err := TailLen(data); err != nil || need != r.TailLen() {
			t.Fatalf("TailLen = %d, %v; want %d", need, err, r.TailLen())
		}
		if ix.Footer().ContentSHA256 != ft.ContentSHA256 || len(ix.Blocks()) != ft.Blocks {
			t.Fatal("OpenTail and Open disagree")
		}
		for _, off := range []int64{ft.Base, ft.FirstOffset, ft.LastOffset, ft.End - 1} {
			if i, err := r.SeekBlock(off); err == nil && (i < 0 || i > ft.Blocks) {
				t.Fatalf("SeekBlock(%d) = %d of %d blocks", off, i, ft.Blocks)
			}
		}
		if _, err := json.Marshal(ft); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(r.Blocks()); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzRows reseals its input's checksums, then reads every row and checks
// the invariants a row of a view holds, and that whatever reads back
// writes again to the same rows.
func FuzzRows(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Past the checksums: the mutations reach the index checks and
		// the row decoder.
		data = reseal(data)
		r, err := Open(data)
		if err != nil {
			return
		}
		ft := r.Footer()
		var rows []Row
		last := int64(-1)
		err = r.Rows(func(row Row) error {
			if row.Key == nil {
				t.Fatal("a row with a nil key")
			}
			if row.Offset < ft.Base || row.Offset >= ft.End || row.Offset <= last {
				t.Fatalf("row offset %d after %d in [%d, %d)", row.Offset, last, ft.Base, ft.End)
			}
			if row.TimestampType != kafka.CreateTime && row.TimestampType != kafka.LogAppendTime {
				t.Fatalf("timestamp type %d", row.TimestampType)
			}
			if row.DeleteHorizonMs != -1 && (row.Value != nil || row.DeleteHorizonMs < 0) {
				t.Fatalf("horizon %d on a row with value %v", row.DeleteHorizonMs, row.Value != nil)
			}
			last = row.Offset
			rows = append(rows, row)
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Rows error %v wraps no sentinel", err)
			}
			return
		}
		// Whatever reads back can be written again, to the same rows, and
		// the rewrite is a fixed point.
		w := NewWriter(ft.Meta)
		for i := range rows {
			if err := w.Add(rows[i]); err != nil {
				t.Fatalf("a row read back does not write: %v", err)
			}
		}
		again, f2, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := Open(again)
		if err != nil {
			t.Fatalf("the rewrite does not open: %v", err)
		}
		if fs := r2.Verify(); len(fs) > 0 {
			t.Fatalf("the rewrite does not verify: %v", fs)
		}
		checkRows(t, rows, allRows(t, r2))
		if f2.Rows != ft.Rows || f2.FirstOffset != ft.FirstOffset || f2.LastOffset != ft.LastOffset {
			t.Fatalf("rewrite footer %+v, original %+v", f2, ft)
		}
		if len(r.Verify()) == 0 && (f2.Keys != ft.Keys || f2.Tombstones != ft.Tombstones) {
			t.Fatalf("verified footer %+v, rewrite %+v", ft, f2)
		}
		if third, _ := build(t, f2.Meta, rows); string(third) != string(again) {
			t.Fatal("the rewrite is not a fixed point")
		}
	})
}
