package retention

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/store"
)

// gc collects the temp files a killed file:// writer leaves
// (.nereus-tmp-<16 hex>), only past the grace, through any decorator, and
// never anything else beside them.
func TestGCCollectsStaleTempFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	f, err := store.NewFile(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Put(ctx, "streams/s-1/head.json", []byte("{}"), store.None()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "streams", "s-1")
	stale := filepath.Join(dir, ".nereus-tmp-0123456789abcdef")
	young := filepath.Join(dir, ".nereus-tmp-fedcba9876543210")
	other := filepath.Join(dir, ".nereus-tmp-notatempname")
	for _, p := range []string{stale, young, other} {
		if err := os.WriteFile(p, []byte("half an object"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	for _, p := range []string{stale, other} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	st := store.NewCounter(store.WithRetry(f, store.DefaultRetryPolicy()))

	dry, err := GC(ctx, st, nil, GCOptions{DryRun: true, Grace: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := dry.Totals[GarbageTempFile]; got.Objects != 1 || got.Bytes != int64(len("half an object")) {
		t.Fatalf("dry run: temp-file totals %+v, want the one stale temp file", got)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("a dry run removed the stale temp file: %v", err)
	}

	rep, err := GC(ctx, st, nil, GCOptions{Grace: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Totals[GarbageTempFile]; got.Objects != 1 {
		t.Fatalf("temp-file totals %+v, want 1", got)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temp file still there: %v", err)
	}
	for _, p := range []string{young, other} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("gc removed %s, which it must keep: %v", filepath.Base(p), err)
		}
	}
	if _, err := f.Head(ctx, "streams/s-1/head.json"); err != nil {
		t.Fatalf("gc touched an object: %v", err)
	}
}
