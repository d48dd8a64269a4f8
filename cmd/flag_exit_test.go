package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

// The exit code comes from typed errors only: an operating-system EINVAL
// ("invalid argument") is an error (1), not a usage error, even though its
// text looks like one of cobra's.
func TestExitCodeFromTypesNotText(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		err  error
		want exitcode.Code
	}{
		{fmt.Errorf("get streams/s/head.json: %w", &fs.PathError{Op: "read", Path: "x", Err: syscall.EINVAL}), exitcode.Error},
		{errors.New("open x: invalid argument"), exitcode.Error},
		{errors.New("requires at least one unknown command flag needs an argument"), exitcode.Error},
		{exitcode.UsageErr(errors.New("anything")), exitcode.Usage},
		{fmt.Errorf("put k: %w", store.ErrPreconditionFailed), exitcode.Blocked},
		{fmt.Errorf("list: %w", context.Canceled), exitcode.Interrupted},
		{store.Permanent(fmt.Errorf("get k: %w", store.ErrAccessDenied)), exitcode.Error},
	} {
		if got := codeOf(ctx, c.err); got != c.want {
			t.Errorf("codeOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// Cancellation wins: when the run's context is cancelled (SIGINT,
// SIGTERM), the status is 130 whatever the interrupted step returned.
func TestCancellationWins(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{
		exitcode.UsageErr(errors.New("open store: directory does not exist")),
		exitcode.VerifyErr(errors.New("short read")),
		exitcode.Wrap(exitcode.Error, errors.New("load binding"), "hint"),
		errors.New("plain"),
	} {
		if got := codeOf(ctx, err); got != exitcode.Interrupted {
			t.Errorf("codeOf(cancelled, %v) = %d, want 130", err, got)
		}
	}
}

// A Ctrl-C while a store call is being retried: exit 130 and the rerun
// message, on stderr and (under -o json) as the error document.
func TestInterruptedDuringRetry(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		mem := store.NewMem("")
		faulty := faultstore.New(mem).FailNth("", 0, "", nil) // every call fails, transiently
		var stdout, stderr bytes.Buffer
		g := &globals{stderr: &stderr, st: store.WithRetry(faulty, store.RetryPolicy{Attempts: 1000, Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond})}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		args := []string{"replay", "orders-0"}
		if jsonOut {
			args = append(args, "-o", "json")
		}
		start := time.Now()
		code := execute(ctx, g, args, &stdout)
		if code != int(exitcode.Interrupted) {
			t.Fatalf("json=%v: exit %d, want 130; stderr %s", jsonOut, code, stderr.String())
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("took %v after the interrupt", time.Since(start))
		}
		if faulty.Fired() < 2 {
			t.Fatalf("the call was not being retried (%d faults)", faulty.Fired())
		}
		if !strings.HasPrefix(stderr.String(), "nereusctl: interrupted: rerun the same command to resume\n") {
			t.Fatalf("stderr: %q", stderr.String())
		}
		if !jsonOut {
			if stdout.Len() != 0 {
				t.Fatalf("stdout: %q", stdout.String())
			}
			continue
		}
		var doc struct {
			SchemaVersion int `json:"schema_version"`
			Error         struct {
				Code    int    `json:"code"`
				Name    string `json:"name"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatalf("stdout is not one JSON document: %v: %q", err, stdout.String())
		}
		if doc.SchemaVersion != SchemaVersion || doc.Error.Code != 130 || doc.Error.Name != "interrupted" || doc.Error.Message != interruptedMessage {
			t.Fatalf("error document: %+v", doc)
		}
	}
}

// The hint of a permanent store failure tells the operator where to look,
// without a code attached by the operation.
func TestPermanentStoreErrorHints(t *testing.T) {
	if h := errorHint(fmt.Errorf("get k: %w", store.ErrCredentials)); !strings.Contains(h, "AWS_PROFILE") || !strings.Contains(h, "AWS_ACCESS_KEY_ID") || !strings.Contains(h, "credential chain") {
		t.Errorf("credentials hint: %q", h)
	}
	if h := errorHint(fmt.Errorf("put k: %w", &fs.PathError{Op: "open", Path: "k", Err: syscall.EACCES})); !strings.Contains(h, "permissions") {
		t.Errorf("access hint: %q", h)
	}
	if h := errorHint(fmt.Errorf("list: %w", store.ErrNoSuchBucket)); !strings.Contains(h, "bucket") {
		t.Errorf("bucket hint: %q", h)
	}
}

// A store folder the file system refuses to write: the command fails at
// once (no retries) with exit 1 and the permissions hint. The tests run as
// root, which permission bits do not stop, so as root the folder is made
// immutable (chattr +i stops root too); otherwise chmod makes it read-only.
func TestAccessDeniedFailsFastWithHint(t *testing.T) {
	dir := t.TempDir()
	storeURL := "file://" + dir
	var out, errb bytes.Buffer
	if code := execute(context.Background(), &globals{stderr: &errb}, []string{"--store", storeURL, "demo", "--records", "300", "--partitions", "1", "--no-tour", "-q"}, &out); code != 0 {
		t.Fatalf("demo: %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "bindings", "orders", "0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var binding struct {
		StreamID string `json:"stream_id"`
	}
	if err := json.Unmarshal(b, &binding); err != nil || binding.StreamID == "" {
		t.Fatalf("binding: %v %s", err, b)
	}
	folder := filepath.Join(dir, "streams", binding.StreamID, "checkpoints")
	if os.Geteuid() == 0 {
		if o, err := exec.Command("chattr", "+i", folder).CombinedOutput(); err != nil {
			t.Fatalf("chattr +i (needed to provoke a permission error as root): %v: %s", err, o)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", folder).Run() })
	} else {
		os.Chmod(folder, 0o500)
		t.Cleanup(func() { os.Chmod(folder, 0o755) })
	}
	out.Reset()
	errb.Reset()
	start := time.Now()
	code := execute(context.Background(), &globals{stderr: &errb}, []string{"--store", storeURL, "--log-level", "info", "checkpoint", "create", "orders-0"}, &out)
	if code != int(exitcode.Error) {
		t.Fatalf("exit %d, want 1: %s", code, errb.String())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	if strings.Contains(errb.String(), "store retry") {
		t.Fatalf("retried:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), "\nhint: the store refused access: check its permissions") {
		t.Fatalf("no permissions hint:\n%s", errb.String())
	}
}

// The error document carries the object and check an operation named
// (exitcode.Finding), and the hint.
func TestErrorDocumentFinding(t *testing.T) {
	var stdout, stderr bytes.Buffer
	g := &globals{stderr: &stderr, resolved: true, cfg: Config{Output: "json"}}
	root := newRootCmd(g)
	err := fmt.Errorf("verify orders-0: %w", errkind.About(exitcode.Wrap(exitcode.Verify, errors.New("sha256 mismatch"), "see the runbook"), "streams/s/objects/0-9.kb", "sha256"))
	g.reportError(root, root, nil, &trackedWriter{w: &stdout}, err, codeOf(context.Background(), err))
	var doc errorDocument
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %q", err, stdout.String())
	}
	want := errorBody{Code: 3, Name: "verification-failed", Message: "verify orders-0: sha256 mismatch", Hint: "see the runbook", Object: "streams/s/objects/0-9.kb", Check: "sha256"}
	if doc.SchemaVersion != SchemaVersion || doc.Error != want {
		t.Fatalf("document %+v, want %+v", doc, want)
	}
	// Nothing when the command already wrote its document.
	stdout.Reset()
	g.reportError(root, root, nil, &trackedWriter{w: &stdout, n: 10}, err, 3)
	if stdout.Len() != 0 {
		t.Fatalf("second document: %q", stdout.String())
	}
}

// Wrong S3 credentials, end to end against a real S3 server (versitygw on
// loopback): exit 1 at once with the credentials hint, no retries, no
// signature material, and the error document under -o json.
func TestS3WrongCredentialsFailFastWithHint(t *testing.T) {
	srv := s3server.Start(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-Zq8Xv")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := execute(context.Background(), &globals{stderr: &stderr}, []string{
		"--store", srv.URL("strict"), "--s3-endpoint", srv.Endpoint, "--s3-path-style", "--log-level", "info", "-o", "json", "replay", "orders-0",
	}, &stdout)
	if code != int(exitcode.Error) {
		t.Fatalf("exit %d, want 1: %s", code, stderr.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
	e := stderr.String()
	if strings.Contains(e, "store retry") {
		t.Fatalf("retried:\n%s", e)
	}
	if !strings.Contains(e, "credentials refused (s3 SignatureDoesNotMatch)") || !strings.Contains(e, "\nhint: check the AWS credentials: AWS_PROFILE, AWS_ACCESS_KEY_ID") {
		t.Fatalf("stderr:\n%s", e)
	}
	for _, bad := range []string{"wrong-secret", "Signature=", "Credential="} {
		if strings.Contains(e+stdout.String(), bad) {
			t.Fatalf("output shows %q:\n%s%s", bad, e, stdout.String())
		}
	}
	var doc errorDocument
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || doc.Error.Code != 1 || !strings.Contains(doc.Error.Hint, "credential chain") {
		t.Fatalf("document %+v, %v: %q", doc, err, stdout.String())
	}
}
