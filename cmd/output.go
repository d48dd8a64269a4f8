package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"go.yaml.in/yaml/v3"
)

// SchemaVersion is the version of the JSON output contract
// (docs/json-output.md). Additive changes keep it; breaking ones bump it.
const SchemaVersion = 1

// outputFormats are the values of -o: table for people, wide a table with
// more columns (status, checkpoint list, quarantine list; elsewhere the
// table), json and yaml the same typed documents for programs.
var outputFormats = []string{"table", "wide", "json", "yaml"}

// yamlSink is a writer that carries -o yaml: writeJSON and writeJSONLine
// render their document as YAML into it.
type yamlSink interface{ yamlOutput() bool }

func wantsYAML(w io.Writer) bool {
	s, ok := w.(yamlSink)
	return ok && s.yamlOutput()
}

// streamWriter buffers a stream of documents (dump) and keeps the format.
type streamWriter struct {
	*bufio.Writer
	yaml bool
}

func (s *streamWriter) yamlOutput() bool { return s.yaml }

// newStreamWriter buffers g.stdout for a stream of lines or documents.
func newStreamWriter(g *globals) *streamWriter {
	return &streamWriter{Writer: bufio.NewWriterSize(g.stdout, 64<<10), yaml: g.cfg.Output == "yaml"}
}

// writeJSON writes v as one indented JSON document (under -o yaml, the
// same document as YAML).
func writeJSON(w io.Writer, v any) error {
	if wantsYAML(w) {
		return writeYAML(w, v, false)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONLine writes v as one compact JSON line (streams such as dump);
// under -o yaml, one YAML document of the stream, after a --- line.
func writeJSONLine(w io.Writer, v any) error {
	if wantsYAML(w) {
		return writeYAML(w, v, true)
	}
	return json.NewEncoder(w).Encode(v)
}

// writeYAML writes v's JSON encoding as YAML: the keys, their order and
// the values are the JSON document's (YAML is a superset of JSON), so -o
// yaml is the -o json contract in another syntax. Styles are reset so
// that the document reads as block YAML, strings quoted only where YAML
// would read them as something else.
func writeYAML(w io.Writer, v any, stream bool) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("render yaml: %w", err)
	}
	plainStyle(&n)
	var b bytes.Buffer
	if stream {
		b.WriteString("---\n")
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return fmt.Errorf("render yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = w.Write(b.Bytes())
	return err
}

// plainStyle clears the flow and quoting styles the JSON syntax gave the
// nodes; the encoder quotes a string again where it must.
func plainStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plainStyle(c)
	}
}

// writeTable renders rows under headers as a plain, borderless table.
func writeTable(w io.Writer, headers []string, rows [][]string) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Separators: tw.SeparatorsNone, Lines: tw.LinesNone},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	)
	t.Header(headers)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

// dash renders an optional number.
func dash[T comparable](v T, none T) string {
	if v == none {
		return "-"
	}
	return fmt.Sprint(v)
}
