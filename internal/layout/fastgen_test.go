package layout

import (
	"bytes"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// fastSamples are generation manifests of every shape the writers make:
// committed with nil or empty sources, compacted with parameters (with and
// without the optional fields, aborted nil, empty and full), no objects.
func fastSamples() []*Generation {
	sha := strings.Repeat("a", 64)
	obj := func(sid string, i int64) ObjectRef {
		return ObjectRef{Key: StreamPrefix(sid) + "objects/" + strings.Repeat("0", 19) + ".kb", Base: i, End: i + 1, Size: 1746 + i, ETag: strings.Repeat("e", 32), CRC32C: 4294967295, SHA256: sha}
	}
	committed := &Generation{StreamID: "s-abc", Gen: 3, Kind: KindCommitted, Base: 0, End: 3,
		Objects: []ObjectRef{obj("s-abc", 0), obj("s-abc", 1), obj("s-abc", 2)}, MaxTimestamp: -1, CreatedMs: 1764633600000}
	// An imported segment followed by a .log file whose first batch lies
	// above its name: the manifest records where that segment starts.
	next := int64(7)
	rolled := &Generation{StreamID: "s-abc", Gen: 4, Kind: KindCommitted, Base: 3, End: 5,
		Objects: []ObjectRef{obj("s-abc", 3), obj("s-abc", 4)}, Sources: []SourceRef{}, MaxTimestamp: 9, CreatedMs: 9, NextSegmentBase: &next}
	return []*Generation{
		committed,
		rolled,
		sampleGeneration(),
		{StreamID: "s-1", Gen: 0, Kind: KindCommitted, Objects: []ObjectRef{}, Sources: []SourceRef{}},
		{StreamID: "s-1", Gen: 2, Kind: KindTopicCompacted, End: 5, Sources: []SourceRef{{Gen: 1, ManifestSHA256: sha}},
			Objects:    []ObjectRef{obj("s-1", 0)},
			Compaction: &CompactionParams{NowMs: 1, DeleteRetentionMs: 86400000, HW: 5, LSO: 5, CleanEnd: 5, ObjectBytes: 1 << 20}},
		{StreamID: "s-1", Gen: 9, Kind: KindTopicCompacted, Base: 2, End: 9, Objects: []ObjectRef{obj("s-1", 3)}, Sources: []SourceRef{{Gen: 1, ManifestSHA256: sha}, {Gen: 4, ManifestSHA256: sha}},
			Compaction: &CompactionParams{NowMs: -5, HW: 9, LSO: 8, LogStart: 2, CleanEnd: 7, PrevEnd: 3, ObjectBytes: 7, PrevSetID: sha,
				Aborted: []AbortedRange{{ProducerID: 7, FirstOffset: 2, LastOffset: 4}, {ProducerID: -1, FirstOffset: 0, LastOffset: 0}},
				Encoder: "ntc2/1 zstd 1.5.7 level 3"}},
		{StreamID: "s-1", Gen: 1, Kind: KindTopicCompacted, Compaction: &CompactionParams{Aborted: []AbortedRange{}}},
	}
}

// sameAsStrict checks the fast decoder against the strict walk, the
// oracle: the same verdict, the same error text, the same value and digest.
func sameAsStrict(t *testing.T, data []byte) (fast bool) {
	t.Helper()
	var gf, gs Generation
	df, hf, ef := decodeStrict("g.json", data, &gf)
	ds, hs, es := decodeStrictWalk("g.json", data, &gs)
	if (ef == nil) != (es == nil) || (ef != nil && ef.Error() != es.Error()) {
		t.Fatalf("verdicts differ on %q:\nfast path: %v\nstrict walk: %v", data, ef, es)
	}
	if ef == nil && (df != ds || hf != hs || !reflect.DeepEqual(gf, gs)) {
		t.Fatalf("values differ on %q:\nfast path: %q %v %#v\nstrict walk: %q %v %#v", data, df, hf, gf, ds, hs, gs)
	}
	// Decode (digest rule included) agrees too.
	var g1, g2 Generation
	e1 := Decode("g.json", data, &g1)
	_, _, _ = decodeStrictWalk("g.json", data, &g2)
	if e1 == nil && !reflect.DeepEqual(g1, g2) {
		t.Fatalf("Decode's value differs from the strict walk's on %q", data)
	}
	if es == nil {
		sameEncoding(t, &gs)
	}
	var g Generation
	_, _, fast = decodeGenerationFast(data, &g)
	if fast && !reflect.DeepEqual(g, gs) {
		t.Fatalf("the fast decoder took %q as %#v, the strict walk as %#v", data, g, gs)
	}
	return fast
}

// TestFastGenerationTakesWhatWeWrite: every manifest nereusctl writes (the
// canonical encoding, with and without the digest field) is decoded by
// the one-pass decoder, to the same value as the strict walk; so a deep
// verify or a replay never pays the two-pass decode for a manifest.
func TestFastGenerationTakesWhatWeWrite(t *testing.T) {
	for i, g := range fastSamples() {
		for _, data := range [][]byte{Encode(g), encodePlain(g), bytes.ReplaceAll(Encode(g), []byte("\n"), nil)} {
			if !sameAsStrict(t, data) {
				t.Fatalf("sample %d: the fast decoder declined what nereusctl writes:\n%s", i, data)
			}
			var back Generation
			if err := Decode("g.json", data, &back); err != nil || !reflect.DeepEqual(&back, g) {
				t.Fatalf("sample %d: decoded %#v, %v; want %#v", i, back, err, g)
			}
		}
	}
}

// TestFastGenerationRefusesLikeStrict: the documents the strict decoder
// exists to refuse (a key twice, an unknown or case-flipped key, a missing
// field, null or the wrong type, trailing data, a number out of range or
// not whole, an escape it must not take at face value) get exactly the
// strict walk's verdict, never the fast decoder's acceptance.
func TestFastGenerationRefusesLikeStrict(t *testing.T) {
	base := string(Encode(fastSamples()[5]))
	edits := []struct{ old, new string }{
		{`"gen": 9,`, `"gen": 9, "gen": 9,`},
		{`"kind"`, `"Kind"`},
		{`"crc32c"`, `"crc32C"`},
		{`"base": 2,`, ``},
		{`"hw": 9,`, ``},
		{`"hw": 9,`, `"hw": 9, "hw": 9,`},
		{`"producer_id": 7,`, `"producer_id": 7, "extra": 1,`},
		{`"aborted": [`, `"aborted": null, "x": [`},
		{`"stream_id": "s-1"`, `"stream_id": null`},
		{`"gen": 9`, `"gen": "9"`},
		{`"gen": 9`, `"gen": 9.0`},
		{`"gen": 9`, `"gen": 9e0`},
		{`"gen": 9`, `"gen": 09`},
		{`"gen": 9`, `"gen": 99999999999999999999`},
		{`"gen": 9`, `"gen": -9`},
		{`"object_bytes": 7`, `"object_bytes": -0`},
		{`"stream_id": "s-1"`, `"stream_id": "s-\u0031"`},
		{`"stream_id": "s-1"`, `"stream_\u0069d": "s-1"`},
		{`"kind": "TOPIC_COMPACTED"`, `"kind": "COMMITTED"`},
		{`"sources": [`, `"sources": {`},
		{`"compaction": {`, `"compaction": [`},
		{`"digest"`, `"digest": 1, "digest"`},
	}
	for _, e := range edits {
		if !strings.Contains(base, e.old) {
			t.Fatalf("edit %q: not in the sample", e.old)
		}
		sameAsStrict(t, []byte(strings.Replace(base, e.old, e.new, 1)))
	}
	// next_segment_base: what the strict walk refuses (a string, a
	// fraction, a value Validate refuses: below end, negative) or takes
	// (null: absent), the fast decoder refuses or takes alike.
	rolled := string(Encode(fastSamples()[1]))
	for _, v := range []string{`"7"`, `7.0`, `null`, `4`, `-1`, `5`, `07`, `99999999999999999999`, `true`} {
		sameAsStrict(t, []byte(strings.Replace(rolled, `"next_segment_base": 7`, `"next_segment_base": `+v, 1)))
	}
	sameAsStrict(t, []byte(strings.Replace(rolled, `"next_segment_base": 7`, `"next_segment_base": 7, "next_segment_base": 7`, 1)))
	sameAsStrict(t, []byte(strings.Replace(rolled, `"next_segment_base": 7`, `"Next_segment_base": 7`, 1)))
	for _, tail := range []string{"x", "{}", "null", "\x00"} {
		sameAsStrict(t, []byte(base+tail))
	}
	for _, data := range []string{"", "null", "[]", "{}", "{", `{"stream_id":"s-1"}`, "\ufeff" + base} {
		sameAsStrict(t, []byte(data))
	}
	// Every shorter prefix and every single-byte change of a real manifest.
	rnd := rand.New(rand.NewSource(15))
	for _, g := range fastSamples() {
		data := Encode(g)
		for n := 0; n < len(data); n++ {
			sameAsStrict(t, data[:n])
		}
		for range 3000 {
			mut := bytes.Clone(data)
			const alphabet = "{}[],:\"\\ 0123456789-.eEnulltrfasx\x00\xff"
			mut[rnd.Intn(len(mut))] = alphabet[rnd.Intn(len(alphabet))]
			sameAsStrict(t, mut)
		}
	}
}

// FuzzFastGenerationMatchesStrict: on any input the decoder of manifests
// (one pass where it can) says exactly what the strict walk says.
func FuzzFastGenerationMatchesStrict(f *testing.F) {
	for _, g := range fastSamples() {
		f.Add(Encode(g))
		f.Add(encodePlain(g))
	}
	f.Add([]byte(`{"stream_id":"s-1","gen":1,"gen":1}`))
	f.Fuzz(func(t *testing.T, data []byte) { sameAsStrict(t, data) })
}

// sameEncoding: the reflection-free encoder of manifests (the digest
// check) writes encodePlain's bytes, or declines.
func sameEncoding(t *testing.T, g *Generation) (ok bool) {
	t.Helper()
	want := encodePlain(g)
	got, ok := appendGenerationPlain(nil, g)
	if ok && !bytes.Equal(got, want) {
		t.Fatalf("the manifest encoder wrote\n%s\nencodePlain\n%s", got, want)
	}
	return ok
}

// TestGenerationEncoderMatchesEncodePlain: for every shape of manifest the
// encoder the digest check uses writes what encodePlain writes, and
// declines (leaving it to encodePlain) a string that encoding/json escapes.
func TestGenerationEncoderMatchesEncodePlain(t *testing.T) {
	for i, g := range fastSamples() {
		if !sameEncoding(t, g) {
			t.Fatalf("sample %d: the manifest encoder declined what nereusctl writes", i)
		}
		if contentDigest(g) != "sha256:"+sha256Hex(encodePlain(g)) {
			t.Fatalf("contentDigest differs from the digest of encodePlain")
		}
	}
	for _, s := range []string{"a<b", "a>b", "a&b", "\u00e9", "\x7f", "q\"q", "b\\s", "tab\t"} {
		g := fastSamples()[5]
		g.Compaction.Encoder = s
		if _, ok := appendGenerationPlain(nil, g); ok {
			t.Fatalf("the encoder took %q, which encoding/json escapes or may", s)
		}
		if contentDigest(g) != "sha256:"+sha256Hex(encodePlain(g)) {
			t.Fatalf("contentDigest with %q differs from the digest of encodePlain", s)
		}
	}
}

// BenchmarkDecodeGeneration: a 100-object manifest through Decode (the
// one-pass decoder and the reflection-free digest check) against the
// strict walk and encodePlain's digest it replaces.
func BenchmarkDecodeGeneration(b *testing.B) {
	g := fastSamples()[0]
	for len(g.Objects) < 100 {
		o := g.Objects[len(g.Objects)-1]
		o.Base, o.End = o.End, o.End+1
		g.Objects = append(g.Objects, o)
	}
	g.End = g.Objects[len(g.Objects)-1].End
	data := Encode(g)
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for range b.N {
			var v Generation
			if err := Decode("g.json", data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strict-walk", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for range b.N {
			var v Generation
			if _, _, err := decodeStrictWalk("g.json", data, &v); err != nil {
				b.Fatal(err)
			}
			_ = sha256Hex(encodePlain(&v))
		}
	})
}
