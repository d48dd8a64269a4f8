package s3lax

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// StripProxy is a reverse proxy in front of a real S3 endpoint that drops
// If-None-Match and If-Match from every request, as a gateway or proxy
// that does not know them might.
//
// SigV4 signs both headers (the AWS SDK puts them in SignedHeaders), so a
// proxy that only drops them breaks the signature and the server refuses
// the request (SignatureDoesNotMatch): nothing is written, the failure is
// loud. A gateway that holds credentials of its own and signs each request
// again can drop them silently; with Resign the proxy does that, with the
// credentials it is given.
type StripProxy struct {
	// URL is http://127.0.0.1:PORT, the endpoint to give clients.
	URL string
	// Stripped counts the requests that lost a conditional header.
	Stripped atomic.Int64

	srv *http.Server
}

// ProxyOptions configure StartStripProxy.
type ProxyOptions struct {
	// Target is the S3 endpoint (http://127.0.0.1:PORT).
	Target string
	// Resign signs every request again (SigV4, service s3) with
	// Credentials in Region after the headers are dropped.
	Resign      bool
	Credentials aws.Credentials
	Region      string
}

// StartStripProxy starts the proxy on a free loopback port, stopped at
// t's cleanup.
func StartStripProxy(t testing.TB, o ProxyOptions) *StripProxy {
	t.Helper()
	target, err := url.Parse(o.Target)
	if err != nil || target.Scheme != "http" {
		t.Fatalf("s3lax: proxy target %q: want http://host:port", o.Target)
	}
	if h := target.Hostname(); h != "localhost" && !net.ParseIP(h).IsLoopback() {
		t.Fatalf("s3lax: proxy target %q is not on loopback", o.Target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("s3lax: listen: %v", err)
	}
	p := &StripProxy{URL: "http://" + ln.Addr().String()}
	signer := v4.NewSigner()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			out := pr.Out
			out.Host = target.Host
			if out.Header.Get("If-None-Match") != "" || out.Header.Get("If-Match") != "" {
				p.Stripped.Add(1)
			}
			out.Header.Del("If-None-Match")
			out.Header.Del("If-Match")
			if !o.Resign {
				return
			}
			out.Header.Del("Authorization")
			out.Header.Del("X-Amz-Date")
			payload := out.Header.Get("X-Amz-Content-Sha256")
			if payload == "" {
				payload = "UNSIGNED-PAYLOAD"
			}
			if err := signer.SignHTTP(out.Context(), o.Credentials, out, payload, "s3", o.Region, time.Now()); err != nil {
				out.Header.Set("Authorization", "s3lax: could not sign: "+err.Error())
			}
		},
	}
	p.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}
