package layout

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestGenerationEncoderField: a TOPIC_COMPACTED manifest's compaction
// parameters may name the encoder (printable, bounded) or, written before
// it was recorded, not carry the field at all.
func TestGenerationEncoderField(t *testing.T) {
	mk := func(enc string) *Generation {
		return &Generation{StreamID: "s-1", Gen: 3, Kind: KindTopicCompacted, Base: 0, End: 10, Objects: []ObjectRef{}, Sources: []SourceRef{}, MaxTimestamp: -1, CreatedMs: 1,
			Compaction: &CompactionParams{HW: 10, LSO: 10, CleanEnd: 10, ObjectBytes: 1, Aborted: []AbortedRange{}, Encoder: enc}}
	}
	id := "ntc2 v1 zstd klauspost/compress@v1.20.4 level fastest"
	data := Encode(mk(id))
	if !bytes.Contains(data, []byte(`"encoder": "`+id+`"`)) {
		t.Fatalf("encoding lacks the encoder:\n%s", data)
	}
	var g Generation
	if err := Decode("g.json", data, &g); err != nil || g.Compaction.Encoder != id {
		t.Fatalf("decode: %v %+v", err, g.Compaction)
	}
	legacy := Encode(mk(""))
	if bytes.Contains(legacy, []byte(`"encoder"`)) {
		t.Fatalf("an absent encoder is written:\n%s", legacy)
	}
	var l Generation
	if err := Decode("g.json", legacy, &l); err != nil || l.Compaction.Encoder != "" {
		t.Fatalf("a manifest without the encoder does not decode: %v", err)
	}
	for _, bad := range []string{"ntc2 v1\nlevel fastest", strings.Repeat("x", MaxEncoderIdentity+1)} {
		var b Generation
		if err := Decode("g.json", Encode(mk(bad)), &b); !errors.Is(err, ErrCorruptDocument) {
			t.Fatalf("encoder %q accepted: %v", bad, err)
		}
	}
}
