package layout

import (
	"strings"
	"testing"
)

func validBinding() *Binding {
	return &Binding{Topic: "orders", TopicID: "x", Partition: 3, StreamID: "s-abc", Config: DefaultTopicConfig(),
		Coverage: Coverage{State: CoverageNone}, Version: 1}
}

func TestDocumentsRoundTripAndRefuse(t *testing.T) {
	b := validBinding()
	var got Binding
	if err := Decode("k", Encode(b), &got); err != nil {
		t.Fatal(err)
	}
	if string(Encode(&got)) != string(Encode(b)) {
		t.Fatal("binding does not round-trip")
	}
	bad := map[string]string{
		"malformed":     `{"topic": "orders",`,
		"trailing":      string(Encode(b)) + "{}",
		"bad topic":     strings.Replace(string(Encode(b)), `"orders"`, `"or/ders"`, 1),
		"bad policy":    strings.Replace(string(Encode(b)), `"cleanup.policy": "delete"`, `"cleanup.policy": "purge"`, 1),
		"bad coverage":  strings.Replace(string(Encode(b)), `"state": "NONE"`, `"state": "MAYBE"`, 1),
		"no version":    strings.Replace(string(Encode(b)), `"version": 1`, `"version": 0`, 1),
		"bad stream id": strings.Replace(string(Encode(b)), `"s-abc"`, `"../x"`, 1),
	}
	for name, doc := range bad {
		var x Binding
		err := Decode("bindings/orders/3.json", []byte(doc), &x)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), "bindings/orders/3.json") {
			t.Errorf("%s: error does not name the object: %v", name, err)
		}
	}
	g := &Generation{StreamID: "s-abc", Gen: 1, Kind: KindCommitted, Base: 0, End: 10,
		Objects: []ObjectRef{{Key: "streams/s-abc/objects/x.kb", Base: 0, End: 10, SHA256: strings.Repeat("a", 64)}}}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	g.Objects[0].Key = "streams/other/objects/x.kb"
	if err := g.Validate(); err == nil {
		t.Fatal("object outside the stream accepted")
	}
	g.Objects[0].Key = "streams/s-abc/../../etc/passwd"
	if err := g.Validate(); err == nil {
		t.Fatal("hostile key accepted")
	}
}

// FuzzDocuments: every JSON document decoder refuses garbage with an error,
// never a panic, and anything it accepts re-encodes and decodes again.
func FuzzDocuments(f *testing.F) {
	f.Add(Encode(validBinding()))
	f.Add(Encode(&Head{StreamID: "s-1", Epoch: 1, Head: 10, Trim: 2, Version: 3}))
	f.Add(Encode(&Generation{StreamID: "s-1", Gen: 2, Kind: KindTopicCompacted, End: 5, Sources: []SourceRef{}}))
	f.Add(Encode(&Quarantine{SetID: strings.Repeat("b", 64), Topic: "t"}))
	f.Add([]byte(`{"name":"retention","holder":"h","expires_ms":1}`))
	// The optional fields import writes: a binding's import record, a
	// manifest's empty segments.
	imported := validBinding()
	imported.Import = &ImportRecord{Genesis: &CheckpointRef{Key: CheckpointsPrefix(imported.StreamID) + "00000000000000000005-0123456789ab.nkc1", SHA256: strings.Repeat("c", 64), Anchor: 5},
		OpenSegment: &ImportedSegment{Base: 8, End: 10, LastModifiedMs: 1}}
	f.Add(Encode(imported))
	next := int64(8)
	f.Add(Encode(&Generation{StreamID: "s-1", Gen: 0, Kind: KindCommitted, Base: 5, End: 5, Sources: []SourceRef{}, NextSegmentBase: &next,
		EmptySegments: []EmptySegment{{Base: 5, End: 7, LastModifiedMs: 3}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs := []interface{ Validate() error }{&Binding{}, &Head{}, &Generation{}, &Quarantine{}, &Lease{}}
		for _, d := range docs {
			if err := Decode("fuzz", data, d); err == nil {
				if err := Decode("fuzz", Encode(d), d); err != nil {
					t.Fatalf("%T accepted, but its re-encoding is refused: %v", d, err)
				}
			}
		}
		_, _, _ = ParseObjectKey(string(data))
		_, _, _ = ParseCheckpointKey(string(data))
		_, _ = ParseGenerationKey(string(data))
		_, _, _ = ParseBindingKey(string(data))
	})
}
