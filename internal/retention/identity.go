package retention

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// StoreIdentity is the canonical identity of a store URL: what names the
// same store whatever the spelling of its URL, so that local state kept per
// store (the retention run's progress file) is never shared by two stores.
//
//   - file://DIR: the absolute, cleaned path (relative paths are resolved
//     against the working directory; symbolic links are resolved when the
//     directory exists), so file://./nereus-data in two folders is two
//     stores, and file://./d and file:///abs/d from the right folder are one.
//   - s3://BUCKET/PREFIX: the endpoint (the AWS default when none), the
//     bucket and the prefix without its surrounding slashes.
//   - mem://NAME: the name.
//
// s3Endpoint is the configured S3 endpoint (--s3-endpoint), "" for AWS.
func StoreIdentity(rawURL, s3Endpoint string) (string, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return "", errors.New("store identity: want file://DIR, s3://BUCKET/PREFIX or mem://NAME")
	}
	switch strings.ToLower(scheme) {
	case "file":
		if rest == "" {
			return "", errors.New("store identity: file:// URL without a directory")
		}
		abs, err := filepath.Abs(rest)
		if err != nil {
			return "", fmt.Errorf("store identity: %w", err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("store identity: %w", err)
		}
		return "file://" + filepath.Clean(abs), nil
	case "s3":
		u, err := url.Parse(rawURL)
		if err != nil || u.Host == "" {
			return "", errors.New("store identity: an s3:// URL is s3://BUCKET/PREFIX")
		}
		ep := strings.TrimRight(strings.ToLower(strings.TrimSpace(s3Endpoint)), "/")
		if ep == "" {
			ep = "aws"
		}
		return "s3://" + u.Host + "/" + strings.Trim(u.Path, "/") + " at " + ep, nil
	case "mem":
		return "mem://" + rest, nil
	}
	return "", fmt.Errorf("store identity: unknown scheme %q", scheme)
}
