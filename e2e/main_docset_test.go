package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// docCmds are test-only script commands that edit a stored layout document
// the way an operator's hand edit would, but re-encoded through the layout
// package (so the document stays well formed, digest included, and only the
// edited fields change):
//
//	docset KEY|@FILE PATH=JSONVALUE ...
//
// Each PATH names a field of the document's JSON. Its separator is '.'
// unless the path contains a '/', in which case '/' is the separator and
// dots are part of the names: "compacted_coverage.state" and
// "compacted_coverage/state" are the same field; "config/retention.bytes"
// is the key "retention.bytes" inside "config". A segment that is a
// decimal number indexes an array ("compacted_coverage.members.0.gen").
// JSONVALUE is JSON: docset KEY 'compacted_coverage.state="NONE"' head=5
// checkpoint_ref=null. Setting a field that does not exist creates it; the
// result must still decode into the document's type (by key: bindings/,
// streams/<sid>/head.json, streams/<sid>/generations/, quarantine/,
// leases/) with no unknown fields, so a mistyped name fails the script
// ("! docset" expects that failure and writes nothing).
var docCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"docset": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: docset KEY|@FILE PATH=JSONVALUE ...")
		}
		st, key := scriptStore(ts, args[0])
		ctx := context.Background()
		data, err := st.Get(ctx, key, nil)
		ts.Check(err)
		out, err := docSet(key, data, args[1:])
		if neg {
			if err == nil {
				ts.Fatalf("docset %s: unexpected success", key)
			}
			ts.Logf("docset %s: %v (expected)", key, err)
			return
		}
		if err != nil {
			ts.Fatalf("docset %s: %v", key, err)
		}
		_, err = st.Put(ctx, key, out, store.None())
		ts.Check(err)
	},
}

// scriptCmds are every custom testscript command.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	m := map[string]func(ts *testscript.TestScript, neg bool, args []string){}
	for k, v := range storeCmds {
		m[k] = v
	}
	for k, v := range docCmds {
		m[k] = v
	}
	return m
}

// docSet applies the assignments to the document and re-encodes it through
// layout.Encode as the typed document its key names.
func docSet(key string, data []byte, assigns []string) ([]byte, error) {
	var doc any
	if err := unmarshalNumbers(data, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON document: %w", err)
	}
	for _, a := range assigns {
		path, val, ok := strings.Cut(a, "=")
		if !ok || path == "" {
			return nil, fmt.Errorf("assignment %q: want PATH=JSONVALUE", a)
		}
		var v any
		if err := unmarshalNumbers([]byte(val), &v); err != nil {
			return nil, fmt.Errorf("assignment %q: value is not JSON: %w", a, err)
		}
		sep := "."
		if strings.Contains(path, "/") {
			sep = "/"
		}
		nd, err := setPath(doc, strings.Split(path, sep), v)
		if err != nil {
			return nil, fmt.Errorf("assignment %q: %w", a, err)
		}
		doc = nd
	}
	typed, err := docFor(key)
	if err != nil {
		return nil, err
	}
	// The document digest is layout.Encode's to write: drop the stored one
	// (it no longer matches the edit) before decoding into the typed struct.
	if m, ok := doc.(map[string]any); ok {
		delete(m, "digest")
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(typed); err != nil {
		return nil, fmt.Errorf("the edited document does not decode as %T: %w", typed, err)
	}
	return layout.Encode(typed), nil
}

// unmarshalNumbers keeps numbers as json.Number: int64 fields such as
// max.compaction.lag.ms (2^63-1) do not survive a float64.
func unmarshalNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

// setPath sets path in node to v, returning the (possibly new) node.
func setPath(node any, path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	seg := path[0]
	switch n := node.(type) {
	case map[string]any:
		child, err := setPath(n[seg], path[1:], v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", seg, err)
		}
		n[seg] = child
		return n, nil
	case []any:
		i, err := strconv.ParseInt(seg, 10, 64)
		if err != nil || i < 0 || i >= int64(len(n)) {
			return nil, fmt.Errorf("index %q: want 0..%d", seg, len(n)-1)
		}
		child, err := setPath(n[i], path[1:], v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", seg, err)
		}
		n[i] = child
		return n, nil
	case nil:
		child, err := setPath(nil, path[1:], v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", seg, err)
		}
		return map[string]any{seg: child}, nil
	}
	return nil, fmt.Errorf("%s: the parent is not an object or array", seg)
}

// docFor returns a pointer to the layout document type for key.
func docFor(key string) (any, error) {
	switch {
	case strings.HasPrefix(key, layout.BindingsPrefix):
		return &layout.Binding{}, nil
	case strings.HasPrefix(key, layout.QuarantinePrefix):
		return &layout.Quarantine{}, nil
	case strings.HasPrefix(key, layout.LeasesPrefix):
		return &layout.Lease{}, nil
	case strings.HasPrefix(key, layout.StreamsPrefix) && strings.HasSuffix(key, "/head.json"):
		return &layout.Head{}, nil
	case strings.HasPrefix(key, layout.StreamsPrefix) && strings.Contains(key, "/generations/"):
		return &layout.Generation{}, nil
	}
	return nil, fmt.Errorf("key %q is not a binding, head, generation, quarantine or lease document", key)
}
