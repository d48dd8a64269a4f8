// Package localfile owns nereusctl's own local files (progress, metrics):
// every write is a temp file in the same folder, fsync, atomic rename and a
// folder fsync, so a crash leaves the old file or the new one, never a torn
// one (second source document: FileOffsetStore).
package localfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteAtomic replaces path with data.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("write %s: fsync folder: %w", path, err)
		}
	}
	return nil
}

// StateDir is where nereusctl keeps local state: $XDG_STATE_HOME/nereusctl,
// else ~/.local/state/nereusctl.
func StateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "nereusctl")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "nereusctl")
	}
	return filepath.Join(os.TempDir(), "nereusctl-state")
}

// CheckWritable checks, before any work is done, that path can be written
// later by WriteAtomic without creating folders: its folder exists, is a
// folder, and a temp file can be created and removed in it; path itself,
// when it exists, is a regular file.
func CheckWritable(path string) error {
	if path == "" {
		return fmt.Errorf("check %q: empty path", path)
	}
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("check %s: folder %s: %w", path, dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("check %s: %s is not a folder", path, dir)
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("check %s: exists and is not a regular file", path)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("check %s: folder %s is not writable: %w", path, dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("check %s: remove test file: %w", path, err)
	}
	return nil
}
