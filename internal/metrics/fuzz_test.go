package metrics

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// FuzzParsePrevious: any previous file either fails to parse or yields
// carried values that a failed run writes back unchanged: reading the
// file it wrote gives the same last success and verification times.
func FuzzParsePrevious(f *testing.F) {
	f.Add("# TYPE nereusctl_last_success_timestamp_seconds gauge\nnereusctl_last_success_timestamp_seconds{command=\"verify\"} 1000\n")
	f.Add("# TYPE nereusctl_partition_last_verified_timestamp_seconds gauge\n" +
		"nereusctl_partition_last_verified_timestamp_seconds{command=\"verify\",level=\"deep\",partition=\"0\",topic=\"orders\"} 1.5e9\n" +
		"nereusctl_partition_last_verified_timestamp_seconds{command=\"verify\",shard=\"1/2\",level=\"deep\",partition=\"0\",topic=\"orders\"} 7\n")
	f.Add("nereusctl_last_success_timestamp_seconds{command=\"verify\"} NaN\n")
	f.Add("nereusctl_last_success_timestamp_seconds{command=\"verify\",instance=\"\"} 12 1700000000000\n")
	f.Add("garbage{")
	f.Fuzz(func(t *testing.T, text string) {
		group := map[string]string{CommandLabel: "verify"}
		prev, err := ParsePrevious(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain), group)
		if err != nil {
			return
		}
		run := &Run{Command: "verify", Start: time.Unix(0, 0), End: time.Unix(10, 0), Verify: &Verify{Level: LevelDefault}}
		reg, err := Registry(run, prev, prometheus.Labels(group), nil)
		if err != nil {
			t.Fatalf("registry from a parsed previous file: %v", err)
		}
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, mf := range fams {
			if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
		again, err := ParsePrevious(bytes.NewReader(b.Bytes()), expfmt.NewFormat(expfmt.TypeTextPlain), group)
		if err != nil {
			t.Fatalf("what a run wrote does not parse: %v\n%s", err, b.String())
		}
		same := func(a, b float64) bool { return a == b || (a != a && b != b) }
		if len(again.lastSuccess) != len(prev.lastSuccess) || len(again.verified) != len(prev.verified) {
			t.Fatalf("carried %v %v, read back %v %v", prev.lastSuccess, prev.verified, again.lastSuccess, again.verified)
		}
		for k, v := range prev.lastSuccess {
			if !same(again.lastSuccess[k], v) {
				t.Fatalf("%s: carried %v, read back %v", k, v, again.lastSuccess[k])
			}
		}
		for k, v := range prev.verified {
			if !same(again.verified[k], v) {
				t.Fatalf("%v: carried %v, read back %v", k, v, again.verified[k])
			}
		}
	})
}

// FuzzParseLabel: an accepted label gives back its KEY and VALUE, is a
// valid grouping label for the push package, and none of nereusctl's.
func FuzzParseLabel(f *testing.F) {
	for _, s := range []string{"cluster=prod", "a=b=c", "__x=y", "job=x", "x=", "=y", "k=v w", "k=é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLabel(s)
		if err != nil {
			return
		}
		if l.Name+"="+l.Value != s {
			t.Fatalf("%q parsed as %+v", s, l)
		}
		if reservedLabels[l.Name] || strings.HasPrefix(l.Name, "__") || l.Value == "" || strings.ContainsAny(l.Value, " ,\t\n") {
			t.Fatalf("%q accepted: %+v", s, l)
		}
	})
}
