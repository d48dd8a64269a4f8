package store

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestRemoveTempFiles: the temp files a killed writer left (the exact name
// writeTemp makes, older than the grace) are removed anywhere under the
// root; young temp files, objects, lock files, other programs' files,
// look-alike names and symlinks (to files or folders outside the root) are
// left alone; --dry-run removes nothing; the store still reads the same.
func TestRemoveTempFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	outside := t.TempDir()
	f, err := NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, k := range []string{"bindings/orders/0.json", "streams/s-1/head.json", "streams/s-1/objects/a.kb"} {
		if _, err := f.Put(ctx, k, []byte("data of "+k), IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	write := func(rel string, mtime time.Time) string {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("partial bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return rel
	}
	// What a SIGKILLed Put leaves: its temp file, in the object's folder.
	stale := []string{
		write("streams/s-1/objects/"+tmpPrefix+randHex(8), old),
		write("streams/s-1/"+tmpPrefix+randHex(8), old),
		write("bindings/orders/"+tmpPrefix+randHex(8), old),
		write(tmpPrefix+randHex(8), old),
	}
	sort.Strings(stale)
	young := write("streams/s-1/objects/"+tmpPrefix+randHex(8), now.Add(-30*time.Second))
	kept := []string{
		young,
		write("streams/s-1/objects/.nereus-tmp-xyz", old),              // not the pattern
		write("streams/s-1/objects/.nereus-tmp-0123456789ABCDEF", old), // upper case
		write("streams/s-1/objects/.nereus-tmp-0123456789abcdef0", old),
		write("streams/s-1/objects/x.nereus-tmp-0123456789abcdef", old),
		write("streams/s-1/notes.txt", old),
		write(lockDir+"/"+tmpPrefix+"0123456789abcdef", old), // the lock folder is never entered
	}
	// A symlink with the temp name to an old file outside the root, and a
	// symlinked folder leading outside with a stale-looking temp file.
	target := filepath.Join(outside, "victim")
	if err := os.WriteFile(target, []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	link := "streams/s-1/" + tmpPrefix + "fedcba9876543210"
	if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
		t.Fatal(err)
	}
	outsideTemp := filepath.Join(outside, tmpPrefix+"00112233445566ff")
	if err := os.WriteFile(outsideTemp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(outsideTemp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "streams", "elsewhere")); err != nil {
		t.Fatal(err)
	}
	exists := func(rel string) bool {
		_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
		return err == nil
	}

	// Dry run: lists exactly the stale ones, removes nothing.
	rep, err := f.RemoveTempFiles(ctx, now, time.Hour, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tf := range rep.Files {
		got = append(got, tf.Path)
	}
	if len(got) != len(stale) || rep.Removed != 0 || rep.Young != 1 {
		t.Fatalf("dry run: %+v, want %v and 1 young", rep, stale)
	}
	for i := range got {
		if got[i] != stale[i] {
			t.Fatalf("dry run listed %v, want %v", got, stale)
		}
	}
	for _, s := range stale {
		if !exists(s) {
			t.Fatalf("dry run removed %s", s)
		}
	}

	// A grace below the minimum is raised to it: nothing younger than a
	// minute is touched even with grace 0.
	rep, err = f.RemoveTempFiles(ctx, now, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != len(stale) || rep.Bytes != int64(len(stale)*len("partial bytes")) {
		t.Fatalf("removed %+v, want %d files", rep, len(stale))
	}
	for _, s := range stale {
		if exists(s) {
			t.Errorf("stale temp file %s left", s)
		}
	}
	for _, k := range append(kept, link) {
		if !exists(k) {
			t.Errorf("%s was removed", k)
		}
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the symlink's target outside the root: %v", err)
	}
	if _, err := os.Stat(outsideTemp); err != nil {
		t.Errorf("a temp-named file outside the root (through a symlinked folder): %v", err)
	}
	// (List itself refuses a symlink leading outside the root.)
	if err := os.Remove(filepath.Join(dir, "streams", "elsewhere")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(link))); err != nil {
		t.Fatal(err)
	}
	infos, err := f.List(ctx, "")
	if err != nil || len(infos) != 5 { // the 3 objects, notes.txt and x.nereus-tmp-… are keys too
		t.Fatalf("the store after cleaning: %v, %v", infos, err)
	}
	for _, in := range infos {
		if in.Key == "streams/s-1/notes.txt" || in.Key == "streams/s-1/objects/x.nereus-tmp-0123456789abcdef" {
			continue
		}
		if data, err := f.Get(ctx, in.Key, nil); err != nil || string(data) != "data of "+in.Key {
			t.Fatalf("%s after cleaning: %q, %v", in.Key, data, err)
		}
	}

	// A second run finds nothing; the decorated store reaches the backend;
	// a store that is not file:// has nothing to clean.
	rep, err = RemoveStaleTemps(ctx, WithRetry(NewCounter(f), DefaultRetryPolicy()), now, time.Hour, false)
	if err != nil || rep == nil || rep.Removed != 0 || len(rep.Files) != 0 {
		t.Fatalf("second run through decorators: %+v, %v", rep, err)
	}
	if rep, err := RemoveStaleTemps(ctx, NewMem("tmp"), now, time.Hour, false); rep != nil || err != nil {
		t.Fatalf("mem store: %+v, %v", rep, err)
	}
}

// TestTempNamePattern: every name writeTemp makes is recognised, and no
// valid object key segment ever is.
func TestTempNamePattern(t *testing.T) {
	for range 100 {
		if n := tmpPrefix + randHex(8); !isTempName(n) {
			t.Fatalf("%s not recognised as a temp name", n)
		}
	}
	if err := fileKey("streams/s-1/" + tmpPrefix + "0123456789abcdef"); err == nil {
		t.Fatal("a key with a temp-name segment is accepted: an object could be taken for a temp file")
	}
}
