package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3Config selects an S3 bucket (and an optional key prefix in it) and how
// to reach it. Credentials are never part of it: they come from the AWS
// default chain (environment, shared config and credentials files, SSO, web
// identity, container and instance roles).
type S3Config struct {
	Bucket string
	// Prefix is prepended (with a "/") to every key; List strips it.
	Prefix string
	// Endpoint is a custom S3-compatible endpoint URL (empty for AWS).
	Endpoint string
	// Region; empty takes it from the AWS chain, or us-east-1 for a custom
	// endpoint.
	Region string
	// PathStyle addresses the bucket in the path instead of the host name;
	// always on for endpoints given as an IP address or localhost.
	PathStyle bool
	// AllowHTTP accepts a plain http:// endpoint that is not loopback.
	AllowHTTP bool
	// Log receives the backend's diagnostics (nil: none).
	Log *slog.Logger
	// Meter counts every HTTP attempt and holds the request budget (nil:
	// none).
	Meter *Meter
	// SDKReads sends GETs and listings through the SDK's operations (its
	// middleware stack and XML decoder) instead of the direct signed
	// requests (s3direct.go): the baseline of the benchmarks, and a way
	// back should a store answer the two differently
	// (NEREUSCTL_S3_SDK_READS=true).
	SDKReads bool
}

// S3 is the s3:// backend (aws-sdk-go-v2).
//
// Guards map to S3 conditional requests: IfAbsent is If-None-Match: *,
// IfMatch is If-Match: "etag", on PutObject and DeleteObject. Failures are
// matched on the API error code, never the HTTP status: PreconditionFailed →
// ErrPreconditionFailed, ConditionalRequestConflict → ErrConflict, NoSuchKey
// and NotFound → ErrNotFound (ErrPreconditionFailed for an IfMatch on a
// missing key). Every Put sends the full-object SHA-256 (x-amz-checksum-
// sha256), which the server verifies and keeps; Head asks for it back.
//
// The SDK does not retry (aws.NopRetryer): WithRetry is the one retry
// layer, so every HTTP attempt is one it decided on, and S3Config.Meter
// counts and rate-limits each at the wire. An IfAbsent Put that meets 412
// still compares the stored bytes with its own (ConfirmIfAbsent): a
// concurrent writer of the same bytes is a success too.
type S3 struct {
	client   *s3.Client
	bucket   string
	prefix   string  // "" or ending in "/"
	endpoint string  // the endpoint requests go to; "" for AWS's own
	direct   *direct // nil: GETs and listings go through the SDK
}

var _ Store = (*S3)(nil)

// NewS3 builds the S3 client; it is the only place that does.
//
// The endpoint rule (docs/design.md §14: plain http only on loopback unless
// AllowHTTP) applies to the endpoint the client will really use, however it
// was set: Endpoint (--s3-endpoint), AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
// or endpoint_url in the AWS shared config (a profile's, or its services
// section's s3 entry). With a custom endpoint, the EC2 instance metadata
// service is not asked for credentials (it would only time out off EC2).
func NewS3(ctx context.Context, c S3Config) (*S3, error) {
	client, endpoint, err := newS3Client(ctx, c)
	if err != nil {
		return nil, err
	}
	prefix := strings.Trim(c.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	s := &S3{client: client, bucket: c.Bucket, prefix: prefix, endpoint: endpoint}
	if !c.SDKReads {
		s.direct = newDirect(ctx, client, c.Bucket)
	}
	return s, nil
}

// Direct reports whether GETs and listings are sent as direct signed
// requests rather than through the SDK's operations (s3direct.go).
func (s *S3) Direct() bool { return s.direct != nil }

// Endpoint is the endpoint the client sends its requests to, as
// ResolveS3Endpoint gives it ("" for AWS's own).
func (s *S3) Endpoint() string { return s.endpoint }

// envEndpointSet reports an endpoint given in the environment.
func envEndpointSet() bool {
	if v, _ := os.LookupEnv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"); strings.EqualFold(v, "true") {
		return false
	}
	return os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
}

func newS3Client(ctx context.Context, c S3Config) (*s3.Client, string, error) {
	if c.Bucket == "" {
		return nil, "", errors.New("open s3 store: no bucket")
	}
	prefix := strings.Trim(c.Prefix, "/")
	if prefix != "" {
		if err := ValidatePrefix(prefix + "/"); err != nil {
			return nil, "", fmt.Errorf("open s3 store s3://%s: prefix: %w", c.Bucket, err)
		}
	}
	if c.Endpoint != "" {
		if _, err := checkEndpoint(c.Endpoint, c.AllowHTTP); err != nil {
			return nil, "", fmt.Errorf("open s3 store s3://%s: %w", c.Bucket, err)
		}
	}

	opts := []func(*config.LoadOptions) error{
		// One retry layer, and it is WithRetry's, not the SDK's: the SDK
		// sends each attempt once (see S3). WithRetry knows which attempts
		// were ambiguous (a timeout, a reset, a 5xx may hide a completed
		// write) and reconciles a guarded write that then meets 412:
		// IfAbsent by comparing bytes, IfMatch by the ETag of our bytes, a
		// Delete by the object being gone. A retry inside the SDK would hide
		// that ambiguity from it (an IfMatch Put whose first response was
		// lost would come back as a bare 412), multiply its attempts (3 per
		// call, 18 per 6 tries) and send requests no counter or budget saw.
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	// Off AWS the instance metadata service does not exist: asking it for
	// credentials would cost seconds to minutes of probing before the real
	// error (no credentials) shows. It is off when a custom endpoint is
	// known before loading (the flag, the environment); one set only in
	// the shared config is known after, and the config is loaded again.
	disableIMDS := c.Endpoint != "" || envEndpointSet()
	client, endpoint, endpointErr, err := loadS3Client(ctx, c, opts, disableIMDS)
	if err == nil && endpointErr == nil && endpoint != nil && !disableIMDS {
		client, endpoint, endpointErr, err = loadS3Client(ctx, c, opts, true)
	}
	if err != nil {
		return nil, "", fmt.Errorf("open s3 store s3://%s: load aws config: %w", c.Bucket, err)
	}
	if endpointErr != nil {
		return nil, "", fmt.Errorf("open s3 store s3://%s: %w", c.Bucket, endpointErr)
	}
	if endpoint == nil && client.Options().Region == "" {
		return nil, "", fmt.Errorf("open s3 store s3://%s: no region (set --s3-region or AWS_REGION)", c.Bucket)
	}
	if r := client.Options().Region; r != "" && !validRegion(r) {
		// The SDK would fail every request at endpoint resolution, before
		// sending it: say so once, at open.
		return nil, "", fmt.Errorf("open s3 store s3://%s: region %q (--s3-region, AWS_REGION or the shared config): want letters, digits, '-' and '.' (such as us-east-1)", c.Bucket, r)
	}
	shown := ""
	if endpoint != nil {
		shown = endpoint.String()
	}
	if c.Log != nil {
		c.Log.Debug("s3 client", "bucket", c.Bucket, "prefix", prefix, "endpoint", shown, "region", client.Options().Region, "path_style", client.Options().UsePathStyle)
	}
	return client, shown, nil
}

// loadS3Client loads the AWS configuration and builds the client, with
// the endpoint it resolved (nil for AWS's own) checked by checkEndpoint.
func loadS3Client(ctx context.Context, c S3Config, opts []func(*config.LoadOptions) error, disableIMDS bool) (client *s3.Client, endpoint *url.URL, endpointErr, err error) {
	if disableIMDS {
		opts = append(opts[:len(opts):len(opts)], config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.Credentials != nil {
		cfg.Credentials = aws.NewCredentialsCache(credentialsGuard{cfg.Credentials})
	}
	client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Retryer = aws.NopRetryer{}
		if b, ok := o.HTTPClient.(*awshttp.BuildableClient); ok {
			// --parallel N keeps up to N requests in flight: keep that
			// many connections alive rather than redialling (the
			// default keeps 10 per host).
			o.HTTPClient = b.WithTransportOptions(func(t *http.Transport) {
				t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, 256)
				t.MaxIdleConns = max(t.MaxIdleConns, 256)
			})
		}
		// Every attempt is counted and waits for the request budget.
		o.HTTPClient = c.Meter.MeteredClient(o.HTTPClient)
		// o.BaseEndpoint holds what the SDK resolved from the environment
		// and the shared config; --s3-endpoint overrides it.
		raw := c.Endpoint
		if raw == "" && o.BaseEndpoint != nil {
			raw = *o.BaseEndpoint
		}
		o.UsePathStyle = c.PathStyle
		if raw == "" {
			return
		}
		endpoint, endpointErr = checkEndpoint(raw, c.AllowHTTP)
		if endpointErr != nil {
			return
		}
		o.BaseEndpoint = aws.String(endpoint.String())
		o.UsePathStyle = c.PathStyle || isIPOrLocalhost(endpoint.Hostname())
		// S3-compatible servers vary in their support of the newer
		// default checksums (trailers, CRC32 on every request): send and
		// validate checksums only when the operation requires it, or when
		// we ask for one explicitly (SHA-256 on Put).
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		if o.Region == "" {
			o.Region = "us-east-1"
		}
	})
	return client, endpoint, endpointErr, nil
}

// checkEndpoint parses a custom endpoint and applies the plain-HTTP rule
// (docs/design.md §14): http:// only on loopback unless allowHTTP.
func checkEndpoint(raw string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("s3 endpoint %q: want http(s)://host[:port]", RedactURL(raw))
	}
	if u.User != nil {
		return nil, errors.New("s3 endpoint: credentials in the endpoint URL are refused (use the AWS credential chain)")
	}
	if u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("s3 endpoint %q: want http(s)://host[:port]", RedactURL(raw))
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("s3 endpoint %q: no query or fragment allowed", RedactURL(raw))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return nil, fmt.Errorf("s3 endpoint %q: port %s: want 1 to 65535", RedactURL(raw), p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, fmt.Errorf("s3 endpoint %q: an empty port: want host or host:port", RedactURL(raw))
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("s3 endpoint %q: no path allowed (the bucket and prefix go in --store s3://BUCKET/PREFIX)", RedactURL(raw))
	}
	if u.Scheme == "http" && !allowHTTP && !IsLoopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("s3 endpoint %s: plain http is accepted only on loopback (127.0.0.0/8, ::1, localhost); use https or allow http explicitly", u.Host)
	}
	return u, nil
}

// IsLoopbackHost reports localhost, 127.0.0.0/8 and ::1, by name only (no
// DNS lookup).
func IsLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func isIPOrLocalhost(h string) bool {
	return strings.EqualFold(h, "localhost") || net.ParseIP(h) != nil
}

// credentialsGuard marks a failure of the credential chain, so that mapErr
// recognises it by type (the SDK passes it on as plain wrapped text).
type credentialsGuard struct{ p aws.CredentialsProvider }

type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

func (g credentialsGuard) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := g.p.Retrieve(ctx)
	if err != nil && ctx.Err() == nil {
		return c, &credentialsError{err: err}
	}
	return c, err
}

func (s *S3) String() string {
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/")
}

func (s *S3) full(key string) string { return s.prefix + key }

// errCode returns the API error code of err, or "".
func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// mapErr maps an SDK error by its API error code. The SDK's message names
// the operation, status and request id, never credentials or signatures.
func (s *S3) mapErr(op, key string, g Guard, err error) error {
	what := op + " " + key
	if !g.IsNone() {
		what += " (" + g.String() + ")"
	}
	switch code := errCode(err); code {
	case "PreconditionFailed":
		return fmt.Errorf("%s: %w (s3 %s)", what, ErrPreconditionFailed, code)
	case "ConditionalRequestConflict":
		return fmt.Errorf("%s: %w (s3 %s)", what, ErrConflict, code)
	case "NoSuchKey", "NotFound":
		if _, ok := g.MatchETag(); ok {
			return fmt.Errorf("%s: object is gone: %w (s3 %s)", what, ErrPreconditionFailed, code)
		}
		return fmt.Errorf("%s: %w (s3 %s)", what, ErrNotFound, code)
	case "AccessDenied", "Forbidden", "AllAccessDisabled", "AccountProblem":
		return Permanent(fmt.Errorf("%s in %s: %w (s3 %s): %w", what, s, ErrAccessDenied, code, err))
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "TokenRefreshRequired",
		"InvalidToken", "InvalidClientTokenId", "AuthorizationHeaderMalformed":
		return Permanent(fmt.Errorf("%s in %s: %w (s3 %s)", what, s, ErrCredentials, code))
	case "NoSuchBucket":
		return Permanent(fmt.Errorf("%s in %s: %w (s3 %s)", what, s, ErrNoSuchBucket, code))
	case "InvalidBucketName", "PermanentRedirect",
		// The request itself is wrong: sent again, it is refused again.
		"InvalidArgument", "InvalidRequest", "MalformedXML", "KeyTooLongError", "MethodNotAllowed",
		"NotImplemented", "InvalidObjectState", "InvalidStorageClass", "InvalidLocationConstraint":
		return Permanent(fmt.Errorf("%s in %s: %w", what, s, err))
	case "EntityTooLarge":
		return fmt.Errorf("%s in %s: %w (s3 %s)", what, s, ErrTooLarge, code)
	}
	var ce *credentialsError
	var se *v4.SigningError
	if errors.As(err, &ce) || errors.As(err, &se) {
		// The credential chain found nothing usable; its own text lists
		// every provider it tried (and, off EC2, metadata-service dial
		// errors), which helps no one: say what is missing.
		return Permanent(fmt.Errorf("%s in %s: %w: no usable AWS credentials in the default chain", what, s, ErrCredentials))
	}
	if neverSent(err) {
		return Permanent(fmt.Errorf("%s in %s: the request could not be built, so it was never sent: %w", what, s, err))
	}
	return fmt.Errorf("%s in %s: %w", what, s, err)
}

// neverSent reports an SDK failure before the request went out: its
// parameters, endpoint resolution (an invalid region), signing inputs or
// serialization. The same call fails the same way however often it is
// retried. A failure to send it (a network error), a response of any
// kind, or the context ending is not one.
func neverSent(err error) bool {
	var oe *smithy.OperationError
	if !errors.As(err, &oe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errCode(err) != "" {
		return false // an answer from the server
	}
	var (
		resp *smithyhttp.ResponseError
		send *smithyhttp.RequestSendError
		de   *smithy.DeserializationError
		ce   *smithy.CanceledError
	)
	return !errors.As(err, &resp) && !errors.As(err, &send) && !errors.As(err, &de) && !errors.As(err, &ce)
}

// validRegion reports a region the SDK can put in an endpoint host name:
// 1 to 63 letters, digits, '-' and '.', neither first nor last a '-' or
// a '.' (the SDK's host-label rule).
func validRegion(r string) bool {
	if len(r) == 0 || len(r) > 63 || strings.ContainsAny(r[:1]+r[len(r)-1:], "-.") {
		return false
	}
	for _, c := range r {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func unquote(etag *string) string {
	return strings.Trim(aws.ToString(etag), `"`)
}

// sha256Hex turns an x-amz-checksum-sha256 value (base64) into hex.
func sha256Hex(b64 *string) string {
	raw, err := base64.StdEncoding.DecodeString(aws.ToString(b64))
	if err != nil || len(raw) != sha256.Size {
		return ""
	}
	return hex.EncodeToString(raw)
}

func (s *S3) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket:       aws.String(s.bucket),
		Key:          aws.String(s.full(key)),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return ObjectInfo{}, s.mapErr("head", key, None(), err)
	}
	info := ObjectInfo{
		Key:      key,
		Size:     aws.ToInt64(out.ContentLength),
		ETag:     unquote(out.ETag),
		Modified: aws.ToTime(out.LastModified),
	}
	if out.ChecksumType != types.ChecksumTypeComposite {
		info.SHA256 = sha256Hex(out.ChecksumSHA256)
	}
	return info, nil
}

func (s *S3) Get(ctx context.Context, key string, r *Range) ([]byte, error) {
	return s.get(ctx, key, r, nil)
}

// GetInto is Get of the whole object into buf (IntoGetter): on the direct
// path a chain of reads reuses its buffers.
func (s *S3) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	return s.get(ctx, key, nil, buf)
}

func (s *S3) get(ctx context.Context, key string, r *Range, buf []byte) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	off, limit := int64(0), int64(-1) // limit < 0: to the end
	if r != nil {
		off = max(r.Offset, 0)
		if r.Length >= 0 {
			limit = r.Length
			if off > math.MaxInt64-limit {
				limit = -1
			}
		}
	}
	if limit == 0 {
		// "bytes=N-(N-1)" is not a range; S3 would send the whole object.
		if _, err := s.Head(ctx, key); err != nil {
			return nil, fmt.Errorf("get %s: %w", key, err)
		}
		return []byte{}, nil
	}
	rng := ""
	switch {
	case limit > 0:
		rng = fmt.Sprintf("bytes=%d-%d", off, off+limit-1)
	case off > 0:
		rng = fmt.Sprintf("bytes=%d-", off)
	}
	var (
		body    io.ReadCloser
		partial bool // the server answered the range (206)
		length  int64
		start   int64 = -1
	)
	if s.direct != nil {
		resp, err := s.direct.get(ctx, s.full(key), rng)
		if err != nil {
			if errCode(err) == "InvalidRange" {
				return []byte{}, nil // the object exists and ends before off
			}
			return nil, s.mapErr("get", key, None(), err)
		}
		body, length = resp.Body, resp.ContentLength
		if partial = resp.StatusCode == http.StatusPartialContent; partial {
			start = contentRangeStart(resp.Header.Get("Content-Range"))
		}
	} else {
		in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.full(key))}
		if rng != "" {
			in.Range = aws.String(rng)
		}
		out, err := s.client.GetObject(ctx, in)
		if err != nil {
			if errCode(err) == "InvalidRange" {
				return []byte{}, nil
			}
			return nil, s.mapErr("get", key, None(), err)
		}
		body, length = out.Body, aws.ToInt64(out.ContentLength)
		if partial = out.ContentRange != nil; partial {
			start = contentRangeStart(aws.ToString(out.ContentRange))
		}
		if out.ContentLength == nil {
			length = -1
		}
	}
	defer body.Close()
	if rng != "" && !partial {
		// The server ignored the range and sent the whole object: skip
		// and cut here, reading no more than the range needs.
		if _, err := io.CopyN(io.Discard, body, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("get %s: %w", key, err)
		}
		length = -1
	} else if rng != "" && start != off {
		return nil, fmt.Errorf("get %s: asked for %s, the server answered from byte %d", key, rng, start)
	}
	b, err := readBody(body, length, buf, limit)
	if err != nil {
		return nil, fmt.Errorf("get %s: read body: %w", key, err)
	}
	return b, nil
}

func (s *S3) Put(ctx context.Context, key string, data []byte, g Guard) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	sum := sha256.Sum256(data)
	in := &s3.PutObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(s.full(key)),
		Body:              bytes.NewReader(data),
		ContentLength:     aws.Int64(int64(len(data))),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		ChecksumSHA256:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
	}
	if g.IsIfAbsent() {
		in.IfNoneMatch = aws.String("*")
	}
	if etag, ok := g.MatchETag(); ok {
		in.IfMatch = aws.String(`"` + etag + `"`)
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		err = s.mapErr("put", key, g, err)
		if g.IsIfAbsent() && errors.Is(err, ErrPreconditionFailed) {
			return ConfirmIfAbsent(ctx, s, key, data, err)
		}
		// An If-Match 412 is returned as it is: two writers of the same
		// bytes from the same base are a lost update for a counter, and
		// only the caller knows whether equal bytes are the same intent
		// (layout.Replace confirms for documents, which carry a version).
		return ObjectInfo{}, err
	}
	info := ObjectInfo{Key: key, Size: int64(len(data)), ETag: unquote(out.ETag), SHA256: hex.EncodeToString(sum[:])}
	if got := sha256Hex(out.ChecksumSHA256); got != "" && got != info.SHA256 {
		return ObjectInfo{}, fmt.Errorf("put %s: server stored sha256 %s, sent %s", key, got, info.SHA256)
	}
	return info, nil
}

func (s *S3) Delete(ctx context.Context, key string, g Guard) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if g.IsIfAbsent() {
		return fmt.Errorf("delete %s: if-absent is not a delete guard", key)
	}
	in := &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.full(key))}
	etag, isMatch := g.MatchETag()
	if isMatch {
		// S3 answers an If-Match delete of a missing key with 404, but
		// some compatible servers (versitygw) with 204: HEAD first so the
		// contract (ErrPreconditionFailed) holds everywhere, and a
		// mismatch costs no DELETE.
		cur, err := s.Head(ctx, key)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("delete %s (%s): object is gone: %w", key, g, ErrPreconditionFailed)
			}
			return fmt.Errorf("delete %s (%s): %w", key, g, err)
		}
		if cur.ETag != etag {
			return fmt.Errorf("delete %s (%s): current etag %s: %w", key, g, cur.ETag, ErrPreconditionFailed)
		}
		in.IfMatch = aws.String(`"` + etag + `"`)
	}
	if _, err := s.client.DeleteObject(ctx, in); err != nil {
		switch code := errCode(err); {
		case code == "NoSuchKey" || code == "NotFound":
			// Gone since our HEAD saw it with the right ETag (or
			// removed by our own first attempt, whose response the
			// SDK's retry lost): that version is deleted either way.
			return nil
		}
		return s.mapErr("delete", key, g, err)
	}
	return nil
}

func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return s.ListAfter(ctx, prefix, "")
}

func (s *S3) ListAfter(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	return s.ListRange(ctx, prefix, startAfter, "")
}

// ListRange is ListAfter that stops paging once a page reaches before
// (RangeLister): a range of a long prefix costs its own pages only.
func (s *S3) ListRange(ctx context.Context, prefix, startAfter, before string) ([]ObjectInfo, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	var (
		out []ObjectInfo
		err error
	)
	if s.direct != nil {
		out, err = s.listDirect(ctx, prefix, startAfter, before)
	} else {
		out, err = s.listSDK(ctx, prefix, startAfter, before)
	}
	if err != nil {
		return nil, err
	}
	// S3 lists in UTF-8 byte order; sort anyway, as some compatible
	// servers walk directories instead.
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if before != "" {
		out = keysBefore(out, before)
	}
	return out, nil
}

// listSDK pages through ListObjectsV2 with the SDK's paginator.
func (s *S3) listSDK(ctx context.Context, prefix, startAfter, before string) ([]ObjectInfo, error) {
	in := &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.full(prefix)),
	}
	if startAfter != "" {
		in.StartAfter = aws.String(s.full(startAfter))
	}
	p := s3.NewListObjectsV2Paginator(s.client, in)
	var out []ObjectInfo
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.mapErr("list", fmt.Sprintf("%q", prefix), None(), err)
		}
		for _, o := range page.Contents {
			k, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok || (startAfter != "" && k <= startAfter) {
				continue
			}
			out = append(out, ObjectInfo{
				Key:      k,
				Size:     aws.ToInt64(o.Size),
				ETag:     unquote(o.ETag),
				Modified: aws.ToTime(o.LastModified),
			})
		}
		if before != "" && len(page.Contents) > 0 {
			// S3 pages are in key order: a page that reached before ends
			// the range. (A server that walks directories out of order
			// can only make the range look short; callers that find a
			// hole in it confirm against a whole listing.)
			if k, ok := strings.CutPrefix(aws.ToString(page.Contents[len(page.Contents)-1].Key), s.prefix); ok && k >= before {
				break
			}
		}
	}
	return out, nil
}

// listDirect pages through ListObjectsV2 with direct requests, each page
// read by parseListPage.
func (s *S3) listDirect(ctx context.Context, prefix, startAfter, before string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	token := ""
	for {
		q := url.Values{"prefix": {s.full(prefix)}}
		if startAfter != "" {
			q.Set("start-after", s.full(startAfter))
		}
		if token != "" {
			q.Set("continuation-token", token)
		}
		what := fmt.Sprintf("%q", prefix)
		page, err := s.directPage(ctx, what, q)
		if err != nil {
			return nil, err
		}
		last := ""
		for _, o := range page.Contents {
			last = o.Key
			k, ok := strings.CutPrefix(o.Key, s.prefix)
			if !ok || (startAfter != "" && k <= startAfter) {
				continue
			}
			out = append(out, ObjectInfo{Key: k, Size: o.Size, ETag: strings.Trim(o.ETag, `"`), Modified: o.LastModified})
		}
		if !page.IsTruncated {
			return out, nil
		}
		if page.NextContinuationToken == "" || page.NextContinuationToken == token {
			return nil, fmt.Errorf("list %s in %s: a truncated page without a new continuation token", what, s)
		}
		token = page.NextContinuationToken
		if before != "" && last != "" {
			// As listSDK: pages are in key order, a page that reached
			// before ends the range.
			if k, ok := strings.CutPrefix(last, s.prefix); ok && k >= before {
				return out, nil
			}
		}
	}
}

// directPage sends one direct LIST and reads its page.
func (s *S3) directPage(ctx context.Context, what string, q url.Values) (listPage, error) {
	resp, err := s.direct.list(ctx, q)
	if err != nil {
		return listPage{}, s.mapErr("list", what, None(), err)
	}
	defer resp.Body.Close()
	body, err := readBody(resp.Body, resp.ContentLength, nil, maxListPage)
	if err != nil {
		return listPage{}, fmt.Errorf("list %s in %s: read body: %w", what, s, err)
	}
	page, err := parseListPage(body)
	if err != nil {
		return listPage{}, fmt.Errorf("list %s in %s: %w", what, s, err)
	}
	return page, nil
}

// maxListPage bounds a listing page's body: 1,000 entries of S3's largest
// keys are under 2 MiB.
const maxListPage = 16 << 20
