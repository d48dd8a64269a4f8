// S3 backend tests, against real S3 servers started by
// internal/testutil/s3server: versitygw v1.8.0 (posix backend) and SeaweedFS
// (weed server, module version v0.0.0-20261109003541-7506e5f91cd6, weed
// 4.53). The suites about the server run on each, one subtest per server
// (s3server.Each). No mocks.
//
// What versitygw v1.8.0 did differently from S3's documented behaviour
// (observed with raw requests while writing these tests):
//
//   - DeleteObject with If-Match on a MISSING key answers 204 No Content
//     (success). AWS S3 answers 404 NoSuchKey. The S3 backend therefore
//     HEADs before an If-Match delete, so a missing key is
//     ErrPreconditionFailed on every server (and an ETag mismatch costs no
//     DELETE); a 404 from the DELETE after a matching HEAD means the version
//     is gone either way and is reported as success.
//   - Without --keep-alive every response carries "Connection: close", so
//     each request opens a new TCP connection; the harness passes
//     --keep-alive.
//   - A HEAD of a missing key returns 404 with an XML error body
//     (Content-Length 272); S3 sends no body on HEAD. The SDK maps it to
//     code "NotFound" all the same.
//   - Responses carry the x-amz-id-2 header twice.
//   - PutObject with If-Match accepts an unquoted ETag as well as the quoted
//     form S3 documents; the backend always sends the quoted form.
//   - A key cannot be both an object and a folder of other keys (the posix
//     backend keeps them as files and directories): a PUT of a/b when a/b/c
//     exists, or of a/b/c when the object a/b exists, fails with 409, guarded
//     or not. No layout key is a folder of another (every object key ends in
//     a file name with an extension), so nereusctl never meets it.
//
// What SeaweedFS (at the version above) did differently, observed the same
// way:
//
//   - DeleteObject with If-Match on a MISSING key answers 412
//     PreconditionFailed (AWS: 404 NoSuchKey; versitygw: 204). The HEAD
//     before an If-Match delete makes this moot.
//   - A PUT with If-None-Match: * of a key that is a folder of other keys
//     (a/b when a/b/c exists) answers 412 PreconditionFailed though HEAD a/b
//     is 404: its filer keeps keys as a file tree. An unguarded PUT there,
//     and an unguarded PUT of a/b/c when the object a/b exists, succeed.
//     As above, no layout key is a folder of another.
//   - Concurrent conditional PUTs of ONE key are serialised by a lock in the
//     gateway with a backoff: eight writers racing on one key took 1 to 4 s
//     (versitygw: 4 ms; eight IfAbsent PUTs of distinct keys: 25 ms). The
//     answers are right (one 200, the rest 412; no 409
//     ConditionalRequestConflict was seen), only slow: IfAbsentRace takes
//     seconds here.
//   - A HEAD of a missing key announces an XML error body in its
//     Content-Length, like versitygw. A checksum mismatch on PUT is 400 BadDigest with
//     a message about Content-MD5 (the code is right).
//   - PutObject with If-Match accepts an unquoted ETag, like versitygw.
//   - HeadObject returns x-amz-checksum-sha256 only with checksum mode on
//     (as S3), and only for an object whose PUT sent one (nereusctl's
//     always do); a ranged GET does not return it.
//   - Each bucket is a collection with volumes of its own, grown on its
//     first write (the harness grows one volume at a time, of 64 MB): the
//     first PUT into a new bucket takes about 0.2 s.
//
// What matched S3 on both: ETags are quoted hex MD5 for single-part objects;
// 412 with code PreconditionFailed for If-None-Match: * on an existing key
// and for an If-Match mismatch (PutObject and DeleteObject); 404 NoSuchKey
// for PutObject If-Match on a missing key; x-amz-checksum-sha256 verified,
// stored, returned on PutObject and on HeadObject with checksum mode
// enabled (versitygw adds type FULL_OBJECT); 416 InvalidRange for a range starting at or past the end (empty
// objects included); ListObjectsV2 in byte order (o/a+b, o/a-b, o/a.b,
// o/a/x, o/a0: not a directory walk), StartAfter and continuation past 1000
// keys; keep-alive connections (SeaweedFS needs no flag for it). No 409 ConditionalRequestConflict was seen in the IfAbsent and
// IfMatch races (concurrent conditional writes were serialised and the
// losers got 412).
package store_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
	"github.com/nereusctl/nereusctl/internal/testutil/storetest"
)

// newS3 opens a store on a fresh bucket of impl's shared server.
func newS3(t *testing.T, impl *s3server.Impl, prefix string) (*store.S3, *s3server.Server) {
	t.Helper()
	srv := impl.Start(t)
	s, err := store.NewS3(context.Background(), store.S3Config{
		Bucket:   srv.Bucket,
		Prefix:   prefix,
		Endpoint: srv.Endpoint,
		Region:   srv.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

// The conformance suite, on each server of the list.
func TestS3Conformance(t *testing.T) {
	s3server.Each(t, func(t *testing.T, impl *s3server.Impl) {
		var srv *s3server.Server
		storetest.Run(t, func(t *testing.T) store.Store {
			var s *store.S3
			s, srv = newS3(t, impl, "nereus/test")
			return s
		})
		if srv != nil {
			t.Logf("ran against %s (%s, built from %s)", impl, srv.Binary, srv.Built)
		}
	})
}

// The full-object SHA-256 sent with every Put is stored and returned.
func TestS3SHA256Stored(t *testing.T) { s3server.Each(t, testS3SHA256Stored) }

func testS3SHA256Stored(t *testing.T, impl *s3server.Impl) {
	s, _ := newS3(t, impl, "")
	ctx := context.Background()
	data := []byte("generation manifest")
	put, err := s.Put(ctx, "streams/s/generations/1.json", data, store.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Head(ctx, "streams/s/generations/1.json")
	if err != nil {
		t.Fatal(err)
	}
	if put.SHA256 != store.SHA256Of(data) || h.SHA256 != store.SHA256Of(data) {
		t.Fatalf("sha256: put %q, head %q, want %q", put.SHA256, h.SHA256, store.SHA256Of(data))
	}
	if h.ETag != store.ETagOf(data) || strings.Contains(h.ETag, `"`) {
		t.Fatalf("etag %q, want unquoted %q", h.ETag, store.ETagOf(data))
	}
}

// Two prefixes in one bucket are two stores; keys come back without the
// prefix.
func TestS3PrefixIsolation(t *testing.T) { s3server.Each(t, testS3PrefixIsolation) }

func testS3PrefixIsolation(t *testing.T, impl *s3server.Impl) {
	ctx := context.Background()
	a, srv := newS3(t, impl, "/tenant-a/")
	b, err := store.Open(ctx, srv.URL("tenant-b"), store.OpenOptions{S3Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "k", []byte("a"), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", []byte("b"), store.IfAbsent()); err != nil {
		t.Fatalf("the same key under another prefix: %v", err)
	}
	for s, want := range map[store.Store]string{a: "a", b: "b"} {
		l, err := s.List(ctx, "")
		if err != nil || len(l) != 1 || l[0].Key != "k" {
			t.Fatalf("%s: list %v, %v", s, l, err)
		}
		if got, _ := s.Get(ctx, "k", nil); string(got) != want {
			t.Fatalf("%s: %q", s, got)
		}
	}
	if a.String() != "s3://"+srv.Bucket+"/tenant-a" {
		t.Fatalf("String: %s", a)
	}
}

// Bad credentials are a permanent error that names the operation and key
// and never shows the secret; WithRetry gives up at once.
func TestS3BadCredentials(t *testing.T) { s3server.Each(t, testS3BadCredentials) }

func testS3BadCredentials(t *testing.T, impl *s3server.Impl) {
	_, srv := newS3(t, impl, "")
	const secret = "wrong-secret-Zq8Xv"
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	s, err := store.NewS3(context.Background(), store.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	c := store.NewCounter(s)
	r := store.WithRetry(c, store.RetryPolicy{Attempts: 5, Initial: time.Millisecond, Max: time.Millisecond})
	_, err = r.Put(context.Background(), "bindings/t/0.json", []byte("x"), store.IfAbsent())
	if err == nil || !store.IsPermanent(err) {
		t.Fatalf("put with a wrong secret: %v", err)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Signature=") || strings.Contains(err.Error(), "Authorization") {
		t.Fatalf("error shows credentials: %v", err)
	}
	if !strings.Contains(err.Error(), "put bindings/t/0.json") {
		t.Fatalf("error does not name the operation and key: %v", err)
	}
	// Retried, the permanent answer would take all 5 attempts. An attempt
	// lost before any answer (a keep-alive connection the server closed,
	// seen once under the race detector on a loaded machine) is transient
	// and retried; the permanent answer after it is not.
	if n := c.Counts()[store.VerbPut]; n < 1 || n >= 5 {
		t.Fatalf("a permanent error was retried: %d PUTs", n)
	}
}

func TestS3MissingBucket(t *testing.T) { s3server.Each(t, testS3MissingBucket) }

func testS3MissingBucket(t *testing.T, impl *s3server.Impl) {
	_, srv := newS3(t, impl, "")
	s, err := store.NewS3(context.Background(), store.S3Config{Bucket: "no-such-bucket-here", Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Head(context.Background(), "x")
	_, lerr := s.List(context.Background(), "")
	if !store.IsPermanent(lerr) || errors.Is(lerr, store.ErrNotFound) {
		t.Fatalf("list of a missing bucket: %v", lerr)
	}
	if err == nil {
		t.Fatal("head in a missing bucket succeeded")
	}
}

// A server that does not answer gives a retryable error naming the key,
// within the context's time.
func TestS3ServerDown(t *testing.T) {
	_, srv := newS3(t, s3server.Versitygw, "") // for the credentials in the environment
	_ = srv
	hs := httptest.NewServer(http.NotFoundHandler())
	endpoint := hs.URL
	hs.Close()
	s, err := store.NewS3(context.Background(), store.S3Config{Bucket: "b", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.Get(ctx, "streams/s/head.json", nil)
	if err == nil || !store.Retryable(err) || !strings.Contains(err.Error(), "streams/s/head.json") {
		t.Fatalf("get from a closed port: %v", err)
	}
}

// The lost-response rule with one retry layer: a proxy in front of
// each server forwards a guarded PUT, lets it complete, then drops the
// connection. The SDK does not retry (aws.NopRetryer): the backend's error
// is ambiguous, WithRetry tries again, meets 412 and checks whether ours
// landed: IfAbsent by the stored bytes (success for ours,
// ErrPreconditionFailed for anyone else's), IfMatch by the ETag of our bytes
// (a retry inside the SDK returned that 412 bare: a lost update reported for
// a write that landed). Every attempt reaches the Counter under WithRetry
// and the Meter at the HTTP client.
func TestS3LostResponseReconciledByRetry(t *testing.T) {
	s3server.Each(t, testS3LostResponseReconciledByRetry)
}

func testS3LostResponseReconciledByRetry(t *testing.T, impl *s3server.Impl) {
	_, srv := newS3(t, impl, "")
	target, _ := url.Parse(srv.Endpoint)
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host // the signature covers the Host header
	}}
	var drop atomic.Int32
	var dropped atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guarded := r.Header.Get("If-None-Match") == "*" || r.Header.Get("If-Match") != ""
		if r.Method == http.MethodPut && guarded && drop.Add(-1) >= 0 {
			rec := httptest.NewRecorder()
			proxy.ServeHTTP(rec, r) // the write happens...
			dropped.Add(1)
			panic(http.ErrAbortHandler) // ...and its response is lost
		}
		proxy.ServeHTTP(w, r)
	}))
	defer hs.Close()
	meter := store.NewMeter(0)
	s, err := store.NewS3(context.Background(), store.S3Config{Bucket: srv.Bucket, Endpoint: hs.URL, Meter: meter})
	if err != nil {
		t.Fatal(err)
	}
	c := store.NewCounter(s)
	r := store.WithRetry(c, store.RetryPolicy{Attempts: 4, Initial: time.Millisecond, Max: 5 * time.Millisecond, Meter: meter})
	ctx := context.Background()

	data := []byte("immutable data object")
	drop.Store(1)
	info, err := r.Put(ctx, "streams/s/objects/0-1.kb", data, store.IfAbsent())
	if err != nil {
		t.Fatalf("if-absent put whose response was lost: %v", err)
	}
	if dropped.Load() != 1 || info.ETag != store.ETagOf(data) || info.SHA256 != store.SHA256Of(data) {
		t.Fatalf("dropped %d responses; info %+v", dropped.Load(), info)
	}
	if n := c.Counts()[store.VerbPut]; n != 2 {
		t.Fatalf("counter saw %d PUTs, want 2 (the lost attempt and the retry)", n)
	}
	drop.Store(1)
	_, err = r.Put(ctx, "streams/s/objects/0-1.kb", []byte("different bytes!!!!!!"), store.IfAbsent())
	if !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("other bytes, lost response: %v", err)
	}
	if got, _ := r.Get(ctx, "streams/s/objects/0-1.kb", nil); string(got) != string(data) {
		t.Fatalf("stored %q", got)
	}

	// IfMatch: the replacement lands, its response is lost, the retry
	// meets 412 against our own new ETag: a success.
	doc := []byte(`{"version": 1}`)
	first, err := r.Put(ctx, "streams/s/head.json", doc, store.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	next := []byte(`{"version": 2}`)
	drop.Store(1)
	info, err = r.Put(ctx, "streams/s/head.json", next, store.IfMatch(first.ETag))
	if err != nil {
		t.Fatalf("if-match put whose response was lost: %v", err)
	}
	if info.ETag != store.ETagOf(next) {
		t.Fatalf("if-match put: %+v", info)
	}
	if dropped.Load() != 3 {
		t.Fatalf("dropped %d responses, want 3", dropped.Load())
	}
	m := meter.Stats()
	if m.Retries != 3 || m.Methods[http.MethodPut] != c.Counts()[store.VerbPut] {
		t.Fatalf("meter %+v, counter %s: every attempt is one HTTP request, each lost one retried once", m, c.Counts())
	}
}

// Wrong credentials are ErrCredentials (the CLI's hint names the chain),
// and a missing bucket is ErrNoSuchBucket: both permanent, sent once.
func TestS3PermanentErrorsClassified(t *testing.T) {
	s3server.Each(t, testS3PermanentErrorsClassified)
}

func testS3PermanentErrorsClassified(t *testing.T, impl *s3server.Impl) {
	_, srv := newS3(t, impl, "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
	s, err := store.NewS3(context.Background(), store.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	c := store.NewCounter(s)
	r := store.WithRetry(c, store.RetryPolicy{Attempts: 5, Initial: 50 * time.Millisecond, Max: time.Second})
	start := time.Now()
	_, err = r.Get(context.Background(), "bindings/t/0.json", nil)
	if !errors.Is(err, store.ErrCredentials) || c.Counts()[store.VerbGet] != 1 {
		t.Fatalf("get with a wrong secret: %v after %d GETs", err, c.Counts()[store.VerbGet])
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// With an endpoint given (by the flag, or only in the AWS shared config) and
// no credentials anywhere, the failure is immediate (no instance-metadata
// probing), says what is missing, and does not dump the SDK's provider
// chain.
func TestS3NoCredentialsFailsFast(t *testing.T) {
	_, srv := newS3(t, s3server.Versitygw, "")
	for _, viaConfig := range []bool{false, true} {
		dir := t.TempDir()
		cfgFile := filepath.Join(dir, "config")
		c := store.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region}
		if viaConfig {
			os.WriteFile(cfgFile, []byte("[default]\nendpoint_url = "+srv.Endpoint+"\n"), 0o600)
			c.Endpoint = ""
		}
		t.Setenv("AWS_CONFIG_FILE", cfgFile)
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
		for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_EC2_METADATA_DISABLED", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
		if got, err := store.ResolveS3Endpoint(context.Background(), c); err != nil || strings.TrimSuffix(got, "/") != srv.Endpoint {
			t.Fatalf("via config %v: endpoint %q, %v", viaConfig, got, err)
		}
		s, err := store.NewS3(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		r := store.WithRetry(s, store.DefaultRetryPolicy())
		start := time.Now()
		_, err = r.List(context.Background(), "bindings/")
		d := time.Since(start)
		if !errors.Is(err, store.ErrCredentials) {
			t.Fatalf("via config %v: list without credentials: %v", viaConfig, err)
		}
		if d > 3*time.Second {
			t.Fatalf("via config %v: took %v: the credential chain probed for too long", viaConfig, d)
		}
		for _, bad := range []string{"IMDS", "169.254", "EC2", "failed to refresh cached credentials"} {
			if strings.Contains(err.Error(), bad) {
				t.Fatalf("via config %v: error dumps the provider chain (%q): %v", viaConfig, bad, err)
			}
		}
	}
}
