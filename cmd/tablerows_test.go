package cmd

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTableRowsRendersAsWriteTable: the lean table of the many-partition
// commands is, byte for byte, writeTable's: random tables of printable
// ASCII (spaces at the edges and inside, empty cells, long cells, no
// rows), and tables with other bytes, which go through writeTable itself.
func TestTableRowsRendersAsWriteTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "ab-_:;,.()|0123456789 "
	cell := func() string {
		n := rng.IntN(12)
		if rng.IntN(20) == 0 {
			n = 150 + rng.IntN(150)
		}
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for k := range 400 {
		cols := 1 + rng.IntN(7)
		headers := make([]string, cols)
		for i := range headers {
			headers[i] = strings.ToUpper(cell())
		}
		var rows [][]string
		var got bytes.Buffer
		lean := newTableRows(&got, headers...)
		for range rng.IntN(30) {
			r := make([]string, cols)
			for i := range r {
				r[i] = cell()
				switch {
				case k%50 == 1 && rng.IntN(10) == 0:
					r[i] += "é"
				case k%50 == 2 && rng.IntN(10) == 0:
					r[i] += "\ttab"
				}
			}
			rows = append(rows, append([]string(nil), r...))
			if err := lean.add(r...); err != nil {
				t.Fatal(err)
			}
		}
		var want bytes.Buffer
		if rows == nil {
			rows = [][]string{}
		}
		if err := writeTable(&want, headers, rows); err != nil {
			t.Fatal(err)
		}
		if err := lean.render(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("table %d differs\nheaders %q\nrows %q\n--- lean\n%q\n--- writeTable\n%q", k, headers, rows, got.String(), want.String())
		}
	}
}

// TestTableRowsWritesBlocks: past tableBlock rows the table is written a
// block at a time, as the rows come: each block under the header, laid out
// as writeTable lays out every row so far (so a column never narrows from
// one block to the next), and a block with other bytes by writeTable alone.
func TestTableRowsWritesBlocks(t *testing.T) {
	defer func(n int) { tableBlock = n }(tableBlock)
	rng := rand.New(rand.NewPCG(7, 8))
	for k := range 300 {
		tableBlock = 1 + rng.IntN(6)
		cols := 1 + rng.IntN(5)
		headers := make([]string, cols)
		for i := range headers {
			headers[i] = strings.Repeat("H", 1+rng.IntN(6))
		}
		var got bytes.Buffer
		lean := newTableRows(&got, headers...)
		var rows [][]string
		var want strings.Builder
		// laid: the rows of the blocks laid out so far (not writeTable's)
		var laid [][]string
		written := 0
		n := rng.IntN(25)
		for j := range n {
			r := make([]string, cols)
			for i := range r {
				r[i] = strings.Repeat("x", rng.IntN(14))
				if k%30 == 1 && rng.IntN(8) == 0 {
					r[i] += "é"
				}
			}
			rows = append(rows, append([]string(nil), r...))
			if err := lean.add(r...); err != nil {
				t.Fatal(err)
			}
			if full := (j+1)%tableBlock == 0; full || j == n-1 {
				block := rows[len(rows)-(j+1-written):]
				var b bytes.Buffer
				other := false
				for _, r := range block {
					other = other || !printable(strings.Join(r, ""))
				}
				if other {
					if err := writeTable(&b, headers, block); err != nil {
						t.Fatal(err)
					}
					want.WriteString(b.String())
				} else {
					// writeTable over the rows laid out so far: its header
					// and this block's lines.
					ascii := laid
					all := append(append([][]string(nil), ascii...), block...)
					laid = all
					if err := writeTable(&b, headers, all); err != nil {
						t.Fatal(err)
					}
					lines := strings.SplitAfter(b.String(), "\n")
					want.WriteString(lines[0])
					for _, l := range lines[1+len(ascii) : 1+len(all)] {
						want.WriteString(l)
					}
				}
				written = j + 1
				if full && got.String() != want.String() {
					t.Fatalf("table %d: after row %d (block %d) the output is\n%s\nwant\n%s", k, j, tableBlock, got.String(), want.String())
				}
			}
		}
		if err := lean.render(); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			var b bytes.Buffer
			if err := writeTable(&b, headers, [][]string{}); err != nil {
				t.Fatal(err)
			}
			want.WriteString(b.String())
		}
		if got.String() != want.String() {
			t.Fatalf("table %d (block %d, %d rows):\n%s\nwant\n%s", k, tableBlock, n, got.String(), want.String())
		}
	}
}
