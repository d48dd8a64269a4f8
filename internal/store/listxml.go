package store

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// listPage is what a ListObjectsV2 answer (ListBucketResult) says that
// nereusctl uses.
type listPage struct {
	IsTruncated           bool        `xml:"IsTruncated"`
	NextContinuationToken string      `xml:"NextContinuationToken"`
	Contents              []listEntry `xml:"Contents"`
}

type listEntry struct {
	Key          string    `xml:"Key"`
	LastModified time.Time `xml:"LastModified"`
	ETag         string    `xml:"ETag"`
	Size         int64     `xml:"Size"`
}

// parseListPage decodes a ListBucketResult. The common shape (what S3,
// versitygw and SeaweedFS send: a flat document of plain elements) goes
// through scanListPage, a single pass over the bytes; anything it does
// not take (CDATA, a DOCTYPE, namespace prefixes, a field given twice,
// non-ASCII names) is decoded by encoding/xml instead, which is about 50
// times slower (2 µs an entry) and was a fifth of `status`'s CPU through
// the SDK's decoder. Either way the result is encoding/xml's:
// FuzzListPage holds the scanner to it.
func parseListPage(b []byte) (listPage, error) {
	if p, err := scanListPage(b); err == nil {
		return p, nil
	}
	var p listPage
	if err := xml.Unmarshal(b, &p); err != nil {
		return listPage{}, fmt.Errorf("list answer: not a ListBucketResult: %w", err)
	}
	return p, nil
}

// errScan is scanListPage declining a document (encoding/xml decides).
var errScan = errors.New("not the plain shape")

// xmlScanner walks a document of elements, text, comments and processing
// instructions.
type xmlScanner struct {
	b []byte
	i int
}

// token kinds
const (
	tokEOF = iota
	tokStart
	tokEnd
	tokText
)

// next returns the next token: a start or end tag's name (a self-closing
// tag is a start followed by an end), or a text run decoded of its
// entities. Comments and processing instructions are skipped.
func (s *xmlScanner) next() (kind int, val []byte, selfClose bool, err error) {
	for {
		if s.i >= len(s.b) {
			return tokEOF, nil, false, nil
		}
		if s.b[s.i] != '<' {
			j := bytes.IndexByte(s.b[s.i:], '<')
			if j < 0 {
				j = len(s.b) - s.i
			}
			raw := s.b[s.i : s.i+j]
			s.i += j
			t, err := unescapeText(raw)
			return tokText, t, false, err
		}
		rest := s.b[s.i:]
		var second byte
		if len(rest) > 1 {
			second = rest[1]
		}
		switch {
		case second == '?':
			// Only the declarations stores send: encoding/xml refuses a
			// version other than 1.0 and an encoding other than UTF-8.
			j := bytes.Index(rest[2:], []byte("?>"))
			if j < 0 || !plainDecl[string(rest[2:2+j])] {
				return 0, nil, false, errScan
			}
			s.i += 2 + j + 2
			continue
		case second == '!' && bytes.HasPrefix(rest, []byte("<!--")):
			j := bytes.Index(rest[4:], []byte("-->"))
			c := rest[4 : 4+max(j, 0)]
			if j < 0 || bytes.Contains(c, []byte("--")) || bytes.HasSuffix(c, []byte("-")) || !validChars(c) {
				return 0, nil, false, errScan
			}
			s.i += 4 + j + 3
			continue
		case second == '!':
			return 0, nil, false, errScan // CDATA, DOCTYPE
		case second == '/':
			j := bytes.IndexByte(rest, '>')
			if j < 0 {
				return 0, nil, false, errScan
			}
			name := bytes.TrimRight(rest[2:j], " \t\r\n")
			if !plainName(name) {
				return 0, nil, false, errScan
			}
			s.i += j + 1
			return tokEnd, name, false, nil
		}
		// A start tag: a name, attributes (skipped, but well formed).
		j := 1
		for j < len(rest) && isNameByte(rest[j]) {
			j++
		}
		name := rest[1:j]
		if !plainName(name) {
			return 0, nil, false, errScan
		}
		for {
			k := j
			for j < len(rest) && isSpace(rest[j]) {
				j++
			}
			if j >= len(rest) {
				return 0, nil, false, errScan
			}
			if rest[j] == '>' {
				s.i += j + 1
				return tokStart, name, false, nil
			}
			if rest[j] == '/' {
				if j+1 >= len(rest) || rest[j+1] != '>' {
					return 0, nil, false, errScan
				}
				s.i += j + 2
				return tokStart, name, true, nil
			}
			if k == j {
				return 0, nil, false, errScan // no space before an attribute
			}
			a := j
			for j < len(rest) && isNameByte(rest[j]) {
				j++
			}
			attr := rest[a:j]
			if !plainName(attr) || bytes.HasPrefix(attr, []byte("xmlns")) && len(attr) > len("xmlns") {
				return 0, nil, false, errScan
			}
			if j >= len(rest) || rest[j] != '=' || j+1 >= len(rest) || (rest[j+1] != '"' && rest[j+1] != '\'') {
				return 0, nil, false, errScan
			}
			q := rest[j+1]
			end := bytes.IndexByte(rest[j+2:], q)
			if end < 0 {
				return 0, nil, false, errScan
			}
			v := rest[j+2 : j+2+end]
			if bytes.IndexByte(v, '<') >= 0 {
				return 0, nil, false, errScan
			}
			if _, err := unescapeText(v); err != nil {
				return 0, nil, false, errScan
			}
			j += 2 + end + 1
		}
	}
}

// plainDecl are the XML declarations the scanner takes.
var plainDecl = map[string]bool{
	`xml version="1.0" encoding="UTF-8"`: true,
	`xml version="1.0" encoding="utf-8"`: true,
	`xml version="1.0"`:                  true,
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// plainName is an ASCII element name without a namespace prefix, starting
// with a letter or '_'.
func plainName(n []byte) bool {
	if len(n) == 0 || !('a' <= n[0] && n[0] <= 'z' || 'A' <= n[0] && n[0] <= 'Z' || n[0] == '_') {
		return false
	}
	for _, c := range n {
		if !isNameByte(c) {
			return false
		}
	}
	return true
}

// validChars reports text of XML characters only (valid UTF-8, no control
// characters but tab, CR and LF).
func validChars(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError || r == 0xFFFE || r == 0xFFFF {
			return false
		}
		i += n
	}
	return true
}

// unescapeText decodes the five named entities and character references
// of a text run; it declines anything else, and a '>' after "]]" (which
// XML forbids in text), and a CR (which XML turns into LF).
func unescapeText(raw []byte) ([]byte, error) {
	if !validChars(raw) || bytes.IndexByte(raw, '\r') >= 0 || bytes.Contains(raw, []byte("]]>")) {
		return nil, errScan
	}
	if bytes.IndexByte(raw, '&') < 0 {
		return raw, nil
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		if raw[i] != '&' {
			out = append(out, raw[i])
			i++
			continue
		}
		j := bytes.IndexByte(raw[i:], ';')
		if j < 0 {
			return nil, errScan
		}
		ent := string(raw[i+1 : i+j])
		i += j + 1
		switch ent {
		case "amp":
			out = append(out, '&')
		case "lt":
			out = append(out, '<')
		case "gt":
			out = append(out, '>')
		case "quot":
			out = append(out, '"')
		case "apos":
			out = append(out, '\'')
		default:
			var n uint64
			var err error
			switch {
			case strings.HasPrefix(ent, "#x"):
				n, err = strconv.ParseUint(ent[2:], 16, 32)
			case strings.HasPrefix(ent, "#"):
				n, err = strconv.ParseUint(ent[1:], 10, 32)
			default:
				return nil, errScan
			}
			if err != nil {
				return nil, errScan
			}
			r := rune(n)
			if !utf8.ValidRune(r) || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0xFFFE || r == 0xFFFF || r == '\r' {
				return nil, errScan
			}
			out = utf8.AppendRune(out, r)
		}
	}
	return out, nil
}

// scanListPage decodes the plain shape of a ListBucketResult: a root
// element of that name (whose own attributes may declare the default
// namespace), elements nested to any depth, and of them the top level's
// IsTruncated and NextContinuationToken and the Contents' Key,
// LastModified, ETag and Size, each at most once where it is read. Every
// element is closed by its own name. Text at the top level and inside a
// Contents outside its fields is whitespace.
func scanListPage(b []byte) (listPage, error) {
	s := &xmlScanner{b: b}
	var p listPage
	var stack [][]byte
	var text []byte // the open field's text
	field := ""     // the field open at depth 2 or 3 ("" none)
	var seen [2]bool
	var cur *listEntry
	var curSeen [4]bool
	root := false
	for {
		kind, val, selfClose, err := s.next()
		if err != nil {
			return listPage{}, err
		}
		switch kind {
		case tokEOF:
			if !root || len(stack) != 0 {
				return listPage{}, errScan
			}
			return p, nil
		case tokText:
			switch {
			case field != "" && len(stack) == depthOf(field)+1:
				text = append(text, val...) // the field's own text
			case len(stack) == 0 && len(bytes.Trim(val, " \t\r\n")) != 0:
				return listPage{}, errScan // text before the root
			}
			// Any other text is ignored, as encoding/xml ignores it.
		case tokStart:
			d := len(stack) // the new element's depth, 0 the root
			switch {
			case d == 0:
				if root || string(val) != "ListBucketResult" {
					return listPage{}, errScan
				}
				root = true
			case d == 1 && (string(val) == "IsTruncated" || string(val) == "NextContinuationToken"):
				k := 0
				if string(val) == "NextContinuationToken" {
					k = 1
				}
				if seen[k] {
					return listPage{}, errScan
				}
				seen[k] = true
				field, text = topFields[k], text[:0]
			case d == 1 && string(val) == "Contents":
				p.Contents = append(p.Contents, listEntry{})
				cur = &p.Contents[len(p.Contents)-1]
				curSeen = [4]bool{}
			case d == 2 && cur != nil && string(stack[1]) == "Contents":
				if k := entryField(val); k >= 0 {
					if curSeen[k] {
						return listPage{}, errScan
					}
					curSeen[k] = true
					field, text = entryFields[k], text[:0]
				}
			}
			if selfClose {
				if err := closeField(&p, cur, field, text, d); err != nil {
					return listPage{}, err
				}
				if field != "" && d == depthOf(field) {
					field = ""
				}
				continue
			}
			stack = append(stack, val)
		case tokEnd:
			if len(stack) == 0 || !bytes.Equal(stack[len(stack)-1], val) {
				return listPage{}, errScan
			}
			stack = stack[:len(stack)-1]
			d := len(stack)
			if field != "" && d == depthOf(field) {
				if err := closeField(&p, cur, field, text, d); err != nil {
					return listPage{}, err
				}
				field = ""
			}
			if d == 1 && string(val) == "Contents" {
				cur = nil
			}
			if d == 0 {
				// The root closed: only comments, PIs and space may follow.
				for {
					kind, val, _, err := s.next()
					if err != nil || kind == tokStart || kind == tokEnd || kind == tokText && len(bytes.Trim(val, " \t\r\n")) != 0 {
						return listPage{}, errScan
					}
					if kind == tokEOF {
						return p, nil
					}
				}
			}
		}
	}
}

var (
	topFields   = [2]string{"IsTruncated", "NextContinuationToken"}
	entryFields = [4]string{"Key", "LastModified", "ETag", "Size"}
)

// depthOf is the depth of a field's element: the top level's at 1, a
// Contents' at 2.
func depthOf(field string) int {
	if field == "IsTruncated" || field == "NextContinuationToken" {
		return 1
	}
	return 2
}

func entryField(name []byte) int {
	switch string(name) {
	case "Key":
		return 0
	case "LastModified":
		return 1
	case "ETag":
		return 2
	case "Size":
		return 3
	}
	return -1
}

// closeField stores a field's text as encoding/xml would: strings as they
// are, numbers and booleans space-trimmed, the time as time.Time's UnmarshalText.
func closeField(p *listPage, cur *listEntry, field string, text []byte, d int) error {
	if field == "" || d != depthOf(field) {
		return nil
	}
	switch field {
	case "IsTruncated":
		v := bytes.TrimSpace(text)
		if len(v) == 0 {
			return errScan
		}
		b, err := strconv.ParseBool(string(v))
		if err != nil {
			return errScan
		}
		p.IsTruncated = b
	case "NextContinuationToken":
		p.NextContinuationToken = string(text)
	case "Key":
		cur.Key = string(text)
	case "ETag":
		cur.ETag = string(text)
	case "Size":
		v := bytes.TrimSpace(text)
		if len(v) == 0 {
			return errScan
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return errScan
		}
		cur.Size = n
	case "LastModified":
		v := bytes.TrimSpace(text)
		if len(v) == 0 {
			return errScan
		}
		var t time.Time
		if err := t.UnmarshalText(v); err != nil {
			return errScan
		}
		cur.LastModified = t
	}
	return nil
}
