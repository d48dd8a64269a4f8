package store

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
)

// The direct GET goes where the SDK's resolver sends a GetObject: AWS's
// virtual-hosted names, path style for a custom endpoint given by address
// or asked for, and no direct path at all for a bucket the rules sign
// other than with SigV4 (an S3 Express directory bucket).
func TestDirectGetEndpoint(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	for _, c := range []struct {
		cfg              S3Config
		nilDirect        bool
		host, path, sign string
	}{
		{cfg: S3Config{Bucket: "my-bucket", Region: "eu-west-1"}, host: "my-bucket.s3.eu-west-1.amazonaws.com", sign: "eu-west-1"},
		{cfg: S3Config{Bucket: "my-bucket", Region: "eu-west-1", PathStyle: true}, host: "s3.eu-west-1.amazonaws.com", path: "/my-bucket", sign: "eu-west-1"},
		{cfg: S3Config{Bucket: "bkt", Endpoint: "http://127.0.0.1:7070"}, host: "127.0.0.1:7070", path: "/bkt", sign: "us-east-1"},
		{cfg: S3Config{Bucket: "bkt", Endpoint: "https://s3.example.com", Region: "auto"}, host: "bkt.s3.example.com", sign: "auto"},
		{cfg: S3Config{Bucket: "mybucket--usw2-az1--x-s3", Region: "us-west-2"}, nilDirect: true},
	} {
		s, err := NewS3(context.Background(), c.cfg)
		if err != nil {
			t.Fatalf("%+v: %v", c.cfg, err)
		}
		d := s.direct
		if c.nilDirect {
			if d != nil {
				t.Errorf("%s: a direct GET to %s, want the SDK's path", c.cfg.Bucket, d.host)
			}
			continue
		}
		if d == nil {
			t.Fatalf("%+v: no direct GET", c.cfg)
		}
		if d.host != c.host || d.path != c.path || d.region != c.sign || d.name != "s3" {
			t.Errorf("%+v: host %q path %q signed for %s/%s, want %q %q %s/s3", c.cfg, d.host, d.path, d.name, d.region, c.host, c.path, c.sign)
		}
	}
}

// An error answer keeps the server's code, or names the status when the
// body is not S3's error XML (cut by a gateway, empty, a proxy's page), so
// mapErr classifies it as the SDK's would be.
func TestDirectResponseError(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		code   string
	}{
		{404, `<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>gone</Message><RequestId>r1</RequestId></Error>`, "NoSuchKey"},
		{403, ``, "Forbidden"},
		{403, `<Error><Code>SignatureDoesNotMatch</Code><Mess`, "SignatureDoesNotMatch"}, // cut after the code
		{416, `<Error><Code>InvalidRange</Code></Error>`, "InvalidRange"},
		{503, `<html>busy</html>`, "ServiceUnavailable"},
		{412, ``, "PreconditionFailed"},
	} {
		err := responseError(&http.Response{StatusCode: c.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(c.body))}, "GetObject")
		var ae smithy.APIError
		if !asAPIError(err, &ae) || ae.ErrorCode() != c.code {
			t.Errorf("%d %q: code %q, want %q (%v)", c.status, c.body, errCode(err), c.code, err)
		}
		if !strings.Contains(err.Error(), http.StatusText(c.status)) && !strings.Contains(err.Error(), c.code) {
			t.Errorf("%d: %v names neither the status nor the code", c.status, err)
		}
	}
}

// FuzzDirectResponseError: whatever a server sends with an error status,
// the error has a code (never empty), its fault follows the status, and an
// S3 error document's own code is the one kept.
func FuzzDirectResponseError(f *testing.F) {
	f.Add(404, []byte(`<Error><Code>NoSuchKey</Code></Error>`))
	f.Add(500, []byte(`<Error><Code>InternalError</Code><Message>x</Message></Error>`))
	f.Add(403, []byte{})
	f.Add(400, []byte(`<Error><Code>`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 300 || status > 599 {
			return
		}
		err := responseError(&http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(string(body)))}, "GetObject")
		var ae smithy.APIError
		if !asAPIError(err, &ae) || ae.ErrorCode() == "" {
			t.Fatalf("%d %q: no code: %v", status, body, err)
		}
		if (status >= 500) != (ae.ErrorFault() == smithy.FaultServer) {
			t.Fatalf("%d: fault %v", status, ae.ErrorFault())
		}
		var doc s3ErrorBody
		if xmlErr := xmlUnmarshal(body, &doc); xmlErr == nil && doc.Code != "" && ae.ErrorCode() != doc.Code {
			t.Fatalf("%d %q: code %q, the document says %q", status, body, ae.ErrorCode(), doc.Code)
		}
	})
}

// contentRangeStart reads the first byte of a 206's Content-Range.
func TestContentRangeStart(t *testing.T) {
	for v, want := range map[string]int64{"bytes 0-9/100": 0, "bytes 500-999/*": 500, "bytes */100": -1, "": -1, "items 1-2/3": -1} {
		if got := contentRangeStart(v); got != want {
			t.Errorf("%q: %d, want %d", v, got, want)
		}
	}
}

func asAPIError(err error, ae *smithy.APIError) bool { return errors.As(err, ae) }

func xmlUnmarshal(b []byte, v any) error { return xml.Unmarshal(b, v) }
