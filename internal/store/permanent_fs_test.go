//go:build linux

package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// retried opens a counted, retried view of st (6 attempts, as the CLI's)
// with its log.
func retried(st store.Store) (*store.Counter, *store.Retry, *bytes.Buffer) {
	var logs bytes.Buffer
	c := store.NewCounter(st)
	r := store.WithRetry(c, store.RetryPolicy{Attempts: 6, Initial: 20 * time.Millisecond, Max: time.Second,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	return c, r, &logs
}

// The file system's answers that a retry gets again (EFBIG, ENOSPC,
// EDQUOT, EISDIR, ENOTEMPTY, ENAMETOOLONG, ELOOP, ENXIO) are permanent: one
// attempt, however the backend wrapped them, and no retry logged.
func TestRetryGivesUpOnPermanentFileErrors(t *testing.T) {
	ctx := context.Background()
	for _, errno := range []syscall.Errno{syscall.EFBIG, syscall.ENOSPC, syscall.EDQUOT, syscall.EISDIR, syscall.ENOTEMPTY, syscall.ENAMETOOLONG, syscall.ELOOP, syscall.ENXIO} {
		cause := fmt.Errorf("put streams/s/head.json: write temp file: %w", &fs.PathError{Op: "write", Path: "x", Err: errno})
		c, r, logs := retried(faultstore.New(store.NewMem("")).FailNth("", 0, "", cause))
		if _, err := r.Put(ctx, "streams/s/head.json", []byte("{}"), store.None()); !errors.Is(err, errno) {
			t.Fatalf("%v: %v", errno, err)
		}
		if n := c.Counts()[store.VerbPut]; n != 1 {
			t.Errorf("%v: %d attempts, want 1 (permanent)", errno, n)
		}
		if strings.Contains(logs.String(), "store retry") {
			t.Errorf("%v: retried:\n%s", errno, logs)
		}
	}
}

// A Put to a key that is a folder of other keys (file:// keeps keys as
// paths) fails once, naming the key: the folder is there on every retry.
func TestFilePutOnAFolderIsPermanent(t *testing.T) {
	ctx := context.Background()
	f, err := store.NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Put(ctx, "streams/s/a/b", []byte("x"), store.None()); err != nil {
		t.Fatal(err)
	}
	for _, g := range []store.Guard{store.None(), store.IfAbsent()} {
		c, r, logs := retried(f)
		_, err := r.Put(ctx, "streams/s/a", []byte("y"), g)
		if err == nil || !strings.Contains(err.Error(), "streams/s/a") || !strings.Contains(err.Error(), "folder") {
			t.Fatalf("%s put on a folder: %v", g, err)
		}
		if n := c.Counts()[store.VerbPut]; n != 1 {
			t.Errorf("%s put on a folder: %d attempts, want 1", g, n)
		}
		if strings.Contains(logs.String(), "store retry") {
			t.Errorf("retried:\n%s", logs)
		}
	}
	// A parent of the key that is an object: the same.
	c, r, _ := retried(f)
	if _, err := r.Put(ctx, "streams/s/a/b/c", []byte("z"), store.None()); err == nil || c.Counts()[store.VerbPut] != 1 {
		t.Fatalf("put under an object: %v after %d attempts, want one failed attempt", err, c.Counts()[store.VerbPut])
	}
}

// TestFilePutBeyondTheFileSizeLimit: a write past RLIMIT_FSIZE fails with
// EFBIG (the process ignores SIGXFSZ, as Go does), once. Run in a child
// process, whose limit is lowered alone.
func TestFilePutBeyondTheFileSizeLimit(t *testing.T) {
	if dir := os.Getenv("NEREUSCTL_TEST_EFBIG_DIR"); dir != "" {
		var lim syscall.Rlimit
		lim.Cur, lim.Max = 4096, 4096
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
		f, err := store.NewFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		c, r, logs := retried(f)
		_, err = r.Put(context.Background(), "streams/s/objects/big", make([]byte, 64<<10), store.None())
		if !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("put past the limit: %v, want EFBIG", err)
		}
		if n := c.Counts()[store.VerbPut]; n != 1 || strings.Contains(logs.String(), "store retry") {
			t.Fatalf("%d attempts, want 1:\n%s", n, logs)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFilePutBeyondTheFileSizeLimit$", "-test.v")
	cmd.Env = append(os.Environ(), "NEREUSCTL_TEST_EFBIG_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// A FIFO (or another special file) at a key, or where a key's folder is
// expected, is refused at once: no open(2) waits for a writer. The error
// names the key and is permanent (one attempt).
func TestFileSpecialFileKeysNeverBlock(t *testing.T) {
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
	if err := syscall.Mkfifo(filepath.Join(dir, "streams", "s", "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "streams", "p"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, r, logs := retried(f)
		calls := map[string]func() error{
			"get":  func() error { _, err := r.Get(ctx, "streams/s/fifo.json", nil); return err },
			"head": func() error { _, err := r.Head(ctx, "streams/s/fifo.json"); return err },
			"into": func() error { _, err := store.GetInto(ctx, r, "streams/s/fifo.json", nil); return err },
			"sized": func() error {
				_, _, err := store.GetSizedInto(ctx, r, "streams/s/fifo.json", nil)
				return err
			},
			"ifmatch": func() error {
				_, err := r.Put(ctx, "streams/s/fifo.json", []byte("x"), store.IfMatch("abc"))
				return err
			},
		}
		for name, call := range calls {
			err := call()
			if !errors.Is(err, store.ErrNotRegular) || !store.IsPermanent(err) || !strings.Contains(err.Error(), "streams/s/fifo.json") || !strings.Contains(err.Error(), "FIFO") {
				t.Errorf("%s of a FIFO key: %v, want a permanent ErrNotRegular naming the key", name, err)
			}
		}
		if strings.Contains(logs.String(), "store retry") {
			t.Errorf("a FIFO key was retried:\n%s", logs)
		}
		// A FIFO where a folder is: no such object, no such listing.
		if _, err := r.Get(ctx, "streams/p/x.json", nil); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get under a FIFO: %v, want not found", err)
		}
		if l, err := r.List(ctx, "streams/p/"); err != nil || len(l) != 0 {
			t.Errorf("list under a FIFO: %v %v", l, err)
		}
		if l, err := r.List(ctx, "streams/"); err != nil || len(l) != 1 {
			t.Errorf("list of the streams: %v %v, want the one head", l, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a read of a FIFO key blocked")
	}
}

// TestFileStoreIsPrivate: file:// creates its objects 0600 and its
// folders 0700 (the store root too, when it makes it), whatever the umask
// lets through beyond the owner: record payloads are no other user's to
// read.
func TestFileStoreIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "new", "store")
	st, err := store.Open(ctx, "file://"+root, store.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.(store.Closer).Close()
	for _, g := range []store.Guard{store.IfAbsent(), store.None()} {
		if _, err := st.Put(ctx, "streams/s-1/objects/00000000000000000000-00000000000000000001.kb", []byte("payload"), g); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(ctx, "bindings/t/0.json", []byte("{}"), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Dir(root), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if p == filepath.Dir(root) {
			return nil // the test's own folder
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
