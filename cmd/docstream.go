package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// docStream writes a document with a "partitions" array (-o json, -o
// yaml) partition by partition: the very bytes writeJSON writes for the
// whole document, without holding it. The document is rendered with no
// partitions (its "partitions" member empty) for what goes before and
// after them, and each partition is rendered alone and indented as
// writeJSON would indent it in place. The "partitions" member must come
// before any other member that could hold its text.
type docStream struct {
	w io.Writer
	// what names the command in a write error.
	what string
	// n counts the partitions written; opened: the document's head is
	// written; failed: a write failed, nothing more is written.
	n              int
	opened, failed bool
}

// render is v as writeJSON renders it to d.w, in memory.
func (d *docStream) render(v any) ([]byte, error) {
	var b bytes.Buffer
	if wantsYAML(d.w) {
		err := writeYAML(&b, v, false)
		return b.Bytes(), err
	}
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return b.Bytes(), err
}

// cut renders empty (the document with no partitions) and returns it
// with where its empty partitions member starts and the member's length.
func (d *docStream) cut(empty any) ([]byte, int, int, error) {
	b, err := d.render(empty)
	if err != nil {
		return nil, 0, 0, err
	}
	marker := emptyPartitionsJSON
	if wantsYAML(d.w) {
		marker = emptyPartitionsYAML
	}
	at := bytes.Index(b, []byte(marker))
	if at < 0 {
		return nil, 0, 0, fmt.Errorf("%s: render the output: no partitions member", d.what)
	}
	return b, at, len(marker), nil
}

func (d *docStream) write(b []byte) error {
	if d.failed {
		return nil
	}
	if _, err := d.w.Write(b); err != nil {
		d.failed = true
		return fmt.Errorf("%s: write the output: %w", d.what, err)
	}
	return nil
}

// item writes one partition p; empty is the document with no partitions
// (its head is written before the first).
func (d *docStream) item(empty, p any) error {
	d.n++
	yaml := wantsYAML(d.w)
	var out []byte
	if !d.opened {
		b, at, _, err := d.cut(empty)
		if err != nil {
			return err
		}
		out = append(out, b[:at]...)
		if yaml {
			out = append(out, "partitions:\n"...)
		} else {
			out = append(out, `"partitions": [`...)
		}
		d.opened = true
	}
	if yaml {
		b, err := d.render(struct {
			Partitions []any `json:"partitions"`
		}{[]any{p}})
		if err != nil {
			return err
		}
		// Drop the "partitions:" line: the item is the rest.
		out = append(out, b[bytes.IndexByte(b, '\n')+1:]...)
	} else {
		if d.n > 1 {
			out = append(out, ',')
		}
		b, err := json.MarshalIndent(p, "    ", "  ")
		if err != nil {
			return err
		}
		out = append(out, "\n    "...)
		out = append(out, b...)
	}
	return d.write(out)
}

// end writes the rest of the document whole (the members after the
// partitions); it is the whole document when no partition was written.
func (d *docStream) end(whole any) error {
	b, at, n, err := d.cut(whole)
	if err != nil {
		return err
	}
	switch {
	case !d.opened:
		return d.write(b)
	case wantsYAML(d.w):
		return d.write(b[at+n:])
	default:
		return d.write(append([]byte("\n  ]"), b[at+n:]...))
	}
}
