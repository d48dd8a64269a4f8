// Package s3server runs a real S3 server, versitygw
// (github.com/versity/versitygw, v1.8.0, posix backend), for tests: one
// gateway per test binary on 127.0.0.1, a fresh bucket per test. It never
// listens beyond loopback, and its throwaway root credentials exist only in
// the test process environment.
//
// The binary is taken from $VERSITYGW, then PATH, then $(go env
// GOPATH)/bin. When it is missing, tests skip loudly, except under CI (CI
// set and not "false" or "0"), where they fail: the S3 suite must run there.
//
// Call Main from TestMain so the shared gateway is stopped and its
// directory removed when the tests end:
//
//	func TestMain(m *testing.M) { s3server.Main(m) }
package s3server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Version is the versitygw release the harness is written for.
const Version = "v1.8.0"

// Install is the command that installs the gateway binary.
const Install = "go install github.com/versity/versitygw/cmd/versitygw@" + Version

const (
	accessKey = "nereus-test-root"
	secretKey = "nereus-test-secret-not-a-real-key"
	region    = "us-east-1"
)

// Server is one test's view of the shared gateway: its endpoint and a
// bucket of its own.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	Region   string
	// Bucket was created for this test and is empty.
	Bucket string
	// Binary is the versitygw executable in use.
	Binary string
}

// URL returns the store URL s3://BUCKET/prefix for this test's bucket.
func (s *Server) URL(prefix string) string {
	return "s3://" + s.Bucket + "/" + strings.Trim(prefix, "/")
}

type gateway struct {
	bin      string
	cmd      *exec.Cmd
	dir      string
	endpoint string
	out      *syncBuffer
	exited   chan struct{}
}

var (
	mu      sync.Mutex
	shared  *gateway
	buckets atomic.Int64
)

// Binary finds the versitygw executable.
func Binary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$VERSITYGW=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("versitygw not found in $VERSITYGW, PATH or $(go env GOPATH)/bin")
}

func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "false" && v != "0"
}

// Start returns a server with a new empty bucket for t, starting the shared
// gateway on first use. It points the AWS default chain at the gateway's
// credentials with t.Setenv (so t must not be parallel) and isolates it from
// the developer's ~/.aws files.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if inCI() {
			t.Fatalf("S3 tests must run in CI: %v (install with: %s)", err, Install)
		}
		t.Skipf("SKIPPING S3 TESTS: %v; install with: %s", err, Install)
	}
	g, err := get(bin)
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "no-aws-config")
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", region)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")

	bucket := bucketName(t.Name(), buckets.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client(g.endpoint).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s on versitygw %s: %v\n%s", bucket, g.endpoint, err, g.out.tail())
	}
	return &Server{Endpoint: g.endpoint, Region: region, Bucket: bucket, Binary: bin}
}

// client is a raw S3 client for harness chores (bucket creation); the code
// under test builds its own with store.NewS3.
func client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	})
}

var nonBucket = regexp.MustCompile(`[^a-z0-9-]+`)

// bucketName derives a valid, unique bucket name from a test name.
func bucketName(test string, n int64) string {
	s := strings.Trim(nonBucket.ReplaceAllString(strings.ToLower(test), "-"), "-")
	suffix := fmt.Sprintf("-%d", n)
	if len(s) > 63-len(suffix)-3 {
		s = strings.Trim(s[:63-len(suffix)-3], "-")
	}
	return "nt-" + s + suffix
}

// get returns the running shared gateway, starting it if needed.
func get(bin string) (*gateway, error) {
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		select {
		case <-shared.exited:
			err := fmt.Errorf("versitygw exited during the tests:\n%s", shared.out.tail())
			shared.stop()
			shared = nil
			return nil, err
		default:
			return shared, nil
		}
	}
	var err error
	for range 3 { // a free port can be taken before the gateway binds it
		var g *gateway
		if g, err = launch(bin); err == nil {
			shared = g
			return g, nil
		}
	}
	return nil, err
}

func launch(bin string) (*gateway, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nereus-versitygw-")
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	g := &gateway{bin: bin, dir: dir, endpoint: "http://" + addr, out: &syncBuffer{}, exited: make(chan struct{})}
	// Credentials go through the environment, not argv (ps shows argv).
	// --keep-alive: without it every response says "Connection: close"
	// and each request opens a new TCP connection.
	g.cmd = exec.Command(bin, "--port", addr, "--quiet", "--keep-alive", "posix", dir)
	g.cmd.Env = append(os.Environ(),
		"ROOT_ACCESS_KEY_ID="+accessKey,
		"ROOT_SECRET_ACCESS_KEY="+secretKey,
		"VGW_REGION="+region)
	g.cmd.Stdout = g.out
	g.cmd.Stderr = g.out
	g.cmd.SysProcAttr = sysProcAttr()
	if err := g.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	go func() { _ = g.cmd.Wait(); close(g.exited) }()
	if err := g.wait(20 * time.Second); err != nil {
		g.stop()
		return nil, err
	}
	return g, nil
}

// wait polls until the gateway answers HTTP (any status will do).
func (g *gateway) wait(limit time.Duration) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-g.exited:
			return fmt.Errorf("versitygw exited at start:\n%s", g.out.tail())
		default:
		}
		if resp, err := hc.Get(g.endpoint + "/"); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("versitygw did not answer on %s within %s:\n%s", g.endpoint, limit, g.out.tail())
}

func (g *gateway) stop() {
	if g.cmd.Process != nil {
		_ = g.cmd.Process.Signal(os.Interrupt)
		select {
		case <-g.exited:
		case <-time.After(5 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.exited
		}
	}
	_ = os.RemoveAll(g.dir)
}

// Stop stops the shared gateway, if running, and removes its directory.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		shared.stop()
		shared = nil
	}
}

// Main runs the tests and then stops the shared gateway; call it from
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer keeps the gateway's output (the last 64 KiB) for failure
// messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	if s.b.Len() > 64<<10 {
		rest := s.b.Bytes()[s.b.Len()-32<<10:]
		s.b = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return len(p), nil
}

func (s *syncBuffer) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() == 0 {
		return "(no output)"
	}
	return s.b.String()
}
