package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/storeprobe"
)

// docsDir is the repository's docs/ folder, seen from cmd/.
const docsDir = "../docs"

const regenHint = "run go run . gen-docs --dir docs"

// TestDocsUpToDate regenerates the CLI reference and the man pages and
// compares them with the committed docs/cli and docs/man.
func TestDocsUpToDate(t *testing.T) {
	tmp := t.TempDir()
	if _, err := genDocs(tmp); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ sub, glob string }{{docsCLISubdir, docsMDGlob}, {docsManSubdir, docsManGlob}} {
		want := readGlob(t, filepath.Join(tmp, d.sub), d.glob)
		have := readGlob(t, filepath.Join(docsDir, d.sub), d.glob)
		for _, name := range sortedKeys(want) {
			got, ok := have[name]
			switch {
			case !ok:
				t.Errorf("docs/%s/%s is missing: %s", d.sub, name, regenHint)
			case !bytes.Equal(got, want[name]):
				t.Errorf("docs/%s/%s is stale: %s\n%s", d.sub, name, regenHint, firstDiff(got, want[name]))
			}
		}
		for _, name := range sortedKeys(have) {
			if _, ok := want[name]; !ok {
				t.Errorf("docs/%s/%s belongs to no command any more: %s", d.sub, name, regenHint)
			}
		}
	}
}

// Generating twice gives the same bytes: nothing depends on the clock or
// the environment.
func TestDocsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if _, err := genDocs(a); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "0")
	t.Setenv("NEREUSCTL_STORE", "file:///elsewhere")
	if _, err := genDocs(b); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{docsCLISubdir, docsManSubdir} {
		x, y := readGlob(t, filepath.Join(a, sub), "*"), readGlob(t, filepath.Join(b, sub), "*")
		if len(x) != len(y) || len(x) == 0 {
			t.Fatalf("%s: %d files, then %d", sub, len(x), len(y))
		}
		for name, data := range x {
			if !bytes.Equal(data, y[name]) {
				t.Errorf("%s/%s differs between two runs:\n%s", sub, name, firstDiff(data, y[name]))
			}
		}
	}
	// A rerun into the same folder replaces the files, leaving no extras.
	if _, err := genDocs(a); err != nil {
		t.Fatal(err)
	}
	if n := len(readGlob(t, filepath.Join(a, docsCLISubdir), "*")); n != len(readGlob(t, filepath.Join(b, docsCLISubdir), "*")) {
		t.Errorf("rerun left %d files", n)
	}
}

// TestEveryCommandDocumented walks the whole command tree (hidden commands
// too): every command's long help names its EXIT STATUS and it has
// Examples (STYLE §13, §20).
func TestEveryCommandDocumented(t *testing.T) {
	root := newRootCmd(&globals{stdout: io.Discard, stderr: io.Discard})
	var missing []string
	walkCommands(root, func(c *cobra.Command) {
		var lacks []string
		if !strings.Contains(c.Long, "EXIT STATUS") {
			lacks = append(lacks, "EXIT STATUS in Long (append exitStatusHelp())")
		}
		if strings.TrimSpace(c.Example) == "" {
			lacks = append(lacks, "Example")
		}
		if len(lacks) > 0 {
			missing = append(missing, fmt.Sprintf("%q lacks %s", c.CommandPath(), strings.Join(lacks, " and ")))
		}
	})
	for _, m := range missing {
		t.Error(m)
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range completionShells {
		var out, errb bytes.Buffer
		code := Execute(context.Background(), []string{"completion", shell}, &out, &errb)
		if code != 0 {
			t.Fatalf("completion %s: exit %d: %s", shell, code, errb.String())
		}
		if !strings.Contains(out.String(), "nereusctl") || out.Len() < 1000 {
			t.Errorf("completion %s: suspicious script (%d bytes)", shell, out.Len())
		}
	}
	var out, errb bytes.Buffer
	if code := Execute(context.Background(), []string{"completion", "powershell"}, &out, &errb); code != 2 {
		t.Errorf("completion powershell: exit %d, want 2 (usage); stderr %s", code, errb.String())
	}
	// Completion works even when the config file is broken.
	dir := t.TempDir()
	bad := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(bad, []byte("store: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := Execute(context.Background(), []string{"--config", bad, "completion", "bash"}, &out, &errb); code != 0 {
		t.Errorf("completion with a broken config: exit %d: %s", code, errb.String())
	}
}

// TestLayoutSchemas validates real layout documents against the JSON
// Schemas in docs/formats/schemas: bindings, heads and generation manifests
// (COMMITTED and TOPIC_COMPACTED) written by demo, a lease taken by package
// lease, a quarantine record and a quarantined binding written by verify,
// an archived record written by repair, and edge cases encoded by package
// layout. It also checks the schemas are not vacuous and that every field
// of the Go documents is described.
func TestLayoutSchemas(t *testing.T) {
	schemas := map[string]*jsonschema.Schema{}
	c := jsonschema.NewCompiler()
	for _, name := range []string{"binding", "head", "generation", "quarantine", "lease", "deletion", "retention-progress", "store-probe", "proof-ledger"} {
		path, err := filepath.Abs(filepath.Join(docsDir, "formats", "schemas", name+".schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(path)
		if err != nil {
			t.Fatalf("compile %s: %v", path, err)
		}
		schemas[name] = s
	}
	validate := func(schema, what string, data []byte) error {
		t.Helper()
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return schemas[schema].Validate(inst)
	}
	mustValidate := func(schema, what string, data []byte) {
		t.Helper()
		if err := validate(schema, what, data); err != nil {
			t.Errorf("%s does not match %s.schema.json:\n%v\n%s", what, schema, err, data)
		}
	}

	// Real documents: what demo writes into a file:// store.
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := Execute(context.Background(), []string{"--store", "file://" + dir, "demo", "--no-tour", "--partitions", "1", "--records", "600"}, &out, &errb); code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, errb.String())
	}
	counts := map[string]int{}
	for _, g := range []struct{ schema, glob string }{
		{"binding", "bindings/*/*.json"},
		{"head", "streams/*/head.json"},
		{"generation", "streams/*/generations/*.json"},
	} {
		files, err := filepath.Glob(filepath.Join(dir, g.glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dir, f)
			mustValidate(g.schema, rel, data)
			counts[g.schema]++
		}
	}
	for _, s := range []string{"binding", "head", "generation"} {
		if counts[s] == 0 {
			t.Errorf("demo wrote no %s document to validate", s)
		}
	}
	t.Logf("validated demo documents: %v", counts)

	// Real documents import kafka-log writes with its optional fields: a
	// binding naming its genesis (import.genesis) and its open segment
	// without timestamps (import.open_segment), a manifest recording an
	// empty segment (empty_segments).
	imp := t.TempDir()
	for _, src := range []string{importDir(t, time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)), noTimestampDir(t)} {
		if code := Execute(context.Background(), []string{"--store", "file://" + imp, "import", "kafka-log", src, "--now", "2026-11-29T03:00:00Z"}, &out, &errb); code != 0 {
			t.Fatalf("import %s: exit %d\n%s", src, code, errb.String())
		}
	}
	seen := map[string]bool{}
	for _, g := range []struct{ schema, glob string }{{"binding", "bindings/*/*.json"}, {"generation", "streams/*/generations/*.json"}} {
		files, _ := filepath.Glob(filepath.Join(imp, g.glob))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(imp, f)
			mustValidate(g.schema, rel, data)
			for _, field := range []string{`"genesis"`, `"open_segment"`, `"empty_segments"`} {
				if bytes.Contains(data, []byte(field)) {
					seen[field] = true
				}
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("the imports wrote only %v of import.genesis, import.open_segment, empty_segments", seen)
	}

	// A real lease, as a retention run takes it.
	ctx := context.Background()
	st, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lease.Acquire(ctx, st, "retention", lease.Holder(), time.Minute, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	leaseDoc, err := st.Get(ctx, layout.LeaseKey("retention"), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustValidate("lease", "leases/retention.json", leaseDoc)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Real deletion records, as delete-binding writes them (of a live
	// binding, and of an orphan stream).
	for _, args := range [][]string{{"delete-binding", "orders-0", "--yes"}, {"delete-binding", "payments-0", "--orphan", "s-orphan-test", "--yes"}} {
		if args[1] == "payments-0" {
			if _, err := st.Put(ctx, layout.HeadKey("s-orphan-test"), []byte("{}"), store.IfAbsent()); err != nil {
				t.Fatal(err)
			}
		}
		var out, errb bytes.Buffer
		if code := Execute(ctx, append([]string{"--store", "file://" + dir}, args...), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errb.String())
		}
	}
	dels, _ := filepath.Glob(filepath.Join(dir, "deleted", "*.json"))
	if len(dels) != 2 {
		t.Fatalf("delete-binding wrote %d deletion records, want 2", len(dels))
	}
	for _, f := range dels {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mustValidate("deletion", filepath.Base(f), data)
	}

	// Real proof ledgers, as verify --deep writes them.
	var ledgerDoc []byte
	{
		var out, errb bytes.Buffer
		if code := Execute(ctx, []string{"--store", "file://" + dir, "verify", "--all", "--deep"}, &out, &errb); code != 0 {
			t.Fatalf("verify --deep: exit %d\n%s", code, errb.String())
		}
		ledgers, _ := filepath.Glob(filepath.Join(dir, "streams", "*", "proof.json"))
		if len(ledgers) == 0 {
			t.Fatal("verify --deep wrote no proof ledger")
		}
		for _, f := range ledgers {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			mustValidate("proof-ledger", f, data)
			ledgerDoc = data
		}
	}

	// A real store probe result, passed and failed, as the gate records
	// it (Ensure on a mem:// store, and on one that ignores If-Match).
	probeDocs := map[string][]byte{}
	for name, ps := range map[string]store.Store{"passed": store.NewMem("probe"), "failed": &ignoresIfMatch{store.NewMem("probe-failed")}} {
		if _, err := storeprobe.Ensure(ctx, ps, storeprobe.EnsureOptions{Target: storeprobe.TargetOf(ps), Build: build(), MaxAge: time.Hour, Now: time.Now}); err != nil {
			t.Fatal(err)
		}
		data, err := ps.Get(ctx, layout.StoreProbeKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustValidate("store-probe", "a "+name+" store probe result", data)
		probeDocs[name] = data
	}
	if !bytes.Contains(probeDocs["failed"], []byte(`"ok": false`)) {
		t.Fatalf("the failed probe result passed:\n%s", probeDocs["failed"])
	}

	// A real quarantine: damage one member of an ACTIVE compacted set,
	// let verify quarantine it, and repair it from a copy of the store.
	quarantineFlow(t, dir, st, mustValidate)

	// Edge cases the demo does not write (a previous set, aborted ranges,
	// several findings), encoded by layout.Encode from documents that pass
	// layout's own validation.
	tps, err := layout.ListBindings(ctx, st)
	if err != nil || len(tps) == 0 {
		t.Fatalf("list bindings: %v", err)
	}
	b, _, err := layout.LoadBinding(ctx, st, tps[0].Topic, tps[0].Partition)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(s string) string { return store.SHA256Of([]byte(s)) }
	members := []layout.SetMember{{Gen: 7, ManifestSHA256: sum("gen7")}, {Gen: 9, ManifestSHA256: sum("gen9")}}
	setID := layout.SetID(members)
	qb := *b
	qb.Coverage = layout.Coverage{State: layout.CoverageQuarantined, SetID: setID, Start: 0, End: 120, Members: members}
	qb.Version++
	compacted := &layout.Generation{
		StreamID: b.StreamID, Gen: 9, Kind: layout.KindTopicCompacted, Base: 0, End: 120,
		Objects: []layout.ObjectRef{{Key: layout.StreamPrefix(b.StreamID) + "compacted/" + sum("ntc2") + ".ntc2", Base: 0, End: 120, Size: 4096,
			ETag: "0123456789abcdef0123456789abcdef", CRC32C: 123456, SHA256: sum("ntc2")}},
		Sources:      []layout.SourceRef{{Gen: 0, ManifestSHA256: sum("gen0")}, {Gen: 1, ManifestSHA256: sum("gen1")}},
		MaxTimestamp: 1795000000000, CreatedMs: 1795000000001,
		Compaction: &layout.CompactionParams{NowMs: 1795000000000, DeleteRetentionMs: 86400000, HW: 150, LSO: 140, LogStart: 0,
			CleanEnd: 120, PrevEnd: 60, ObjectBytes: 16 << 20, PrevSetID: sum("prev-set"),
			Aborted: []layout.AbortedRange{{ProducerID: 14001, FirstOffset: 35, LastOffset: 45}}},
	}
	nextBase := int64(130)
	rolled := &layout.Generation{
		StreamID: b.StreamID, Gen: 3, Kind: layout.KindCommitted, Base: 120, End: 125,
		Objects: []layout.ObjectRef{{Key: layout.StreamPrefix(b.StreamID) + "objects/00000000000000000120-00000000000000000125.kb", Base: 120, End: 125, Size: 512,
			ETag: "0123456789abcdef0123456789abcdef", CRC32C: 7, SHA256: sum("obj")}},
		Sources: []layout.SourceRef{}, MaxTimestamp: 1795000000000, CreatedMs: 1795000000000, NextSegmentBase: &nextBase,
	}
	quarantine := &layout.Quarantine{
		SetID: setID, Topic: b.Topic, Partition: b.Partition, StreamID: b.StreamID, CreatedMs: 1795000000002,
		Findings: []layout.QuarantineFinding{{Gen: 9, Object: compacted.Objects[0].Key, Check: "sha256", Expected: sum("ntc2"), Found: sum("flipped")}},
	}
	archived := *quarantine
	archived.Repair = &layout.RepairRecord{RepairedMs: 1795000000003, Source: "s3://replica/nereus", Restored: []string{compacted.Objects[0].Key}}
	for _, d := range []struct {
		schema, what string
		doc          interface{ Validate() error }
	}{
		{"binding", "a binding with QUARANTINED coverage", &qb},
		{"generation", "a TOPIC_COMPACTED generation", compacted},
		{"generation", "a COMMITTED generation recording the next segment's base", rolled},
		{"quarantine", "a quarantine record", quarantine},
		{"quarantine", "an archived quarantine record", &archived},
		{"retention-progress", "a retention run's store progress", &layout.RetentionProgress{
			Selection: "--all 1/4", Targets: 2, TargetsSHA256: sum("orders-0\norders-1"), NowMs: 1795000000000,
			StartedMs: 1795000000001, UpdatedMs: 1795000000002, Holder: lease.Holder(),
			Watermark: 1, Failed: []int{0}, Ahead: []int{}, Trimmed: 0, Unchanged: 0}},
		{"retention-progress", "a retention run's store progress with a partition done past the watermark", &layout.RetentionProgress{
			Selection: "--all 1/4", Targets: 3, TargetsSHA256: sum("orders-0\norders-1\norders-2"), NowMs: 1795000000000,
			StartedMs: 1795000000001, UpdatedMs: 1795000000002, Holder: lease.Holder(),
			Watermark: 1, Failed: []int{}, Ahead: []int{2}, Trimmed: 1, Unchanged: 1, GarbageBytes: 41810}},
	} {
		if err := d.doc.Validate(); err != nil {
			t.Fatalf("%s: layout rejects the sample itself: %v", d.what, err)
		}
		mustValidate(d.schema, d.what, layout.Encode(d.doc))
	}

	// The schemas refuse what layout refuses.
	bindingJSON := layout.Encode(b)
	headJSON, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(layout.HeadKey(b.StreamID))))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		schema, what string
		data         []byte
		edit         func(m map[string]any)
	}{
		{"binding", "unknown coverage state", bindingJSON, func(m map[string]any) { m["compacted_coverage"].(map[string]any)["state"] = "BOGUS" }},
		{"binding", "ACTIVE coverage without a set", bindingJSON, func(m map[string]any) {
			m["compacted_coverage"] = map[string]any{"state": "ACTIVE", "start": 0, "end": 10}
		}},
		{"binding", "missing stream_id", bindingJSON, func(m map[string]any) { delete(m, "stream_id") }},
		{"binding", "upper-case stream id", bindingJSON, func(m map[string]any) { m["stream_id"] = "S-1" }},
		{"binding", "topic with a slash", bindingJSON, func(m map[string]any) { m["topic"] = "a/b" }},
		{"binding", "version 0", bindingJSON, func(m map[string]any) { m["version"] = 0 }},
		{"head", "missing trim", headJSON, func(m map[string]any) { delete(m, "trim") }},
		{"head", "negative head", headJSON, func(m map[string]any) { m["head"] = -1 }},
		{"generation", "unknown kind", layout.Encode(compacted), func(m map[string]any) { m["kind"] = "SNAPSHOT" }},
		{"generation", "COMMITTED with compaction params", layout.Encode(compacted), func(m map[string]any) { m["kind"] = "COMMITTED" }},
		{"generation", "TOPIC_COMPACTED with a next segment base", layout.Encode(compacted), func(m map[string]any) { m["next_segment_base"] = 130 }},
		{"generation", "a negative next segment base", layout.Encode(rolled), func(m map[string]any) { m["next_segment_base"] = -1 }},
		{"generation", "upper-case sha256", layout.Encode(compacted), func(m map[string]any) {
			m["objects"].([]any)[0].(map[string]any)["sha256"] = strings.ToUpper(sum("x"))
		}},
		{"quarantine", "no findings", layout.Encode(quarantine), func(m map[string]any) { m["findings"] = []any{} }},
		{"lease", "no holder", leaseDoc, func(m map[string]any) { delete(m, "holder") }},
		{"binding", "no digest", bindingJSON, func(m map[string]any) { delete(m, "digest") }},
		{"binding", "a flipped field name", bindingJSON, func(m map[string]any) {
			c := m["config"].(map[string]any)
			c["vetention.bytes"] = c["retention.bytes"]
			delete(c, "retention.bytes")
		}},
		{"head", "an unknown field", headJSON, func(m map[string]any) { m["tvim"] = 0 }},
		{"proof-ledger", "a proof of a mutable document", ledgerDoc, func(m map[string]any) {
			m["proofs"].([]any)[0].(map[string]any)["key"] = "streams/s-1/head.json"
		}},
		{"proof-ledger", "a proof without its build", ledgerDoc, func(m map[string]any) { delete(m["proofs"].([]any)[0].(map[string]any), "build") }},
		{"lease", "a malformed digest", leaseDoc, func(m map[string]any) { m["digest"] = "sha256:XYZ" }},
		{"store-probe", "no checks", probeDocs["passed"], func(m map[string]any) { m["checks"] = []any{} }},
		{"store-probe", "a check without its guarantee", probeDocs["failed"], func(m map[string]any) { delete(m["checks"].([]any)[0].(map[string]any), "guarantee") }},
		{"store-probe", "a bad check name", probeDocs["passed"], func(m map[string]any) { m["checks"].([]any)[0].(map[string]any)["name"] = "If-Match" }},
		{"store-probe", "no endpoint", probeDocs["passed"], func(m map[string]any) { delete(m, "endpoint") }},
		{"store-probe", "an unknown field", probeDocs["passed"], func(m map[string]any) { m["passed"] = true }},
	} {
		var m map[string]any
		jd := json.NewDecoder(bytes.NewReader(bad.data))
		jd.UseNumber()
		if err := jd.Decode(&m); err != nil {
			t.Fatal(err)
		}
		bad.edit(m)
		data, _ := json.Marshal(m)
		if validate(bad.schema, bad.what, data) == nil {
			t.Errorf("%s.schema.json accepts a document with %s:\n%s", bad.schema, bad.what, data)
		}
	}

	// Every JSON field of the Go documents is described by its schema, so
	// a new field cannot go undocumented.
	for _, d := range []struct {
		schema string
		typ    reflect.Type
	}{
		{"binding", reflect.TypeOf(layout.Binding{})},
		{"head", reflect.TypeOf(layout.Head{})},
		{"generation", reflect.TypeOf(layout.Generation{})},
		{"quarantine", reflect.TypeOf(layout.Quarantine{})},
		{"lease", reflect.TypeOf(layout.Lease{})},
		{"retention-progress", reflect.TypeOf(layout.RetentionProgress{})},
		{"store-probe", reflect.TypeOf(layout.StoreProbe{})},
		{"proof-ledger", reflect.TypeOf(layout.ProofLedger{})},
	} {
		raw, err := os.ReadFile(filepath.Join(docsDir, "formats", "schemas", d.schema+".schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for _, f := range undescribedFields(d.typ, doc, doc, d.schema) {
			t.Errorf("%s.schema.json does not describe %s: document the field in docs/formats/schemas and docs/layout.md", d.schema, f)
		}
	}
}

// undescribedFields lists the JSON fields of struct type t (recursively)
// that the schema node s does not name in "properties".
func undescribedFields(t reflect.Type, s, root map[string]any, path string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
		if items, ok := s["items"].(map[string]any); ok {
			s = items
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	s = resolveSchema(s, root)
	props, _ := s["properties"].(map[string]any)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p, ok := props[name].(map[string]any)
		if !ok {
			out = append(out, path+"."+name)
			continue
		}
		out = append(out, undescribedFields(f.Type, p, root, path+"."+name)...)
	}
	return out
}

// resolveSchema follows a local $ref and picks the object branch of a
// oneOf (the nullable fields).
func resolveSchema(s, root map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok && strings.HasPrefix(ref, "#/$defs/") {
		if defs, ok := root["$defs"].(map[string]any); ok {
			if d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
				return d
			}
		}
	}
	if alts, ok := s["oneOf"].([]any); ok {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && m["type"] == "object" {
				return m
			}
		}
	}
	return s
}

func readGlob(t *testing.T, dir, glob string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// firstDiff shows the first line where committed and generated differ.
func firstDiff(committed, generated []byte) string {
	a, b := strings.Split(string(committed), "\n"), strings.Split(string(generated), "\n")
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y || i >= len(a) || i >= len(b) {
			return fmt.Sprintf("  line %d:\n  - committed: %q\n  + generated: %q", i+1, x, y)
		}
	}
	return "  (no line differs)"
}

// goreleaserConfig is the part of the goreleaser v2 schema .goreleaser.yaml
// uses. Decoding is strict, so a misspelt key fails here: goreleaser itself
// is too heavy to install in CI just to run 'goreleaser check'. A new key
// that goreleaser documents goes into this struct too.
type goreleaserConfig struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Before      struct {
		Hooks []string `yaml:"hooks"`
	} `yaml:"before"`
	Builds []struct {
		ID           string   `yaml:"id"`
		Main         string   `yaml:"main"`
		Binary       string   `yaml:"binary"`
		Env          []string `yaml:"env"`
		Goos         []string `yaml:"goos"`
		Goarch       []string `yaml:"goarch"`
		Flags        []string `yaml:"flags"`
		Ldflags      []string `yaml:"ldflags"`
		ModTimestamp string   `yaml:"mod_timestamp"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string           `yaml:"id"`
		IDs          []string         `yaml:"ids"`
		Formats      []string         `yaml:"formats"`
		NameTemplate string           `yaml:"name_template"`
		Files        []goreleaserFile `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Snapshot struct {
		VersionTemplate string `yaml:"version_template"`
	} `yaml:"snapshot"`
	Changelog struct {
		Sort string `yaml:"sort"`
	} `yaml:"changelog"`
	Release struct {
		GitHub struct {
			Owner string `yaml:"owner"`
			Name  string `yaml:"name"`
		} `yaml:"github"`
	} `yaml:"release"`
}

// goreleaserFile is an archive file entry: a glob, or {src, dst, ...}.
type goreleaserFile struct {
	Src         string `yaml:"src"`
	Dst         string `yaml:"dst"`
	StripParent bool   `yaml:"strip_parent"`
}

func (f *goreleaserFile) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		f.Src = n.Value
		return nil
	}
	type plain goreleaserFile
	return n.Decode((*plain)(f))
}

// TestGoreleaserConfig checks .goreleaser.yaml: v2 schema, linux and darwin
// on amd64 and arm64, the version ldflags aimed at this package's
// variables, checksums, and man pages and completions in every archive,
// made by before hooks that run this binary's own commands.
func TestGoreleaserConfig(t *testing.T) {
	raw, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var c goreleaserConfig
	if err := dec.Decode(&c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v\n(a valid goreleaser v2 key goes into goreleaserConfig in cmd/docs_test.go)", err)
	}
	if c.Version != 2 {
		t.Errorf("version: %d, want 2", c.Version)
	}
	if len(c.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(c.Builds))
	}
	b := c.Builds[0]
	if b.Main != "." || b.Binary != "nereusctl" {
		t.Errorf("build main %q binary %q, want . and nereusctl", b.Main, b.Binary)
	}
	sameSet := func(what string, got, want []string) {
		g, w := append([]string(nil), got...), append([]string(nil), want...)
		sort.Strings(g)
		sort.Strings(w)
		if strings.Join(g, ",") != strings.Join(w, ",") {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	sameSet("goos", b.Goos, []string{"linux", "darwin"})
	sameSet("goarch", b.Goarch, []string{"amd64", "arm64"})
	// The -X targets must be this package's variables.
	pkg := reflect.TypeOf(globals{}).PkgPath()
	_, _, _ = Version, Commit, Date
	ld := strings.Join(b.Ldflags, " ")
	for _, want := range []string{"-s", "-w",
		"-X " + pkg + ".Version={{.Version}}",
		"-X " + pkg + ".Commit={{.Commit}}",
		"-X " + pkg + ".Date={{.Date}}"} {
		if !strings.Contains(" "+ld+" ", " "+want+" ") {
			t.Errorf("ldflags %q lack %q", ld, want)
		}
	}
	if c.Checksum.NameTemplate == "" {
		t.Error("checksum: no name_template")
	}
	hooks := strings.Join(c.Before.Hooks, "\n")
	if !strings.Contains(hooks, "go run . gen-docs --dir dist-extras") {
		t.Errorf("before hooks do not generate the man pages into dist-extras:\n%s", hooks)
	}
	for _, shell := range completionShells {
		if !strings.Contains(hooks, "go run . completion "+shell+" > dist-extras/completions/") {
			t.Errorf("before hooks do not write the %s completion into dist-extras/completions:\n%s", shell, hooks)
		}
	}
	if len(c.Archives) == 0 {
		t.Fatal("no archives")
	}
	for i, a := range c.Archives {
		if len(a.Formats) == 0 {
			t.Errorf("archive %d: no formats", i)
		}
		var man, comp bool
		for _, f := range a.Files {
			man = man || (f.Src == "dist-extras/man/*.1" && f.Dst == "man/man1")
			comp = comp || (f.Src == "dist-extras/completions/*" && f.Dst == "completions")
		}
		if !man || !comp {
			t.Errorf("archive %d: man pages in man/man1 %v, completions in completions/ %v; want both", i, man, comp)
		}
	}
}

// TestDeployManifests checks the Kubernetes examples in docs/deploy: they
// parse, every nereusctl invocation names a real command with real flags,
// the shard count matches the Job's completions, and podFailurePolicy
// names only documented exit codes.
func TestDeployManifests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(docsDir, "deploy", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in docs/deploy: %v", err)
	}
	known := map[int]bool{}
	for _, c := range exitcode.All {
		known[int(c.Code)] = true
	}
	invocations := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			spec, _ := doc["spec"].(map[string]any)
			if doc["kind"] == "CronJob" {
				jt, _ := spec["jobTemplate"].(map[string]any)
				spec, _ = jt["spec"].(map[string]any)
			}
			if spec == nil || (doc["kind"] != "Job" && doc["kind"] != "CronJob") {
				continue
			}
			name := fmt.Sprintf("%s %v", filepath.Base(f), doc["metadata"])
			if pfp, ok := spec["podFailurePolicy"].(map[string]any); ok {
				rules, _ := pfp["rules"].([]any)
				for _, r := range rules {
					oc, _ := r.(map[string]any)["onExitCodes"].(map[string]any)
					vals, _ := oc["values"].([]any)
					for _, v := range vals {
						if code, _ := v.(int); !known[code] {
							t.Errorf("%s: podFailurePolicy names exit code %v, which nereusctl does not use", name, v)
						}
					}
				}
			}
			tmpl, _ := spec["template"].(map[string]any)
			pod, _ := tmpl["spec"].(map[string]any)
			containers, _ := pod["containers"].([]any)
			for _, ci := range containers {
				c, _ := ci.(map[string]any)
				if cmd, _ := c["command"].([]any); len(cmd) != 1 || cmd[0] != "nereusctl" {
					continue
				}
				invocations++
				vars := map[string]string{}
				if spec["completionMode"] == "Indexed" {
					vars["JOB_COMPLETION_INDEX"] = "0" // set by Kubernetes in every pod of an Indexed Job
				}
				env, _ := c["env"].([]any)
				for _, e := range env {
					em, _ := e.(map[string]any)
					n, _ := em["name"].(string)
					if v, ok := em["value"].(string); ok {
						vars[n] = v
					} else {
						vars[n] = "0" // from the completion index
					}
				}
				var args []string
				argv, _ := c["args"].([]any)
				for _, a := range argv {
					s := fmt.Sprint(a)
					for k, v := range vars {
						s = strings.ReplaceAll(s, "$("+k+")", v)
					}
					if strings.Contains(s, "$(") {
						t.Errorf("%s: argument %q uses an undefined variable", name, a)
					}
					args = append(args, s)
				}
				root := newRootCmd(&globals{stdout: io.Discard, stderr: io.Discard})
				sub, rest, err := root.Find(args)
				if err != nil || sub == root {
					t.Errorf("%s: nereusctl %v: no such command (%v)", name, args, err)
					continue
				}
				if err := sub.ParseFlags(rest); err != nil {
					t.Errorf("%s: nereusctl %v: %v", name, args, err)
					continue
				}
				if fl := sub.Flags().Lookup("shard"); fl != nil && fl.Value.String() != "" {
					_, n, err := layout.ParseShard(fl.Value.String())
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					if comp, ok := spec["completions"].(int); !ok || comp != n {
						t.Errorf("%s: --shard i/%d but completions is %v", name, n, spec["completions"])
					}
					// Shards run at once: partition leases, never a store-wide one.
					if par, ok := spec["parallelism"].(int); !ok || par != n {
						t.Errorf("%s: --shard i/%d but parallelism is %v: the shards should run at once", name, n, spec["parallelism"])
					}
				}
			}
		}
	}
	if invocations == 0 {
		t.Error("docs/deploy has no nereusctl invocation")
	}
}

// quarantineFlow runs verify and repair for real on the demo store in dir
// and validates the documents they write.
func quarantineFlow(t *testing.T, dir string, st store.Store, mustValidate func(schema, what string, data []byte)) {
	t.Helper()
	ctx := context.Background()
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var b *layout.Binding
	for _, tp := range tps {
		c, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if c.Coverage.State == layout.CoverageActive {
			b = c
			break
		}
	}
	if b == nil {
		t.Error("demo wrote no ACTIVE compacted coverage: no real quarantine record to validate")
		return
	}
	g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, b.Coverage.Members[0].Gen)
	if err != nil {
		t.Fatal(err)
	}
	member := g.Objects[0]
	replica := t.TempDir()
	if err := os.CopyFS(replica, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(member.Key))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(want int, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Execute(ctx, append([]string{"--store", "file://" + dir}, args...), &out, &errb); code != want {
			t.Fatalf("nereusctl %v: exit %d, want %d\n%s%s", args, code, want, out.String(), errb.String())
		}
	}
	tp := b.Name()
	run(3, "verify", tp, "--deep")
	rec, err := st.Get(ctx, layout.QuarantineKey(b.Coverage.SetID), nil)
	if err != nil {
		t.Fatalf("verify wrote no quarantine record: %v", err)
	}
	mustValidate("quarantine", "the quarantine record verify wrote", rec)
	qb, err := st.Get(ctx, layout.BindingKey(b.Topic, b.Partition), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustValidate("binding", "the binding verify quarantined", qb)
	run(0, "repair", tp, "--digest", "sha256:"+member.SHA256, "--from", "file://"+replica)
	archived, err := st.List(ctx, layout.QuarantinePrefix+"archive/")
	if err != nil || len(archived) == 0 {
		t.Fatalf("repair archived no quarantine record (%v)", err)
	}
	for _, in := range archived {
		doc, err := st.Get(ctx, in.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustValidate("quarantine", in.Key, doc)
	}
}

// ignoresIfMatch is a store that turns If-Match writes into plain ones, as
// a store that does not support them does.
type ignoresIfMatch struct{ store.Store }

func (s *ignoresIfMatch) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	if _, ok := g.MatchETag(); ok {
		g = store.None()
	}
	return s.Store.Put(ctx, key, data, g)
}
