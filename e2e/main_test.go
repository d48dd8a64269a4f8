package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

var update = flag.Bool("update", false, "rewrite testscript golden output (cmp) in place")

// runAsMain is main's run: the context SIGINT and SIGTERM cancel.
func runAsMain() int {
	ctx, stop := cmd.SignalContext(context.Background())
	defer stop()
	return cmd.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

func TestMain(m *testing.M) {
	// The crash harness re-executes this test binary as nereusctl.
	if os.Getenv("NEREUSCTL_TEST_AS_CLI") == "1" {
		os.Exit(runAsMain()) // as main does: SIGINT and SIGTERM cancel the run
	}
	// RunMain exits when the tests end (it never returns), so the S3 test
	// servers are stopped inside m's Run. SeaweedFS, slow to start, starts
	// in the background while the first tests run.
	//lint:ignore SA1019 RunMain takes commands that return their exit code
	testscript.RunMain(s3server.Around(m, s3server.SeaweedFS), map[string]func() int{
		"nereusctl": func() int {
			return cmd.Execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
		},
	})
}

// storeCmds are test-only script commands that damage a store the way the
// runbooks' incidents do, through the store layer (so they work on S3 too):
//
//	storedel KEY|@FILE         delete an object
//	storeput KEY|@FILE SRC     overwrite an object with a local file's bytes
//
//	exitcode N PROG ARGS...    run PROG, require exit code N (main_exitcode_test.go)
//
// @FILE reads the key from a file the script wrote.
var storeCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"exitcode": cmdExitcode,
	"storedel": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: storedel KEY|@FILE")
		}
		st, key := scriptStore(ts, args[0])
		ts.Check(st.Delete(context.Background(), key, store.None()))
	},
	"storeput": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: storeput KEY|@FILE SRC")
		}
		st, key := scriptStore(ts, args[0])
		data, err := os.ReadFile(ts.MkAbs(args[1]))
		ts.Check(err)
		_, err = st.Put(context.Background(), key, data, store.None())
		ts.Check(err)
	},
}

func scriptStore(ts *testscript.TestScript, keyArg string) (store.Store, string) {
	key := keyArg
	if strings.HasPrefix(keyArg, "@") {
		b, err := os.ReadFile(ts.MkAbs(keyArg[1:]))
		ts.Check(err)
		key = strings.TrimSpace(string(b))
	}
	st, err := store.Open(context.Background(), ts.Getenv("NEREUSCTL_STORE"), store.OpenOptions{
		S3Endpoint: ts.Getenv("NEREUSCTL_S3_ENDPOINT"), S3PathStyle: ts.Getenv("NEREUSCTL_S3_PATH_STYLE") == "true",
	})
	ts.Check(err)
	return st, key
}

// TestScripts runs the operator workflows under testdata/script against the
// real main, on the embedded default (file://) store. Each script gets
// $FIXTURES (testdata/kafka) and a fresh $WORK.
func TestScripts(t *testing.T) {
	testscript.Run(t, fileParams("../testdata/script"))
}

// TestScriptsSharedOnFile runs the scripts the S3 test runs (the end-to-end
// runbook) on the embedded default too.
func TestScriptsSharedOnFile(t *testing.T) {
	testscript.Run(t, fileParams("../testdata/script/s3"))
}

func fileParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:           dir,
		UpdateScripts: *update,
		Cmds:          scriptCmds(),
		Setup: func(e *testscript.Env) error {
			fix, err := filepath.Abs(filepath.Join("..", "testdata", "kafka"))
			if err != nil {
				return err
			}
			e.Setenv("FIXTURES", fix)
			e.Setenv("NEREUSCTL_STORE", "file://"+filepath.Join(e.WorkDir, "store"))
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, ".config"))
			e.Setenv("XDG_STATE_HOME", filepath.Join(e.WorkDir, ".state"))
			// A second store, the "replica bucket" of the runbooks.
			replica := filepath.Join(e.WorkDir, "replica")
			if err := os.MkdirAll(replica, 0o755); err != nil {
				return err
			}
			e.Setenv("REPLICA", "file://"+replica)
			return nil
		},
	}
}

// TestScriptsS3 runs the scripts under testdata/script/s3 (the end-to-end
// runbook) against each S3 server of the list.
func TestScriptsS3(t *testing.T) {
	s3server.Each(t, testScriptsS3)
}

func testScriptsS3(t *testing.T, impl *s3server.Impl) {
	srv := impl.Start(t)
	var n atomic.Int64
	testscript.Run(t, testscript.Params{
		Dir:  "../testdata/script/s3",
		Cmds: scriptCmds(),
		Setup: func(e *testscript.Env) error {
			// One bucket for the test, a prefix per script; a second
			// prefix is the script's replica store.
			i := n.Add(1)
			e.Setenv("NEREUSCTL_STORE", srv.URL(fmt.Sprintf("script-%d", i)))
			e.Setenv("REPLICA", srv.URL(fmt.Sprintf("script-%d-replica", i)))
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
