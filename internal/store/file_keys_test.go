package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
)

// keysOf is the keys of a listing.
func keysOf(l []store.ObjectInfo) []string {
	out := make([]string, len(l))
	for i, in := range l {
		out[i] = in.Key
	}
	return out
}

// TestFileListKeysStatsNoObject: ListKeys names the keys List names, in
// the same order, for every prefix, through nested folders, symlinks that
// stay in the root (to an object and to a folder), a dangling symlink,
// temp and lock files, a named pipe and a folder holding nothing; it
// stats no object (only the two live symlinks), where List stats every
// entry; its sizes are unknown (-1). An escaping symlink fails it as it
// fails List.
func TestFileListKeysStatsNoObject(t *testing.T) {
	f := newFile(t)
	ctx := context.Background()
	var objects []string
	for i := range 30 {
		k := fmt.Sprintf("streams/s%d/objects/%020d-%d.kb", i%3, i, i+1)
		if _, err := f.Put(ctx, k, bytes.Repeat([]byte{'x'}, i+1), store.None()); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, k)
	}
	for _, k := range []string{"bindings/t/0.json", "streams/s0/head.json", "top"} {
		if _, err := f.Put(ctx, k, []byte("{}"), store.None()); err != nil {
			t.Fatal(err)
		}
	}
	dir := f.Dir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("../s1/objects", filepath.Join(dir, "streams", "s2", "linked")))
	must(os.Symlink("head.json", filepath.Join(dir, "streams", "s0", "alias.json")))
	must(os.Symlink("nowhere", filepath.Join(dir, "streams", "s0", "dangling")))
	must(os.WriteFile(filepath.Join(dir, "streams", "s1", "objects", ".nereus-tmp-0123"), []byte("partial"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "streams", "empty", "objects"), 0o755))
	must(mkfifo(filepath.Join(dir, "streams", "s0", "pipe")))

	for _, prefix := range []string{"", "streams/", "streams/s1/objects/", "streams/s1/objects/0000000000000000001", "streams/s0/", "streams/s2/l", "bindings/t/0.json", "to", "top/", "top/x", "nothing/"} {
		want, err := f.List(ctx, prefix)
		if err != nil {
			t.Fatalf("list %q: %v", prefix, err)
		}
		before := store.ListStats(f)
		got, err := f.ListKeys(ctx, prefix)
		if err != nil {
			t.Fatalf("list keys %q: %v", prefix, err)
		}
		stats := store.ListStats(f) - before
		if w, g := strings.Join(keysOf(want), "\n"), strings.Join(keysOf(got), "\n"); w != g {
			t.Fatalf("prefix %q: ListKeys names\n%s\nList names\n%s", prefix, g, w)
		}
		for _, in := range got {
			if in.Size != -1 || !in.Modified.IsZero() || in.ETag != "" || in.SHA256 != "" {
				t.Fatalf("prefix %q: %+v: want the key only, size -1", prefix, in)
			}
		}
		if prefix == "" {
			if len(got) < len(objects)+3 {
				t.Fatalf("ListKeys named %d keys, want at least %d", len(got), len(objects)+3)
			}
			// The two live symlinks and the dangling one are stat'ed
			// (each through the root); no object, folder or pipe is.
			if stats != 3 {
				t.Fatalf("ListKeys of the whole store stat'ed %d entries, want the 3 symlinks only", stats)
			}
			before = store.ListStats(f)
			if _, err := f.List(ctx, prefix); err != nil {
				t.Fatal(err)
			}
			if n := store.ListStats(f) - before; n < int64(len(objects)) {
				t.Fatalf("List stat'ed %d entries, fewer than its %d objects: the contrast this test relies on is gone", n, len(objects))
			}
		}
	}

	// On a file system that gives no entry types (d_type unknown), every
	// entry is stat'ed, relative to its folder, and the keys are the same.
	if runtime.GOOS == "linux" {
		restore := store.SetDirentTypesUnknown(true)
		want, _ := f.List(ctx, "")
		before := store.ListStats(f)
		got, err := f.ListKeys(ctx, "")
		stats := store.ListStats(f) - before
		restore()
		if err != nil || strings.Join(keysOf(got), "\n") != strings.Join(keysOf(want), "\n") {
			t.Fatalf("without entry types: %v, keys\n%s\nwant\n%s", err, strings.Join(keysOf(got), "\n"), strings.Join(keysOf(want), "\n"))
		}
		if stats < int64(len(objects)) {
			t.Fatalf("without entry types %d entries stat'ed, fewer than the %d objects", stats, len(objects))
		}
	}

	// Through the decorators cmd stacks, the same keys.
	got, err := store.ListKeys(ctx, store.WithRetry(store.NewCounter(store.WithTimeout(f, time.Minute)), store.DefaultRetryPolicy()), "streams/s1/objects/")
	if err != nil || len(got) != 10 || got[0].Size != -1 {
		t.Fatalf("ListKeys through the decorators: %d keys %v", len(got), err)
	}

	// A symlink leading outside the root fails the listing, as List.
	outside := t.TempDir()
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	must(os.Symlink(outside, filepath.Join(dir, "streams", "s1", "objects", "evil")))
	if _, err := f.List(ctx, "streams/s1/"); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("list over an escaping symlink: %v", err)
	}
	if _, err := f.ListKeys(ctx, "streams/s1/"); !errors.Is(err, store.ErrInvalidKey) || !strings.Contains(err.Error(), "outside the store root") {
		t.Fatalf("list keys over an escaping symlink: %v", err)
	}
}

// TestFileGetSizedIntoHashesNothing: GetSizedInto reads an object and its
// size and time (as Head reports them) with one open into the caller's
// buffer and hashes nothing: no ETag, no SHA-256, not a byte hashed,
// where Head hashes every byte of an object it has no digests for. A
// missing key is ErrNotFound, and a key reached through a symlink (the
// general path) is read whole.
func TestFileGetSizedIntoHashesNothing(t *testing.T) {
	f := newFile(t)
	ctx := context.Background()
	var keys []string
	var total int64
	for i := range 10 {
		k := fmt.Sprintf("streams/s/objects/%020d-1.kb", i)
		data := bytes.Repeat([]byte{byte('a' + i)}, 1000+i)
		if _, err := f.Put(ctx, k, data, store.None()); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
		total += int64(len(data))
	}
	buf := make([]byte, 0, 4096)
	opens, hashed := store.Opens(f), store.DigestBytes(f)
	for _, k := range keys {
		data, info, err := store.GetSizedInto(ctx, f, k, buf)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if info.ETag != "" || info.SHA256 != "" {
			t.Fatalf("%s: digests %+v from a read that should hash nothing", k, info)
		}
		want, err := os.ReadFile(filepath.Join(f.Dir(), filepath.FromSlash(k)))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(f.Dir(), filepath.FromSlash(k)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) || info.Key != k || info.Size != fi.Size() || !info.Modified.Equal(fi.ModTime()) {
			t.Fatalf("%s: %d bytes, info %+v; the file has %d bytes, mtime %v", k, len(data), info, fi.Size(), fi.ModTime())
		}
		if &data[0] != &buf[:1][0] {
			t.Fatal("the buffer was not reused")
		}
	}
	if n := store.Opens(f) - opens; n != int64(len(keys)) {
		t.Fatalf("%d opens for %d objects, want one each", n, len(keys))
	}
	if n := store.DigestBytes(f) - hashed; n != 0 {
		t.Fatalf("GetSizedInto hashed %d bytes, want none", n)
	}
	// Through the decorators, still nothing hashed.
	c := store.NewCounter(f)
	chain := store.WithRetry(store.WithLog(store.WithTimeout(c, time.Minute), nil), store.DefaultRetryPolicy())
	for _, k := range keys {
		if _, info, err := store.GetSizedInto(ctx, chain, k, buf); err != nil || info.ETag != "" {
			t.Fatalf("through the decorators: %+v %v", info, err)
		}
	}
	if n := store.DigestBytes(f) - hashed; n != 0 {
		t.Fatalf("GetSizedInto through the decorators hashed %d bytes, want none", n)
	}
	// The contrast, so the count above can fail: Head of objects the
	// store has no digests for (files written behind its back, no digest
	// attribute) hashes every byte.
	dir := t.TempDir()
	for _, k := range keys {
		data, err := os.ReadFile(filepath.Join(f.Dir(), filepath.FromSlash(k)))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, k := range keys {
		if info, err := g.Head(ctx, k); err != nil || info.ETag == "" {
			t.Fatalf("Head: %+v %v", info, err)
		}
	}
	if n := store.DigestBytes(g); n != total {
		t.Fatalf("Head hashed %d bytes, want all %d", n, total)
	}

	if _, _, err := store.GetSizedInto(ctx, f, "streams/s/objects/missing.kb", nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	// A symlinked object: the general path, whole bytes, the size right.
	if err := os.Symlink(filepath.Base(keys[2]), filepath.Join(f.Dir(), "streams", "s", "objects", "alias.kb")); err != nil {
		t.Fatal(err)
	}
	data, info, err := store.GetSizedInto(ctx, f, "streams/s/objects/alias.kb", nil)
	if err != nil || info.Size != int64(len(data)) || len(data) != 1002 {
		t.Fatalf("through a symlink: %d bytes, %+v, %v", len(data), info, err)
	}
}
