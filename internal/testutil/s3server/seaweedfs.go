package s3server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// SeaweedFSVersion is the SeaweedFS module version (a commit: the module
// proxy has no tagged releases of it) the harness is written for; its
// weed version says 4.53.
const SeaweedFSVersion = "v0.0.0-20261109003541-7506e5f91cd6"

// SeaweedFS is `weed server` (master, volume server, filer and S3 gateway
// in one process) on a temporary directory.
var SeaweedFS = &Impl{
	Name:    "seaweedfs",
	Version: SeaweedFSVersion,
	// go install refuses the module (its go.mod has replace directives):
	// .ci/run builds weed from the module source.
	Install:      "bash .ci/run (it builds weed from the module source; the steps are in docs/s3.md)",
	env:          "SEAWEEDFS",
	exe:          "weed",
	module:       "github.com/seaweedfs/seaweedfs",
	stamp:        "github.com/seaweedfs/seaweedfs/weed/util/version.COMMIT",
	serverHeader: "SeaweedFS",
	launch:       launchSeaweedFS,
}

// seaweedIdentities is the -s3.config file: one identity with the test
// credentials and every action the tests need.
type seaweedIdentities struct {
	Identities []seaweedIdentity `json:"identities"`
}

type seaweedIdentity struct {
	Name        string              `json:"name"`
	Credentials []seaweedCredential `json:"credentials"`
	Actions     []string            `json:"actions"`
}

type seaweedCredential struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

func launchSeaweedFS(impl *Impl, bin string) (*gateway, error) {
	// HTTP and gRPC ports of the master, volume server, filer and S3
	// gateway. Left alone, each gRPC port is its HTTP port + 10000, which
	// for an ephemeral port can be taken or past 65535.
	p, err := freePorts(8)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nereus-seaweedfs-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	conf := filepath.Join(dir, "config")
	for _, d := range []string{data, conf} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	ids, err := json.Marshal(seaweedIdentities{Identities: []seaweedIdentity{{
		Name:        "nereus-test",
		Credentials: []seaweedCredential{{AccessKey: accessKey, SecretKey: secretKey}},
		Actions:     []string{"Admin", "Read", "Write", "List"},
	}}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	identities := filepath.Join(conf, "s3.json")
	if err := os.WriteFile(identities, ids, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := func(i int) string { return strconv.Itoa(p[i]) }
	// Stopped with SIGKILL: a graceful stop takes 15 s, and the data is
	// thrown away. Each component's gRPC also listens on a unix socket at
	// a fixed place in /tmp (named by the port), which a killed server
	// leaves behind.
	g := &gateway{impl: impl, bin: bin, dir: dir, endpoint: "http://127.0.0.1:" + port(6)}
	for i, c := range []string{"master", "volume", "filer", "s3"} {
		g.litter = append(g.litter, fmt.Sprintf("/tmp/seaweedfs-%s-grpc-%d.sock", c, p[2*i+1]))
	}
	g.cmd = exec.Command(bin,
		"-logtostderr", "-config_dir="+conf,
		"server",
		"-dir="+data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port="+port(0), "-master.port.grpc="+port(1),
		"-volume.port="+port(2), "-volume.port.grpc="+port(3),
		"-filer.port="+port(4), "-filer.port.grpc="+port(5),
		"-s3", "-s3.port="+port(6), "-s3.port.grpc="+port(7),
		"-s3.config="+identities,
		// No fixed ports beside the S3 one (both default on), no
		// reports to telemetry.seaweedfs.com.
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-master.telemetry=false",
		// Every bucket is a collection with volumes of its own: small
		// volumes, as many as a test run's buckets need, one volume
		// grown at a time (the default grows seven per collection).
		"-master.volumeSizeLimitMB=64", "-volume.max=0",
		"-filer.localSocket="+filepath.Join(dir, "filer.sock"),
		"-s3.localSocket="+filepath.Join(dir, "s3.sock"),
	)
	g.cmd.Dir = dir
	g.cmd.Env = append(os.Environ(),
		"HOME="+dir, // no ~/.seaweedfs configuration
		"WEED_MASTER_VOLUME_GROWTH_COPY_1=1",
		"WEED_MASTER_VOLUME_GROWTH_ALLOCATION_DEFERRAL=0s")
	if err := g.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Ready when a bucket can be made and written to: the S3 port answers
	// before the filer and the volume server are up.
	c := client(g.endpoint)
	err = g.wait(60*time.Second, func(ctx context.Context) error {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("nt-ready")})
		if err != nil && !isOwned(err) {
			return fmt.Errorf("create bucket: %w", err)
		}
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("nt-ready"), Key: aws.String("ready")})
		return err
	})
	if err != nil {
		g.stop()
		return nil, err
	}
	return g, nil
}

// isOwned says err is BucketAlreadyOwnedByYou (a readiness probe that
// created the bucket and then failed its PUT).
func isOwned(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "BucketAlreadyOwnedByYou"
}
