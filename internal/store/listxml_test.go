package store

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"
)

// listDoc is a ListBucketResult as S3 sends it (versitygw and SeaweedFS
// send the same shape; SeaweedFS adds Owner).
func listDoc(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name><Prefix>a/streams/s/</Prefix><KeyCount>` + fmt.Sprint(n) + `</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>`)
	for i := range n {
		fmt.Fprintf(&b, `<Contents><Key>a/streams/s/objects/%020d.nbo</Key><LastModified>2026-12-05T10:00:0%d.%03dZ</LastModified><ETag>&quot;0123456789abcdef0123456789abcde%d&quot;</ETag><ChecksumAlgorithm>SHA256</ChecksumAlgorithm><Size>%d</Size><Owner><ID>x</ID><DisplayName>y</DisplayName></Owner><StorageClass>STANDARD</StorageClass></Contents>`, i*100, i%10, i, i%10, 16000+i)
	}
	b.WriteString(extra + `<NextContinuationToken>tok/en+=</NextContinuationToken><StartAfter>a/streams/s/</StartAfter></ListBucketResult>`)
	return b.String()
}

// stdListPage is encoding/xml's reading, the reference.
func stdListPage(b []byte) (listPage, error) {
	var p listPage
	err := xml.Unmarshal(b, &p)
	return p, err
}

func samePage(a, b listPage) bool {
	if a.IsTruncated != b.IsTruncated || a.NextContinuationToken != b.NextContinuationToken || len(a.Contents) != len(b.Contents) {
		return false
	}
	for i := range a.Contents {
		x, y := a.Contents[i], b.Contents[i]
		if x.Key != y.Key || x.ETag != y.ETag || x.Size != y.Size || !x.LastModified.Equal(y.LastModified) ||
			x.LastModified.Format(time.RFC3339Nano) != y.LastModified.Format(time.RFC3339Nano) {
			return false
		}
	}
	return true
}

// The scanner reads what stores send, as encoding/xml does, and declines
// (to encoding/xml) what it does not take.
func TestScanListPage(t *testing.T) {
	doc := listDoc(3, "")
	p, err := scanListPage([]byte(doc))
	if err != nil {
		t.Fatalf("the common shape declined: %v", err)
	}
	want, err := stdListPage([]byte(doc))
	if err != nil || !samePage(p, want) || len(p.Contents) != 3 || !p.IsTruncated || p.NextContinuationToken != "tok/en+=" ||
		p.Contents[2].Key != "a/streams/s/objects/00000000000000000200.nbo" || p.Contents[2].ETag != `"0123456789abcdef0123456789abcde2"` || p.Contents[2].Size != 16002 {
		t.Fatalf("scanned %+v, encoding/xml %+v (%v)", p, want, err)
	}
	for name, d := range map[string]string{
		"cdata":          strings.Replace(doc, "<Name>bkt</Name>", "<Name><![CDATA[bkt]]></Name>", 1),
		"prefix":         strings.Replace(doc, "<Name>bkt</Name>", `<s3:Name xmlns:s3="u">bkt</s3:Name>`, 1),
		"two keys":       strings.Replace(doc, "</Key>", "</Key><Key>b</Key>", 1),
		"latin-1":        strings.Replace(doc, `encoding="UTF-8"`, `encoding="ISO-8859-1"`, 1),
		"unknown entity": strings.Replace(doc, "&quot;", "&nbsp;", 1),
		"mismatched":     strings.Replace(doc, "</Size>", "</Siz>", 1),
		"cr":             strings.Replace(doc, "<Key>", "<Key>\r", 1),
	} {
		if _, err := scanListPage([]byte(d)); err == nil {
			t.Errorf("%s: taken by the scanner", name)
		}
		got, gerr := parseListPage([]byte(d))
		std, serr := stdListPage([]byte(d))
		if (gerr == nil) != (serr == nil) || gerr == nil && !samePage(got, std) {
			t.Errorf("%s: parse %v (%v), encoding/xml %v", name, gerr, got, serr)
		}
	}
	if _, err := parseListPage([]byte("<html>a proxy's page</html>")); err != nil {
		t.Logf("a proxy's page: %v", err)
	}
	if _, err := parseListPage([]byte("not xml")); err == nil || !strings.Contains(err.Error(), "ListBucketResult") {
		t.Errorf("not xml: %v", err)
	}
}

// FuzzListPage holds the scanner to encoding/xml: whatever it takes,
// encoding/xml reads the same way, and parseListPage answers as
// encoding/xml does for every input.
func FuzzListPage(f *testing.F) {
	f.Add([]byte(listDoc(2, "")))
	f.Add([]byte(listDoc(1, "<!-- c --><?xml version=\"1.0\"?><Contents/><IsTruncated> false </IsTruncated>")))
	f.Add([]byte(`<ListBucketResult><Contents><Key>a&amp;b&#x41;&#66;</Key><Size> 7 </Size><LastModified>2026-01-02T03:04:05+01:00</LastModified></Contents></ListBucketResult>`))
	f.Add([]byte(`<ListBucketResult a='1' b="&lt;"><Contents><Key/><Size>1</Size><x><Key>n</Key></x></Contents></ListBucketResult> `))
	f.Add([]byte(`<ListBucketResult><!-- a--></ListBucketResult>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		std, serr := stdListPage(b)
		if p, err := scanListPage(b); err == nil {
			if serr != nil {
				t.Fatalf("the scanner took what encoding/xml refuses (%v): %+v", serr, p)
			}
			if !samePage(p, std) {
				t.Fatalf("scanned %+v, encoding/xml %+v", p, std)
			}
		}
		got, gerr := parseListPage(b)
		if (gerr == nil) != (serr == nil) || gerr == nil && !samePage(got, std) {
			t.Fatalf("parse %+v (%v), encoding/xml %+v (%v)", got, gerr, std, serr)
		}
	})
}

// The scanner against encoding/xml on a page of 1,000 entries.
func BenchmarkListPage(b *testing.B) {
	doc := []byte(listDoc(1000, ""))
	b.Run("encoding-xml", func(b *testing.B) {
		for b.Loop() {
			if _, err := stdListPage(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := scanListPage(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
