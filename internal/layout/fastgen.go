package layout

import "strconv"

// A one-pass decoder for generation manifests, the document verify --deep
// and replay read once per sealed segment. The strict path (decodeStrict)
// reads every document twice: a token walk that refuses unknown, duplicate
// and missing keys, then encoding/json. This decoder reads a manifest once,
// refusing the same things as it goes, but it only ever says "this is
// exactly that value" or "not sure": whatever it does not take (an escape
// or a byte outside printable ASCII in a string, a number that is not a
// plain integer, an unknown, duplicate or missing key, trailing data, any
// malformed JSON) goes to the strict path, which decides and words the
// error. So it can make the strict path faster and never more lenient:
// what it accepts the strict path accepts with the same value and digest
// (FuzzFastGenerationMatchesStrict, TestFastGenerationTakesWhatWeWrite).

// genScan walks a byte slice; every method reports false for "not sure".
type genScan struct {
	b []byte
	i int
	// whole is b as one string: the decoded strings are slices of it, one
	// allocation per manifest instead of three per object.
	whole string
}

func (s *genScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace, 0 at the end.
func (s *genScan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// lit consumes c after whitespace.
func (s *genScan) lit(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// null consumes the literal null.
func (s *genScan) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// raw is a string's bytes when they are printable ASCII without escapes:
// then the JSON string and its value are the same bytes.
func (s *genScan) raw() ([]byte, bool) {
	if !s.lit('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			s.i++
			return s.b[start : s.i-1], true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, false
		}
		s.i++
	}
	return nil, false
}

func (s *genScan) str() (string, bool) {
	b, ok := s.raw()
	if !ok {
		return "", false
	}
	end := s.i - 1 // the closing quote
	return s.whole[end-len(b) : end], true
}

// digits is a JSON integer: -?(0|[1-9][0-9]*), not followed by a fraction
// or an exponent (those, valid JSON or not, go to the strict path).
func (s *genScan) digits(signed bool) ([]byte, bool) {
	s.ws()
	start := s.i
	if signed && s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	d := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == d || (s.b[d] == '0' && s.i-d > 1) {
		return nil, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E', '-', '+':
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

func (s *genScan) int64() (int64, bool) {
	b, ok := s.digits(true)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

func (s *genScan) uint32() (uint32, bool) {
	b, ok := s.digits(false)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, 32)
	return uint32(n), err == nil
}

// object reads {"key": value, ...}, calling field for each key with the
// bit it claims (0: unknown). A key twice, an unknown key or a required
// bit missing at the end is "not sure".
func (s *genScan) object(required uint32, field func(key []byte) (bit uint32, ok bool)) bool {
	if !s.lit('{') {
		return false
	}
	var seen uint32
	if s.lit('}') {
		return required == 0
	}
	for {
		k, ok := s.raw()
		if !ok || !s.lit(':') {
			return false
		}
		bit, ok := field(k)
		if !ok || bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if s.lit(',') {
			continue
		}
		if !s.lit('}') {
			return false
		}
		return seen&required == required
	}
}

// array reads null (nil: what encoding/json leaves) or [elem, ...] (a
// non-nil slice, empty for []), calling elem for each element.
func array[T any](s *genScan, elem func(*T) bool) ([]T, bool) {
	if s.null() {
		return nil, true
	}
	if !s.lit('[') {
		return nil, false
	}
	out := []T{}
	if s.lit(']') {
		return out, true
	}
	for {
		var v T
		if !elem(&v) {
			return nil, false
		}
		out = append(out, v)
		if s.lit(',') {
			continue
		}
		return out, s.lit(']')
	}
}

func (s *genScan) objectRef(o *ObjectRef) bool {
	var ok bool
	return s.object(1<<7-1, func(k []byte) (uint32, bool) {
		switch string(k) {
		case "key":
			o.Key, ok = s.str()
			return 1 << 0, ok
		case "base":
			o.Base, ok = s.int64()
			return 1 << 1, ok
		case "end":
			o.End, ok = s.int64()
			return 1 << 2, ok
		case "size":
			o.Size, ok = s.int64()
			return 1 << 3, ok
		case "etag":
			o.ETag, ok = s.str()
			return 1 << 4, ok
		case "crc32c":
			o.CRC32C, ok = s.uint32()
			return 1 << 5, ok
		case "sha256":
			o.SHA256, ok = s.str()
			return 1 << 6, ok
		}
		return 0, false
	})
}

func (s *genScan) sourceRef(r *SourceRef) bool {
	var ok bool
	return s.object(1<<2-1, func(k []byte) (uint32, bool) {
		switch string(k) {
		case "gen":
			r.Gen, ok = s.int64()
			return 1 << 0, ok
		case "manifest_sha256":
			r.ManifestSHA256, ok = s.str()
			return 1 << 1, ok
		}
		return 0, false
	})
}

func (s *genScan) aborted(a *AbortedRange) bool {
	var ok bool
	return s.object(1<<3-1, func(k []byte) (uint32, bool) {
		switch string(k) {
		case "producer_id":
			a.ProducerID, ok = s.int64()
			return 1 << 0, ok
		case "first_offset":
			a.FirstOffset, ok = s.int64()
			return 1 << 1, ok
		case "last_offset":
			a.LastOffset, ok = s.int64()
			return 1 << 2, ok
		}
		return 0, false
	})
}

// compaction reads the parameters: the eight fields without omitempty are
// required, prev_set_id and encoder not.
func (s *genScan) compaction(c *CompactionParams) bool {
	var ok bool
	var n int64
	return s.object(1<<9-1, func(k []byte) (uint32, bool) {
		switch string(k) {
		case "now_ms":
			c.NowMs, ok = s.int64()
			return 1 << 0, ok
		case "delete.retention.ms":
			c.DeleteRetentionMs, ok = s.int64()
			return 1 << 1, ok
		case "hw":
			c.HW, ok = s.int64()
			return 1 << 2, ok
		case "lso":
			c.LSO, ok = s.int64()
			return 1 << 3, ok
		case "log_start":
			c.LogStart, ok = s.int64()
			return 1 << 4, ok
		case "clean_end":
			c.CleanEnd, ok = s.int64()
			return 1 << 5, ok
		case "prev_end":
			c.PrevEnd, ok = s.int64()
			return 1 << 6, ok
		case "object_bytes":
			n, ok = s.int64()
			c.ObjectBytes = int(n)
			return 1 << 7, ok && int64(int(n)) == n
		case "aborted":
			c.Aborted, ok = array(s, s.aborted)
			return 1 << 8, ok
		case "prev_set_id":
			c.PrevSetID, ok = s.str()
			return 1 << 9, ok
		case "encoder":
			c.Encoder, ok = s.str()
			return 1 << 10, ok
		}
		return 0, false
	})
}

// decodeGenerationFast fills g (zeroed first) from data in one pass and
// returns its digest field, when data is a generation manifest it can take
// whole; ok false leaves the verdict (and g) to the strict path.
func decodeGenerationFast(data []byte, g *Generation) (digest string, hasDigest, ok bool) {
	*g = Generation{}
	s := &genScan{b: data, whole: string(data)}
	var v bool
	ok = s.object(1<<9-1, func(k []byte) (uint32, bool) {
		switch string(k) {
		case "stream_id":
			g.StreamID, v = s.str()
			return 1 << 0, v
		case "gen":
			g.Gen, v = s.int64()
			return 1 << 1, v
		case "kind":
			g.Kind, v = s.str()
			return 1 << 2, v
		case "base":
			g.Base, v = s.int64()
			return 1 << 3, v
		case "end":
			g.End, v = s.int64()
			return 1 << 4, v
		case "objects":
			g.Objects, v = array(s, s.objectRef)
			return 1 << 5, v
		case "sources":
			g.Sources, v = array(s, s.sourceRef)
			return 1 << 6, v
		case "max_timestamp":
			g.MaxTimestamp, v = s.int64()
			return 1 << 7, v
		case "created_ms":
			g.CreatedMs, v = s.int64()
			return 1 << 8, v
		case "next_segment_base":
			if s.null() {
				return 1 << 11, true
			}
			n, ok := s.int64()
			g.NextSegmentBase = &n
			return 1 << 11, ok
		case "compaction":
			if s.null() {
				return 1 << 9, true
			}
			g.Compaction = &CompactionParams{}
			return 1 << 9, s.compaction(g.Compaction)
		case DigestField:
			digest, v = s.str()
			hasDigest = v
			return 1 << 10, v
		}
		return 0, false
	})
	s.ws()
	if !ok || s.i != len(s.b) {
		*g = Generation{}
		return "", false, false
	}
	return digest, hasDigest, true
}

// plainString reports whether encoding/json writes s as its bytes in
// quotes: printable ASCII without a quote, a backslash or the characters
// it escapes for HTML (<, >, &).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// genWriter appends the canonical encoding (encodePlain's bytes) of a
// manifest; ok turns false at a string encoding/json would escape, and
// the caller falls back to encodePlain.
type genWriter struct {
	b  []byte
	ok bool
}

func (w *genWriter) indent(depth int) {
	w.b = append(w.b, '\n')
	for range depth {
		w.b = append(w.b, ' ', ' ')
	}
}

// key starts a member at depth: a comma unless it is the first.
func (w *genWriter) key(depth int, first bool, name string) {
	if !first {
		w.b = append(w.b, ',')
	}
	w.indent(depth)
	w.b = append(w.b, '"')
	w.b = append(w.b, name...)
	w.b = append(w.b, '"', ':', ' ')
}

func (w *genWriter) str(depth int, first bool, name, v string) {
	w.key(depth, first, name)
	if !plainString(v) {
		w.ok = false
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, v...)
	w.b = append(w.b, '"')
}

func (w *genWriter) int(depth int, first bool, name string, v int64) {
	w.key(depth, first, name)
	w.b = strconv.AppendInt(w.b, v, 10)
}

// list writes null, [] or the elements, one object each at depth+1.
func genList[T any](w *genWriter, depth int, name string, vs []T, elem func(depth int, v *T)) {
	w.key(depth, false, name)
	switch {
	case vs == nil:
		w.b = append(w.b, "null"...)
		return
	case len(vs) == 0:
		w.b = append(w.b, "[]"...)
		return
	}
	w.b = append(w.b, '[')
	for i := range vs {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.indent(depth + 1)
		w.b = append(w.b, '{')
		elem(depth+2, &vs[i])
		w.indent(depth + 1)
		w.b = append(w.b, '}')
	}
	w.indent(depth)
	w.b = append(w.b, ']')
}

// appendGenerationPlain is encodePlain(g) without reflection, in the same
// order and layout (json.MarshalIndent with two spaces, a final newline).
func appendGenerationPlain(dst []byte, g *Generation) ([]byte, bool) {
	if g.EmptySegments != nil {
		// Rare (imported segments the cleaner emptied): encodePlain.
		return dst, false
	}
	w := &genWriter{b: dst, ok: true}
	w.b = append(w.b, '{')
	w.str(1, true, "stream_id", g.StreamID)
	w.int(1, false, "gen", g.Gen)
	w.str(1, false, "kind", g.Kind)
	w.int(1, false, "base", g.Base)
	w.int(1, false, "end", g.End)
	genList(w, 1, "objects", g.Objects, func(d int, o *ObjectRef) {
		w.str(d, true, "key", o.Key)
		w.int(d, false, "base", o.Base)
		w.int(d, false, "end", o.End)
		w.int(d, false, "size", o.Size)
		w.str(d, false, "etag", o.ETag)
		w.int(d, false, "crc32c", int64(o.CRC32C))
		w.str(d, false, "sha256", o.SHA256)
	})
	genList(w, 1, "sources", g.Sources, func(d int, r *SourceRef) {
		w.int(d, true, "gen", r.Gen)
		w.str(d, false, "manifest_sha256", r.ManifestSHA256)
	})
	w.int(1, false, "max_timestamp", g.MaxTimestamp)
	w.int(1, false, "created_ms", g.CreatedMs)
	if n := g.NextSegmentBase; n != nil {
		w.int(1, false, "next_segment_base", *n)
	}
	if c := g.Compaction; c != nil {
		w.key(1, false, "compaction")
		w.b = append(w.b, '{')
		w.int(2, true, "now_ms", c.NowMs)
		w.int(2, false, "delete.retention.ms", c.DeleteRetentionMs)
		w.int(2, false, "hw", c.HW)
		w.int(2, false, "lso", c.LSO)
		w.int(2, false, "log_start", c.LogStart)
		w.int(2, false, "clean_end", c.CleanEnd)
		w.int(2, false, "prev_end", c.PrevEnd)
		w.int(2, false, "object_bytes", int64(c.ObjectBytes))
		if c.PrevSetID != "" {
			w.str(2, false, "prev_set_id", c.PrevSetID)
		}
		genList(w, 2, "aborted", c.Aborted, func(d int, a *AbortedRange) {
			w.int(d, true, "producer_id", a.ProducerID)
			w.int(d, false, "first_offset", a.FirstOffset)
			w.int(d, false, "last_offset", a.LastOffset)
		})
		if c.Encoder != "" {
			w.str(2, false, "encoder", c.Encoder)
		}
		w.indent(1)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, '\n', '}', '\n')
	return w.b, w.ok
}
