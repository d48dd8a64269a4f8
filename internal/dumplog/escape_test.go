package dumplog

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapeText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"just for fun", "just for fun"},
		{"", ""},
		{"naïve 日本 🙂", "naïve 日本 🙂"},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{`back\slash`, `back\\slash`},
		{"\x00\x02\x00\x14group", `\x00\x02\x00\x14group`},
		{"\xff\xfe bad", `\xff\xfe bad`},
		{"\xe6\x97", `\xe6\x97`},                   // a cut multibyte rune: its bytes
		{"\x7f\u00a0\u200b", `\x7f\u{a0}\u{200b}`}, // DEL, NBSP, zero width space
	}
	for _, c := range cases {
		if got := string(EscapeText(nil, []byte(c.in))); got != c.want {
			t.Errorf("EscapeText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// unescape reverses EscapeText (the test's proof that no byte is lost).
func unescape(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		i++
		switch s[i] {
		case '\\':
			out = append(out, '\\')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'x':
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			out = append(out, byte(v))
			i += 2
		case 'u':
			end := strings.IndexByte(s[i:], '}')
			v, err := strconv.ParseUint(s[i+2:i+end], 16, 32)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			out = utf8.AppendRune(out, rune(v))
			i += end
		default:
			t.Fatalf("unknown escape \\%c in %q", s[i], s)
		}
	}
	return out
}

// Any bytes escape to one line of valid UTF-8 that gives them back.
func TestEscapeTextRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		in := make([]byte, r.IntN(40))
		for j := range in {
			in[j] = byte(r.UintN(256))
		}
		if i%3 == 0 { // and mostly text
			in = append(in, "héllo wörld\\"...)
		}
		out := EscapeText(nil, in)
		if !utf8.Valid(out) || bytes.ContainsAny(out, "\n\r\x00") {
			t.Fatalf("EscapeText(%q) = %q: not one line of UTF-8", in, out)
		}
		if back := unescape(t, string(out)); !bytes.Equal(back, in) {
			t.Fatalf("EscapeText(%q) = %q gives back %q", in, out, back)
		}
	}
}

func TestRecordLinePrintData(t *testing.T) {
	l := &RecordLine{Offset: 3, TimestampType: "CreateTime", KeySize: 2, ValueSize: -1, Sequence: -1, Key: []byte("k\xff"), printData: true}
	if got, want := l.Text(), `| offset: 3 CreateTime: 0 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k\xff`; got != want {
		t.Errorf("tombstone: %q, want %q", got, want)
	}
	l.Key, l.Value, l.KeySize, l.ValueSize = nil, []byte("v"), -1, 1
	if got := l.Text(); !strings.HasSuffix(got, "headerKeys: [] payload: v") {
		t.Errorf("null key: %q", got)
	}
	l.printData = false
	if got := l.Text(); strings.Contains(got, "payload") {
		t.Errorf("without PrintData: %q", got)
	}
}
