package layout

import (
	"encoding/json"
	"strings"
	"testing"
)

// goWords are what encoding/json and reflect say that an operator must
// never read.
var goWords = []string{"Go value", "Go struct", "of type", "struct {", "int64", "uint32", "[]layout.", "layout."}

// TestDecodeErrorsInPlainWords walks every field of every document kind
// and puts every kind of wrong value in it (numbers out of range, not
// whole, of other JSON types, null): every refusal names the field in
// plain words, never a Go type or field name.
func TestDecodeErrorsInPlainWords(t *testing.T) {
	docs := []struct {
		key   string
		doc   interface{ Validate() error }
		fresh func() interface{ Validate() error }
	}{
		{"bindings/orders/3.json", activeBinding(), func() interface{ Validate() error } { return &Binding{} }},
		{"streams/s-abc/head.json", sampleHead(), func() interface{ Validate() error } { return &Head{} }},
		{"streams/s-abc/generations/00000000000000000001.json", sampleGeneration(), func() interface{ Validate() error } { return &Generation{} }},
		{"quarantine/x.json", sampleQuarantine(), func() interface{ Validate() error } { return &Quarantine{} }},
		{"leases/retention.json", sampleLease(), func() interface{ Validate() error } { return &Lease{} }},
	}
	bad := []any{json.Number("1e30"), json.Number("1.5"), json.Number("99999999999999999999"), json.Number("-99999999999999999999"), json.Number("-1"), "x", true, nil, []any{}, map[string]any{}}
	refusals := 0
	for _, d := range docs {
		var m any
		dec := json.NewDecoder(strings.NewReader(string(Encode(d.doc))))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		for _, path := range leafPaths(m, nil) {
			for _, v := range bad {
				doc := setPath(clone(m), path, v)
				data, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				err = Decode(d.key, data, d.fresh())
				if err == nil {
					continue // e.g. -1 where -1 is valid, digest aside
				}
				refusals++
				for _, w := range goWords {
					if strings.Contains(err.Error(), w) {
						t.Errorf("%s: %s = %v: %q names Go: %v", d.key, path, v, w, err)
					}
				}
			}
		}
	}
	if refusals < 200 {
		t.Fatalf("only %d refusals: the walk did not reach the fields", refusals)
	}
}

// leafPaths lists the paths (map keys and slice indexes) of every
// non-container value.
func leafPaths(v any, path []any) [][]any {
	var out [][]any
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out = append(out, leafPaths(e, append(append([]any{}, path...), k))...)
		}
	case []any:
		for i, e := range x {
			out = append(out, leafPaths(e, append(append([]any{}, path...), i))...)
		}
	default:
		out = append(out, path)
	}
	return out
}

func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := map[string]any{}
		for k, e := range x {
			c[k] = clone(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = clone(e)
		}
		return c
	}
	return v
}

// setPath sets the leaf at path to v.
func setPath(root any, path []any, v any) any {
	cur := root
	for i, step := range path {
		leaf := i == len(path)-1
		switch k := step.(type) {
		case string:
			m := cur.(map[string]any)
			if leaf {
				m[k] = v
			}
			cur = m[k]
		case int:
			a := cur.([]any)
			if leaf {
				a[k] = v
			}
			cur = a[k]
		}
	}
	return root
}

// A manifest object with a negative size says so (not "range out of
// order").
func TestManifestNegativeSizeSaysSo(t *testing.T) {
	g := sampleGeneration()
	g.Objects[0].Size = -1
	err := Decode("streams/s-abc/generations/00000000000000000001.json", encodePlain(g), &Generation{})
	mustCorrupt(t, "size -1", err, "generations/", "size -1 is negative")
	if strings.Contains(err.Error(), "out of order") {
		t.Errorf("size -1 reported as a range: %v", err)
	}
}
