package cmd

import (
	"bufio"
	"io"
	"strings"
)

// tableBlock is how many rows a tableRows holds before it writes them: a
// table of a fleet is written in blocks of this many rows, each under the
// header, so that a run over 100,000 partitions holds one block's text,
// not the table's.
var tableBlock = 1000

// tableRows is a table a command over many partitions builds row by row
// (status, verify, retention run). Up to tableBlock rows it is, byte for
// byte, what writeTable renders (every cell trimmed, padded to its
// column's width, two spaces after each, the header the same way), without
// tablewriter's working copies of every row (about 8 KB allocated a row).
// A longer table is written a block of tableBlock rows at a time as the
// rows come, each block under the header and laid out with its columns
// at least as wide as every earlier block's (a column never narrows; it
// widens only where a longer value arrives), so that the text lines up
// from one block to the next and the command holds one block, whatever
// the partition count. writeTable measures a cell by its display width
// and treats control characters its own way: a block holding anything but
// printable ASCII, or rows of another cell count, is handed to it whole.
type tableRows struct {
	w       io.Writer
	headers []string
	rows    [][]string
	// widths are the columns' widths so far (the header's and every
	// block's written by this type's own layout).
	widths []int
	// other: a cell of the block is not printable ASCII, or a row has
	// another cell count (writeTable renders the block).
	other bool
	// blocks counts the blocks written; err is the first write's error.
	blocks int
	err    error
}

func newTableRows(w io.Writer, headers ...string) *tableRows {
	t := &tableRows{w: w, headers: make([]string, len(headers)), widths: make([]int, len(headers))}
	for i, h := range headers {
		t.headers[i] = strings.Trim(h, " ")
		t.widths[i] = len(t.headers[i])
	}
	return t
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// add appends a row (cells past the headers' count are kept as given) and
// writes the block when it is full; the error is the first write's.
func (t *tableRows) add(cells ...string) error {
	if len(cells) != len(t.headers) {
		t.other = true
	}
	for i, c := range cells {
		if !printable(c) {
			t.other = true
		}
		cells[i] = strings.Trim(c, " ")
	}
	t.rows = append(t.rows, cells)
	if len(t.rows) >= tableBlock {
		return t.flush()
	}
	return t.err
}

// flush writes the rows held (the header alone when the table has none
// yet) and lets go of them.
func (t *tableRows) flush() error {
	if t.err != nil {
		return t.err
	}
	rows := t.rows
	t.rows = nil
	t.blocks++
	other := t.other
	t.other = false
	if other || !printable(strings.Join(t.headers, "")) {
		if rows == nil {
			rows = [][]string{}
		}
		t.err = writeTable(t.w, t.headers, rows)
		return t.err
	}
	for _, r := range rows {
		for i, c := range r {
			t.widths[i] = max(t.widths[i], len(c))
		}
	}
	bw := bufio.NewWriterSize(t.w, 64<<10)
	line := func(cells []string) {
		for i, c := range cells {
			bw.WriteString(c)
			for n := t.widths[i] - len(c) + 2; n > 0; n-- {
				bw.WriteByte(' ')
			}
		}
		bw.WriteByte('\n')
	}
	line(t.headers)
	for _, r := range rows {
		line(r)
	}
	t.err = bw.Flush()
	return t.err
}

// render writes what is held: the whole table when it never filled a
// block, else its last block (none when the rows ended with a block).
func (t *tableRows) render() error {
	if t.rows == nil && t.blocks > 0 {
		return t.err
	}
	return t.flush()
}
