package nkc1

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nereusctl/nereusctl/internal/state"
)

// fuzzSeeds are valid encodings of several shapes, plus the golden file.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, s := range []struct{ seed, steps int64 }{{1, 0}, {2, 10}, {7, 40}, {4, 200}} {
		rng := rand.New(rand.NewSource(s.seed))
		seeds = append(seeds, mustEncode(f, checkpointFor(rng, genState(rng, int(s.steps)))))
	}
	if g, err := os.ReadFile(filepath.Join("testdata", "v1-small.nkc1")); err == nil {
		seeds = append(seeds, g)
	}
	// A checkpoint recording its manifests (section 11).
	rng := rand.New(rand.NewSource(9))
	withManifests := checkpointFor(rng, genState(rng, 20))
	withManifests.Manifests = someManifests()
	seeds = append(seeds, mustEncode(f, withManifests))
	// A checkpoint carrying an optional section of a newer writer.
	secs := sectionsOf(f, seeds[1])
	seeds = append(seeds, build(append(secs, rawSection{id: 10, flags: FlagOptional, stored: []byte("x"), raw: []byte("x")})))
	return seeds
}

func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("Open error %v wraps neither sentinel", err)
			}
			return
		}
		findings := r.Verify()
		bad := len(findings) > 0
		for _, s := range r.Sections() {
			raw, err := r.Section(s.ID)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("section %s: %v wraps no sentinel", s.Name, err)
				}
				if !bad {
					t.Fatalf("Verify found nothing, Section(%s) failed: %v", s.Name, err)
				}
				continue
			}
			if int64(len(raw)) != s.RawLen {
				t.Fatalf("section %s: %d raw bytes, table says %d", s.Name, len(raw), s.RawLen)
			}
			if v, err := DescribeSection(s.ID, raw); err == nil {
				if _, err := json.Marshal(v); err != nil {
					t.Fatalf("section %s: json: %v", s.Name, err)
				}
			}
		}
		// Tail-only reading agrees with the whole-file reader.
		if _, err := OpenFooter(data[len(data)-r.FooterLen():], int64(len(data))); err != nil {
			t.Fatalf("OpenFooter disagrees with Open: %v", err)
		}
		_, derr := r.Checkpoint()
		if (derr == nil) == bad {
			t.Fatalf("Verify findings %v but Checkpoint error %v", findings, derr)
		}
	})
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("Decode error %v wraps neither sentinel", err)
			}
			return
		}
		// What decodes re-encodes, and the re-encoding decodes to the
		// same state (byte equality holds for our own writer's files).
		again, _, err := Encode(c)
		if err != nil {
			t.Fatalf("a decoded checkpoint does not encode: %v", err)
		}
		c2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not decode: %v", err)
		}
		if state.Digest(c.State) != state.Digest(c2.State) || c.Anchor != c2.Anchor || c.Binding != c2.Binding || !reflect.DeepEqual(c.Manifests, c2.Manifests) {
			t.Fatal("re-encoding changed the checkpoint")
		}
		if again2, _, _ := Encode(c2); !bytes.Equal(again, again2) {
			t.Fatal("encoding is not a fixed point")
		}
	})
}
