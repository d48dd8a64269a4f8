package store_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

// A permission error is permanent: WithRetry gives up after one attempt,
// however deep the backend wrapped the operating system's error.
func TestRetryGivesUpOnPermissionErrors(t *testing.T) {
	ctx := context.Background()
	for _, cause := range []error{
		&fs.PathError{Op: "openat", Path: "bindings/t/0.json", Err: syscall.EACCES},
		&fs.PathError{Op: "openat", Path: "bindings/t/0.json", Err: syscall.EPERM},
		&fs.PathError{Op: "renameat", Path: "bindings/t/0.json", Err: syscall.EROFS},
		store.Permanent(errors.New("s3 says no")),
		store.ErrCredentials,
	} {
		mem := store.NewMem("")
		mem.Put(ctx, "bindings/t/0.json", []byte("{}"), store.None())
		c := store.NewCounter(faultstore.New(mem).FailNth("", 0, "", errors.Join(errors.New("get bindings/t/0.json"), cause)))
		r := store.WithRetry(c, store.RetryPolicy{Attempts: 6, Initial: 50 * time.Millisecond, Max: time.Second})
		start := time.Now()
		_, err := r.Get(ctx, "bindings/t/0.json", nil)
		if err == nil {
			t.Fatalf("%v: no error", cause)
		}
		if n := c.Counts()[store.VerbGet]; n != 1 {
			t.Errorf("%v: %d attempts, want 1 (a permanent error is not retried)", cause, n)
		}
		if time.Since(start) > 40*time.Millisecond {
			t.Errorf("%v: took %v", cause, time.Since(start))
		}
		if store.KeyOf(err) != "bindings/t/0.json" {
			t.Errorf("%v: KeyOf = %q", cause, store.KeyOf(err))
		}
	}
	// A transient failure still is retried (the control).
	c := store.NewCounter(faultstore.New(store.NewMem("")).FailNth(store.VerbGet, 1, "", nil))
	r := store.WithRetry(c, store.RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: time.Millisecond})
	if _, err := r.Get(ctx, "k", nil); !errors.Is(err, store.ErrNotFound) || c.Counts()[store.VerbGet] != 2 {
		t.Fatalf("transient: %v after %d attempts", err, c.Counts()[store.VerbGet])
	}
}

// The file:// backend classifies a real refusal by the file system as
// ErrAccessDenied. The tests run as root, which permission bits do not
// stop: as root the folder is made immutable (chattr +i, which stops root
// too); otherwise it is made unwritable with chmod.
func TestFilePermissionDeniedIsPermanent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Put(ctx, "streams/s/head.json", []byte("{}"), store.None()); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "streams", "s")
	lock(t, folder)

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := store.NewCounter(f)
	r := store.WithRetry(c, store.RetryPolicy{Attempts: 6, Initial: 50 * time.Millisecond, Max: time.Second, Log: log})
	start := time.Now()
	_, err = r.Put(ctx, "streams/s/objects/0-1.kb", []byte("data"), store.IfAbsent())
	if err == nil {
		t.Fatal("put into a folder the file system refuses succeeded")
	}
	if !store.IsAccessDenied(err) {
		t.Fatalf("not classified as access denied: %v", err)
	}
	if n := c.Counts()[store.VerbPut]; n != 1 {
		t.Fatalf("%d PUT attempts, want 1: %v", n, err)
	}
	if d := time.Since(start); d > 40*time.Millisecond {
		t.Fatalf("took %v", d)
	}
	if strings.Contains(logs.String(), "store retry") {
		t.Fatalf("retried: %s", logs.String())
	}
}

// lock makes folder refuse new entries, and undoes it at the end.
func lock(t *testing.T, folder string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(folder, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(folder, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", folder).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i (needed to provoke a permission error as root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", folder).Run() })
}

// Each retry is logged at info with the attempt, the key and the error;
// giving up is logged at warn.
func TestRetryLogs(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f := faultstore.New(store.NewMem("")).FailNth(store.VerbGet, 0, "", nil)
	r := store.WithRetry(f, store.RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: time.Millisecond, Log: log})
	if _, err := r.Get(ctx, "streams/s/head.json", nil); err == nil {
		t.Fatal("no error")
	}
	out := logs.String()
	for _, want := range []string{
		`level=INFO msg="store retry" op=get key=streams/s/head.json attempt=1 error="get streams/s/head.json: injected fault"`,
		`level=INFO msg="store retry" op=get key=streams/s/head.json attempt=2 `,
		`level=WARN msg="store call failed after retries" op=get key=streams/s/head.json attempts=3 `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// WithLog logs every request at debug level, and nothing above it.
func TestLogDecorator(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	l := store.WithLog(store.NewMem(""), slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Put(ctx, "k", []byte("abc"), store.IfAbsent())
	l.Get(ctx, "k", &store.Range{Offset: 1, Length: 1})
	l.Get(ctx, "missing", nil)
	l.List(ctx, "")
	out := logs.String()
	for _, want := range []string{
		`level=DEBUG msg="store request" op=put key=k guard=if-absent bytes=3 duration=`,
		`level=DEBUG msg="store request" op=get key=k offset=1 length=1 bytes=1 duration=`,
		`level=DEBUG msg="store request" op=get key=missing bytes=0 duration=`,
		`error="get missing: object not found"`,
		`level=DEBUG msg="store request" op=list key="" objects=1 duration=`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	logs.Reset()
	quiet := store.WithLog(store.NewMem(""), slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	quiet.Put(ctx, "k", []byte("abc"), store.None())
	if logs.Len() != 0 {
		t.Fatalf("logged at warn level: %s", logs.String())
	}
}

// A guarded write that loses its precondition is logged at info.
func TestRetryLogsLostPrecondition(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r := store.WithRetry(store.NewMem(""), store.RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: time.Millisecond, Log: log})
	r.Put(ctx, "bindings/t/0.json", []byte("a"), store.IfAbsent())
	if _, err := r.Put(ctx, "bindings/t/0.json", []byte("b"), store.IfAbsent()); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatal(err)
	}
	if want := `level=INFO msg="store precondition failed" op=put key=bindings/t/0.json guard=if-absent`; !strings.Contains(logs.String(), want) {
		t.Fatalf("log lacks %q:\n%s", want, logs.String())
	}
}
