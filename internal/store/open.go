package store

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
)

// OpenOptions carries what a store URL cannot: S3 endpoint settings, and
// whether a missing file:// root may be created.
type OpenOptions struct {
	// S3Endpoint is a custom S3-compatible endpoint (--s3-endpoint).
	S3Endpoint string
	// S3Region overrides the AWS chain's region (--s3-region).
	S3Region string
	// S3PathStyle addresses buckets in the path (--s3-path-style).
	S3PathStyle bool
	// S3AllowHTTP accepts a plain-http endpoint that is not loopback.
	S3AllowHTTP bool
	// S3SDKReads sends GETs through the SDK's operation (S3Config.SDKReads).
	S3SDKReads bool
	// Create makes a file:// root that does not exist yet (demo, first
	// run). Without it a missing root is an error wrapping ErrNotFound, so a
	// mistyped path never looks like an empty store.
	Create bool
	// Log receives the backend's own diagnostics (nil: none).
	Log *slog.Logger
	// Meter counts and rate-limits the s3:// backend's HTTP attempts
	// (nil: none). file:// and mem:// send none; their budget is
	// WithRateLimit's, per store call.
	Meter *Meter
}

// Open opens the store named by rawURL:
//
//	file:///abs/dir      absolute directory
//	file://./rel, file://../rel
//	                     directory relative to the working directory
//	                     (file://host/dir, a host, is refused)
//	s3://bucket[/prefix] S3 (credentials from the AWS chain)
//	mem://name           in-memory (tests): the same name in one process
//	                     is the same store; mem:// alone is always new
//
// The caller closes the store with CloseStore when done.
func Open(ctx context.Context, rawURL string, opt OpenOptions) (Store, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	shown := RedactURL(rawURL)
	if !ok {
		return nil, fmt.Errorf("open store %q: want file://DIR, s3://BUCKET/PREFIX or mem://NAME", shown)
	}
	switch strings.ToLower(scheme) {
	case "file":
		if rest == "" {
			return nil, fmt.Errorf("open store %q: no directory", shown)
		}
		if strings.ContainsAny(rest, "?#") {
			return nil, fmt.Errorf("open store %q: a file:// URL takes a plain path (no ? or #)", shown)
		}
		if !isLocalPath(rest) {
			host, _, _ := strings.Cut(rest, "/")
			return nil, fmt.Errorf("open store %q: a file:// URL takes no host (%q): want file:///absolute/dir or file://./relative/dir", shown, host)
		}
		if opt.Create {
			if err := os.MkdirAll(rest, dirPerm); err != nil {
				return nil, fmt.Errorf("open store %s: create directory: %w", shown, err)
			}
		}
		return NewFile(rest)
	case "s3":
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("open store %q: not a URL", shown)
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("open store %q: an s3:// URL is s3://BUCKET/PREFIX (no credentials, query or fragment)", shown)
		}
		if u.Host == "" {
			return nil, fmt.Errorf("open store %q: no bucket", shown)
		}
		if err := checkBucketName(u.Host); err != nil {
			return nil, fmt.Errorf("open store %q: %w", shown, err)
		}
		return NewS3(ctx, S3Config{
			Bucket:    u.Host,
			Prefix:    strings.Trim(u.Path, "/"),
			Endpoint:  opt.S3Endpoint,
			Region:    opt.S3Region,
			PathStyle: opt.S3PathStyle,
			AllowHTTP: opt.S3AllowHTTP,
			SDKReads:  opt.S3SDKReads,
			Log:       opt.Log,
			Meter:     opt.Meter,
		})
	case "mem":
		return openMem(rest), nil
	}
	return nil, fmt.Errorf("open store %q: unknown scheme %q (want file, s3 or mem)", shown, scheme)
}

// checkBucketName applies S3's bucket naming rules (3 to 63 characters:
// lower-case letters, digits, '.' and '-', starting and ending with a
// letter or a digit), so a name no request could reach is refused before
// any is sent; "Orders" would otherwise fail every request, each retried.
func checkBucketName(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket %q: want 3 to 63 characters", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '.' || c == '-') && i > 0 && i < len(b)-1:
		case c >= 'A' && c <= 'Z':
			return fmt.Errorf("bucket %q: S3 bucket names are lower case (%q)", b, strings.ToLower(b))
		default:
			return fmt.Errorf("bucket %q: want lower-case letters, digits, '.' and '-', starting and ending with a letter or a digit", b)
		}
	}
	return nil
}

// isLocalPath reports the path part of a file:// URL that names no host:
// absolute ("/dir", from file:///dir), or explicitly relative (".",
// "..", "./dir", "../dir"). "file://host/dir" is refused rather than read
// as the relative path host/dir: a URL with a host means another machine.
func isLocalPath(p string) bool {
	return strings.HasPrefix(p, "/") || p == "." || p == ".." || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../")
}

var (
	memMu    sync.Mutex
	memNamed = map[string]*Mem{}
)

// openMem returns the process-wide mem store of that name (a fresh one for
// the empty name), so tests can open the same mem:// URL twice.
func openMem(name string) *Mem {
	if name == "" {
		return NewMem("")
	}
	memMu.Lock()
	defer memMu.Unlock()
	m, ok := memNamed[name]
	if !ok {
		m = NewMem(name)
		memNamed[name] = m
	}
	return m
}

// CloseStore closes s (through any decorators) if it holds resources.
func CloseStore(s Store) error {
	for s != nil {
		if c, ok := s.(Closer); ok {
			return c.Close()
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
	return nil
}

// RedactURL returns u fit for messages and support bundles: a password in
// its user information is replaced (user information without one, a key
// put where the user goes, is replaced whole), so are the values of query
// parameters that name a secret (a presigned URL's signature, credential
// and token: SecretName), and a URL that does not parse but may hold
// credentials is withheld.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		if strings.Contains(u, "@") {
			return "(URL withheld: it may contain credentials)"
		}
		return u
	}
	if p.Scheme == "" {
		return u
	}
	changed := false
	if p.User != nil {
		if _, ok := p.User.Password(); ok {
			p.User = url.UserPassword(p.User.Username(), "REDACTED")
		} else {
			p.User = url.User("REDACTED")
		}
		changed = true
	}
	q := p.Query()
	for k := range q {
		if SecretName(k) {
			q.Set(k, "REDACTED")
			changed = true
		}
	}
	if !changed {
		return u
	}
	p.RawQuery = q.Encode()
	return p.String()
}

// urlInText finds what looks like a URL in free text: a scheme, "://",
// then everything up to white space or a quote.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// RedactText is s with every URL in it redacted by RedactURL (a command's
// stderr, a log line).
func RedactText(s string) string {
	return urlInText.ReplaceAllStringFunc(s, RedactURL)
}

// SecretName reports a setting, variable or query parameter name that
// holds a secret.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"secret", "token", "password", "passwd", "signature", "credential", "session", "access_key", "access-key", "accesskey", "apikey", "api_key", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
