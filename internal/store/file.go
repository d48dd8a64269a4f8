package store

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nereusctl/nereusctl/internal/keys"
)

// File is the file:// backend: one regular file per object under a root
// directory, the key's "/" segments being directories.
//
// # Writes
//
// Every Put writes a temp file (".nereus-tmp-…") in the object's own
// folder, fsyncs it, then moves it into place with link(2) (IfAbsent) or
// rename(2) (None, IfMatch), and fsyncs the folder (and, when it created
// them, the new parent folders). A reader sees the old object or the new one,
// never a torn one; a crash leaves at worst a stray temp file, which List
// never shows.
//
// # Guards across processes
//
// Every mutation of a key (Put of any guard, Delete) holds that key's lock
// file, ".nereus-locks/<sha256(key)[:32]>.lock", created with O_CREAT|O_EXCL
// (atomic on local filesystems and NFSv3+), for its check and its commit.
// Under the lock:
//
//   - IfAbsent commits with link(2) of the temp file to the key, which fails
//     with EEXIST if any object is there: the create is atomic even without
//     the lock, so two processes can never both create a key.
//   - IfMatch hashes the current object, compares the ETag and renames; the
//     lock makes check+rename one step for every process that follows this
//     protocol.
//   - Delete checks and unlinks under the lock.
//
// A lock whose owner is gone is broken: at once when its owner ran on this
// host and pid namespace and that pid no longer exists, otherwise when it is
// older than the stale age (30 s; a lock is held for milliseconds). Breaking
// takes a second O_EXCL file (".break") and re-reads the lock's random token
// under it, so two breakers cannot remove a fresh lock. A holder re-reads its
// token just before committing and gives up with ErrConflict (retryable) if
// its lock was broken.
//
// # Digests
//
// ETag is the hex MD5 of the bytes and SHA256 the hex SHA-256, computed by
// reading the file. They are remembered in the extended attribute
// "user.nereus.digest" (where the filesystem has them) and in memory, keyed by
// size and mtime, and trusted only when recorded more than a second after
// the file's mtime, so an in-place edit within the same clock tick is
// noticed ("racy" entries are re-hashed, as git does).
//
// # Keys
//
// Keys pass ValidateKey, and file:// adds: no segment longer than 255 bytes,
// no segment starting with ".nereus-" (reserved for temp and lock files). All
// file access goes through an os.Root, so a symlink inside the tree that
// leads outside the root is refused ("path escapes from parent"). A key
// cannot be both an object and a folder of other keys ("a" and "a/b").
type File struct {
	dir   string
	root  *os.Root
	stale time.Duration
	owner string

	mu    sync.Mutex
	cache map[string]digestEntry

	// dirFiles caches an open handle per folder of objects (opened
	// through the root), so that opening streams/<sid>/objects/<key>
	// costs one openat(2) of the last segment with O_NOFOLLOW instead of
	// a walk of every path component (file_linux.go).
	dirMu    sync.Mutex
	dirFiles map[string]*os.File

	// opens counts the objects opened for reading (tests: one open per
	// object on the one-step read).
	opens atomic.Int64
	// listStats counts the entries a listing stat'ed, and digestBytes the
	// bytes hashed for digests (tests: ListKeys stats no object,
	// GetSizedInto hashes nothing).
	listStats, digestBytes atomic.Int64
}

var (
	_ Store  = (*File)(nil)
	_ Closer = (*File)(nil)
)

// The modes file:// creates its files and folders with: owner only. The
// objects are Kafka record payloads (and the documents that locate them),
// which no other local user may read; several operators share a store by
// running as one user (docs/layout.md, "file://").
const (
	filePerm os.FileMode = 0o600
	dirPerm  os.FileMode = 0o700
)

const (
	reservedPrefix  = ".nereus-"
	tmpPrefix       = ".nereus-tmp-"
	lockDir         = ".nereus-locks"
	maxSegment      = 255
	defaultStale    = 30 * time.Second
	racyWindow      = time.Second
	maxDigestCached = 1 << 14
)

// direntTypesUnknown makes a typed folder read (ListKeys) take every
// entry as one the file system gives no type for (tests: the stat
// fallback of file systems without d_type).
var direntTypesUnknown = false

// maxDirsCached bounds the folder handles a File keeps open (a variable
// for the tests, which churn through the cache).
var maxDirsCached = 4096

// NewFile opens the file:// store rooted at the existing directory root
// (relative paths are taken from the working directory). It does not create
// the directory: a mistyped path must not look like an empty store. Use
// Open with OpenOptions.Create, or create the directory, to start a store.
func NewFile(root string) (*File, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open file store %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open file store %s: directory does not exist: %w", abs, ErrNotFound)
		}
		return nil, fmt.Errorf("open file store %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open file store %s: not a directory", abs)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open file store %s: %w", abs, err)
	}
	return &File{
		dir:   abs,
		root:  r,
		stale: defaultStale,
		owner: lockOwner(),
		cache: map[string]digestEntry{},
	}, nil
}

func (f *File) String() string { return "file://" + f.dir }

// Dir returns the absolute root directory.
func (f *File) Dir() string { return f.dir }

// Close releases the root directory handle.
func (f *File) Close() error {
	f.dirMu.Lock()
	for _, d := range f.dirFiles {
		d.Close()
	}
	f.dirFiles = nil
	f.dirMu.Unlock()
	return f.root.Close()
}

// fileKey applies ValidateKey and the file:// rules; the key, in slash form,
// is then a path relative to the root.
func fileKey(key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	for rest, more := key, true; more; {
		var seg string
		seg, rest, more = strings.Cut(rest, "/")
		if len(seg) > maxSegment {
			return fmt.Errorf("%w %q: segment longer than %d bytes (file:// limit)", ErrInvalidKey, keys.Printable(key), maxSegment)
		}
		if strings.HasPrefix(seg, reservedPrefix) {
			return fmt.Errorf("%w %q: segment starts with %q (reserved by file://)", ErrInvalidKey, keys.Printable(key), reservedPrefix)
		}
	}
	return nil
}

// mapErr turns a filesystem error about key into the store's vocabulary.
func mapErr(op, key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s %s: %w", op, key, ErrNotFound)
	case isEscape(err):
		return fmt.Errorf("%s %s: %w: a symlink leads outside the store root", op, key, ErrInvalidKey)
	case isFSPermission(err):
		return Permanent(fmt.Errorf("%s %s: %w: %w", op, key, ErrAccessDenied, err))
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// open opens name inside the store root for reading without blocking:
// O_NONBLOCK, so a FIFO (or another special file) where an object or a
// folder is expected is opened at once, for the caller's fstat to refuse,
// instead of waiting in open(2) for a writer that never comes. A regular
// file or a folder reads as usual.
func (f *File) open(name string) (*os.File, error) {
	return f.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// notRegular is the error for a key that names a special file (a FIFO, a
// socket, a device): permanent, naming the key and what it is.
func notRegular(op, key string, mode fs.FileMode) error {
	return Permanent(fmt.Errorf("%s %s: not a regular file but a %s: %w", op, key, FileKind(mode), ErrNotRegular))
}

// ErrNotRegular: a file:// key names a special file (a FIFO, a socket, a
// device) or a symlink to one, which no object is.
var ErrNotRegular = errors.New("not a regular file")

// FileKind names what a file that is not a regular one is: a folder, a
// named pipe (FIFO), a socket, a device.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "folder"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file (" + m.Type().String() + ")"
}

// isEscape recognises os.Root's refusal of a path that leaves the root.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func (f *File) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := fileKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	return f.stat("head", key)
}

// dirFile returns the cached handle of folder dir, opened through the
// store root (so it cannot be outside it), or nil.
func (f *File) dirFile(dir string) *os.File {
	f.dirMu.Lock()
	d := f.dirFiles[dir]
	f.dirMu.Unlock()
	if d != nil {
		return d
	}
	d, err := f.open(dir)
	if err != nil {
		return nil
	}
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		d.Close()
		return nil
	}
	f.dirMu.Lock()
	defer f.dirMu.Unlock()
	if f.dirFiles == nil || len(f.dirFiles) > maxDirsCached {
		for _, old := range f.dirFiles {
			old.Close()
		}
		f.dirFiles = map[string]*os.File{}
	}
	if cur := f.dirFiles[dir]; cur != nil {
		d.Close()
		return cur
	}
	f.dirFiles[dir] = d
	return d
}

// forgetDir drops the cached handle d of folder dir (removed and made
// again meanwhile).
func (f *File) forgetDir(dir string, d *os.File) {
	f.dirMu.Lock()
	defer f.dirMu.Unlock()
	if f.dirFiles[dir] == d {
		delete(f.dirFiles, dir)
		d.Close()
	}
}

// openRead opens key for reading: through the cached handle of its folder
// (openInFolder), else through the store root, which follows symlinks that
// stay inside it and reports any error as the root sees it.
func (f *File) openRead(key string) (*os.File, error) {
	if fh, ok := f.openInFolder(key); ok {
		return fh, nil
	}
	f.opens.Add(1)
	return f.open(key)
}

// stat opens key and returns its info with digests.
func (f *File) stat(op, key string) (ObjectInfo, error) {
	fh, err := f.openRead(key)
	if err != nil {
		return ObjectInfo{}, mapErr(op, key, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return ObjectInfo{}, mapErr(op, key, err)
	}
	if fi.IsDir() {
		return ObjectInfo{}, fmt.Errorf("%s %s: %w (a folder of other keys)", op, key, ErrNotFound)
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, notRegular(op, key, fi.Mode())
	}
	d, err := f.digests(key, fh, fi)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("%s %s: %w", op, key, err)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ETag: d.md5, SHA256: d.sha, Modified: fi.ModTime()}, nil
}

func (f *File) Get(ctx context.Context, key string, r *Range) ([]byte, error) {
	if err := fileKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if data, ok := f.readInFolder(key, r, nil); ok {
		return data, nil
	}
	return f.getGeneral(key, r)
}

// getGeneral is Get through the store root, for what the fast read in the
// folder did not take (a symlink, a missing key, a folder, an I/O error).
func (f *File) getGeneral(key string, r *Range) ([]byte, error) {
	f.opens.Add(1)
	fh, err := f.open(key)
	if err != nil {
		return nil, mapErr("get", key, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, mapErr("get", key, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("get %s: %w (a folder of other keys)", key, ErrNotFound)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular("get", key, fi.Mode())
	}
	lo, hi := rangeBounds(fi.Size(), r)
	buf := make([]byte, hi-lo)
	if _, err := io.ReadFull(io.NewSectionReader(fh, lo, hi-lo), buf); err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return buf, nil
}

// rangeBounds is the byte range [lo, hi) that r selects in an object of
// size bytes (all of it for nil).
func rangeBounds(size int64, r *Range) (lo, hi int64) {
	lo, hi = 0, size
	if r != nil {
		lo = min(max(r.Offset, 0), size)
		if r.Length >= 0 && r.Length < hi-lo {
			hi = lo + r.Length
		}
	}
	return lo, hi
}

// GetInto is Get of the whole object into buf (IntoGetter).
func (f *File) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	if err := fileKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if data, ok := f.readInFolder(key, nil, buf); ok {
		return data, nil
	}
	return f.getGeneral(key, nil)
}

func (f *File) Put(ctx context.Context, key string, data []byte, g Guard) (ObjectInfo, error) {
	if err := fileKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	dir := path.Dir(key)
	tmp, mtime, err := f.writeTemp(key, dir, data)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer f.root.Remove(tmp) // after link(2), or on failure; gone after rename(2)

	lk, err := f.lock(ctx, key)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
	}
	defer lk.release()

	info := ObjectInfo{Key: key, Size: int64(len(data)), ETag: ETagOf(data), SHA256: SHA256Of(data), Modified: mtime}
	switch want, isMatch := g.MatchETag(); {
	case g.IsIfAbsent():
		if err := lk.verify(); err != nil {
			return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
		}
		if err := f.root.Link(tmp, key); err != nil {
			if fi, serr := f.root.Stat(key); serr == nil && fi.IsDir() {
				return ObjectInfo{}, f.commitErr(key, syscall.EISDIR)
			}
			if errors.Is(err, fs.ErrExist) {
				lost := fmt.Errorf("put %s (%s): %w", key, g, ErrPreconditionFailed)
				return ConfirmIfAbsent(ctx, f, key, data, lost)
			}
			return ObjectInfo{}, f.commitErr(key, err)
		}
		_ = f.root.Remove(tmp)
	case isMatch:
		cur, err := f.stat("put", key)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return ObjectInfo{}, fmt.Errorf("put %s (%s): object is gone: %w", key, g, ErrPreconditionFailed)
			}
			return ObjectInfo{}, err
		}
		if cur.ETag != want {
			return ObjectInfo{}, fmt.Errorf("put %s (%s): current etag %s: %w", key, g, cur.ETag, ErrPreconditionFailed)
		}
		if err := lk.verify(); err != nil {
			return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
		}
		if err := f.root.Rename(tmp, key); err != nil {
			return ObjectInfo{}, f.commitErr(key, err)
		}
	default:
		if err := lk.verify(); err != nil {
			return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
		}
		if err := f.root.Rename(tmp, key); err != nil {
			return ObjectInfo{}, f.commitErr(key, err)
		}
	}
	if err := f.syncDir(dir); err != nil {
		return ObjectInfo{}, fmt.Errorf("put %s: sync folder: %w", key, err)
	}
	return info, nil
}

func (f *File) commitErr(key string, err error) error {
	if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, fs.ErrExist) {
		// As permanent as the folder is: a retry meets it again.
		return Permanent(fmt.Errorf("put %s: the key is a folder of other keys (file:// keeps keys as paths): %w", key, err))
	}
	return mapErr("put", key, err)
}

// writeTemp writes data durably to a new temp file in dir and returns its
// name and mtime. A concurrent Delete may remove dir when it empties it, so
// creating the folder and the file is retried a few times.
func (f *File) writeTemp(key, dir string, data []byte) (string, time.Time, error) {
	var last error
	for range 5 {
		if err := f.mkdirs(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// A Delete dropped a folder it had just emptied while we
				// were creating it: create it again.
				last = err
				continue
			}
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
				return "", time.Time{}, Permanent(fmt.Errorf("put %s: a parent of the key is an object (file:// keeps keys as paths): %w", key, err))
			}
			return "", time.Time{}, mapErr("put", key, err)
		}
		name := path.Join(dir, tmpPrefix+randHex(8))
		fh, err := f.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
		if errors.Is(err, fs.ErrNotExist) {
			last = err
			continue
		}
		if err != nil {
			return "", time.Time{}, mapErr("put", key, err)
		}
		if _, err := fh.Write(data); err != nil {
			fh.Close()
			f.root.Remove(name)
			return "", time.Time{}, fmt.Errorf("put %s: write temp file: %w", key, err)
		}
		if err := fh.Sync(); err != nil {
			fh.Close()
			f.root.Remove(name)
			return "", time.Time{}, fmt.Errorf("put %s: sync temp file: %w", key, err)
		}
		fi, err := fh.Stat()
		if err == nil {
			err = fh.Close()
		} else {
			fh.Close()
		}
		if err != nil {
			f.root.Remove(name)
			return "", time.Time{}, fmt.Errorf("put %s: close temp file: %w", key, err)
		}
		return name, fi.ModTime(), nil
	}
	return "", time.Time{}, fmt.Errorf("put %s: create temp file: %w", key, last)
}

// mkdirs creates dir and its parents inside the root and, when it created
// any, fsyncs each created folder's parent so the new entries survive a
// crash together with the object.
func (f *File) mkdirs(dir string) error {
	if dir == "." {
		return nil
	}
	if fi, err := f.root.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	var created []string
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		err := f.root.Mkdir(p, dirPerm)
		switch {
		case err == nil:
			created = append(created, p)
		case errors.Is(err, fs.ErrExist):
			fi, serr := f.root.Stat(p)
			if serr != nil {
				return serr
			}
			if !fi.IsDir() {
				return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
		default:
			return err
		}
	}
	for _, p := range created {
		if err := f.syncDir(path.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

func (f *File) syncDir(dir string) error {
	d, err := f.open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *File) Delete(ctx context.Context, key string, g Guard) error {
	if err := fileKey(key); err != nil {
		return err
	}
	if g.IsIfAbsent() {
		return fmt.Errorf("delete %s: if-absent is not a delete guard", key)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	lk, err := f.lock(ctx, key)
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	defer lk.release()
	if want, ok := g.MatchETag(); ok {
		cur, err := f.stat("delete", key)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("delete %s (%s): object is gone: %w", key, g, ErrPreconditionFailed)
			}
			return err
		}
		if cur.ETag != want {
			return fmt.Errorf("delete %s (%s): current etag %s: %w", key, g, cur.ETag, ErrPreconditionFailed)
		}
	}
	if err := lk.verify(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	fi, err := f.root.Lstat(key)
	if err == nil && fi.IsDir() {
		return fmt.Errorf("delete %s: the key is a folder of other keys, not an object", key)
	}
	if err := f.root.Remove(key); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return mapErr("delete", key, err)
	}
	f.forget(key)
	dir := path.Dir(key)
	// A concurrent Delete of a sibling may have dropped the folder once we
	// emptied it: then its parent holds the change to make durable.
	for d := dir; ; d = path.Dir(d) {
		err := f.syncDir(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || d == "." {
			return fmt.Errorf("delete %s: sync folder: %w", key, err)
		}
	}
	// Empty folders are not objects; drop them (best effort: a concurrent
	// Put recreates what it needs).
	for d := dir; d != "."; d = path.Dir(d) {
		if fi, err := f.root.Lstat(d); err != nil || !fi.IsDir() {
			break // a symlinked folder is the operator's, not ours to drop
		}
		if f.root.Remove(d) != nil {
			break
		}
	}
	return nil
}

func (f *File) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return f.ListAfter(ctx, prefix, "")
}

// ListKeys lists the keys with prefix without their sizes and times
// (KeyLister): each folder's entries are read with their types, and only
// a symlink, or an entry the file system gives no type for, is stat'ed.
// A listing with sizes stats every entry, a system call and a name lookup
// each.
func (f *File) ListKeys(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return f.list(ctx, prefix, "", false)
}

// dirEntry is a listed name, its type when the folder read gave it
// (typed), and its entry from a ReadDir that stat'ed it (de), if any.
type dirEntry struct {
	name  string
	typ   fs.FileMode
	typed bool
	de    fs.DirEntry
}

// info stats the entry, at p: from the ReadDir that did, else through
// the store root (never DirEntry.Info of a folder not opened through the
// root: that stats by a path outside the root's checks).
func (e dirEntry) info(f *File, p string) (fs.FileInfo, error) {
	if e.de != nil {
		return e.de.Info()
	}
	return f.lstat(p)
}

// readDirNames reads folder dir through the store root for a listing
// with sizes: every entry stat'ed (ReadDir) for a whole listing, names
// only after startAfter (the entries at or under what sorts before it
// dropped before anything is stat'ed).
func (f *File) readDirNames(dir, startAfter string) ([]dirEntry, error) {
	d, err := f.open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var ents []dirEntry
	if startAfter == "" {
		des, err := d.ReadDir(-1)
		f.listStats.Add(int64(len(des))) // ReadDir stats each (root)
		if err != nil {
			return nil, err
		}
		ents = make([]dirEntry, len(des))
		for i, de := range des {
			ents[i] = dirEntry{name: de.Name(), de: de}
		}
		return ents, nil
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		p := n
		if dir != "." {
			p = dir + "/" + n
		}
		// Drop what sorts before startAfter (with all under it) before
		// sorting: a tail listing of a big folder sorts only its tail.
		if p <= startAfter && p+"/" < startAfter && !strings.HasPrefix(startAfter, p+"/") {
			continue
		}
		ents = append(ents, dirEntry{name: n})
	}
	return ents, nil
}

// slashHasPrefix reports strings.HasPrefix(p+"/", prefix) without making
// p+"/".
func slashHasPrefix(p, prefix string) bool {
	switch {
	case len(prefix) <= len(p):
		return p[:len(prefix)] == prefix
	case len(prefix) == len(p)+1:
		return prefix[len(p)] == '/' && prefix[:len(p)] == p
	}
	return false
}

// hasPrefixSlash reports strings.HasPrefix(s, p+"/") without making p+"/".
func hasPrefixSlash(s, p string) bool {
	return len(s) > len(p) && s[len(p)] == '/' && s[:len(p)] == p
}

// ListAfter lists the keys with prefix that sort after startAfter. It reads
// directory names only and stats just the entries it returns (or descends
// into), so listing the tail of a stream of thousands of objects costs
// little more than its length.
func (f *File) ListAfter(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	return f.list(ctx, prefix, startAfter, true)
}

// list is ListAfter (sizes) or ListKeys (!sizes: startAfter is "", and
// the infos have Size -1 and no time).
func (f *File) list(ctx context.Context, prefix, startAfter string, sizes bool) ([]ObjectInfo, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
	}
	var out []ObjectInfo
	fis := map[string]fs.FileInfo{}
	var walk func(dir string) error
	walk = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A whole listing with sizes stats every entry relative to the
		// open folder (ReadDir on a folder opened through the root: one
		// fstatat each); a listing after a key reads names only and stats
		// just the entries past it; a listing of keys reads the entries'
		// types (readDirTyped) and stats only what they do not settle,
		// through the root.
		var ents []dirEntry
		var err error
		if !sizes {
			ents, err = f.readDirTyped(dir)
		} else {
			ents, err = f.readDirNames(dir, startAfter)
		}
		if err != nil {
			if dir == start && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
				return nil
			}
			if isEscape(err) {
				return fmt.Errorf("%w: a symlink leads outside the store root", ErrInvalidKey)
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while listing
			}
			return err
		}
		pathOf := func(n string) string {
			if dir == "." {
				return n
			}
			return dir + "/" + n
		}
		slices.SortFunc(ents, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
		out = slices.Grow(out, len(ents))
		for _, ent := range ents {
			name := ent.name
			if strings.HasPrefix(name, reservedPrefix) {
				continue
			}
			p := pathOf(name)
			// Nothing at or under p can match: skip it without a stat.
			if !slashHasPrefix(p, prefix) && !hasPrefixSlash(prefix, p) {
				continue
			}
			if startAfter != "" && p <= startAfter && p+"/" < startAfter && !strings.HasPrefix(startAfter, p+"/") {
				continue
			}
			if ent.typed {
				switch {
				case ent.typ.IsRegular():
					if strings.HasPrefix(p, prefix) && fileKey(p) == nil {
						out = append(out, ObjectInfo{Key: p, Size: -1})
					}
					continue
				case ent.typ.IsDir():
					if err := walk(p); err != nil {
						return err
					}
					continue
				case ent.typ&fs.ModeSymlink == 0:
					continue // a device, pipe or socket: no object
				}
			}
			fi, err := ent.info(f, p)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				fi, err = f.root.Stat(p)
				if err != nil {
					if isEscape(err) {
						return fmt.Errorf("%s: %w: a symlink leads outside the store root", p, ErrInvalidKey)
					}
					continue // dangling
				}
			}
			if fi.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			if !fi.Mode().IsRegular() || !strings.HasPrefix(p, prefix) || fileKey(p) != nil || (startAfter != "" && p <= startAfter) {
				continue
			}
			if !sizes {
				out = append(out, ObjectInfo{Key: p, Size: -1})
				continue
			}
			out = append(out, ObjectInfo{Key: p, Size: fi.Size(), Modified: fi.ModTime()})
			fis[p] = fi
		}
		return nil
	}
	if err := walk(start); err != nil {
		return nil, fmt.Errorf("list %q in %s: %w", prefix, f, err)
	}
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	if !sizes {
		return out, nil
	}
	// The ETag and SHA-256 come only from the in-memory digest cache, so a
	// listing opens no file. Callers that need an object's ETag ask Head,
	// as the Store contract says.
	f.mu.Lock()
	for i := range out {
		fi := fis[out[i].Key]
		if e, ok := f.cache[out[i].Key]; ok {
			if id := idOf(fi); id.ok && e.fresh(id, fi) {
				out[i].ETag, out[i].SHA256 = e.d.md5, e.d.sha
			}
		}
	}
	f.mu.Unlock()
	return out, nil
}

// lstat is the store root's Lstat of p, counted (listStats).
func (f *File) lstat(p string) (fs.FileInfo, error) {
	f.listStats.Add(1)
	return f.root.Lstat(p)
}

// digest is an object's hex MD5 (ETag) and hex SHA-256.
type digest struct{ md5, sha string }

// digestEntry remembers a digest for one version of a file.
type digestEntry struct {
	id       fileID
	size     int64
	mtime    int64 // ns
	recorded int64 // ns, wall clock when the digest was computed
	d        digest
}

// fresh reports whether e describes fi and was recorded safely after its
// mtime (not racy).
func (e digestEntry) fresh(id fileID, fi fs.FileInfo) bool {
	return e.id == id && e.size == fi.Size() && e.mtime == fi.ModTime().UnixNano() &&
		e.recorded-e.mtime > int64(racyWindow)
}

// digests returns the MD5 and SHA-256 of the open file fh (described by
// fi), from memory, from the digest attribute, or by hashing it.
func (f *File) digests(key string, fh *os.File, fi fs.FileInfo) (digest, error) {
	id := idOf(fi)
	f.mu.Lock()
	e, ok := f.cache[key]
	f.mu.Unlock()
	if ok && id.ok && e.fresh(id, fi) {
		return e.d, nil
	}
	if e, ok := readDigestAttr(fh); ok {
		e.id = id
		if e.fresh(id, fi) {
			f.store(key, e)
			return e.d, nil
		}
	}
	f.digestBytes.Add(fi.Size())
	mh, sh := md5.New(), sha256.New()
	if _, err := io.Copy(io.MultiWriter(mh, sh), io.NewSectionReader(fh, 0, fi.Size())); err != nil {
		return digest{}, fmt.Errorf("hash: %w", err)
	}
	d := digest{md5: hex.EncodeToString(mh.Sum(nil)), sha: hex.EncodeToString(sh.Sum(nil))}
	e = digestEntry{id: id, size: fi.Size(), mtime: fi.ModTime().UnixNano(), recorded: time.Now().UnixNano(), d: d}
	if e.fresh(id, fi) {
		writeDigestAttr(fh, e)
		f.store(key, e)
	}
	return d, nil
}

func (f *File) store(key string, e digestEntry) {
	if !e.id.ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cache) >= maxDigestCached {
		clear(f.cache)
	}
	f.cache[key] = e
}

func (f *File) forget(key string) {
	f.mu.Lock()
	delete(f.cache, key)
	f.mu.Unlock()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
