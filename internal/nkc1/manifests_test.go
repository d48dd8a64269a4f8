package nkc1

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"
)

func someManifests() []ManifestRef {
	return []ManifestRef{
		{Gen: 0, Kind: layout.KindCommitted, Base: 0, End: 120, Size: 613, MD5: "0123456789abcdef0123456789abcdef"},
		{Gen: 1, Kind: layout.KindCommitted, Base: 120, End: 240, Size: 615, MD5: "fedcba9876543210fedcba9876543210"},
		{Gen: 4, Kind: layout.KindTopicCompacted, Base: 0, End: 240, Size: 942, MD5: "00112233445566778899aabbccddeeff"},
	}
}

// TestManifestsSection: the manifests a checkpoint records round-trip in
// optional section 11; a checkpoint without it (an older writer) decodes
// with none and the same state; a payload that does not decode is
// corruption naming the section; Encode refuses what Decode would.
func TestManifestsSection(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	c := checkpointFor(rng, genState(rng, 30))
	c.Manifests = someManifests()
	data := mustEncode(t, c)
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Manifests, c.Manifests) {
		t.Fatalf("manifests %+v, want %+v", got.Manifests, c.Manifests)
	}
	r, _ := Open(data)
	if info, ok := r.Info(SectionManifests); !ok || !info.Optional || info.Name != "manifests" || info.RawLen != 4+3*manifestRefSize {
		t.Fatalf("section 11: %+v (present %v)", info, ok)
	}
	if v, err := r.Describe(SectionManifests); err != nil || !reflect.DeepEqual(v, c.Manifests) {
		t.Fatalf("describe: %v %v", v, err)
	}
	secs := sectionsOf(t, data)
	old, err := Decode(build(secs[:numRequired]))
	if err != nil || old.Manifests != nil || state.Digest(old.State) != state.Digest(got.State) {
		t.Fatalf("without section 11: %v, manifests %v", err, old.Manifests)
	}
	// An empty list is a section with no entries, not an absent one.
	c.Manifests = []ManifestRef{}
	if got, err := Decode(mustEncode(t, c)); err != nil || got.Manifests == nil || len(got.Manifests) != 0 {
		t.Fatalf("empty: %v %v", got.Manifests, err)
	}

	good, _ := encodeManifests(someManifests())
	entry := func(i int) []byte { return good[4+i*manifestRefSize : 4+(i+1)*manifestRefSize] }
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for name, raw := range map[string][]byte{
		"count over the bytes":  mutate(func(b []byte) { binary.BigEndian.PutUint32(b, 4) }),
		"trailing byte":         append(append([]byte(nil), good...), 0),
		"generations reversed":  append(append([]byte{0, 0, 0, 2}, entry(1)...), entry(0)...),
		"kind 3":                mutate(func(b []byte) { b[4+manifestRefSize-1] = 3 }),
		"end below base":        mutate(func(b []byte) { binary.BigEndian.PutUint64(b[4+8:], 500) }),
		"size 0":                mutate(func(b []byte) { binary.BigEndian.PutUint64(b[4+24:], 0) }),
		"negative generation":   mutate(func(b []byte) { binary.BigEndian.PutUint64(b[4:], 1<<63) }),
		"duplicated generation": append(append([]byte{0, 0, 0, 2}, entry(0)...), entry(0)...),
	} {
		bad := append([]rawSection(nil), secs...)
		bad[len(bad)-1].raw, bad[len(bad)-1].stored = raw, raw
		if bad[len(bad)-1].id != SectionManifests {
			t.Fatal("the manifests section is not the last")
		}
		if _, err := Decode(build(bad)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "section manifests") {
			t.Errorf("%s: %v, want corruption of section manifests", name, err)
		}
	}
	c.Manifests = []ManifestRef{{Gen: 1, Kind: "COMPACTED", Base: 0, End: 1, Size: 1, MD5: "0123456789abcdef0123456789abcdef"}}
	if _, _, err := Encode(c); err == nil {
		t.Fatal("encode accepted an unknown kind")
	}
	c.Manifests = []ManifestRef{{Gen: 1, Kind: layout.KindCommitted, Base: 0, End: 1, Size: 1, MD5: "0123456789ABCDEF0123456789ABCDEF"}}
	if _, _, err := Encode(c); err == nil {
		t.Fatal("encode accepted an upper-case md5")
	}
}
