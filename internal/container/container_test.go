package container

import (
	"bytes"
	"errors"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestPrefixAndTrailerRoundTrip(t *testing.T) {
	b := AppendPrefix(nil, "NKC1", 1, 0)
	if len(b) != PrefixSize {
		t.Fatalf("prefix is %d bytes, want %d", len(b), PrefixSize)
	}
	if err := CheckMagic(b, "NKC1", "an NKC1 checkpoint"); err != nil {
		t.Fatal(err)
	}
	if v, f, err := ParsePrefix(b); err != nil || v != 1 || f != 0 {
		t.Fatalf("ParsePrefix = %d, %d, %v", v, f, err)
	}
	if err := CheckMagic(b, "NTC2", "an NTC2 object"); err == nil || !strings.Contains(err.Error(), "not an NTC2 object") {
		t.Fatalf("wrong magic accepted or unnamed: %v", err)
	}
	if _, _, err := ParsePrefix(b[:7]); err == nil {
		t.Fatal("a 7-byte prefix parsed")
	}
	tr := AppendTrailer([]byte("body"), 1234, "NTC2")
	if n, err := ParseTrailer(tr, "NTC2", "an NTC2 object"); err != nil || n != 1234 {
		t.Fatalf("ParseTrailer = %d, %v", n, err)
	}
	if _, err := ParseTrailer(tr, "NKC1", "an NKC1 checkpoint"); err == nil || !strings.Contains(err.Error(), "not an NKC1 checkpoint, or truncated") {
		t.Fatalf("wrong trailing magic: %v", err)
	}
	if _, err := ParseTrailer(tr[len(tr)-7:], "NTC2", "x"); err == nil {
		t.Fatal("a 7-byte trailer parsed")
	}
	sentinel := errors.New("unknown format version")
	if err := UnknownVersion(sentinel, 9, 1); !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("UnknownVersion: %v", err)
	}
}

func TestEncoderDeterministicAndNamed(t *testing.T) {
	raw := bytes.Repeat([]byte("the same state gives the same bytes; "), 500)
	a, b := NewEncoder(zstd.SpeedFastest, 4), NewEncoder(zstd.SpeedFastest, 1)
	ea, err := a.Get()
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.Get()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ea.EncodeAll(raw, nil), eb.EncodeAll(raw, nil)) {
		t.Fatal("the same level at another concurrency wrote other bytes")
	}
	id := a.Identity()
	if !strings.Contains(id, "klauspost/compress@") || !strings.Contains(id, "level") {
		t.Fatalf("identity %q does not name the library and level", id)
	}
	if c := NewEncoder(zstd.SpeedDefault, 1); c.Identity() == id {
		t.Fatalf("two levels share the identity %q", id)
	}
}

func TestDecodeZstdBounded(t *testing.T) {
	enc, _ := NewEncoder(zstd.SpeedDefault, 1).Get()
	raw := bytes.Repeat([]byte{7}, 100_000)
	z := enc.EncodeAll(raw, nil)
	out, err := DecodeZstdBounded(z, uint64(len(raw)), 8<<20)
	if err != nil || !bytes.Equal(out, raw) {
		t.Fatalf("round trip: %v", err)
	}
	// The container claims fewer raw bytes than the frame holds: refused
	// without producing them (a decompression bomb is bounded by the claim).
	if _, err := DecodeZstdBounded(z, 1000, 8<<20); err == nil {
		t.Fatal("a frame larger than its recorded raw length was accepted")
	}
	// Shared decoder: into a buffer, and refusing a wrong length.
	d := NewSharedDecoder(1<<20, 8<<20)
	buf := make([]byte, 0, len(raw))
	out, err = d.DecodeInto(z, uint64(len(raw)), buf)
	if err != nil || !bytes.Equal(out, raw) || &out[0] != &buf[:1][0] {
		t.Fatalf("DecodeInto: %v (into the caller's buffer: %v)", err, err == nil && &out[0] == &buf[:1][0])
	}
	if _, err := d.DecodeInto(z, 99_999, nil); err == nil {
		t.Fatal("DecodeInto accepted a frame longer than the index says")
	}
}

func TestCodecName(t *testing.T) {
	for c, want := range map[uint8]string{CodecNone: "none", CodecZstd: "zstd", 7: "unknown(7)"} {
		if got := CodecName(c); got != want {
			t.Errorf("CodecName(%d) = %q, want %q", c, got, want)
		}
	}
}

// FuzzParseTrailer: whatever the bytes, a trailer that parses is exactly
// the one AppendTrailer writes for its length, and a prefix that parses
// re-encodes to the same bytes.
func FuzzParseTrailer(f *testing.F) {
	f.Add(AppendTrailer(nil, 120, "NTC2"))
	f.Add(AppendPrefix(nil, "NKC1", 1, 0))
	f.Add([]byte("NKC1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if n, err := ParseTrailer(data, "NTC2", "an NTC2 object"); err == nil {
			if got := AppendTrailer(nil, n, "NTC2"); !bytes.Equal(got, data[len(data)-TrailerSize:]) {
				t.Fatalf("trailer % x parsed as %d, which writes % x", data[len(data)-TrailerSize:], n, got)
			}
		}
		if CheckMagic(data, "NKC1", "x") == nil {
			if v, fl, err := ParsePrefix(data); err == nil {
				if got := AppendPrefix(nil, "NKC1", v, fl); !bytes.Equal(got, data[:PrefixSize]) {
					t.Fatalf("prefix % x parsed as %d/%d, which writes % x", data[:PrefixSize], v, fl, got)
				}
			}
		}
	})
}

// The identity names the library version this binary was built with, in a
// test binary (no module list in its build info) as in a 'go build' one:
// never "(devel)". go.mod pins what this module builds with.
func TestEncoderIdentityNamesTheBuiltVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == zstdModule {
			want = f[1]
		}
	}
	if want == "" {
		t.Fatalf("go.mod does not require %s", zstdModule)
	}
	id := NewEncoder(zstd.SpeedFastest, 1).Identity()
	if exp := "zstd klauspost/compress@" + want + " level fastest"; id != exp {
		t.Fatalf("identity %q, want %q", id, exp)
	}
}

func TestZstdVersion(t *testing.T) {
	mod := func(v string, r *debug.Module) []*debug.Module {
		return []*debug.Module{{Path: "golang.org/x/sync", Version: "v0.1.0"}, {Path: zstdModule, Version: v, Replace: r}}
	}
	for _, c := range []struct {
		name string
		deps []*debug.Module
		file string
		want string
	}{
		{"build info", mod("v1.20.4", nil), "/x/github.com/klauspost/compress@v1.17.0/zstd/encoder.go", "v1.20.4"},
		{"replaced by a module", mod("v1.20.4", &debug.Module{Path: "example.com/fork", Version: "v1.20.5"}), "", "v1.20.4 replaced by example.com/fork@v1.20.5"},
		{"replaced by a directory", mod("v1.20.4", &debug.Module{Path: "../compress"}), "", "v1.20.4 replaced by the local directory ../compress"},
		{"module cache path", nil, "/root/go/pkg/mod/github.com/klauspost/compress@v1.18.0/zstd/encoder.go", "v1.18.0"},
		{"trimmed path", nil, "github.com/klauspost/compress@v1.18.0/zstd/encoder.go", "v1.18.0"},
		{"vendored", nil, "/src/app/vendor/github.com/klauspost/compress/zstd/encoder.go", "unknown"},
		{"nothing", nil, "", "unknown"},
	} {
		if got := zstdVersion(c.deps, c.file); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
