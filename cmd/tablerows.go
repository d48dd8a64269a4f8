package cmd

import (
	"bufio"
	"io"
	"strings"
	"text/tabwriter"
)

// tableRows is a table a command over many partitions builds row by row
// and renders at the end, exactly as writeTable renders it (every cell
// trimmed, padded to its column's width, two spaces after each, the
// header the same way), through the standard library's text/tabwriter
// instead of tablewriter's working copies of every row (about 8 KB
// allocated a row): a table of 100,000 partitions costs its text and
// little more. writeTable measures a cell by its display width
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
	// text/tabwriter lays out what writeTable does for printable ASCII:
	// each cell (the last one too) padded to its column's width plus two
	// spaces. It holds the table's text until Flush, and nothing more.
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	line := func(cells []string) {
		for _, c := range cells {
			tw.Write([]byte(c))
			tw.Write([]byte{'\t'})
		}
		tw.Write([]byte{'\n'})
	}
	headers := make([]string, len(t.headers))
	for i, h := range t.headers {
		headers[i] = strings.Trim(h, " ")
	}
	line(headers)
	for _, r := range t.rows {
		line(r)
	}
	if err := tw.Flush(); err != nil {
		return err
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
