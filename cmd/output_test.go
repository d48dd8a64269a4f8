package cmd

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// normalize gives a decoded document JSON's types (numbers as float64),
// so that a YAML and a JSON decoding compare equal when the documents are.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("re-encode %v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// yamlDocs decodes every YAML document of out.
func yamlDocs(t *testing.T, out string) []any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(out))
	var docs []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				return docs
			}
			t.Fatalf("yaml does not decode: %v\n%s", err, out)
		}
		docs = append(docs, normalize(t, v))
	}
}

// jsonDocs decodes every JSON document of out (one, or a stream of lines).
func jsonDocs(t *testing.T, out string) []any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var docs []any
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("json does not decode: %v\n%s", err, out)
		}
		docs = append(docs, v)
	}
	return docs
}

func TestOutputYAMLIsTheJSONDocument(t *testing.T) {
	st := demoMem(t)
	for _, args := range [][]string{
		{"version"},
		{"--version"},
		{"checkpoint", "list", "orders-0"},
		{"quarantine", "list"},
		{"gc", "--dry-run"},
		{"verify", "customers-0"},
		{"dump", "orders-0", "--count", "3"},
		{"replay"}, // a usage error: the error document
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			jout, _, jcode := runTTY(t, false, st, append(args, "-o", "json")...)
			yout, _, ycode := runTTY(t, false, st, append(args, "-o", "yaml")...)
			if jcode != ycode {
				t.Fatalf("exit %d under json, %d under yaml", jcode, ycode)
			}
			if strings.HasPrefix(strings.TrimSpace(yout), "{") {
				t.Fatalf("-o yaml wrote JSON:\n%s", yout)
			}
			j, y := jsonDocs(t, jout), yamlDocs(t, yout)
			for _, d := range append(j, y...) {
				if m, ok := d.(map[string]any); ok {
					delete(m, "seconds") // the run's own duration
				}
			}
			if len(j) == 0 {
				t.Fatalf("no json document:\n%s", jout)
			}
			if !reflect.DeepEqual(j, y) {
				t.Errorf("yaml differs from json\njson:\n%s\nyaml:\n%s", jout, yout)
			}
		})
	}
}

// Strings YAML would read as something else stay strings.
func TestOutputYAMLQuotesAmbiguousStrings(t *testing.T) {
	var b trackedWriter
	var sb strings.Builder
	b.w, b.yaml = &sb, true
	in := map[string]any{"a": "true", "b": "123", "c": "null", "d": "2026-11-01T00:00:00Z", "e": "x: y", "f": []string{"-", "#"}, "n": 12345678901234567}
	if err := writeJSON(&b, in); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal([]byte(sb.String()), &got); err != nil {
		t.Fatalf("%v\n%s", err, sb.String())
	}
	if !reflect.DeepEqual(normalize(t, got), normalize(t, in)) {
		t.Errorf("round trip changed the values:\n%s", sb.String())
	}
	if _, ok := got["d"].(string); !ok {
		t.Errorf("a timestamp-like string came back as %T:\n%s", got["d"], sb.String())
	}
	if got["n"] != 12345678901234567 {
		t.Errorf("a large integer came back as %v:\n%s", got["n"], sb.String())
	}
}

func TestOutputWideShowsMoreColumns(t *testing.T) {
	st := demoMem(t)
	cases := []struct {
		args []string
		wide *regexp.Regexp // only under -o wide
	}{
		{[]string{"status"}, regexp.MustCompile(`(?m)^PARTITION .*DATA LOSS +COMPACTED +POLICY +PRODUCERS +OPEN TXNS\s*$`)},
		{[]string{"checkpoint", "list", "orders-0"}, regexp.MustCompile(`(?m)^ANCHOR .*KEY +MODIFIED +DETAIL\s*$|\b[0-9a-f]{64}\b`)},
		{[]string{"quarantine", "list"}, regexp.MustCompile(`(?m)^PARTITION .*WHEN +DIGEST +STREAM +DETAIL\s*$`)},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			table, _, code := runTTY(t, false, st, c.args...)
			wide, _, wcode := runTTY(t, false, st, append(c.args, "-o", "wide")...)
			if code != wcode {
				t.Fatalf("exit %d under table, %d under wide", code, wcode)
			}
			if !c.wide.MatchString(wide) {
				t.Errorf("-o wide lacks %s:\n%s", c.wide, wide)
			}
			if c.wide.MatchString(table) {
				t.Errorf("the table has the wide columns:\n%s", table)
			}
		})
	}
	// the whole checkpoint root under wide, 16 hex digits in the table
	wide, _, _ := runTTY(t, false, st, "checkpoint", "list", "orders-0", "-o", "wide")
	if !regexp.MustCompile(`\b[0-9a-f]{64}\b`).MatchString(wide) {
		t.Errorf("checkpoint list -o wide has no whole root:\n%s", wide)
	}
}

func TestOutputBadFormatIsUsage(t *testing.T) {
	for _, f := range []string{"xml", "JSON", "wide2", ""} {
		_, errOut, code := runTTY(t, false, nil, "-o", f, "version")
		if code != 2 || !strings.Contains(errOut, "want table, wide, json or yaml") {
			t.Errorf("-o %q: exit %d, stderr %q", f, code, errOut)
		}
	}
}

func TestVersionFlagIsVersion(t *testing.T) {
	for _, o := range []string{"table", "json"} {
		a, _, ac := runTTY(t, false, nil, "version", "-o", o)
		b, _, bc := runTTY(t, false, nil, "--version", "-o", o)
		if ac != 0 || bc != 0 || a != b || !strings.Contains(a, Version) {
			t.Errorf("-o %s: version exit %d %q, --version exit %d %q", o, ac, a, bc, b)
		}
	}
}
