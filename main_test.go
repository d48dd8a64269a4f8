package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

var update = flag.Bool("update", false, "rewrite testscript golden output (cmp) in place")

func TestMain(m *testing.M) {
	// The crash harness re-executes this test binary as nereusctl.
	if os.Getenv("NEREUSCTL_TEST_AS_CLI") == "1" {
		os.Exit(cmd.Execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	code := testscript.RunMain(m, map[string]func() int{
		"nereusctl": func() int {
			return cmd.Execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
		},
	})
	s3server.Stop()
	os.Exit(code)
}

// TestScripts runs the operator workflows under testdata/script against the
// real main, on the embedded default (file://) store. Each script gets
// $FIXTURES (../shared/fixtures/kafka) and a fresh $WORK.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(e *testscript.Env) error {
			fix, err := filepath.Abs(filepath.Join("..", "shared", "fixtures", "kafka"))
			if err != nil {
				return err
			}
			e.Setenv("FIXTURES", fix)
			e.Setenv("NEREUSCTL_STORE", "file://"+filepath.Join(e.WorkDir, "store"))
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, ".config"))
			return nil
		},
	})
}

// TestScriptsS3 runs the scripts under testdata/script/s3 against versitygw.
func TestScriptsS3(t *testing.T) {
	srv := s3server.Start(t)
	var n atomic.Int64
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script/s3",
		Setup: func(e *testscript.Env) error {
			// One bucket for the test, a prefix per script.
			e.Setenv("NEREUSCTL_STORE", srv.URL(fmt.Sprintf("script-%d", n.Add(1))))
			e.Setenv("NEREUSCTL_S3_ENDPOINT", srv.Endpoint)
			e.Setenv("NEREUSCTL_S3_PATH_STYLE", "true")
			for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"} {
				e.Setenv(k, os.Getenv(k))
			}
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, ".config"))
			return nil
		},
	})
}
