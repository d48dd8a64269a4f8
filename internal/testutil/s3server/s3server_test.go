package s3server

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestMain(m *testing.M) { Main(m) }

func TestStartGivesEachTestABucket(t *testing.T) {
	var names []string
	for _, sub := range []string{"one", "two"} {
		t.Run(sub, func(t *testing.T) {
			srv := Start(t)
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

// A missing binary skips outside CI and fails in CI.
func TestMissingBinary(t *testing.T) {
	if os.Getenv("S3SERVER_HELPER") != "" {
		Start(t)
		return
	}
	for _, c := range []struct {
		ci, want string
		fails    bool
	}{
		{"", "SKIPPING S3 TESTS", false},
		{"false", "SKIPPING S3 TESTS", false},
		{"true", "S3 tests must run in CI", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingBinary$", "-test.v")
		cmd.Env = append(os.Environ(), "S3SERVER_HELPER=1", "VERSITYGW=/nonexistent/versitygw", "CI="+c.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.want) {
			t.Errorf("CI=%q: err %v, output:\n%s", c.ci, err, out)
		}
	}
}
