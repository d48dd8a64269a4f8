package layout

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/nereusctl/nereusctl/internal/errkind"
)

// ErrCorruptDocument: a stored JSON document is not exactly a document of
// its kind: malformed JSON, trailing data, an unknown, duplicate or missing
// field, a value of the wrong type, an invalid value, or a digest that does
// not match the content. It is corruption (exit 3).
var ErrCorruptDocument = errkind.New(errkind.Corrupt, "corrupt document")

// ErrLegacyDocument: a document that is otherwise valid carries no digest
// field: it was written before documents carried their own digest. It is
// not corruption; 'nereusctl store upgrade' rewrites it in the new form.
var ErrLegacyDocument = errors.New("document has no digest: it was written before document digests")

// UpgradeHint is the operator hint for ErrLegacyDocument.
const UpgradeHint = "run 'nereusctl store upgrade --dry-run', then 'nereusctl store upgrade', to add digests to the documents of this store"

// DigestField is the JSON name of a document's own digest.
const DigestField = "digest"

// DigestPrefix starts every digest value.
const DigestPrefix = "sha256:"

// digested marks the document kinds that carry their own digest field:
// binding, head, generation manifest, quarantine record, lease, deletion
// record.
type digested interface{ carriesDigest() }

// legacyTolerated marks the digested kinds a document of which is still
// accepted without a digest: generation manifests, which are immutable and
// pinned by the SHA-256 of their bytes wherever they are referenced (set
// members, sources, checkpoints), so that a rewrite would break those
// references (docs/layout.md, "Document digests").
type legacyTolerated interface{ legacyWithoutDigest() }

func (Binding) carriesDigest()          {}
func (Head) carriesDigest()             {}
func (Generation) carriesDigest()       {}
func (Quarantine) carriesDigest()       {}
func (Lease) carriesDigest()            {}
func (Generation) legacyWithoutDigest() {}

// CheckDocument is the check a corrupt document fails (the JSON error
// document's error.check; its error.object is the key).
const CheckDocument = "document"

// corrupt is a corrupt-document error naming the key.
func corrupt(key, format string, a ...any) error {
	return errkind.About(fmt.Errorf("decode %s: %w: %s", key, ErrCorruptDocument, fmt.Sprintf(format, a...)), key, CheckDocument)
}

// encodePlain is the canonical encoding without a digest field.
func encodePlain(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("layout: encode %T: %v", v, err)) // documents are plain structs
	}
	return append(b, '\n')
}

// contentDigest is "sha256:<hex>" of the canonical encoding without the
// digest field.
func contentDigest(v any) string {
	if g, ok := v.(*Generation); ok {
		if b, ok := appendGenerationPlain(make([]byte, 0, 512+300*len(g.Objects)), g); ok {
			s := sha256.Sum256(b)
			return DigestPrefix + hex.EncodeToString(s[:])
		}
	}
	s := sha256.Sum256(encodePlain(v))
	return DigestPrefix + hex.EncodeToString(s[:])
}

// withDigest appends the digest field as the last member of the canonical
// encoding plain (which ends in "\n}\n").
func withDigest(plain []byte, digest string) []byte {
	body := bytes.TrimSuffix(plain, []byte("\n}\n"))
	if len(body) == len(plain) || bytes.Equal(body, []byte("{")) {
		panic("layout: a digested document must be a non-empty JSON object")
	}
	out := make([]byte, 0, len(plain)+len(digest)+20)
	out = append(out, body...)
	out = append(out, ",\n  \""+DigestField+"\": \""+digest+"\"\n}\n"...)
	return out
}

// decodeStrict is Decode without the digest rule: it returns the digest
// field's value ("" when absent) for the kinds that carry one.
func decodeStrict(key string, data []byte, v interface{ Validate() error }) (digest string, hasDigest bool, err error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic(fmt.Sprintf("layout: decode into %T: want a non-nil pointer", v))
	}
	if g, ok := v.(*Generation); ok {
		// The one-pass decoder takes what nereusctl writes; anything it is
		// not sure of is judged (and worded) by the walk below.
		if digest, hasDigest, ok := decodeGenerationFast(data, g); ok {
			if err := g.Validate(); err != nil {
				return "", false, corrupt(key, "invalid document: %v", err)
			}
			return digest, hasDigest, nil
		}
	}
	return decodeStrictWalk(key, data, v)
}

// decodeStrictWalk is the general strict decoder: a token walk that
// refuses unknown, duplicate and missing keys and wrong JSON types, then
// encoding/json into a zeroed value.
func decodeStrictWalk(key string, data []byte, v interface{ Validate() error }) (digest string, hasDigest bool, err error) {
	rv := reflect.ValueOf(v)
	_, isDigested := v.(digested)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := &walker{dec: dec, key: key}
	if isDigested {
		w.top = &digest
		w.topSeen = &hasDigest
	}
	if err := w.value("", rv.Type().Elem(), true); err != nil {
		return "", false, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", false, corrupt(key, "trailing data after the document")
	}
	// Every key is exact, present when required and of the right JSON
	// type: now let encoding/json fill a zeroed value (no stale fields
	// from an earlier use of v survive).
	rv.Elem().Set(reflect.Zero(rv.Type().Elem()))
	if err := json.Unmarshal(data, v); err != nil {
		return "", false, corrupt(key, "%s", PlainJSONError(err))
	}
	if err := v.Validate(); err != nil {
		return "", false, corrupt(key, "invalid document: %v", err)
	}
	return digest, hasDigest, nil
}

// walker checks a JSON value token by token against a Go type: object keys
// must be exactly the field names (encoding/json alone matches them
// case-insensitively and ignores unknown ones), no key twice, every field
// without omitempty present, and no null where the Go value cannot be nil.
type walker struct {
	dec     *json.Decoder
	key     string
	top     *string // receives the top-level digest field, when allowed
	topSeen *bool
}

var (
	unmarshalerType     = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshalerType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

func where(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (w *walker) token(path string) (json.Token, error) {
	t, err := w.dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, corrupt(w.key, "malformed JSON: unexpected end of the document in %s", where(path))
		}
		return nil, corrupt(w.key, "malformed JSON in %s: %v", where(path), err)
	}
	return t, nil
}

// skip consumes one JSON value of any shape.
func (w *walker) skip(path string, first json.Token) error {
	d, ok := first.(json.Delim)
	if !ok || d == '}' || d == ']' {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := w.token(path)
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func jsonKind(t json.Token) string {
	switch t.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if t == json.Delim('{') {
			return "an object"
		}
		return "an array"
	}
	return "a value"
}

func (w *walker) value(path string, t reflect.Type, top bool) error {
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	nullable := false
	for t.Kind() == reflect.Pointer {
		nullable = true
		t = t.Elem()
	}
	if tok == nil {
		switch t.Kind() {
		case reflect.Slice, reflect.Map, reflect.Interface:
			nullable = true
		}
		if !nullable || top {
			return corrupt(w.key, "%s is null", where(path))
		}
		return nil
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return w.skip(path, tok) // its own decoder judges it
	}
	want := ""
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			want = "an object"
			break
		}
		return w.object(path, t, top)
	case reflect.Map:
		if tok != json.Delim('{') {
			want = "an object"
			break
		}
		for w.dec.More() {
			k, err := w.token(path)
			if err != nil {
				return err
			}
			if err := w.value(fmt.Sprintf("%s[%q]", path, k), t.Elem(), false); err != nil {
				return err
			}
		}
		_, err := w.token(path)
		return err
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			if _, ok := tok.(string); !ok {
				want = "a string"
			}
			break
		}
		if tok != json.Delim('[') {
			want = "an array"
			break
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(fmt.Sprintf("%s[%d]", path, i), t.Elem(), false); err != nil {
				return err
			}
		}
		_, err := w.token(path)
		return err
	case reflect.String:
		if _, ok := tok.(string); !ok {
			want = "a string"
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			want = "a boolean"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			want = "a number"
			break
		}
		if r := numberFits(n, t); r != "" {
			return corrupt(w.key, "%s is %s, want %s", where(path), n, r)
		}
	default:
		return w.skip(path, tok)
	}
	if want != "" {
		if err := w.skip(path, tok); err != nil {
			return err
		}
		return corrupt(w.key, "%s is %s, want %s", where(path), jsonKind(tok), want)
	}
	return nil
}

func (w *walker) object(path string, t reflect.Type, top bool) error {
	fields := fieldsOf(t)
	seen := make(map[string]bool, len(fields))
	unknown := "" // the first unknown field, reported with the missing ones
	for w.dec.More() {
		kt, err := w.token(path)
		if err != nil {
			return err
		}
		name, _ := kt.(string)
		if seen[name] {
			return corrupt(w.key, "field %q appears twice in %s", name, where(path))
		}
		seen[name] = true
		f, ok := fields[name]
		if !ok {
			if top && w.top != nil && name == DigestField {
				vt, err := w.token(path)
				if err != nil {
					return err
				}
				s, ok := vt.(string)
				if !ok {
					if err := w.skip(path, vt); err != nil {
						return err
					}
					return corrupt(w.key, "field %q is %s, want a string", DigestField, jsonKind(vt))
				}
				*w.top, *w.topSeen = s, true
				continue
			}
			if len(unknown) == 0 {
				unknown = fmt.Sprintf("unknown field %q in %s", name, where(path))
			}
			vt, err := w.token(path)
			if err != nil {
				return err
			}
			if err := w.skip(path, vt); err != nil {
				return err
			}
			continue
		}
		if err := w.value(join(path, name), f.typ, false); err != nil {
			return err
		}
	}
	if _, err := w.token(path); err != nil {
		return err
	}
	var missing []string
	for name, f := range fields {
		if f.required && !seen[name] {
			missing = append(missing, join(path, name))
		}
	}
	sort.Strings(missing)
	switch {
	case unknown != "" && len(missing) > 0:
		return corrupt(w.key, "%s; missing field %s", unknown, strings.Join(missing, ", "))
	case unknown != "":
		return corrupt(w.key, "%s", unknown)
	case len(missing) > 0:
		return corrupt(w.key, "missing field %s", strings.Join(missing, ", "))
	}
	return nil
}

type fieldInfo struct {
	typ      reflect.Type
	required bool
}

var fieldCache sync.Map // reflect.Type -> map[string]fieldInfo

// fieldsOf lists the JSON fields of a struct type as encoding/json names
// them: tag name or Go name, "-" and unexported fields skipped, untagged
// embedded structs flattened. A field without omitempty is required.
func fieldsOf(t reflect.Type) map[string]fieldInfo {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]fieldInfo)
	}
	m := map[string]fieldInfo{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range fieldsOf(et) {
					if _, dup := m[k]; !dup {
						m[k] = v
					}
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		omit := false
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				omit = true
			}
		}
		m[name] = fieldInfo{typ: sf.Type, required: !omit}
	}
	fieldCache.Store(t, m)
	return m
}

// ErrObjectMismatch: an object's bytes do not match its generation
// manifest entry (size, crc32c or sha256). It is corruption (exit 3).
var ErrObjectMismatch = errkind.New(errkind.Corrupt, "object bytes do not match the manifest")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CheckBytes checks data, the whole stored bytes of the object o describes,
// against the manifest entry: size, then CRC-32C, then SHA-256. The error
// wraps ErrObjectMismatch and names the key, the check and both values.
// Readers call it on every object they read through a manifest.
func (o ObjectRef) CheckBytes(data []byte) error {
	if int64(len(data)) != o.Size {
		return fmt.Errorf("check %s: %w: size is %d bytes, the manifest records %d", o.Key, ErrObjectMismatch, len(data), o.Size)
	}
	if c := crc32.Checksum(data, castagnoli); c != o.CRC32C {
		return fmt.Errorf("check %s: %w: crc32c is %08x, the manifest records %08x", o.Key, ErrObjectMismatch, c, o.CRC32C)
	}
	if s := sha256.Sum256(data); hex.EncodeToString(s[:]) != o.SHA256 {
		return fmt.Errorf("check %s: %w: sha256 is %s, the manifest records %s", o.Key, ErrObjectMismatch, hex.EncodeToString(s[:]), o.SHA256)
	}
	return nil
}

// numberFits is "" when n fits a value of type t, else what t takes, in
// plain words: the walker checks numbers, so that encoding/json never
// reports a number in its own terms (Go field and type names).
func numberFits(n json.Number, t reflect.Type) string {
	s := string(n)
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(s, 10, t.Bits()); err != nil {
			lim := int64(1) << (t.Bits() - 1)
			return fmt.Sprintf("a whole number from %d to %d", -lim, lim-1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, err := strconv.ParseUint(s, 10, t.Bits()); err != nil {
			return fmt.Sprintf("a whole number from 0 to %d", uint64(1)<<(t.Bits()-1)*2-1)
		}
	case reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(s, t.Bits()); err != nil {
			return "a number in range"
		}
	}
	return ""
}

// PlainJSONError words an encoding/json error without Go field or type
// names (for the documents that are not decoded strictly: a custom
// decoder's value that still reaches encoding/json, local files).
func PlainJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "the document"
		}
		return fmt.Sprintf("%s is %s, want %s", field, te.Value, plainKind(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	return "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

// plainKind names what a Go type takes, in JSON's words.
func plainKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return numberFits("x", t) // "x" fits no number: the range
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another value"
}
