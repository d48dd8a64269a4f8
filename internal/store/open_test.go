package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

func TestOpenFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	os.Mkdir("rel", 0o755)
	os.Mkdir(filepath.Join(dir, "abs"), 0o755)
	for url, want := range map[string]string{
		"file://" + filepath.Join(dir, "abs"):      filepath.Join(dir, "abs"),
		"file://./rel":                             filepath.Join(dir, "rel"),
		"file://../" + filepath.Base(dir) + "/rel": filepath.Join(dir, "rel"),
	} {
		s, err := store.Open(ctx, url, store.OpenOptions{})
		if err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
		f, ok := s.(*store.File)
		if !ok || f.Dir() != want {
			t.Fatalf("open %s: %T %v, want file store at %s", url, s, s, want)
		}
		store.CloseStore(s)
	}
	if _, err := store.Open(ctx, "file://./missing", store.OpenOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing root without Create: %v", err)
	}
	s, err := store.Open(ctx, "file://./made/deep", store.OpenOptions{Create: true})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	store.CloseStore(s)
	if fi, err := os.Stat(filepath.Join(dir, "made", "deep")); err != nil || !fi.IsDir() {
		t.Fatal("Create did not make the directory")
	}
}

func TestOpenMem(t *testing.T) {
	ctx := context.Background()
	a, _ := store.Open(ctx, "mem://shared-"+t.Name(), store.OpenOptions{})
	b, _ := store.Open(ctx, "mem://shared-"+t.Name(), store.OpenOptions{})
	a.Put(ctx, "k", []byte("v"), store.None())
	if got, err := b.Get(ctx, "k", nil); err != nil || string(got) != "v" {
		t.Fatalf("the same mem:// name is not the same store: %q, %v", got, err)
	}
	c, _ := store.Open(ctx, "mem://", store.OpenOptions{})
	if _, err := c.Get(ctx, "k", nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("anonymous mem:// is shared: %v", err)
	}
}

func TestOpenRefusals(t *testing.T) {
	ctx := context.Background()
	for url, want := range map[string]string{
		"nereus-data":               "want file://",
		"ftp://x":                   "unknown scheme",
		"file://":                   "no directory",
		"s3://":                     "no bucket",
		"s3://AKIA:secret@bucket/p": "no credentials",
		"s3://bucket/../x":          "invalid object key",
		"s3://bucket/p?x=1":         "no credentials, query",
		// A host in a file URL means another machine, not a relative
		// path: refused, never read as ./host/dir.
		"file://host/dir":      "takes no host",
		"file://localhost/tmp": "takes no host",
		"file://rel":           "takes no host",
	} {
		_, err := store.Open(ctx, url, store.OpenOptions{S3Endpoint: "http://127.0.0.1:1"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("open %q: %v, want an error with %q", url, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("open %q: error shows the secret: %v", url, err)
		}
	}
}

func TestS3EndpointRules(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	ctx := context.Background()
	for _, c := range []struct {
		endpoint  string
		allowHTTP bool
		err       string
	}{
		{"http://127.0.0.1:7070", false, ""},
		{"http://127.9.9.9:7070", false, ""},
		{"http://localhost:7070", false, ""},
		{"http://[::1]:7070", false, ""},
		{"https://s3.example.com", false, ""},
		{"http://s3.example.com", false, "only on loopback"},
		{"http://10.0.0.1:9000", false, "only on loopback"},
		{"http://localhost.example.com", false, "only on loopback"},
		{"http://s3.example.com", true, ""},
		{"http://user:hunter2@127.0.0.1:7070", false, "credentials in the endpoint"},
		{"ftp://127.0.0.1", false, "want http(s)"},
		{"127.0.0.1:7070", false, "want http(s)"},
		{"https://s3.example.com/", false, ""},
		{"https://s3.example.com/bucket", false, "no path allowed"},
		{"http://127.0.0.1:7070/a/b", false, "no path allowed"},
		{"https://s3.example.com?x=1", false, "no query"},
		{"https://s3.example.com/?", false, "no query"},
	} {
		_, err := store.NewS3(ctx, store.S3Config{Bucket: "b", Endpoint: c.endpoint, AllowHTTP: c.allowHTTP})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("endpoint %s: %v", c.endpoint, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("endpoint %s: %v, want %q", c.endpoint, err, c.err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("endpoint error shows the password: %v", err)
		}
	}
}

// TestRedactURLAndText: a password, a key in the user's place and a
// presigned URL's secrets are replaced, in a URL alone or in free text
// (a command's stderr); the rest is left as it was.
func TestRedactURLAndText(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw@gw:9091/metrics":              "http://user:REDACTED@gw:9091/metrics",
		"s3://bucket/prefix":                          "s3://bucket/prefix",
		"https://h/p?X-Amz-Signature=abc&region=eu-1": "https://h/p?X-Amz-Signature=REDACTED&region=eu-1",
		"https://tok@h/":                              "https://REDACTED@h/",
		"file:///var/nereus":                          "file:///var/nereus",
		"not a url":                                   "not a url",
		"s3://a@b/%zz":                                "(URL withheld: it may contain credentials)",
	} {
		if got := store.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	text := "nereusctl: open s3://u:pw@h/b failed\nwarn: http://k:secret@127.0.0.1:9000 down, see \"https://h/p?X-Amz-Credential=AK\"\n"
	want := "nereusctl: open s3://u:REDACTED@h/b failed\nwarn: http://k:REDACTED@127.0.0.1:9000 down, see \"https://h/p?X-Amz-Credential=REDACTED\"\n"
	if got := store.RedactText(text); got != want {
		t.Errorf("RedactText:\n%q\nwant\n%q", got, want)
	}
	for name, want := range map[string]bool{"AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true, "AWS_ACCESS_KEY_ID": true, "AWS_REGION": false, "store": false, "push-gateway": false} {
		if store.SecretName(name) != want {
			t.Errorf("SecretName(%s) = %v", name, !want)
		}
	}
}
