package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

// awsEnv isolates a test from the machine's AWS setup: static dummy
// credentials, a region, and the given shared config file (none when
// empty). Nothing here sends a request: the endpoint is resolved in
// process, as NewS3 would use it.
func awsEnv(t *testing.T, sharedConfig string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.WriteFile(cfg, []byte(sharedConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", cfg)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials-none"))
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	t.Setenv("AWS_REGION", "eu-west-1")
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// The plain-HTTP-only-on-loopback rule holds for every way the SDK lets an
// endpoint be set, not only --s3-endpoint.
func TestS3EndpointFromEnvironmentAndConfig(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		env       map[string]string
		config    string
		flag      string
		allowHTTP bool
		want      string // the resolved endpoint, when no error
		err       string
	}{
		{name: "none", want: ""},
		{name: "AWS_ENDPOINT_URL remote http", env: map[string]string{"AWS_ENDPOINT_URL": "http://s3.example.com"}, err: "only on loopback"},
		{name: "AWS_ENDPOINT_URL_S3 remote http", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://10.0.0.1:9000"}, err: "only on loopback"},
		{name: "AWS_ENDPOINT_URL_S3 over a good AWS_ENDPOINT_URL", env: map[string]string{"AWS_ENDPOINT_URL": "https://ok.example.com", "AWS_ENDPOINT_URL_S3": "http://10.0.0.1:9000"}, err: "only on loopback"},
		{name: "AWS_ENDPOINT_URL loopback", env: map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:7070"}, want: "http://127.0.0.1:7070"},
		{name: "AWS_ENDPOINT_URL https", env: map[string]string{"AWS_ENDPOINT_URL_S3": "https://s3.example.com"}, want: "https://s3.example.com"},
		{name: "AWS_ENDPOINT_URL with a path", env: map[string]string{"AWS_ENDPOINT_URL": "https://s3.example.com/bucket"}, err: "no path allowed"},
		{name: "AWS_ENDPOINT_URL with credentials", env: map[string]string{"AWS_ENDPOINT_URL": "https://AKIA:hunter2@s3.example.com"}, err: "credentials in the endpoint"},
		{name: "AWS_ENDPOINT_URL remote http allowed", env: map[string]string{"AWS_ENDPOINT_URL": "http://s3.example.com"}, allowHTTP: true, want: "http://s3.example.com"},
		{name: "--s3-endpoint overrides the environment", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://10.0.0.1:9000"}, flag: "https://s3.example.com", want: "https://s3.example.com"},
		{name: "ignored when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", env: map[string]string{"AWS_ENDPOINT_URL": "http://10.0.0.1:9000", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, want: ""},
		{name: "profile endpoint_url", config: "[default]\nendpoint_url = http://10.2.3.4:9000\n", err: "only on loopback"},
		{name: "profile endpoint_url loopback", config: "[default]\nendpoint_url = http://localhost:9000\n", want: "http://localhost:9000"},
		{name: "services section s3 endpoint_url", config: "[default]\nservices = local\n\n[services local]\ns3 =\n  endpoint_url = http://192.168.1.9:9000\n", err: "only on loopback"},
		{name: "services section wins over the profile's", config: "[default]\nendpoint_url = https://ok.example.com\nservices = local\n\n[services local]\ns3 =\n  endpoint_url = http://192.168.1.9:9000\n", err: "only on loopback"},
	} {
		t.Run(c.name, func(t *testing.T) {
			awsEnv(t, c.config)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg := store.S3Config{Bucket: "b", Endpoint: c.flag, AllowHTTP: c.allowHTTP}
			got, err := store.ResolveS3Endpoint(ctx, cfg)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("resolved %q, %v; want an error with %q", got, err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("%v", err)
			case c.err == "" && strings.TrimSuffix(got, "/") != c.want:
				t.Fatalf("resolved %q, want %q", got, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error shows the password: %v", err)
			}
			// NewS3 applies the same rule (it is the one constructor).
			if _, nerr := store.NewS3(ctx, cfg); (nerr == nil) != (err == nil) {
				t.Fatalf("NewS3: %v; ResolveS3Endpoint: %v", nerr, err)
			}
		})
	}
}
