package s3server

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestMain(m *testing.M) { Main(m) }

// Every server in the list gives each test an empty bucket of its own on
// one shared loopback server.
func TestStartGivesEachTestABucket(t *testing.T) {
	Each(t, testStartGivesEachTestABucket)
}

func testStartGivesEachTestABucket(t *testing.T, impl *Impl) {
	var names []string
	for _, sub := range []string{"one", "two"} {
		t.Run(sub, func(t *testing.T) {
			srv := impl.Start(t)
			if srv.Impl != impl {
				t.Fatalf("server %v, want %v", srv.Impl, impl)
			}
			// The subtest talks to the implementation it is named for.
			resp, err := http.Get(srv.Endpoint + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Server"); !strings.Contains(got, impl.serverHeader) {
				t.Fatalf("%s answers as %q, want %q", srv.Endpoint, got, impl.serverHeader)
			}
			if srv.Built != impl.Version {
				t.Logf("NOTE: %s was built from %q, not the tested version %s", srv.Binary, srv.Built, impl.Version)
			}
			if !strings.HasPrefix(srv.Endpoint, "http://127.0.0.1:") {
				t.Fatalf("endpoint %s is not loopback", srv.Endpoint)
			}
			out, err := client(srv.Endpoint).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket)})
			if err != nil || len(out.Contents) != 0 {
				t.Fatalf("bucket %s: %v, %d objects", srv.Bucket, err, len(out.Contents))
			}
			if os.Getenv("AWS_ACCESS_KEY_ID") != accessKey {
				t.Fatal("credentials not in the environment")
			}
			names = append(names, srv.Bucket+" "+srv.Endpoint)
		})
	}
	if len(names) == 2 && (strings.Fields(names[0])[0] == strings.Fields(names[1])[0] || strings.Fields(names[0])[1] != strings.Fields(names[1])[1]) {
		t.Fatalf("want two buckets on one server: %v", names)
	}
}

func TestBucketName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
	for _, name := range []string{"TestX", "TestS3Conformance/IfAbsentRace", strings.Repeat("Long_Name/", 20), "Ünïcode"} {
		if b := bucketName(name, 12345); !valid.MatchString(b) {
			t.Errorf("bucketName(%q) = %q, not a valid bucket name", name, b)
		}
	}
}

// A missing binary skips outside CI and fails in CI, for each server.
func TestMissingBinary(t *testing.T) {
	if name := os.Getenv("S3SERVER_HELPER"); name != "" {
		for _, impl := range All {
			if impl.Name == name {
				impl.Start(t)
			}
		}
		t.Fatalf("no server %q", name)
	}
	Each(t, func(t *testing.T, impl *Impl) {
		for _, c := range []struct {
			ci, want string
			fails    bool
		}{
			{"", "SKIPPING S3 TESTS on " + impl.Name, false},
			{"false", "SKIPPING S3 TESTS on " + impl.Name, false},
			{"true", "S3 tests must run in CI", true},
		} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMissingBinary$", "-test.v")
			cmd.Env = append(os.Environ(), "S3SERVER_HELPER="+impl.Name, impl.env+"=/nonexistent/"+impl.exe, "CI="+c.ci)
			out, err := cmd.CombinedOutput()
			if (err != nil) != c.fails || !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "$"+impl.env) {
				t.Errorf("CI=%q: err %v, output:\n%s", c.ci, err, out)
			}
		}
	})
}

// The list holds two independently written servers, each with its own
// binary variable, and Each runs one subtest per server, by name.
func TestEachRunsEveryServer(t *testing.T) {
	if len(All) < 2 || All[0] != Versitygw || All[1] != SeaweedFS {
		t.Fatalf("server list %v", All)
	}
	var ran []string
	Each(t, func(t *testing.T, impl *Impl) {
		if !strings.HasSuffix(t.Name(), "/"+impl.Name) {
			t.Errorf("subtest %s for %s", t.Name(), impl.Name)
		}
		ran = append(ran, impl.Name)
	})
	if strings.Join(ran, ",") != "versitygw,seaweedfs" {
		t.Fatalf("ran %v", ran)
	}
}

// The version a binary was built from comes from its build information:
// the main module's version after go install (this test binary has none),
// the -ldflags stamp after a build in the module's source. The installed
// servers, when present, are the versions the docs say were tested.
func TestBuiltVersion(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	own := &Impl{module: "github.com/nereusctl/nereusctl", stamp: "example.com/v.X"}
	if v := own.builtVersion(self); v != "" {
		t.Fatalf("test binary: %q", v)
	}
	if v := (&Impl{module: "example.com/other"}).builtVersion(self); v != "" {
		t.Fatalf("another module's version from this binary: %q", v)
	}
	if v := own.builtVersion("/nonexistent"); v != "" {
		t.Fatalf("missing file: %q", v)
	}
	for _, impl := range All {
		bin, err := impl.Binary()
		if err != nil {
			t.Logf("%s: %v", impl.Name, err)
			continue
		}
		if v := impl.builtVersion(bin); v != impl.Version {
			if inCI() {
				t.Errorf("%s: %s built from %q, want %s", impl.Name, bin, v, impl.Version)
			} else {
				t.Logf("NOTE: %s: %s built from %q, not %s", impl.Name, bin, v, impl.Version)
			}
		}
	}
}

// A server started in the background (Around's prestart) is the one Start
// then hands out; Stop during such a start gives it up at once, leaving no
// process, directory or socket behind.
func TestPrestartAndStopDuringStart(t *testing.T) {
	var mu sync.Mutex
	var started []*gateway
	onStart = func(g *gateway) { mu.Lock(); started = append(started, g); mu.Unlock() }
	defer func() { onStart = nil }()
	Each(t, func(t *testing.T, impl *Impl) {
		if _, err := impl.Binary(); err != nil {
			impl.Start(t) // skips, or fails under CI
		}
		Stop()
		impl.prestart()
		srv := impl.Start(t)
		impl.mu.Lock()
		g := impl.shared
		impl.mu.Unlock()
		if g == nil || g.endpoint != srv.Endpoint {
			t.Fatalf("Start did not hand out the prestarted server: %v", srv.Endpoint)
		}

		Stop()
		impl.prestart()
		time.Sleep(300 * time.Millisecond) // the process is up, not yet ready
		begin := time.Now()
		Stop()
		if d := time.Since(begin); d > 3*time.Second {
			t.Fatalf("Stop during a start took %v", d)
		}
		impl.mu.Lock()
		shared := impl.shared
		impl.mu.Unlock()
		if shared != nil {
			t.Fatal("a server is still shared after Stop")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(started) < 2 {
			t.Fatalf("%d server processes started, want the prestarted and the stopped one", len(started))
		}
		for _, g := range started {
			select {
			case <-g.exited:
			default:
				t.Errorf("%s at %s still running", g.impl.Name, g.endpoint)
			}
			for _, p := range append([]string{g.dir}, g.litter...) {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s left behind: %v", p, err)
				}
			}
		}
		started = nil
	})
}

// Prestart is for runs that may reach a test on a server: not fuzzing,
// listing, or a -run pattern that does not name S3.
func TestMayRunS3Tests(t *testing.T) {
	for _, c := range []struct {
		flags map[string]string
		want  bool
	}{
		{map[string]string{}, true},
		{map[string]string{"test.run": "TestS3Conformance"}, true},
		{map[string]string{"test.run": "S3"}, true},
		{map[string]string{"test.run": "TestMemConformance"}, false},
		{map[string]string{"test.run": "^$", "test.fuzz": "FuzzX"}, false},
		{map[string]string{"test.fuzz": "FuzzX"}, false},
		{map[string]string{"test.fuzzworker": "true"}, false},
		{map[string]string{"test.list": "."}, false},
	} {
		restore := map[string]string{}
		for _, name := range []string{"test.run", "test.fuzz", "test.fuzzworker", "test.list"} {
			f := flag.Lookup(name)
			if f == nil {
				t.Fatalf("no flag %s", name)
			}
			restore[name] = f.Value.String()
			v, ok := c.flags[name]
			if !ok {
				v = f.DefValue
			}
			if err := flag.Set(name, v); err != nil {
				t.Fatal(err)
			}
		}
		got := mayRunS3Tests()
		for name, v := range restore {
			_ = flag.Set(name, v)
		}
		if got != c.want {
			t.Errorf("flags %v: %v, want %v", c.flags, got, c.want)
		}
	}
}
