package store_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/storetest"
)

func newFile(t *testing.T) *store.File {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFileConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newFile(t) })
}

func TestFileMissingRoot(t *testing.T) {
	_, err := store.NewFile(filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("NewFile of a missing directory: %v", err)
	}
}

// Temp and lock files never show as objects, and a crash's leftovers are
// invisible too.
func TestFileInternalFilesInvisible(t *testing.T) {
	f := newFile(t)
	ctx := context.Background()
	if _, err := f.Put(ctx, "a/obj", []byte("x"), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	// Leftovers of a crashed writer, and a lock held by a live process.
	for _, name := range []string{"a/.nereus-tmp-deadbeef", ".nereus-tmp-1"} {
		if err := os.WriteFile(filepath.Join(f.Dir(), name), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(f.Dir(), ".nereus-locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store.LockPath(f, "zzz"), []byte("token=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := f.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 1 || l[0].Key != "a/obj" {
		t.Fatalf("list shows %v, want only a/obj", l)
	}
	for _, k := range []string{".nereus-locks/x", "a/.nereus-tmp-deadbeef", ".nereus-x"} {
		if _, err := f.Head(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
			t.Fatalf("head of reserved name %q: %v", k, err)
		}
	}
}

// No hostile key leaves anything outside the root.
func TestFileHostileKeysStayInside(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	os.Mkdir(root, 0o755)
	f, err := store.NewFile(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	for _, k := range storetest.HostileKeys {
		f.Put(ctx, k, []byte("pwned"), store.None())
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 {
		t.Fatalf("hostile puts created %v next to the root", ents)
	}
	ents, _ = os.ReadDir(root)
	if len(ents) != 0 {
		t.Fatalf("hostile puts created %v in the root", ents)
	}
}

// A symlink inside the tree that leads outside the root is refused for
// every operation; one that stays inside works.
func TestFileSymlinkEscape(t *testing.T) {
	f := newFile(t)
	ctx := context.Background()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("top secret"), 0o644)
	if err := os.Symlink(outside, filepath.Join(f.Dir(), "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../..", filepath.Join(f.Dir(), "up")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"evil/secret", "up/etc/passwd"} {
		if b, err := f.Get(ctx, k, nil); err == nil {
			t.Fatalf("get %s through an escaping symlink returned %q", k, b)
		} else if !errors.Is(err, store.ErrInvalidKey) || !strings.Contains(err.Error(), "outside the store root") {
			t.Fatalf("get %s: %v", k, err)
		}
		if _, err := f.Head(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
			t.Fatalf("head %s: %v", k, err)
		}
		if _, err := f.Put(ctx, k+"-new", []byte("x"), store.None()); err == nil {
			t.Fatalf("put %s-new through an escaping symlink succeeded", k)
		}
		if err := f.Delete(ctx, k, store.None()); err == nil {
			t.Fatalf("delete %s through an escaping symlink succeeded", k)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "secret-new")); err == nil {
		t.Fatal("a put wrote outside the root")
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatal("a delete removed a file outside the root")
	}
	if _, err := f.List(ctx, ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("list over an escaping symlink: %v", err)
	}

	// Inside the root, symlinks are followed.
	g := newFile(t)
	if _, err := g.Put(ctx, "real/x", []byte("v"), store.None()); err != nil {
		t.Fatal(err)
	}
	os.Symlink("real", filepath.Join(g.Dir(), "alias"))
	if b, err := g.Get(ctx, "alias/x", nil); err != nil || string(b) != "v" {
		t.Fatalf("get through an inner symlink: %q, %v", b, err)
	}
	if err := g.Delete(ctx, "alias/x", store.None()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(g.Dir(), "alias")); err != nil {
		t.Fatalf("deleting the last object through a symlink removed the symlink: %v", err)
	}
}

func TestFileKeyFolderConflict(t *testing.T) {
	f := newFile(t)
	ctx := context.Background()
	if _, err := f.Put(ctx, "a/b", []byte("x"), store.None()); err != nil {
		t.Fatal(err)
	}
	_, err := f.Put(ctx, "a/b/c", []byte("x"), store.None())
	if err == nil || !strings.Contains(err.Error(), "a/b/c") {
		t.Fatalf("put under an object: %v", err)
	}
	_, err = f.Put(ctx, "a", []byte("x"), store.IfAbsent())
	if err == nil || errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("put over a folder: %v", err)
	}
	if err := f.Delete(ctx, "a", store.None()); err == nil {
		t.Fatal("delete of a folder succeeded")
	}
	// Deleting the last object drops the empty folders.
	if err := f.Delete(ctx, "a/b", store.None()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.Dir(), "a")); !os.IsNotExist(err) {
		t.Fatalf("empty folder left behind: %v", err)
	}
}

// The ETag follows the bytes even when a file is edited in place within the
// same clock tick (the digest cache must not hide it), and after the racy
// window the cached digest still notices edits.
func TestFileDigestNoticesInPlaceEdits(t *testing.T) {
	f := newFile(t)
	ctx := context.Background()
	orig := []byte("0123456789")
	if _, err := f.Put(ctx, "obj", orig, store.None()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.Dir(), "obj")
	flip := func(b byte) []byte {
		fh, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteAt([]byte{b}, 3); err != nil {
			t.Fatal(err)
		}
		d := append([]byte(nil), orig...)
		d[3] = b
		return d
	}
	now := flip('X')
	if h, err := f.Head(ctx, "obj"); err != nil || h.ETag != store.ETagOf(now) {
		t.Fatalf("head after an immediate in-place edit: %v, %v", h.ETag, err)
	}
	// Age the file past the racy window so its digest is cached.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	if h, err := f.Head(ctx, "obj"); err != nil || h.ETag != store.ETagOf(now) {
		t.Fatalf("head of an old file: %v, %v", h.ETag, err)
	}
	now = flip('Y') // sets mtime to now
	if h, err := f.Head(ctx, "obj"); err != nil || h.ETag != store.ETagOf(now) || h.SHA256 != store.SHA256Of(now) {
		t.Fatalf("head after editing a cached file: %v, %v", h.ETag, err)
	}
	// A second store (another process's view) sees the same.
	g, err := store.NewFile(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if h, err := g.Head(ctx, "obj"); err != nil || h.ETag != store.ETagOf(now) {
		t.Fatalf("head from a fresh store: %v, %v", h.ETag, err)
	}
}

// A lock whose holder died on this host is broken at once; a foreign lock
// is waited for until it is older than the stale age.
func TestFileStaleLocks(t *testing.T) {
	f := newFile(t)
	ctx := context.Background()
	key := "streams/s1/head.json"
	info, err := f.Put(ctx, key, []byte("1"), store.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	lock := store.LockPath(f, key)

	// Dead pid, same host and pid namespace.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	if owner := store.LockOwner(); owner != "" {
		os.WriteFile(lock, fmt.Appendf(nil, "nereus-lock v1\ntoken=dead\nowner=%s\npid=%d\n", owner, dead), 0o644)
		start := time.Now()
		if info, err = f.Put(ctx, key, []byte("2"), store.IfMatch(info.ETag)); err != nil {
			t.Fatalf("put over a dead holder's lock: %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("breaking a dead holder's lock took %v", d)
		}
	}

	// A live foreign holder: wait, then give up with the context.
	os.WriteFile(lock, []byte("nereus-lock v1\ntoken=alive\nowner=otherhost/pid:[1]\npid=1\n"), 0o644)
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err = f.Put(short, key, []byte("3"), store.IfMatch(info.ETag))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), key) {
		t.Fatalf("put under a live lock: %v", err)
	}
	if b, _ := f.Get(ctx, key, nil); string(b) != "2" {
		t.Fatalf("object changed under a held lock: %q", b)
	}
	// The same lock, once older than the stale age, is broken.
	store.SetLockStale(f, time.Second)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(lock, old, old)
	if _, err := f.Put(ctx, key, []byte("3"), store.IfMatch(info.ETag)); err != nil {
		t.Fatalf("put over a stale lock: %v", err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("lock file left after the put: %v", err)
	}
}

const (
	envChildDir  = "NEREUS_STORE_TEST_CHILD_DIR"
	envChildID   = "NEREUS_STORE_TEST_CHILD_ID"
	envChildIncs = "NEREUS_STORE_TEST_CHILD_INCS"
	envChildGo   = "NEREUS_STORE_TEST_CHILD_GO"
)

// TestFileCrossProcess races N processes (this test binary, re-executed)
// on one directory: IfAbsent on one key has exactly one winner, and IfMatch
// increments of one counter lose nothing.
func TestFileCrossProcess(t *testing.T) {
	const children, incs = 6, 15
	f := newFile(t)
	ctx := context.Background()
	if _, err := f.Put(ctx, "race/counter", []byte("0"), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	goFile := filepath.Join(t.TempDir(), "go")
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFileCrossProcessChild$", "-test.count=1", "-test.timeout=60s")
		cmd.Env = append(os.Environ(),
			envChildDir+"="+f.Dir(), envChildID+"="+strconv.Itoa(i),
			envChildIncs+"="+strconv.Itoa(incs), envChildGo+"="+goFile)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	time.Sleep(100 * time.Millisecond) // let them reach the start line
	os.WriteFile(goFile, nil, 0o644)
	winners := 0
	var written []int
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
		sc := bufio.NewScanner(outs[i])
		ran := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "CHILD WIN":
				winners++
				ran = true
			case line == "CHILD LOSE":
				ran = true
			case strings.HasPrefix(line, "CHILD WROTE "):
				n, _ := strconv.Atoi(strings.TrimPrefix(line, "CHILD WROTE "))
				written = append(written, n)
			}
		}
		if !ran {
			t.Fatalf("child %d did not race:\n%s", i, outs[i])
		}
	}
	if winners != 1 {
		t.Fatalf("%d processes created the same key with IfAbsent, want exactly 1", winners)
	}
	storetest.CheckIncrements(t, written, children*incs)
	b, err := f.Get(ctx, "race/counter", nil)
	if err != nil || string(b) != strconv.Itoa(children*incs) {
		t.Fatalf("counter = %q (%v), want %d", b, err, children*incs)
	}
	lockDir, _ := os.ReadDir(filepath.Join(f.Dir(), ".nereus-locks"))
	if len(lockDir) != 0 {
		t.Fatalf("lock files left behind: %v", lockDir)
	}
	t.Logf("%d processes: 1 IfAbsent winner, %d increments, none lost", children, len(written))
}

// TestFileCrossProcessChild is the child half of TestFileCrossProcess; it
// does nothing when run directly.
func TestFileCrossProcessChild(t *testing.T) {
	dir := os.Getenv(envChildDir)
	if dir == "" {
		t.Skip("helper process for TestFileCrossProcess")
	}
	id := os.Getenv(envChildID)
	incs, _ := strconv.Atoi(os.Getenv(envChildIncs))
	f, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(os.Getenv(envChildGo)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no start signal")
		}
	}
	_, err = f.Put(ctx, "race/winner", []byte("child-"+id), store.IfAbsent())
	switch {
	case err == nil:
		fmt.Println("CHILD WIN")
	case errors.Is(err, store.ErrPreconditionFailed):
		fmt.Println("CHILD LOSE")
	default:
		t.Fatal(err)
	}
	for range incs {
		n, err := storetest.Increment(ctx, f, "race/counter")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("CHILD WROTE %d\n", n)
	}
}

// TestFileConcurrentReadsThroughCacheChurn: readers in parallel over more
// folders than the handle caches keep (so handles are dropped and closed
// while others read through them) always get each object's own bytes, on
// the fast read path and on the general one (Head).
func TestFileConcurrentReadsThroughCacheChurn(t *testing.T) {
	defer store.SetMaxDirsCached(4)()
	f, err := store.NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const dirs = 24
	for i := 0; i < dirs; i++ {
		key := fmt.Sprintf("d%02d/obj", i)
		if _, err := f.Put(ctx, key, []byte(key), store.None()); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var buf []byte
			for n := 0; n < 400; n++ {
				key := fmt.Sprintf("d%02d/obj", (w*7+n)%dirs)
				var got []byte
				var err error
				switch n % 3 {
				case 0:
					got, err = store.GetInto(ctx, f, key, buf)
				case 1:
					got, err = f.Get(ctx, key, &store.Range{Offset: 0, Length: -1})
				default:
					var info store.ObjectInfo // the general path (Head)
					if info, err = f.Head(ctx, key); err == nil && info.Size != int64(len(key)) {
						err = fmt.Errorf("head %s: size %d", key, info.Size)
					}
					got = []byte(key)
				}
				if err == nil && string(got) != key {
					err = fmt.Errorf("read %s: got %q", key, got)
				}
				if err != nil {
					errs <- err
					return
				}
				buf = got
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
