// Package s3server runs real S3 servers for tests: a list of independently
// written implementations, each started once per test binary on 127.0.0.1,
// with a fresh bucket per test. They never listen beyond loopback, and
// their throwaway credentials exist only in the test process environment.
//
// The list (All) is:
//
//   - versitygw (github.com/versity/versitygw, v1.8.0, posix backend);
//   - SeaweedFS (github.com/seaweedfs/seaweedfs at a pinned commit, weed
//     server with its S3 gateway).
//
// A suite that must hold on every server runs under Each, one subtest per
// server (TestS3Conformance/versitygw, TestS3Conformance/seaweedfs); a test
// that needs one S3 server and is not about the server calls Start, which
// is versitygw.
//
// Each binary is taken from its variable ($VERSITYGW, $SEAWEEDFS), then
// PATH, then $(go env GOPATH)/bin. When one is missing, the tests on that
// server skip loudly, except under CI (CI set and not "false" or "0"),
// where they fail: the S3 suites must run there.
//
// Call Main from TestMain so the shared servers are stopped and their
// directories removed when the tests end; a package whose tests run on
// SeaweedFS names it to have it start in the background at once (it takes
// about 11 s to be ready):
//
//	func TestMain(m *testing.M) { s3server.Main(m, s3server.SeaweedFS) }
package s3server

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"net"
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

const (
	accessKey = "nereus-test-root"
	secretKey = "nereus-test-secret-not-a-real-key"
	region    = "us-east-1"
)

// Impl is one S3 server implementation the harness can run.
type Impl struct {
	// Name is the subtest name under Each: "versitygw", "seaweedfs".
	Name string
	// Version is the release or module version the harness is written
	// for and CI installs.
	Version string
	// Install says how to install the binary.
	Install string
	// env names the variable that points at the binary; exe is the
	// executable's name in PATH and GOPATH/bin.
	env, exe string
	// module is the binary's main module; stamp, for a binary built from
	// the module's source (whose build info says "(devel)"), the variable
	// its version is set in with -ldflags -X.
	module, stamp string
	// serverHeader is what the server's responses carry in "Server".
	serverHeader string
	// launch starts one server on free loopback ports.
	launch func(i *Impl, bin string) (*gateway, error)

	// mu guards shared, the running server of this implementation (one
	// lock per implementation: a slow start holds up no other server).
	mu     sync.Mutex
	shared *gateway
	// abort, set under mu for a start, is the Stop signal it gives up on.
	abort chan struct{}
}

// String is "NAME VERSION", for logs.
func (i *Impl) String() string { return i.Name + " " + i.Version }

// All is the server list: every suite run under Each runs on each of them.
var All = []*Impl{Versitygw, SeaweedFS}

// Server is one test's view of a shared server: its endpoint and a bucket
// of its own.
type Server struct {
	// Impl is the implementation serving.
	Impl *Impl
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	Region   string
	// Bucket was created for this test and is empty.
	Bucket string
	// Binary is the executable in use.
	Binary string
	// Built is the version Binary was built from, read from its build
	// information ("" when unknown).
	Built string
}

// URL returns the store URL s3://BUCKET/prefix for this test's bucket.
func (s *Server) URL(prefix string) string {
	return "s3://" + s.Bucket + "/" + strings.Trim(prefix, "/")
}

// gateway is one running server process.
type gateway struct {
	impl     *Impl
	bin      string
	cmd      *exec.Cmd
	dir      string
	endpoint string
	out      *syncBuffer
	exited   chan struct{}
	// grace is how long stop waits after SIGINT before SIGKILL; zero
	// kills at once.
	grace time.Duration
	// litter is files the server leaves outside dir, removed at stop.
	litter []string
	// built is the version the binary was built from (builtVersion).
	built string
}

var (
	buckets atomic.Int64

	// stopping is closed by Stop, so a start under way gives up
	// (errStopped) rather than hold Stop up until the server is ready.
	stopMu   sync.Mutex
	stopping = make(chan struct{})
)

var errStopped = errors.New("stopped while starting")

func stopSignal() chan struct{} {
	stopMu.Lock()
	defer stopMu.Unlock()
	return stopping
}

// Binary finds the versitygw executable.
func Binary() (string, error) { return Versitygw.Binary() }

// Binary finds the implementation's executable.
func (i *Impl) Binary() (string, error) {
	if p := os.Getenv(i.env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s=%s: %w", i.env, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath(i.exe); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", i.exe)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s (%s) not found in $%s, PATH or $(go env GOPATH)/bin", i.Name, i.exe, i.env)
}

func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "false" && v != "0"
}

// Each runs fn as one subtest per server in All, named by the server.
func Each(t *testing.T, fn func(t *testing.T, impl *Impl)) {
	t.Helper()
	for _, impl := range All {
		t.Run(impl.Name, func(t *testing.T) { fn(t, impl) })
	}
}

// Start returns a versitygw server with a new empty bucket for t; see
// Impl.Start.
func Start(t testing.TB) *Server {
	t.Helper()
	return Versitygw.Start(t)
}

// Start returns a server with a new empty bucket for t, starting the shared
// server on first use. It points the AWS default chain at the server's
// credentials with t.Setenv (so t must not be parallel) and isolates it
// from the developer's ~/.aws files.
func (i *Impl) Start(t testing.TB) *Server {
	t.Helper()
	bin, err := i.Binary()
	if err != nil {
		if inCI() {
			t.Fatalf("S3 tests must run in CI: %v (install with: %s)", err, i.Install)
		}
		t.Skipf("SKIPPING S3 TESTS on %s: %v; install with: %s", i.Name, err, i.Install)
	}
	g, err := i.get(bin, stopSignal())
	if err != nil {
		t.Fatalf("start %s: %v", i.Name, err)
	}
	if g.built != i.Version && inCI() {
		t.Fatalf("%s %s was built from %q, not the tested version %s (install with: %s)", i.Name, bin, g.built, i.Version, i.Install)
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
		t.Fatalf("create bucket %s on %s %s: %v\n%s", bucket, i.Name, g.endpoint, err, g.out.tail())
	}
	return &Server{Impl: i, Endpoint: g.endpoint, Region: region, Bucket: bucket, Binary: bin, Built: g.built}
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

// get returns the running shared server of this implementation, starting
// it if needed, unless stop is closed (Stop was called since the caller
// took it).
func (i *Impl) get(bin string, stop chan struct{}) (*gateway, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	select {
	case <-stop:
		return nil, fmt.Errorf("%s: %w", i.Name, errStopped)
	default:
	}
	i.abort = stop
	if g := i.shared; g != nil {
		select {
		case <-g.exited:
			err := fmt.Errorf("%s exited during the tests:\n%s", i.Name, g.out.tail())
			g.stop()
			i.shared = nil
			return nil, err
		default:
			return g, nil
		}
	}
	var err error
	for range 3 { // a free port can be taken before the server binds it
		var g *gateway
		if g, err = i.launch(i, bin); err == nil {
			g.built = i.builtVersion(bin)
			i.shared = g
			return g, nil
		}
		if errors.Is(err, errStopped) {
			break
		}
	}
	return nil, err
}

// prestart starts the shared server in the background, when its binary is
// there. A failure is left for Start to meet (it tries again and reports
// it).
func (i *Impl) prestart() {
	bin, err := i.Binary()
	if err != nil {
		return
	}
	stop := stopSignal()
	go func() { _, _ = i.get(bin, stop) }()
}

// builtVersion is the module version bin was built from: its main
// module's version (go install), or the version stamped into it with
// -ldflags "-X STAMP=VERSION" (go build in the module's source, as .ci/run
// builds SeaweedFS). "" when the build information says neither.
func (i *Impl) builtVersion(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil || info.Main.Path != i.module {
		return ""
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	if i.stamp == "" {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key != "-ldflags" {
			continue
		}
		if _, rest, ok := strings.Cut(s.Value, i.stamp+"="); ok {
			v, _, _ := strings.Cut(rest, " ")
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// start runs the gateway's command, whose Stdout and Stderr it sets, and
// notes its exit.
func (g *gateway) start() error {
	g.out = &syncBuffer{}
	g.exited = make(chan struct{})
	g.cmd.Stdout = g.out
	g.cmd.Stderr = g.out
	g.cmd.SysProcAttr = sysProcAttr()
	if err := g.cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", g.bin, err)
	}
	go func() { _ = g.cmd.Wait(); close(g.exited) }()
	if onStart != nil {
		onStart(g)
	}
	return nil
}

// onStart, when set (by a test), sees every server process started.
var onStart func(*gateway)

// wait polls ready until it succeeds, the process exits or limit passes.
func (g *gateway) wait(limit time.Duration, ready func(ctx context.Context) error) error {
	deadline := time.Now().Add(limit)
	stop := g.impl.abort
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-g.exited:
			return fmt.Errorf("%s exited at start:\n%s", g.impl.Name, g.out.tail())
		case <-stop:
			return fmt.Errorf("%s: %w", g.impl.Name, errStopped)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		go func() {
			select {
			case <-stop: // a probe under way ends at once
				cancel()
			case <-ctx.Done():
			}
		}()
		last = ready(ctx)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s was not ready on %s within %s (last: %v):\n%s", g.impl.Name, g.endpoint, limit, last, g.out.tail())
}

func (g *gateway) stop() {
	if g.cmd.Process != nil {
		if g.grace > 0 {
			_ = g.cmd.Process.Signal(os.Interrupt)
		}
		select {
		case <-g.exited:
		case <-time.After(g.grace):
			_ = g.cmd.Process.Kill()
			<-g.exited
		}
	}
	_ = os.RemoveAll(g.dir)
	for _, f := range g.litter {
		_ = os.Remove(f)
	}
}

// Stop stops the shared servers, if running, and removes their
// directories.
func Stop() {
	stopMu.Lock()
	close(stopping)
	stopping = make(chan struct{})
	stopMu.Unlock()
	var wg sync.WaitGroup
	for _, i := range All {
		wg.Go(func() {
			i.mu.Lock() // after a start under way
			defer i.mu.Unlock()
			if i.shared != nil {
				i.shared.stop()
				i.shared = nil
			}
		})
	}
	wg.Wait()
}

// Main runs the tests and then stops the shared servers; call it from
// TestMain. The prestart servers start in the background first (Around).
func Main(m *testing.M, prestart ...*Impl) { os.Exit(Around(m, prestart...).Run()) }

// Runner is what testscript.RunMain takes, and *testing.M is.
type Runner interface{ Run() int }

type around struct {
	m        Runner
	prestart []*Impl
}

func (a around) Run() int {
	if mayRunS3Tests() {
		for _, i := range a.prestart {
			i.prestart()
		}
	}
	code := a.m.Run()
	Stop()
	return code
}

// mayRunS3Tests says whether this test binary's flags may select tests
// that start a server: not when fuzzing (the fuzz workers run TestMain
// too) or listing, and, with -run, only for a pattern that names S3 (as
// every test on SeaweedFS does: TestS3..., TestScriptsS3, ...S3).
func mayRunS3Tests() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	val := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	if val("test.fuzz") != "" || val("test.fuzzworker") == "true" || val("test.list") != "" {
		return false
	}
	run := val("test.run")
	return run == "" || strings.Contains(run, "S3")
}

// Around wraps m so that Run stops the shared servers before it returns,
// for a TestMain that hands m to testscript.RunMain, which exits without
// returning (a Stop after it never runs, and the servers' directories stay
// behind). Run first starts the prestart servers in the background, so a
// slow start (SeaweedFS: about 11 s) overlaps the tests that run before the
// first one that needs the server; not for a run that cannot reach a test
// on a server (mayRunS3Tests).
func Around(m Runner, prestart ...*Impl) Runner { return around{m, prestart} }

// freePorts returns n distinct free loopback ports (all held open until
// all are chosen, so none repeats).
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// syncBuffer keeps the server's output (the last 64 KiB) for failure
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
