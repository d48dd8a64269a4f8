package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/dumplog"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// untar returns the archive's files by name.
func untar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = b
	}
}

// A bundle of the demo holds its documents and listings and no record
// data: no data, view or checkpoint object, and no record key or value
// of any partition appears in any file.
func TestBundleHoldsNoRecordData(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records = 3000
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	files, notes, err := Collect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes: %v", notes)
	}
	var buf bytes.Buffer
	if err := Write(&buf, files, time.Unix(1e9, 0)); err != nil {
		t.Fatal(err)
	}
	got := untar(t, buf.Bytes())
	man := string(got["nereusctl-support/MANIFEST"])
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tps {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"store/" + layout.BindingKey(tp.Topic, tp.Partition), "store/" + layout.HeadKey(b.StreamID), "streams/" + b.StreamID + "/listing.json", "streams/" + b.StreamID + "/checkpoints.json"} {
			if _, ok := got["nereusctl-support/"+want]; !ok {
				t.Errorf("%s: no %s in the bundle", tp, want)
			}
			if !strings.Contains(man, want+" ") {
				t.Errorf("MANIFEST does not list %s", want)
			}
		}
	}
	for name := range got {
		if forbidden(name) {
			t.Errorf("the bundle holds %s", name)
		}
	}
	if !strings.Contains(string(got["nereusctl-support/streams/"+demo.StreamID(o.Seed, "orders", 0)+"/checkpoints.json"]), `"name": "anchor"`) {
		t.Error("no checkpoint section table for orders-0")
	}
	// Every record key and value of every partition (those of 12 bytes or
	// more, which no document could hold by chance) is absent.
	checked := 0
	for _, tp := range tps {
		b, _, _ := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		src, err := dumplog.OpenCommitted(ctx, st, b)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dumplog.Run(ctx, src, dumplog.Options{From: -1, Deep: true}, func(l dumplog.Line) error {
			rl, ok := l.(*dumplog.RecordLine)
			if !ok {
				return nil
			}
			for _, d := range [][]byte{rl.Key, rl.Value} {
				if len(d) < 12 {
					continue
				}
				checked++
				for name, f := range got {
					if bytes.Contains(f, d) {
						t.Fatalf("%s holds record bytes of %s offset %d", name, tp, rl.Offset)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d keys and values checked", checked)
	}
}

func TestWriteRefusesRecordData(t *testing.T) {
	for _, name := range []string{"x/objects/0-1.kb", "v.ntc2", "c.nkc1", "../etc/passwd"} {
		var buf bytes.Buffer
		if err := Write(&buf, []File{{Name: name, Data: []byte("x")}}, time.Now()); !errors.Is(err, ErrRecordData) {
			t.Errorf("Write(%s) = %v, want ErrRecordData", name, err)
		}
		if buf.Len() != 0 {
			t.Errorf("Write(%s) wrote %d bytes", name, buf.Len())
		}
	}
}
