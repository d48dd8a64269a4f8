package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/store"
)

func activeBinding() *Binding {
	b := validBinding()
	b.Config.RetentionBytes = 1 << 30
	members := []SetMember{{Gen: 4, ManifestSHA256: strings.Repeat("c", 64)}}
	b.Coverage = Coverage{State: CoverageActive, SetID: SetID(members), Start: 0, End: 500, Members: members}
	b.ObservedLogStart = 0
	return b
}

func sampleHead() *Head {
	return &Head{StreamID: "s-abc", Epoch: 2, Start: 0, Head: 900, Trim: 300, Version: 7}
}

func sampleGeneration() *Generation {
	return &Generation{StreamID: "s-abc", Gen: 1, Kind: KindCommitted, Base: 0, End: 10,
		Objects: []ObjectRef{{Key: "streams/s-abc/objects/x.kb", Base: 0, End: 10, Size: 3, ETag: "e", CRC32C: 7, SHA256: strings.Repeat("a", 64)}},
		Sources: []SourceRef{}, MaxTimestamp: 5, CreatedMs: 6}
}

func sampleQuarantine() *Quarantine {
	return &Quarantine{SetID: strings.Repeat("b", 64), Topic: "orders", Partition: 3, StreamID: "s-abc",
		Findings: []QuarantineFinding{{Gen: 4, Object: "streams/s-abc/compacted/x.ntc2", Check: "sha256", Expected: "x", Found: "y"}}, CreatedMs: 9}
}

func sampleLease() *Lease {
	return &Lease{Name: "retention", Holder: "host:1", AcquiredMs: 1, ExpiresMs: 2}
}

// withoutDigest re-encodes a document the way a writer before digests did.
func withoutDigest(v any) []byte { return encodePlain(v) }

// mustCorrupt asserts a corruption error that names the key and every
// fragment.
func mustCorrupt(t *testing.T, what string, err error, key string, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted", what)
		return
	}
	if !errors.Is(err, ErrCorruptDocument) {
		t.Errorf("%s: error is not a corrupt document: %v", what, err)
	}
	// The JSON error document's error.object and error.check.
	if obj, check := errkind.FindingOf(err); !strings.Contains(obj, key) || check != CheckDocument {
		t.Errorf("%s: finding (%q, %q), want (%q, %q)", what, obj, check, key, CheckDocument)
	}
	for _, f := range append([]string{key}, fragments...) {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%s: error does not name %q: %v", what, f, err)
		}
	}
}

// TestDecodeRefusesFlippedFieldNames: the flips of the issue, each of which
// today's decoder turned into a silent zero, are corruption naming the
// document and the field, with and without a digest in the document.
func TestDecodeRefusesFlippedFieldNames(t *testing.T) {
	const bkey, hkey = "bindings/orders/3.json", "streams/s-abc/head.json"
	for _, enc := range []struct {
		name string
		f    func(any) []byte
	}{{"with digest", Encode}, {"without digest", withoutDigest}} {
		cases := []struct {
			what, key, from, to string
			doc                 interface{ Validate() error }
			fresh               func() interface{ Validate() error }
			fragments           []string
		}{
			{"retention.bytes flipped", bkey, `"retention.bytes"`, `"vetention.bytes"`, activeBinding(), func() interface{ Validate() error } { return &Binding{} }, []string{`unknown field "vetention.bytes" in config`}},
			{"coverage end flipped", bkey, `"end"`, `"und"`, activeBinding(), func() interface{ Validate() error } { return &Binding{} }, []string{`"und"`, "compacted_coverage.end"}},
			{"head trim flipped", hkey, `"trim"`, `"tvim"`, sampleHead(), func() interface{ Validate() error } { return &Head{} }, []string{`"tvim"`}},
			{"case flip", hkey, `"trim"`, `"Trim"`, sampleHead(), func() interface{ Validate() error } { return &Head{} }, []string{`unknown field "Trim"`}},
			{"case flip nested", bkey, `"retention.ms"`, `"Retention.ms"`, activeBinding(), func() interface{ Validate() error } { return &Binding{} }, []string{`"Retention.ms"`}},
		}
		for _, c := range cases {
			doc := string(enc.f(c.doc))
			if !strings.Contains(doc, c.from) {
				t.Fatalf("%s: sample has no %s", c.what, c.from)
			}
			bad := strings.Replace(doc, c.from, c.to, 1)
			mustCorrupt(t, enc.name+": "+c.what, Decode(c.key, []byte(bad), c.fresh()), c.key, c.fragments...)
		}
	}
}

func TestDecodeRefusesMissingDuplicateNullAndMistyped(t *testing.T) {
	const key = "bindings/orders/3.json"
	doc := string(withoutDigest(activeBinding()))
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(doc))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cov := func(m map[string]any) map[string]any { return m["compacted_coverage"].(map[string]any) }
	cases := []struct {
		what      string
		data      []byte
		fragments []string
	}{
		{"missing end", edit(func(m map[string]any) { delete(cov(m), "end") }), []string{"missing field compacted_coverage.end"}},
		{"missing retention.bytes", edit(func(m map[string]any) { delete(m["config"].(map[string]any), "retention.bytes") }), []string{"missing field config.retention.bytes"}},
		{"missing checkpoint_ref", edit(func(m map[string]any) { delete(m, "checkpoint_ref") }), []string{"missing field checkpoint_ref"}},
		{"null number", edit(func(m map[string]any) { m["observed_log_start"] = nil }), []string{"observed_log_start is null"}},
		{"null config", edit(func(m map[string]any) { m["config"] = nil }), []string{"config is null"}},
		{"string for number", edit(func(m map[string]any) { cov(m)["end"] = "500" }), []string{"compacted_coverage.end is a string, want a number"}},
		{"object for string", edit(func(m map[string]any) { m["topic"] = map[string]any{} }), []string{"topic is an object, want a string"}},
		{"unknown member field", edit(func(m map[string]any) { cov(m)["members"].([]any)[0].(map[string]any)["gem"] = 4 }), []string{`unknown field "gem" in compacted_coverage.members[0]`}},
		{"duplicate field", []byte(strings.Replace(doc, `"version": 1`, `"version": 1, "version": 2`, 1)), []string{`field "version" appears twice`}},
		{"not an object", []byte(`[1]`), []string{"the document is an array, want an object"}},
		{"null document", []byte(`null`), []string{"the document is null"}},
		{"truncated", []byte(doc[:len(doc)/2]), []string{"malformed JSON"}},
		{"trailing data", []byte(doc + "{}"), []string{"trailing data"}},
	}
	for _, c := range cases {
		mustCorrupt(t, c.what, Decode(key, c.data, &Binding{}), key, c.fragments...)
	}
	// A field of another kind is unknown here too.
	mustCorrupt(t, "head field in a lease", Decode("leases/x.json", []byte(strings.Replace(string(Encode(sampleLease())), `"holder"`, `"head": 1, "holder"`, 1)), &Lease{}), "leases/x.json", `unknown field "head"`)
}

// TestDigestDetectsValueFlips: a changed value keeps every name valid; only
// the digest catches it.
func TestDigestDetectsValueFlips(t *testing.T) {
	h := sampleHead()
	doc := string(Encode(h))
	if !strings.Contains(doc, `"digest": "sha256:`) {
		t.Fatalf("no digest in the encoding:\n%s", doc)
	}
	for _, c := range []struct{ from, to string }{
		{`"trim": 300`, `"trim": 100`},
		{`"head": 900`, `"head": 901`},
		{`"epoch": 2`, `"epoch": 3`},
	} {
		bad := strings.Replace(doc, c.from, c.to, 1)
		mustCorrupt(t, c.from+" to "+c.to, Decode("streams/s-abc/head.json", []byte(bad), &Head{}), "streams/s-abc/head.json", "digest", "does not match")
	}
	// A flipped digest hex digit is detected as well.
	i := strings.Index(doc, "sha256:") + len("sha256:")
	flipped := doc[:i] + string(doc[i]^1) + doc[i+1:]
	mustCorrupt(t, "digest flip", Decode("streams/s-abc/head.json", []byte(flipped), &Head{}), "streams/s-abc/head.json", "digest")
	// A digest that is not a string.
	notString := strings.Replace(doc, `"digest": "`, `"digest": 1, "x": "`, 1)
	if err := Decode("h", []byte(notString), &Head{}); !errors.Is(err, ErrCorruptDocument) {
		t.Errorf("digest as a number: %v", err)
	}
}

// TestDocumentsRoundTripWithDigest: every kind round-trips through Encode
// and Decode, the digest is the SHA-256 of the encoding without it, and a
// second Encode gives the same bytes.
func TestDocumentsRoundTripWithDigest(t *testing.T) {
	for _, c := range []struct {
		doc, fresh interface{ Validate() error }
	}{
		{activeBinding(), &Binding{}},
		{sampleHead(), &Head{}},
		{sampleGeneration(), &Generation{}},
		{sampleQuarantine(), &Quarantine{}},
		{sampleLease(), &Lease{}},
	} {
		data := Encode(c.doc)
		if err := Decode("k", data, c.fresh); err != nil {
			t.Fatalf("%T: %v", c.doc, err)
		}
		if !reflect.DeepEqual(c.doc, c.fresh) {
			t.Errorf("%T: decoded %+v, want %+v", c.doc, c.fresh, c.doc)
		}
		if !bytes.Equal(Encode(c.fresh), data) {
			t.Errorf("%T: re-encoding differs", c.doc)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		var d string
		_ = json.Unmarshal(m[DigestField], &d)
		if want := "sha256:" + sha256Hex(encodePlain(c.doc)); d != want {
			t.Errorf("%T: digest %q, want %q", c.doc, d, want)
		}
		// As docs/layout.md says: the stored bytes without the digest
		// line and the comma before it are what the digest covers.
		stripped := strings.Replace(string(data), ",\n  \"digest\": \""+d+"\"\n}", "\n}", 1)
		if stripped != string(encodePlain(c.doc)) {
			t.Errorf("%T: the bytes without the digest line are not the digested encoding:\n%s", c.doc, stripped)
		}
	}
	// A task-like document without a digest kind gets none.
	if bytes.Contains(Encode(&TopicPartition{Topic: "a"}), []byte("digest")) {
		t.Error("a plain struct got a digest")
	}
}

func sha256Hex(b []byte) string { return store.SHA256Of(b) }

// TestLegacyDocuments: a valid document written before digests is a
// distinct error (not corruption) naming the key and the upgrade command,
// with the value decoded; a generation manifest is accepted as it is.
func TestLegacyDocuments(t *testing.T) {
	for _, c := range []struct {
		doc, fresh interface{ Validate() error }
	}{
		{activeBinding(), &Binding{}},
		{sampleHead(), &Head{}},
		{sampleQuarantine(), &Quarantine{}},
		{sampleLease(), &Lease{}},
	} {
		err := Decode("some/key.json", withoutDigest(c.doc), c.fresh)
		if !errors.Is(err, ErrLegacyDocument) || errors.Is(err, ErrCorruptDocument) {
			t.Errorf("%T: %v, want a legacy document error", c.doc, err)
			continue
		}
		if !strings.Contains(err.Error(), "some/key.json") || !strings.Contains(err.Error(), "nereusctl store upgrade") {
			t.Errorf("%T: message does not name the key and the upgrade: %v", c.doc, err)
		}
		if !reflect.DeepEqual(c.doc, c.fresh) {
			t.Errorf("%T: legacy value not decoded", c.doc)
		}
	}
	var g Generation
	if err := Decode("streams/s-abc/generations/1.json", withoutDigest(sampleGeneration()), &g); err != nil {
		t.Errorf("legacy generation manifest refused: %v", err)
	}
	// Strictness still applies to a legacy manifest.
	bad := strings.Replace(string(withoutDigest(sampleGeneration())), `"crc32c"`, `"crc32C"`, 1)
	mustCorrupt(t, "legacy manifest with a flipped name", Decode("g.json", []byte(bad), &Generation{}), "g.json", `"crc32C"`)
}

// TestDecodeZeroesReusedValue: an optional field left from an earlier use
// of the same value does not survive a decode of a document without it.
func TestDecodeZeroesReusedValue(t *testing.T) {
	q := sampleQuarantine()
	q.Repair = &RepairRecord{RepairedMs: 1, Source: "file x", Restored: []string{"k"}}
	reused := *q
	if err := Decode("q", Encode(sampleQuarantine()), &reused); err != nil {
		t.Fatal(err)
	}
	if reused.Repair != nil {
		t.Fatal("stale repair record survived the decode")
	}
}

func TestObjectRefCheckBytes(t *testing.T) {
	data := []byte("some object bytes")
	ref := ObjectRef{Key: "streams/s-1/objects/x.kb", Size: int64(len(data)),
		CRC32C: crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)), SHA256: store.SHA256Of(data)}
	if err := ref.CheckBytes(data); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what  string
		ref   ObjectRef
		data  []byte
		check string
	}{
		{"short", ref, data[:5], "size is 5 bytes, the manifest records 17"},
		{"flipped byte", ref, append([]byte("Some"), data[4:]...), "crc32c is"},
		{"crc recorded wrong", func() ObjectRef { r := ref; r.CRC32C ^= 1; return r }(), data, "crc32c is"},
		{"sha recorded wrong", func() ObjectRef { r := ref; r.SHA256 = strings.Repeat("0", 64); return r }(), data, "sha256 is"},
	} {
		err := c.ref.CheckBytes(c.data)
		if !errors.Is(err, ErrObjectMismatch) || !strings.Contains(err.Error(), ref.Key) || !strings.Contains(err.Error(), c.check) {
			t.Errorf("%s: %v, want a mismatch naming %s and %q", c.what, err, ref.Key, c.check)
		}
	}
}

// TestGenerationNextSegmentBase: a COMMITTED manifest that records where
// the next segment starts (Kafka's .log file name, import) round-trips
// through Encode and both decoders with its digest; a manifest without
// the field keeps its bytes; a value that cannot be a next segment's base
// (below the generation's end, negative, on a TOPIC_COMPACTED manifest)
// is refused as corruption naming the manifest.
func TestGenerationNextSegmentBase(t *testing.T) {
	const key = "streams/s-abc/generations/00000000000000000001.json"
	g := sampleGeneration()
	plain := string(Encode(g))
	if strings.Contains(plain, "next_segment_base") {
		t.Fatalf("a manifest without a next segment base names the field:\n%s", plain)
	}
	next := int64(12)
	g.NextSegmentBase = &next
	data := Encode(g)
	if !strings.Contains(string(data), `"next_segment_base": 12`) {
		t.Fatalf("the field is not written:\n%s", data)
	}
	for _, decode := range []struct {
		name string
		fn   func([]byte, *Generation) error
	}{
		{"Decode", func(b []byte, v *Generation) error { return Decode(key, b, v) }},
		{"strict walk", func(b []byte, v *Generation) error { _, _, err := decodeStrictWalk(key, b, v); return err }},
		{"one pass", func(b []byte, v *Generation) error {
			if _, _, ok := decodeGenerationFast(b, v); !ok {
				return errors.New("declined")
			}
			return nil
		}},
	} {
		var back Generation
		if err := decode.fn(data, &back); err != nil || back.NextSegmentBase == nil || *back.NextSegmentBase != 12 {
			t.Fatalf("%s: %v, next segment base %v", decode.name, err, back.NextSegmentBase)
		}
	}
	if contentDigest(g) == contentDigest(sampleGeneration()) {
		t.Fatal("the digest does not cover the next segment base")
	}
	bad := func(v int64, kind string) []byte {
		b := *sampleGeneration()
		b.NextSegmentBase = &v
		b.Kind = kind
		// Written around Validate, as a damaged or hostile store holds it.
		return withDigest(encodePlain(&b), contentDigest(&b))
	}
	for _, c := range []struct {
		data []byte
		want string
	}{
		{bad(9, KindCommitted), "next_segment_base 9 lies below the generation's end 10"},
		{bad(-3, KindCommitted), "next_segment_base -3 is negative"},
		{bad(10, KindTopicCompacted), "next_segment_base 10: only a sealed segment (COMMITTED) has a next segment"},
	} {
		var back Generation
		mustCorrupt(t, c.want, Decode(key, c.data, &back), key, c.want)
	}
	// The same bytes at the end (10) are a valid next base: the next file
	// is named where this one ends, its first batch lies above.
	var back Generation
	if err := Decode(key, bad(10, KindCommitted), &back); err != nil {
		t.Fatalf("next base at the end refused: %v", err)
	}
}

// empty_segments: absent unless needed (a manifest without it keeps its
// bytes), covered by the digest, decoded by the strict path (the one-pass
// decoder declines it), and refused when its ranges are not ascending from
// the generation's end or lie above next_segment_base.
func TestGenerationEmptySegments(t *testing.T) {
	const key = "streams/s-abc/generations/00000000000000000001.json"
	if strings.Contains(string(Encode(sampleGeneration())), "empty_segments") {
		t.Fatal("a manifest without empty segments names the field")
	}
	g := sampleGeneration()
	g.EmptySegments = []EmptySegment{{Base: 10, End: 12, LastModifiedMs: 7}, {Base: 12, End: 15, LastModifiedMs: 8}}
	data := Encode(g)
	var back Generation
	if err := Decode(key, data, &back); err != nil || len(back.EmptySegments) != 2 || back.EmptySegments[1] != (EmptySegment{Base: 12, End: 15, LastModifiedMs: 8}) {
		t.Fatalf("decode: %v %+v", err, back.EmptySegments)
	}
	if contentDigest(g) == contentDigest(sampleGeneration()) {
		t.Fatal("the digest does not cover the empty segments")
	}
	tampered := strings.Replace(string(data), `"last_modified_ms": 8`, `"last_modified_ms": 9`, 1)
	if err := Decode(key, []byte(tampered), &back); !errors.Is(err, ErrCorruptDocument) {
		t.Fatalf("a changed mtime passed the digest: %v", err)
	}
	bad := func(es []EmptySegment, next int64) []byte {
		b := *sampleGeneration()
		b.EmptySegments = es
		if next >= 0 {
			b.NextSegmentBase = &next
		}
		return withDigest(encodePlain(&b), contentDigest(&b))
	}
	for _, c := range []struct {
		data []byte
		want string
	}{
		{bad([]EmptySegment{{Base: 9, End: 12}}, -1), "empty_segments[0] [9, 12)"},
		{bad([]EmptySegment{{Base: 10, End: 10}}, -1), "empty_segments[0] [10, 10)"},
		{bad([]EmptySegment{{Base: 10, End: 12}, {Base: 11, End: 13}}, -1), "empty_segments[1] [11, 13)"},
		{bad([]EmptySegment{{Base: 10, End: 12}}, 11), "next_segment_base 11 lies below the end 12 of the empty segments"},
	} {
		mustCorrupt(t, c.want, Decode(key, c.data, &back), key, c.want)
	}
}
