package retention

import (
	"strings"
	"testing"
)

// Errors about an offset JSON file speak of the file (field paths, JSON
// types), never of Go types.
func TestParseOffsetJSONPlainErrors(t *testing.T) {
	for in, want := range map[string]string{
		`[]`: "the document is a JSON array; want an object",
		`{"partitions":[{"topic":"t","partition":0,"offset":"5"}]}`: "partitions[0].offset is a JSON string; want a whole number",
		`{"partitions":[{"topic":"t","partition":"0","offset":5}]}`: "partitions[0].partition is a JSON string; want a whole number",
		`{"partitions":{}}`: "partitions is a JSON object; want a list",
		`{"partitions":[{"topic":"t","partition":0,"offset":0100}]}`: "malformed JSON at byte",
		`{"partitions":[`:      "the document ends early",
		`{"partitions":["t"]}`: "partitions[0] is a JSON string; want an object",
		`{"partitions":[{"topic":"t","partition":1e30,"offset":5}]}`: "partitions[0].partition is a JSON number 1e30; want a whole number",
	} {
		_, err := ParseOffsetJSON([]byte(in))
		if err == nil {
			t.Errorf("%s: accepted", in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want it to say %q", in, msg, want)
		}
		for _, goism := range []string{"Go value", "Go struct", "*int", "struct {", "int64"} {
			if strings.Contains(msg, goism) {
				t.Errorf("%s: %q names a Go type (%s)", in, msg, goism)
			}
		}
	}
}
