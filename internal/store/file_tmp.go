package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// MinTempGrace is the least age at which a file:// temp file may be
// removed: a Put writes, fsyncs and links its temp file in well under a
// second, so a temp file older than this belongs to a writer that died
// (SIGKILL, power loss) before it could remove it.
const MinTempGrace = time.Minute

// TempFile is a leftover temp file of the file:// store.
type TempFile struct {
	// Path is the file's slash-separated path below the store root.
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// TempReport says what RemoveTempFiles found and removed.
type TempReport struct {
	DryRun  bool       `json:"dry_run"`
	Files   []TempFile `json:"files"`   // older than the grace (removed unless DryRun)
	Removed int        `json:"removed"` // files removed
	Bytes   int64      `json:"bytes"`   // their bytes
	Young   int        `json:"young"`   // temp files younger than the grace, left alone
}

// isTempName reports the exact name pattern writeTemp uses:
// ".nereus-tmp-" and 16 lowercase hex digits. Nothing else is ever a temp
// file: no object (keys cannot have a segment starting with ".nereus-"), no
// lock file, no file of another program.
func isTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, tmpPrefix)
	if !ok || len(rest) != 16 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ListTempFiles walks the store root and returns its temp files whose
// modification time is more than grace before now (grace is raised to
// MinTempGrace), sorted by path, and the number of younger ones. It reads
// only through the store's root handle, never follows a symlink, and skips
// the lock folder. Its cost is one directory read per folder of the store.
func (f *File) ListTempFiles(ctx context.Context, now time.Time, grace time.Duration) (old []TempFile, young int, err error) {
	grace = max(grace, MinTempGrace)
	cutoff := now.Add(-grace)
	var walk func(dir string) error
	walk = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := f.open(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && dir != "." {
				return nil // removed meanwhile (a Delete empties folders)
			}
			return fmt.Errorf("list temp files in %s: %w", dir, err)
		}
		des, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return fmt.Errorf("list temp files in %s: %w", dir, err)
		}
		for _, de := range des {
			name := de.Name()
			p := path.Join(dir, name)
			switch t := de.Type(); {
			case t&fs.ModeSymlink != 0:
				continue // never followed, never removed
			case t.IsDir():
				if dir == "." && name == lockDir {
					continue
				}
				if err := walk(p); err != nil {
					return err
				}
			case t.IsRegular() && isTempName(name):
				fi, err := de.Info()
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						continue // committed or removed meanwhile
					}
					return fmt.Errorf("list temp files: %s: %w", p, err)
				}
				if fi.ModTime().Before(cutoff) {
					old = append(old, TempFile{Path: p, Size: fi.Size(), Modified: fi.ModTime()})
				} else {
					young++
				}
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return nil, 0, err
	}
	sort.Slice(old, func(i, j int) bool { return old[i].Path < old[j].Path })
	return old, young, nil
}

// RemoveTempFiles removes the temp files ListTempFiles finds older than
// grace (dryRun: only lists them). Each is checked again just before its
// removal (still a regular file with the temp name, still older than the
// cutoff), and removed through the root handle, so nothing outside the
// store root and nothing but a stale temp file is ever removed. A file that
// vanished meanwhile is not an error.
func (f *File) RemoveTempFiles(ctx context.Context, now time.Time, grace time.Duration, dryRun bool) (*TempReport, error) {
	old, young, err := f.ListTempFiles(ctx, now, grace)
	rep := &TempReport{DryRun: dryRun, Files: []TempFile{}, Young: young}
	if err != nil {
		return rep, err
	}
	cutoff := now.Add(-max(grace, MinTempGrace))
	for _, tf := range old {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		fi, err := f.root.Lstat(tf.Path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return rep, fmt.Errorf("remove temp file %s: %w", tf.Path, err)
		}
		if !fi.Mode().IsRegular() || !isTempName(path.Base(tf.Path)) || !fi.ModTime().Before(cutoff) {
			continue
		}
		rep.Files = append(rep.Files, tf)
		if dryRun {
			continue
		}
		if err := f.root.Remove(tf.Path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return rep, fmt.Errorf("remove temp file %s: %w", tf.Path, err)
		}
		rep.Removed++
		rep.Bytes += tf.Size
	}
	return rep, nil
}

// RemoveStaleTemps is RemoveTempFiles for any Store: it looks through the
// decorators (retry, counter, rate limit, fault injection) for a file://
// backend and returns nil, nil when there is none (s3:// and mem:// leave
// no temp files).
func RemoveStaleTemps(ctx context.Context, s Store, now time.Time, grace time.Duration, dryRun bool) (*TempReport, error) {
	for s != nil {
		if f, ok := s.(*File); ok {
			return f.RemoveTempFiles(ctx, now, grace, dryRun)
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil, nil
		}
		s = u.Unwrap()
	}
	return nil, nil
}
