package localfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "m.prom")
	if err := CheckWritable(ok); err != nil {
		t.Fatalf("writable folder: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the check left %d files behind", len(ents))
	}
	missing := filepath.Join(dir, "nope", "m.prom")
	if err := CheckWritable(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing folder: got %v, want not exist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the check created the missing folder")
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(filepath.Join(file, "m.prom")); err == nil {
		t.Fatal("a file as the folder: want an error")
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(filepath.Join(dir, "sub")); err == nil {
		t.Fatal("a folder as the file: want an error")
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := CheckWritable(filepath.Join(ro, "m.prom")); err == nil {
			t.Fatal("read-only folder: want an error")
		}
	}
}
