package cmd

import (
	"bufio"
	"io"
	"strings"
)

// tableRows is a table a command over many partitions builds row by row
// and renders at the end, exactly as writeTable renders it (every cell
// trimmed, padded to its column's width, two spaces after each, the
// header the same way), without tablewriter's working copies of every row
// (about 8 KB allocated a row): a table of 100,000 partitions costs its
// text and little more. writeTable measures a cell by its display width
// and treats control characters its own way; a table holding anything but
// printable ASCII is handed to it whole.
type tableRows struct {
	headers []string
	rows    [][]string
	// other: a cell is not printable ASCII (writeTable renders the table).
	other bool
}

func newTableRows(headers ...string) *tableRows {
	t := &tableRows{headers: headers}
	for _, h := range headers {
		t.check(h)
	}
	return t
}

func (t *tableRows) check(s string) {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			t.other = true
			return
		}
	}
}

// add appends a row (cells past the headers' count are kept as given).
func (t *tableRows) add(cells ...string) {
	for i, c := range cells {
		t.check(c)
		cells[i] = strings.Trim(c, " ")
	}
	t.rows = append(t.rows, cells)
}

// render writes the table and lets go of its rows.
func (t *tableRows) render(w io.Writer) error {
	defer func() { t.rows = nil }()
	if t.other || !t.even() {
		rows := t.rows
		if rows == nil {
			rows = [][]string{}
		}
		return writeTable(w, t.headers, rows)
	}
	width := make([]int, len(t.headers))
	for i, h := range t.headers {
		width[i] = len(strings.Trim(h, " "))
	}
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	line := func(cells []string, trim bool) {
		for i, c := range cells {
			if trim {
				c = strings.Trim(c, " ")
			}
			bw.WriteString(c)
			for n := len(c); n < width[i]+2; n++ {
				bw.WriteByte(' ')
			}
		}
		bw.WriteByte('\n')
	}
	line(t.headers, true)
	for _, r := range t.rows {
		line(r, false)
	}
	return bw.Flush()
}

// even reports rows of as many cells as there are headers (anything else
// is writeTable's to lay out).
func (t *tableRows) even() bool {
	for _, r := range t.rows {
		if len(r) != len(t.headers) {
			return false
		}
	}
	return true
}
