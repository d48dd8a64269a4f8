package layout

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

func validStoreProbe() *StoreProbe {
	return &StoreProbe{
		Store: "s3://kafka-nereus/prod", Endpoint: "https://s3.eu-west-1.amazonaws.com", ProbedMs: 1795392000000, Build: "nereusctl v1.4.0 (3f2a9c0)",
		OK: false,
		Checks: []ProbeCheck{
			{Name: "create-if-absent", Guarantee: "immutable objects are created once", OK: true, Detail: "an If-None-Match: * PUT of a new key succeeded"},
			{Name: "if-none-match-refuses", Guarantee: "nothing is written twice", OK: false, Detail: "a second If-None-Match: * PUT of the key succeeded"},
		},
	}
}

func TestStoreProbeDocument(t *testing.T) {
	p := validStoreProbe()
	data := Encode(p)
	var got StoreProbe
	if err := Decode(StoreProbeKey, data, &got); err != nil {
		t.Fatalf("decode: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(&got, p) {
		t.Fatalf("round trip: %+v, want %+v", got, *p)
	}
	if !bytes.Contains(data, []byte(`"digest": "sha256:`)) {
		t.Fatalf("no digest:\n%s", data)
	}
	if b := got.Broken(); len(b) != 1 || b[0].Name != "if-none-match-refuses" {
		t.Fatalf("broken: %+v", b)
	}
	for _, bad := range []struct {
		what string
		data []byte
	}{
		{"a changed detail", bytes.Replace(data, []byte("PUT of the key succeeded"), []byte("PUT of the key failed!!!"), 1)},
		{"ok flipped", bytes.Replace(data, []byte(`"ok": false`), []byte(`"ok": true`), 1)},
		{"an unknown field", bytes.Replace(data, []byte(`"build"`), []byte(`"bulid"`), 1)},
		{"a missing field", bytes.Replace(data, []byte(`"endpoint": "https://s3.eu-west-1.amazonaws.com",`), nil, 1)},
		{"trailing data", append(append([]byte(nil), data...), []byte("{}")...)},
	} {
		if err := Decode(StoreProbeKey, bad.data, &StoreProbe{}); !errors.Is(err, ErrCorruptDocument) || !strings.Contains(err.Error(), StoreProbeKey) {
			t.Errorf("%s: %v, want a corrupt document naming %s", bad.what, err, StoreProbeKey)
		}
	}
	if err := Decode(StoreProbeKey, encodePlain(p), &StoreProbe{}); !errors.Is(err, ErrLegacyDocument) {
		t.Errorf("without a digest: %v, want ErrLegacyDocument", err)
	}
	for _, inv := range []struct {
		what string
		edit func(p *StoreProbe)
	}{
		{"ok while a check failed", func(p *StoreProbe) { p.OK = true }},
		{"no checks", func(p *StoreProbe) { p.Checks = nil }},
		{"a check twice", func(p *StoreProbe) { p.Checks[1].Name = p.Checks[0].Name }},
		{"a bad check name", func(p *StoreProbe) { p.Checks[0].Name = "If-Match" }},
		{"no store", func(p *StoreProbe) { p.Store = "" }},
		{"no endpoint", func(p *StoreProbe) { p.Endpoint = "" }},
		{"no build", func(p *StoreProbe) { p.Build = "" }},
		{"no time", func(p *StoreProbe) { p.ProbedMs = 0 }},
		{"no guarantee", func(p *StoreProbe) { p.Checks[0].Guarantee = "" }},
	} {
		p := validStoreProbe()
		inv.edit(p)
		if err := Decode(StoreProbeKey, Encode(p), &StoreProbe{}); !errors.Is(err, ErrCorruptDocument) {
			t.Errorf("%s: %v, want a corrupt document", inv.what, err)
		}
	}
}

func TestLoadStoreProbe(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMem("p")
	if _, _, err := LoadStoreProbe(ctx, mem); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	info, err := Create(ctx, mem, StoreProbeKey, validStoreProbe())
	if err != nil {
		t.Fatal(err)
	}
	p, etag, err := LoadStoreProbe(ctx, mem)
	if err != nil || etag != info.ETag || p.Store != "s3://kafka-nereus/prod" {
		t.Fatalf("load: %+v %q %v", p, etag, err)
	}
	if _, err := mem.Put(ctx, StoreProbeKey, []byte("{"), store.None()); err != nil {
		t.Fatal(err)
	}
	if _, etag, err := LoadStoreProbe(ctx, mem); !errors.Is(err, ErrCorruptDocument) || etag != store.ETagOf([]byte("{")) {
		t.Fatalf("corrupt: %q %v, want its ETag and a corrupt document", etag, err)
	}
	if _, err := mem.Put(ctx, StoreProbeKey, make([]byte, MaxStoreProbeBytes+1), store.None()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadStoreProbe(ctx, mem); !errors.Is(err, ErrCorruptDocument) {
		t.Fatalf("too large: %v", err)
	}
}

// FuzzStoreProbe: whatever Decode accepts re-encodes to a document that
// decodes to the same value; and a byte of a valid document changed
// anywhere is refused or decodes to the same content (the digest covers
// every value, so no single change yields another valid result).
func FuzzStoreProbe(f *testing.F) {
	f.Add(Encode(validStoreProbe()), uint32(0), byte(1))
	ok := validStoreProbe()
	ok.Checks[1].OK, ok.OK = true, true
	f.Add(Encode(ok), uint32(100), byte(0x20))
	f.Add([]byte(`{"store":"s3://b","endpoint":"aws","probed_ms":1,"build":"b","ok":true,"checks":[{"name":"a","guarantee":"g","ok":true,"detail":""}]}`), uint32(7), byte(2))
	f.Fuzz(func(t *testing.T, data []byte, pos uint32, xor byte) {
		var p StoreProbe
		if err := Decode("fuzz", data, &p); err == nil {
			var q StoreProbe
			if err := Decode("fuzz", Encode(&p), &q); err != nil || !reflect.DeepEqual(p, q) {
				t.Fatalf("accepted, but its re-encoding decodes to %+v, %v", q, err)
			}
		}
		valid := Encode(validStoreProbe())
		if xor == 0 {
			return
		}
		i := int(pos % uint32(len(valid)))
		flipped := append([]byte(nil), valid...)
		flipped[i] ^= xor
		var r StoreProbe
		if err := Decode("fuzz", flipped, &r); err == nil {
			if !bytes.Equal(Encode(&r), valid) {
				t.Fatalf("byte %d changed (^%#x) gives another valid document:\n%s", i, xor, flipped)
			}
		}
	})
}
