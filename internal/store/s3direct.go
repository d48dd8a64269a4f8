package store

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyauth "github.com/aws/smithy-go/auth"
	"github.com/aws/smithy-go/encoding/httpbinding"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// emptySHA256 is the SHA-256 of an empty payload, the x-amz-content-sha256
// of a GET.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// direct sends an S3 GET as one signed net/http request, without the
// SDK's middleware stack (docs/performance.md: that stack was 59% of the
// client's CPU in `status`, about 0.15 ms of the 0.26 ms a request cost).
// It goes through the client's own HTTP client (the Meter counts and
// budgets it as any other attempt), signs with the SDK's SigV4 signer and
// the client's credential cache, to the endpoint the SDK's own resolver
// gives for the bucket; its failures are smithy API errors with the code
// the server sent (or the status's, as the SDK does for a bodiless
// answer), so mapErr and the retry layer treat them as the SDK's.
//
// It is built only when the resolver's first auth scheme for the bucket
// is plain SigV4 for "s3"; anything else (S3 Express directory buckets,
// multi-region access points' SigV4A) keeps the SDK path.
type direct struct {
	http   HTTPDoer
	creds  aws.CredentialsProvider
	signer *v4.Signer
	name   string // the signing name ("s3")
	region string // the signing region
	scheme string
	host   string
	path   string // the bucket's path on the host ("" or "/bucket"), no trailing '/'
}

// newDirect resolves the bucket's endpoint as the SDK would for a
// GetObject, or returns nil when the direct path does not apply.
func newDirect(ctx context.Context, client *s3.Client, bucket string) *direct {
	o := client.Options()
	if o.HTTPClient == nil || o.Credentials == nil || o.EndpointResolverV2 == nil {
		return nil
	}
	params := s3.EndpointParameters{
		Bucket:         aws.String(bucket),
		Region:         aws.String(o.Region),
		Endpoint:       o.BaseEndpoint,
		ForcePathStyle: aws.Bool(o.UsePathStyle),
		Accelerate:     aws.Bool(o.UseAccelerate),
		UseFIPS:        aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack:   aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
		UseArnRegion:   aws.Bool(o.UseARNRegion),
	}
	ep, err := o.EndpointResolverV2.ResolveEndpoint(ctx, params)
	if err != nil || ep.URI.Host == "" || ep.URI.RawQuery != "" {
		return nil
	}
	name, region := "s3", o.Region
	if opts, ok := smithyauth.GetAuthOptions(&ep.Properties); ok && len(opts) > 0 {
		// The rules name it "sigv4"; smithy's scheme id is the long form.
		if id := opts[0].SchemeID; id != "sigv4" && id != "aws.auth#sigv4" {
			return nil
		}
		if n, ok := smithyhttp.GetSigV4SigningName(&opts[0].SignerProperties); ok {
			name = n
		}
		if r, ok := smithyhttp.GetSigV4SigningRegion(&opts[0].SignerProperties); ok {
			region = r
		}
	}
	if name != "s3" || region == "" {
		return nil
	}
	return &direct{
		http:  o.HTTPClient,
		creds: o.Credentials,
		signer: v4.NewSigner(func(so *v4.SignerOptions) {
			// S3 signs the path as sent, not escaped a second time.
			so.DisableURIPathEscaping = true
		}),
		name:   name,
		region: region,
		scheme: ep.URI.Scheme,
		host:   ep.URI.Host,
		path:   strings.TrimSuffix(ep.URI.EscapedPath(), "/"),
	}
}

// get sends GET for the full key with an optional Range header and returns
// the open response of a 200 or 206; any other answer is returned as an
// error (a smithy.APIError carrying the server's code).
func (d *direct) get(ctx context.Context, fullKey, rng string) (*http.Response, error) {
	return d.send(ctx, "GetObject", d.path+"/"+httpbinding.EscapePath(fullKey, false), "", rng)
}

// list sends one ListObjectsV2 page request: GET of the bucket with
// list-type=2 and the query's parameters.
func (d *direct) list(ctx context.Context, q url.Values) (*http.Response, error) {
	q.Set("list-type", "2")
	path := d.path
	if path == "" {
		path = "/"
	}
	// url.Values writes a space as '+'; the signature's canonical query
	// has %20 (the signer's own rule), and so does what is sent.
	return d.send(ctx, "ListObjectsV2", path, strings.ReplaceAll(q.Encode(), "+", "%20"), "")
}

// send signs and sends one GET of an escaped path and query.
func (d *direct) send(ctx context.Context, op, escaped, rawQuery, rng string) (*http.Response, error) {
	u := &url.URL{Scheme: d.scheme, Host: d.host, RawPath: escaped, RawQuery: rawQuery}
	var err error
	if u.Path, err = url.PathUnescape(escaped); err != nil {
		return nil, fmt.Errorf("s3 %s: path: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("s3 %s: %w", op, err)
	}
	// Go's transport would otherwise ask for gzip and unzip it, which a
	// byte range must never meet.
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	creds, err := d.creds.Retrieve(ctx)
	if err != nil {
		return nil, err // mapErr knows credentialsGuard's error
	}
	if err := d.signer.SignHTTP(ctx, creds, req, emptySHA256, d.name, d.region, time.Now().UTC()); err != nil {
		return nil, &v4.SigningError{Err: err}
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, responseError(resp, op)
}

// s3ErrorBody is the part of S3's XML error document that is kept.
type s3ErrorBody struct {
	Code      string `xml:"Code"`
	Message   string `xml:"Message"`
	RequestID string `xml:"RequestId"`
}

// directError is a failed direct request: an API error (code and message,
// as the SDK's), with the HTTP status and request id in its text.
type directError struct {
	smithy.GenericAPIError
	op        string
	status    int
	requestID string
}

func (e *directError) Error() string {
	s := fmt.Sprintf("operation %s: https response error StatusCode: %d", e.op, e.status)
	if e.requestID != "" {
		s += ", RequestID: " + e.requestID
	}
	return s + ", " + e.GenericAPIError.Error()
}

// HTTPStatusCode is the status of the answer (as the SDK's response
// errors have it).
func (e *directError) HTTPStatusCode() int { return e.status }

// responseError reads an S3 error answer. A body that is not S3's error
// XML (cut by a gateway, a proxy's own page, a HEAD-like empty body) keeps
// the status's name as the code, as the SDK does: NotFound, Forbidden,
// PreconditionFailed, and so on.
func responseError(resp *http.Response, op string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var doc s3ErrorBody
	if len(body) > 0 {
		_ = xml.Unmarshal(body, &doc)
	}
	code := doc.Code
	if code == "" {
		code = statusCode(resp.StatusCode)
	}
	msg := doc.Message
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	if msg == "" {
		msg = "HTTP status " + strconv.Itoa(resp.StatusCode)
	}
	id := doc.RequestID
	if id == "" {
		id = resp.Header.Get("X-Amz-Request-Id")
	}
	fault := smithy.FaultClient
	if resp.StatusCode >= 500 {
		fault = smithy.FaultServer
	}
	return &directError{
		GenericAPIError: smithy.GenericAPIError{Code: code, Message: msg, Fault: fault},
		op:              op,
		status:          resp.StatusCode,
		requestID:       id,
	}
}

// statusCode names an HTTP status as an S3 error code, for an answer
// without one.
func statusCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusRequestedRangeNotSatisfiable:
		return "InvalidRange"
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusMovedPermanently:
		return "PermanentRedirect"
	}
	if t := http.StatusText(status); t != "" {
		return strings.ReplaceAll(t, " ", "")
	}
	return "HTTP" + strconv.Itoa(status) // a status without a name (490)
}

// readBody reads a GET's body (n bytes long, or unknown if n < 0) into
// buf[:0], grown when too small, no more than limit bytes when limit >= 0.
func readBody(r io.Reader, n int64, buf []byte, limit int64) ([]byte, error) {
	if limit >= 0 && (n < 0 || n > limit) {
		n = limit
	}
	if n >= 0 && int64(cap(buf)) < n && n <= 64<<20 {
		// (A larger body grows as it is read: a bogus length allocates
		// nothing ahead.)
		buf = make([]byte, 0, n)
	}
	buf = buf[:0]
	body := r
	if limit >= 0 {
		body = io.LimitReader(body, limit)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// contentRangeStart is the first byte of a 206's Content-Range ("bytes
// A-B/N"), or -1.
func contentRangeStart(v string) int64 {
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return -1
	}
	a, _, ok := strings.Cut(rest, "-")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return -1
	}
	return n
}
