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
		lean := newTableRows(headers...)
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
			lean.add(r...)
		}
		var want, got bytes.Buffer
		if rows == nil {
			rows = [][]string{}
		}
		if err := writeTable(&want, headers, rows); err != nil {
			t.Fatal(err)
		}
		if err := lean.render(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("table %d differs\nheaders %q\nrows %q\n--- lean\n%q\n--- writeTable\n%q", k, headers, rows, got.String(), want.String())
		}
	}
}
