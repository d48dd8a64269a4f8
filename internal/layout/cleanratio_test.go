package layout

import (
	"strings"
	"testing"
)

// TestBindingMinCleanableDirtyRatio: the optional config field round-trips,
// is absent from a binding that has none (so such bindings keep their
// bytes and digest), and a value outside Kafka's [0, 1] or of another JSON
// type is refused by the strict decoder, naming the object.
func TestBindingMinCleanableDirtyRatio(t *testing.T) {
	b := validBinding()
	if enc := string(Encode(b)); strings.Contains(enc, "min.cleanable.dirty.ratio") {
		t.Fatalf("a binding without the ratio encodes it: %s", enc)
	}
	if b.Config.CleanableRatio() != 0.5 {
		t.Fatalf("default ratio %v, want Kafka's 0.5", b.Config.CleanableRatio())
	}
	r := 0.25
	b.Config.MinCleanableDirtyRatio = &r
	var got Binding
	if err := Decode("k", Encode(b), &got); err != nil {
		t.Fatal(err)
	}
	if got.Config.CleanableRatio() != 0.25 || string(Encode(&got)) != string(Encode(b)) {
		t.Fatalf("round trip: %v", got.Config.CleanableRatio())
	}
	for _, bad := range []float64{1.5, -0.25} {
		b := validBinding()
		b.Config.MinCleanableDirtyRatio = &bad
		err := Decode("bindings/orders/3.json", Encode(b), &Binding{})
		if err == nil || !strings.Contains(err.Error(), "bindings/orders/3.json") || !strings.Contains(err.Error(), "min.cleanable.dirty.ratio") {
			t.Errorf("ratio %v: %v", bad, err)
		}
	}
	s := validBinding()
	doc := strings.Replace(string(Encode(s)), `"max.compaction.lag.ms": 9223372036854775807`, `"max.compaction.lag.ms": 9223372036854775807, "min.cleanable.dirty.ratio": "0.5"`, 1)
	if err := Decode("bindings/orders/3.json", []byte(doc), &Binding{}); err == nil || !strings.Contains(err.Error(), "want a number") {
		t.Errorf("a string ratio: %v", err)
	}
}
