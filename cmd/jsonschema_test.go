package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/demo"
)

// jsonSchemasDir holds one JSON Schema per command document
// (docs/json-output.md).
var jsonSchemasDir = filepath.Join(docsDir, "json-schemas")

// noJSONOutput lists the leaf commands that write no JSON document under
// -o json, with the reason. Every other leaf command must be covered by a
// case of TestJSONOutputSchemas.
var noJSONOutput = map[string]string{
	"store cat":  "writes the object's raw bytes, unchanged",
	"completion": "writes a shell completion script",
	"gen-docs":   "hidden: writes the CLI reference and man pages into a directory",
}

// jsonCase is one run of a command under -o json: the store it runs on,
// its arguments (after --store and -o json), the exit code wanted and the
// schema its stdout must match.
type jsonCase struct {
	name    string // what the case shows
	command string // the command path without "nereusctl"
	schema  string // docs/json-schemas/<schema>.schema.json
	store   string // key of jsonStores
	args    []string
	code    int
	lines   bool // JSON Lines (dump): every line is validated
}

// TestJSONOutputSchemas runs every command with -o json in process on real
// stores (a demo store; a copy with a damaged compacted member for verify
// findings, quarantine records, repair and a blocked error; a copy that
// lost a COMMITTED object for data loss; an imported Kafka fixture) and
// validates stdout against its schema in docs/json-schemas. It also fails
// when a key of the output is not described by the schema (a renamed key),
// when a schema file has no case, and when a leaf command that writes JSON
// has no case (walking the cobra tree; noJSONOutput is the exception
// list).
func TestJSONOutputSchemas(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NEREUSCTL_CONFIG", "")
	schemas := compileJSONSchemas(t)
	raw := rawJSONSchemas(t)
	stores := newJSONStores(t)

	offsets := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(offsets, []byte(`{"partitions": [{"topic": "orders", "partition": 0, "offset": 10}], "version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(t.TempDir(), "garbage.nkc1")
	if err := os.WriteFile(garbage, []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture, err := filepath.Abs(filepath.Join("..", "testdata", "kafka", "kafka-uncompacted", "first_topic-2"))
	if err != nil {
		t.Fatal(err)
	}

	cases := jsonCases(offsets, garbage, fixture)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := stores.copy(t, c.store)
			args := []string{"--store", url, "-o", "json"}
			args = append(args, strings.Fields(c.command)...)
			for _, a := range c.args {
				args = append(args, strings.ReplaceAll(a, "REPLICA", stores.url("demo")))
			}
			var out, errb bytes.Buffer
			code := Execute(context.Background(), args, &out, &errb)
			if code != c.code {
				t.Fatalf("nereusctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, c.code, out.String(), errb.String())
			}
			docs := [][]byte{out.Bytes()}
			if c.schema == "stats" {
				// --stats -o json: its document is stderr's last line
				// (stdout keeps the command's own)
				lines := bytes.Split(bytes.TrimSpace(errb.Bytes()), []byte("\n"))
				docs = [][]byte{lines[len(lines)-1]}
			}
			if c.lines {
				docs = bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
			} else if n := countJSONDocs(t, out.Bytes()); n != 1 {
				t.Fatalf("stdout holds %d JSON documents, want 1:\n%s", n, out.String())
			}
			if len(docs) == 0 || len(bytes.TrimSpace(docs[0])) == 0 {
				t.Fatalf("no JSON on stdout; stderr:\n%s", errb.String())
			}
			for i, d := range docs {
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(d))
				if err != nil {
					t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, d)
				}
				if err := schemas[c.schema].Validate(inst); err != nil {
					t.Fatalf("stdout (line %d) does not match %s.schema.json:\n%v\n%s", i+1, c.schema, err, truncate(d))
				}
				var v any
				if err := json.Unmarshal(d, &v); err != nil {
					t.Fatal(err)
				}
				if und := undescribedKeys(v, raw[c.schema], raw[c.schema], raw, ""); len(und) > 0 {
					t.Fatalf("keys of the output that %s.schema.json does not describe (renamed or new: describe them): %v", c.schema, und)
				}
			}
		})
	}

}

// TestJSONSchemaCoverage: every leaf command (walking the cobra tree) is
// validated by a case of TestJSONOutputSchemas or listed in noJSONOutput
// with the reason, and every schema in docs/json-schemas has a case.
func TestJSONSchemaCoverage(t *testing.T) {
	schemas := rawJSONSchemas(t)
	covered := map[string]bool{}
	usedSchemas := map[string]bool{}
	for _, c := range jsonCases("", "", "") {
		if c.schema != "error" {
			covered[c.command] = true
		}
		usedSchemas[c.schema] = true
		if _, ok := schemas[c.schema]; !ok {
			t.Errorf("case %q: no docs/json-schemas/%s.schema.json", c.name, c.schema)
		}
	}
	// Every leaf command writes JSON that a case validates, or is listed
	// with a reason.
	for _, path := range leafCommands(newRootCmd(&globals{})) {
		_, exempt := noJSONOutput[path]
		switch {
		case exempt && covered[path]:
			t.Errorf("%s is listed as writing no JSON but a case validates its JSON: take it off noJSONOutput", path)
		case !exempt && !covered[path]:
			t.Errorf("command %q has no JSON schema case: add one to TestJSONOutputSchemas (and a schema under docs/json-schemas), or list it in noJSONOutput with the reason", path)
		}
	}
	for name := range noJSONOutput {
		if !contains(leafCommands(newRootCmd(&globals{})), name) {
			t.Errorf("noJSONOutput lists %q, which is no command", name)
		}
	}
	for name := range schemas {
		if !usedSchemas[name] {
			t.Errorf("docs/json-schemas/%s.schema.json is validated by no case", name)
		}
	}
}

// jsonCases are the runs TestJSONOutputSchemas validates; offsets is a
// delete-records file, garbage a local file that is no checkpoint, fixture
// a Kafka partition directory.
func jsonCases(offsets, garbage, fixture string) []jsonCase {
	return []jsonCase{
		{"status", "status", "status", "demo", nil, 0, false},
		{"stats of a status", "status", "stats", "demo", []string{"--stats"}, 0, false},
		{"status of named partitions", "status", "status", "demo", []string{"orders-0", "__consumer_offsets-0"}, 0, false},
		{"status with data loss", "status", "status", "loss", nil, 3, false},
		{"status with a blocked partition", "status", "status", "damaged", []string{"__consumer_offsets-0"}, 4, false},
		{"status of an empty store", "status", "status", "empty", []string{"--allow-empty"}, 0, false},
		{"replay", "replay", "replay", "demo", []string{"orders-0"}, 0, false},
		{"replay --compare", "replay", "replay", "demo", []string{"payments-0", "--compare"}, 0, false},
		{"replay with data loss", "replay", "replay", "loss", []string{"orders-0"}, 3, false},
		{"trim --dry-run", "trim", "trim", "demo", []string{"orders-0", "--to", "10", "--dry-run"}, 0, false},
		{"trim", "trim", "trim", "demo", []string{"orders-0", "--to", "10"}, 0, false},
		{"trim out of range", "trim", "trim", "demo", []string{"orders-0", "--to", "999999999"}, 1, false},
		{"delete-records", "delete-records", "trim", "demo", []string{"--offset-json-file", offsets}, 0, false},
		{"retention run --dry-run", "retention run", "retention-run", "demo", []string{"--all", "--dry-run", "--now", "2027-06-01T00:00:00Z"}, 0, false},
		{"retention run", "retention run", "retention-run", "demo", []string{"--all", "--yes", "--now", "2027-06-01T00:00:00Z"}, 0, false},
		{"config get", "config get", "config", "demo", []string{"orders"}, 0, false},
		{"config set", "config set", "config", "demo", []string{"orders-0", "retention.ms=86400000"}, 0, false},
		{"checkpoint list", "checkpoint list", "checkpoint-list", "demo", []string{"orders-0"}, 0, false},
		{"checkpoint list --all", "checkpoint list", "checkpoint-list-all", "demo", []string{"--all"}, 0, false},
		{"checkpoint list of a missing and a readable partition", "checkpoint list", "checkpoint-list-all", "demo", []string{"orders-0", "nosuch-0"}, 1, false},
		{"checkpoint inspect", "checkpoint inspect", "checkpoint-inspect", "demo", []string{"orders-0"}, 0, false},
		{"checkpoint verify", "checkpoint verify", "checkpoint-verify", "demo", []string{"--all"}, 0, false},
		{"checkpoint create --dry-run", "checkpoint create", "checkpoint-create", "demo", []string{"--all", "--dry-run"}, 0, false},
		{"checkpoint create", "checkpoint create", "checkpoint-create", "demo", []string{"orders-0", "payments-0"}, 0, false},
		{"verify --deep", "verify", "verify", "demo", []string{"--all", "--deep"}, 0, false},
		{"verify with findings", "verify", "verify", "damaged", []string{"--all", "--read-only"}, 3, false},
		{"verify --deep --incremental under a budget", "verify", "verify", "demo", []string{"--all", "--deep", "--incremental", "--max-bytes", "20KiB"}, 0, false},
		{"verify --max-age (nothing proved: stale)", "verify", "verify", "demo", []string{"--all", "--max-age", "7d"}, 3, false},
		{"verify --plan", "verify", "verify", "demo", []string{"--all", "--deep", "--incremental", "--max-requests", "5", "--plan"}, 0, false},
		{"delete-binding --dry-run", "delete-binding", "delete-binding", "demo", []string{"orders-0", "--dry-run"}, 0, false},
		{"delete-binding", "delete-binding", "delete-binding", "demo", []string{"orders-0", "--yes"}, 0, false},
		{"gc --dry-run", "gc", "gc", "demo", []string{"--dry-run"}, 0, false},
		{"gc", "gc", "gc", "demo", nil, 0, false},
		{"compact --dry-run", "compact", "compact", "demo", []string{"--all", "--dry-run"}, 0, false},
		{"compact", "compact", "compact", "demo", []string{"customers-0"}, 0, false},
		{"quarantine list", "quarantine list", "quarantine-list", "damaged", nil, 0, false},
		{"quarantine list, none", "quarantine list", "quarantine-list", "demo", nil, 0, false},
		{"repair --dry-run", "repair", "repair", "damaged", []string{"--all-from", "REPLICA", "--dry-run"}, 0, false},
		{"repair", "repair", "repair", "damaged", []string{"--all-from", "REPLICA"}, 0, false},
		{"repair of a set that is not quarantined", "repair", "repair", "demo", []string{"customers-0", "--regenerate", "--digest", "sha256:" + strings.Repeat("0", 64)}, 2, false},
		{"repair of a partition with no compacted set", "repair", "repair", "demo", []string{"orders-0", "--regenerate", "--digest", "sha256:" + strings.Repeat("0", 64)}, 2, false},
		{"dump --deep", "dump", "dump", "demo", []string{"orders-0", "--deep"}, 0, true},
		{"dump of the compacted view", "dump", "dump", "demo", []string{"__consumer_offsets-0"}, 0, true},
		{"import kafka-log", "import kafka-log", "import", "empty", []string{fixture}, 0, false},
		{"demo", "demo", "demo", "empty", []string{"--no-tour", "--records", "300", "--partitions", "1"}, 0, false},
		{"demo, existing", "demo", "demo", "demo", []string{"--no-tour"}, 0, false},
		{"store ls", "store ls", "store-ls", "demo", []string{"bindings/"}, 0, false},
		{"store stat", "store stat", "store-stat", "demo", []string{"bindings/orders/0.json"}, 0, false},
		{"store probe", "store probe", "store-probe", "demo", nil, 0, false},
		{"store upgrade --dry-run", "store upgrade", "store-upgrade", "demo", []string{"--dry-run"}, 0, false},
		{"version", "version", "version", "empty", nil, 0, false},
		{"lease list", "lease list", "lease-list", "demo", nil, 0, false},
		{"lease break, none held", "lease break", "lease-break", "demo", []string{"orders-0"}, 0, false},
		{"error: unknown partition", "replay", "error", "demo", []string{"nosuch-0"}, 1, false},
		{"error: no bindings", "status", "error", "empty", nil, 1, false},
		{"error: usage", "status", "error", "demo", []string{"--bogus"}, 2, false},
		{"error: corrupt checkpoint file", "checkpoint inspect", "error", "demo", []string{"--file", garbage}, 3, false},
		{"error: blocked", "replay", "error", "damaged", []string{"__consumer_offsets-0"}, 4, false},
		{"explain", "explain", "explain", "demo", []string{"orders-0", "100"}, 0, false},
		{"explain of a compacted-away offset", "explain", "explain", "demo", []string{"customers-0", "3"}, 0, false},
		{"explain above the HW", "explain", "explain", "demo", []string{"orders-0", "999999"}, 0, false},
		{"explain in quarantined coverage", "explain", "explain", "damaged", []string{"__consumer_offsets-0", "0"}, 3, false},
		{"explain with data loss", "explain", "explain", "loss", []string{"orders-0", "0"}, 3, false},
		{"replay --plan", "replay", "replay-plan", "demo", []string{"orders-0", "--plan"}, 0, false},
		{"support-bundle", "support-bundle", "support-bundle", "demo", []string{"--output", filepath.Join(filepath.Dir(garbage), "bundle.tar.gz")}, 0, false},
		{"dump --group", "dump", "dump", "demo", []string{"__consumer_offsets", "--group", "group-2", "--count", "3"}, 0, true},
		{"dump --since --until", "dump", "dump", "demo", []string{"orders-0", "--since", "2026-11-02T00:00:00Z", "--until", "2026-11-03T00:00:00Z"}, 0, true},
		{"trim --before --dry-run", "trim", "trim", "demo", []string{"orders-0", "--before", "2026-11-08T00:00:00Z", "--dry-run"}, 0, false},
	}
}

// TestJSONSchemasCatchChanges: the check is not vacuous. A renamed key, a
// changed type and an undescribed key in real output are each caught.
func TestJSONSchemasCatchChanges(t *testing.T) {
	schemas := compileJSONSchemas(t)
	raw := rawJSONSchemas(t)
	var out bytes.Buffer
	if code := Execute(context.Background(), []string{"-o", "json", "version"}, &out, &bytes.Buffer{}); code != 0 {
		t.Fatalf("version: exit %d", code)
	}
	check := func(edit func(m map[string]any)) ([]string, error) {
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		return undescribedKeys(m, raw["version"], raw["version"], raw, ""), schemas["version"].Validate(inst)
	}
	if und, err := check(func(map[string]any) {}); err != nil || len(und) > 0 {
		t.Fatalf("the real document fails: %v %v", err, und)
	}
	if _, err := check(func(m map[string]any) { m["git_commit"] = m["commit"]; delete(m, "commit") }); err == nil {
		t.Error("a renamed required key passed")
	}
	if _, err := check(func(m map[string]any) { m["schema_version"] = "1" }); err == nil {
		t.Error("schema_version as a string passed")
	}
	if und, _ := check(func(m map[string]any) { m["extra"] = 1 }); len(und) != 1 || und[0] != "extra" {
		t.Errorf("an undescribed key was not reported: %v", und)
	}
	// Nested, through $ref and arrays: a status row.
	rows := `{"schema_version": 1, "partitions": [{"topic": "t", "partition": 0, "stream_id": "s", "log_start": 0, "head": 0, "lso": 0,
	  "checkpoint_anchor": null, "checkpoint_age_seconds": null, "tail_objects": 0, "coverage": "NONE", "coverage_start": 0,
	  "coverage_end": 0, "blocked": false, "cleanup_policy": "delete", "config_source": "demo", "producers": 0,
	  "open_transactions": 0, "data_loss": {"missing": [[1, 2]], "extra": true}, "checkpoint_anchors": [], "typo": 1}]}`
	var v any
	if err := json.Unmarshal([]byte(rows), &v); err != nil {
		t.Fatal(err)
	}
	und := undescribedKeys(v, raw["status"], raw["status"], raw, "")
	if strings.Join(und, ",") != "partitions[].data_loss.extra,partitions[].typo" {
		t.Errorf("undescribed keys of a status row: %v", und)
	}
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(rows, `"lso": 0`, `"lso": "0"`, 1)))
	if schemas["status"].Validate(inst) == nil {
		t.Error("a status row with a string lso passed")
	}
}

func compileJSONSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(jsonSchemasDir, "*.schema.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", jsonSchemasDir, err)
	}
	c := jsonschema.NewCompiler()
	out := map[string]*jsonschema.Schema{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(abs)
		if err != nil {
			t.Fatalf("compile %s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".schema.json")] = s
	}
	return out
}

func rawJSONSchemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(jsonSchemasDir, "*.schema.json"))
	out := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".schema.json")] = m
	}
	return out
}

// undescribedKeys returns the paths of the object keys in v that schema
// does not name in properties (where it names properties). It follows
// $ref within docs/json-schemas, oneOf/anyOf branches, items and
// additionalProperties schemas; a $ref to docs/formats/schemas ends the
// walk there (those schemas refuse unknown fields themselves).
func undescribedKeys(v any, schema, root map[string]any, all map[string]map[string]any, path string) []string {
	schema, root = derefSchema(schema, root, all)
	if schema == nil {
		return nil
	}
	var out []string
	var branches []map[string]any
	for _, k := range []string{"oneOf", "anyOf"} {
		if bs, ok := schema[k].([]any); ok {
			for _, b := range bs {
				if bm, ok := b.(map[string]any); ok {
					if r, _ := derefSchema(bm, root, all); r != nil {
						branches = append(branches, bm)
					}
				}
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		if len(branches) > 0 {
			// The keys of every branch that describes an object.
			props := map[string][2]map[string]any{}
			open := false
			for _, b := range branches {
				bs, br := derefSchema(b, root, all)
				if bs == nil {
					open = true
					continue
				}
				ps, ok := bs["properties"].(map[string]any)
				if !ok {
					if bs["type"] == "object" || contains(anyStrings(bs["type"]), "object") {
						open = true
					}
					continue
				}
				for k, p := range ps {
					if _, seen := props[k]; !seen {
						pm, _ := p.(map[string]any)
						props[k] = [2]map[string]any{pm, br}
					}
				}
			}
			for _, k := range sortedKeysOf(x) {
				p, ok := props[k]
				if !ok {
					if !open {
						out = append(out, join(path, k))
					}
					continue
				}
				out = append(out, undescribedKeys(x[k], p[0], p[1], all, join(path, k))...)
			}
			return out
		}
		props, hasProps := schema["properties"].(map[string]any)
		addl, _ := schema["additionalProperties"].(map[string]any)
		for _, k := range sortedKeysOf(x) {
			if p, ok := props[k].(map[string]any); ok {
				out = append(out, undescribedKeys(x[k], p, root, all, join(path, k))...)
			} else if addl != nil {
				out = append(out, undescribedKeys(x[k], addl, root, all, join(path, k))...)
			} else if hasProps {
				out = append(out, join(path, k))
			}
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		if items == nil {
			return nil
		}
		seen := map[string]bool{}
		for _, e := range x {
			for _, u := range undescribedKeys(e, items, root, all, path+"[]") {
				if !seen[u] {
					seen[u] = true
					out = append(out, u)
				}
			}
		}
	}
	return out
}

// derefSchema follows $ref: "#/$defs/x" in root, "NAME.schema.json[#/$defs/x]"
// in docs/json-schemas; any other reference returns nil (not walked).
func derefSchema(s, root map[string]any, all map[string]map[string]any) (map[string]any, map[string]any) {
	for i := 0; i < 10; i++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s, root
		}
		file, frag, _ := strings.Cut(ref, "#")
		if file != "" {
			if strings.Contains(file, "/") {
				return nil, nil
			}
			r, ok := all[strings.TrimSuffix(file, ".schema.json")]
			if !ok {
				return nil, nil
			}
			root = r
		}
		s = root
		if frag != "" {
			defs, _ := root["$defs"].(map[string]any)
			d, ok := defs[strings.TrimPrefix(frag, "/$defs/")].(map[string]any)
			if !ok {
				return nil, nil
			}
			s = d
		}
	}
	return nil, nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func sortedKeysOf(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func anyStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func truncate(b []byte) string {
	if len(b) > 4000 {
		return string(b[:4000]) + "…"
	}
	return string(b)
}

// countJSONDocs counts the JSON values in b.
func countJSONDocs(t *testing.T, b []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				return n
			}
			t.Fatalf("stdout is not JSON: %v\n%s", err, b)
		}
		n++
	}
}

// leafCommands returns the path (without the root's name) of every leaf
// command of root, hidden ones included.
func leafCommands(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if len(c.Commands()) == 0 {
			if c.Runnable() {
				out = append(out, strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
			}
			return
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	sort.Strings(out)
	return out
}

// jsonStores are the stores the cases run on, written once: demo (the
// demo cluster), damaged (demo with one member of __consumer_offsets-0's
// compacted view damaged and quarantined by verify), loss (demo without
// one COMMITTED object of orders-0) and empty.
type jsonStores struct {
	dirs map[string]string
}

func newJSONStores(t *testing.T) *jsonStores {
	t.Helper()
	base := t.TempDir()
	s := &jsonStores{dirs: map[string]string{}}
	for _, name := range []string{"demo", "damaged", "loss", "empty"} {
		s.dirs[name] = filepath.Join(base, name)
	}
	run := func(dir string, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Execute(context.Background(), append([]string{"--store", "file://" + dir}, args...), &out, &errb); code != 0 {
			t.Fatalf("setup %v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
	}
	run(s.dirs["demo"], "demo", "--no-tour", "--records", "3000", "--partitions", "1")
	if err := os.MkdirAll(s.dirs["empty"], 0o755); err != nil {
		t.Fatal(err)
	}
	seed := demo.DefaultOptions().Seed

	copyDirTree(t, s.dirs["demo"], s.dirs["damaged"])
	members, _ := filepath.Glob(filepath.Join(s.dirs["damaged"], "streams", demo.StreamID(seed, "__consumer_offsets", 0), "compacted", "*.ntc2"))
	if len(members) == 0 {
		t.Fatal("the demo wrote no compacted member for __consumer_offsets-0")
	}
	f, err := os.OpenFile(members[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out, errb bytes.Buffer
	if code := Execute(context.Background(), []string{"--store", "file://" + s.dirs["damaged"], "verify", "__consumer_offsets-0"}, &out, &errb); code != 3 {
		t.Fatalf("setup verify of the damaged store: exit %d, want 3\n%s%s", code, out.String(), errb.String())
	}

	copyDirTree(t, s.dirs["demo"], s.dirs["loss"])
	objs, _ := filepath.Glob(filepath.Join(s.dirs["loss"], "streams", demo.StreamID(seed, "orders", 0), "objects", "*.kb"))
	if len(objs) < 3 {
		t.Fatalf("orders-0 has %d objects", len(objs))
	}
	sort.Strings(objs)
	if err := os.Remove(objs[len(objs)/2]); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *jsonStores) url(name string) string { return "file://" + s.dirs[name] }

// copy returns the URL of a fresh copy of the named store: a case that
// writes never changes what the next one sees.
func (s *jsonStores) copy(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "store")
	copyDirTree(t, s.dirs[name], dst)
	return "file://" + dst
}

func copyDirTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(fmt.Errorf("copy %s: %w", src, err))
	}
}
