package layout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/verify"
)

// TestBitFlipSweep flips every bit of each kind of document of a small demo
// store (a binding with ACTIVE coverage, a stream head, a COMMITTED and a
// TOPIC_COMPACTED manifest, a quarantine record verify wrote, a lease) and
// decodes the result: every flip must be refused (a named error), or decode
// to exactly the original document (provably harmless). A flip that decodes
// to a different document is silent corruption and fails the test.
func TestBitFlipSweep(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("bitflip")
	o := demo.DefaultOptions()
	o.Records = 3000
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		kind, key string
		fresh     func() interface{ Validate() error }
	}
	var docs []doc
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var active *layout.Binding
	for _, tp := range tps {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if b.Coverage.State == layout.CoverageActive && active == nil {
			active = b
		}
	}
	if active == nil {
		t.Fatal("the demo wrote no ACTIVE coverage")
	}
	docs = append(docs,
		doc{"binding", layout.BindingKey(active.Topic, active.Partition), func() interface{ Validate() error } { return &layout.Binding{} }},
		doc{"head", layout.HeadKey(active.StreamID), func() interface{ Validate() error } { return &layout.Head{} }})
	gens, err := layout.ListGenerations(ctx, st, active.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, st, active.StreamID, n)
		if err != nil {
			t.Fatal(err)
		}
		if !seen[g.Kind] {
			seen[g.Kind] = true
			docs = append(docs, doc{"generation " + g.Kind, layout.GenerationKey(active.StreamID, n), func() interface{ Validate() error } { return &layout.Generation{} }})
		}
	}
	// A real quarantine record: damage a member object, let verify write it.
	g, _, err := layout.LoadGeneration(ctx, st, active.StreamID, active.Coverage.Members[0].Gen)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, g.Objects[0].Key, store.None()); err != nil {
		t.Fatal(err)
	}
	if rep, err := verify.Partition(ctx, st, active, verify.Options{NowMs: 1795000000000}); err != nil || !rep.Quarantined {
		t.Fatalf("verify did not quarantine: %+v %v", rep, err)
	}
	docs = append(docs, doc{"quarantine", layout.QuarantineKey(active.Coverage.SetID), func() interface{ Validate() error } { return &layout.Quarantine{} }})
	if _, err := lease.Acquire(ctx, st, "retention", lease.Holder(), time.Minute, nil, nil); err != nil {
		t.Fatal(err)
	}
	docs = append(docs, doc{"lease", layout.LeaseKey("retention"), func() interface{ Validate() error } { return &layout.Lease{} }})

	var tried, detected, harmless, silent, lenientSilent int
	for _, d := range docs {
		data, err := st.Get(ctx, d.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		orig := d.fresh()
		if err := layout.Decode(d.key, data, orig); err != nil {
			t.Fatalf("%s: the original does not decode: %v", d.kind, err)
		}
		var dt, dh int
		buf := bytes.Clone(data)
		for i := range buf {
			for bit := 0; bit < 8; bit++ {
				buf[i] ^= 1 << bit
				got := d.fresh()
				err := layout.Decode(d.key, buf, got)
				switch {
				case err != nil:
					dt++
				case reflect.DeepEqual(got, orig):
					dh++
				default:
					silent++
					if silent <= 5 {
						t.Errorf("%s %s: flipping bit %d of byte %d (%q) decodes to a different document", d.kind, d.key, bit, i, data[i])
					}
				}
				if lenientDecode(buf, d.fresh, orig) {
					lenientSilent++
				}
				buf[i] ^= 1 << bit
			}
		}
		t.Logf("%-26s %5d bytes: %6d flips, %6d detected, %d harmless", d.kind, len(data), len(data)*8, dt, dh)
		tried += len(data) * 8
		detected += dt
		harmless += dh
	}
	t.Logf("bit-flip sweep: %d documents, %d flips tried, %d detected, %d harmless, %d silent (a lenient encoding/json decoder with the same validation: %d silent)", len(docs), tried, detected, harmless, silent, lenientSilent)
	if len(docs) != 6 {
		t.Fatalf("swept %d kinds of document, want 6", len(docs))
	}
	if silent != 0 {
		t.Fatalf("%d silent flips", silent)
	}
}

// lenientDecode reports a flip that the decoder before strict decoding
// (encoding/json: case-insensitive names, unknown fields ignored, missing
// ones zero; then Validate) accepted as a different document. It is the
// comparison figure of the sweep, not a check.
func lenientDecode(data []byte, fresh func() interface{ Validate() error }, orig any) bool {
	v := fresh()
	dec := json.NewDecoder(bytes.NewReader(data))
	if dec.Decode(v) != nil || dec.More() || v.Validate() != nil {
		return false
	}
	return !reflect.DeepEqual(v, orig)
}
