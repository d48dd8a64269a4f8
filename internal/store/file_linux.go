//go:build linux

package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fileID identifies an inode.
type fileID struct {
	dev, ino uint64
	ok       bool
}

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, ok: true}
}

const digestAttr = "user.nereus.digest"

// readDigestAttr reads the digest remembered on the file, if any.
func readDigestAttr(fh *os.File) (digestEntry, bool) {
	return readDigestAttrFD(int(fh.Fd()))
}

// readDigestAttrFD is readDigestAttr on a raw descriptor.
func readDigestAttrFD(fd int) (digestEntry, bool) {
	var buf [256]byte
	n, err := unix.Fgetxattr(fd, digestAttr, buf[:])
	if err != nil {
		return digestEntry{}, false
	}
	return parseDigestAttr(string(buf[:n]))
}

// parseDigestAttr decodes "v1 SIZE MTIME RECORDED MD5 SHA256".
func parseDigestAttr(v string) (digestEntry, bool) {
	fields := strings.Fields(v)
	if len(fields) != 6 || fields[0] != "v1" {
		return digestEntry{}, false
	}
	var e digestEntry
	var err error
	for i, p := range []*int64{&e.size, &e.mtime, &e.recorded} {
		if *p, err = strconv.ParseInt(fields[i+1], 10, 64); err != nil {
			return digestEntry{}, false
		}
	}
	e.d.md5, e.d.sha = fields[4], fields[5]
	if !isPlainETag(e.d.md5) || len(e.d.sha) != 64 || strings.Trim(e.d.sha, "0123456789abcdef") != "" {
		return digestEntry{}, false
	}
	return e, true
}

// writeDigestAttr remembers a digest on the file; filesystems without
// extended attributes (or read-only ones) just do not remember.
func writeDigestAttr(fh *os.File, e digestEntry) {
	v := fmt.Sprintf("v1 %d %d %d %s %s", e.size, e.mtime, e.recorded, e.d.md5, e.d.sha)
	_ = unix.Fsetxattr(int(fh.Fd()), digestAttr, []byte(v), 0) // best effort
}

// pidNamespace names this process's pid namespace ("pid:[4026531836]").
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// pidAlive reports whether pid exists in this pid namespace.
func pidAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// openFD opens the last segment of key through the cached handle of its
// folder: openat(2) with O_NOFOLLOW, so a symlink is refused here (the
// store root's general path decides about it) and nothing outside the root
// is reached. ok is false on any failure; the caller then takes the
// general path, which reports errors as the store root sees them.
func (f *File) openFD(key string) (int, bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return -1, false
	}
	dir, name := key[:i], key[i+1:]
	d := f.dirFile(dir)
	if d == nil {
		return -1, false
	}
	// Through the handle's RawConn: the folder's descriptor stays valid
	// while openat runs even if another goroutine drops it from the cache
	// and closes it meanwhile (a raw Fd() could be closed and reused).
	rc, err := d.SyscallConn()
	if err != nil {
		return -1, false
	}
	fd := -1
	f.opens.Add(1)
	cerr := rc.Control(func(dfd uintptr) {
		fd, err = unix.Openat(int(dfd), name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	})
	if cerr != nil {
		return -1, false // closed meanwhile
	}
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			f.forgetDir(dir, d) // the folder may have been made again
		}
		return -1, false
	}
	return fd, true
}

// openInFolder is openFD as an *os.File (Head, digests).
func (f *File) openInFolder(key string) (*os.File, bool) {
	fd, ok := f.openFD(key)
	if !ok {
		return nil, false
	}
	return os.NewFile(uintptr(fd), key), true
}

// readInFolder reads key (or the range r of it) into buf[:0] (grown when
// too small) with raw system calls: openFD, fstat, pread, close. ok is
// false on any failure, for the general path to decide.
func (f *File) readInFolder(key string, r *Range, buf []byte) ([]byte, bool) {
	fd, ok := f.openFD(key)
	if !ok {
		return nil, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false
	}
	lo, hi := rangeBounds(st.Size, r)
	if int64(cap(buf)) < hi-lo {
		buf = make([]byte, hi-lo)
	}
	buf = buf[:hi-lo]
	for n := 0; n < len(buf); {
		m, err := unix.Pread(fd, buf[n:], lo+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || m == 0 {
			return nil, false // truncated meanwhile, or an I/O error
		}
		n += m
	}
	return buf, true
}

// readSizedInFolder reads the whole of key into buf[:0] (grown when too
// small) with its size and modification time, opening it once: openFD,
// fstat, pread, close. Nothing is hashed (GetSizedInto: the caller hashes
// the bytes itself): the info has no ETag and no SHA-256. ok is false on
// any failure, for the general path to decide.
func (f *File) readSizedInFolder(key string, buf []byte) ([]byte, ObjectInfo, bool) {
	fd, ok := f.openFD(key)
	if !ok {
		return nil, ObjectInfo{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, ObjectInfo{}, false
	}
	if int64(cap(buf)) < st.Size {
		buf = make([]byte, st.Size)
	}
	buf = buf[:st.Size]
	for n := 0; n < len(buf); {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || m == 0 {
			return nil, ObjectInfo{}, false // truncated meanwhile, or an I/O error
		}
		n += m
	}
	return buf, ObjectInfo{Key: key, Size: st.Size, Modified: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}, true
}

// readDirTyped reads folder dir, opened through the store root, for a
// listing that needs its entries' types but not their sizes (ListKeys):
// getdents64 on the folder's descriptor, the type of each entry from its
// d_type, and only an entry the file system gives no type for stat'ed
// (fstatat relative to the folder, no symlink followed). ReadDir on a
// folder opened through an os.Root would stat every entry.
func (f *File) readDirTyped(dir string) ([]dirEntry, error) {
	d, err := f.open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	rc, err := d.SyscallConn()
	if err != nil {
		return nil, err
	}
	var ents []dirEntry
	buf := make([]byte, 32<<10)
	var derr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, err := unix.Getdents(int(fd), buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				derr = &fs.PathError{Op: "readdirent", Path: dir, Err: err}
				return
			}
			if n <= 0 {
				return
			}
			ents = slices.Grow(ents, n/32) // about one entry per 32 bytes read

			for b := buf[:n]; len(b) > 0; {
				// struct linux_dirent64: ino u64, off s64, reclen u16,
				// type u8, name (NUL-terminated, padded to reclen).
				if len(b) < 19 {
					derr = &fs.PathError{Op: "readdirent", Path: dir, Err: unix.EIO}
					return
				}
				reclen := int(binary.NativeEndian.Uint16(b[16:18]))
				if reclen < 19 || reclen > len(b) {
					derr = &fs.PathError{Op: "readdirent", Path: dir, Err: unix.EIO}
					return
				}
				typ, name := b[18], b[19:reclen]
				if i := bytes.IndexByte(name, 0); i >= 0 {
					name = name[:i]
				}
				b = b[reclen:]
				if len(name) == 0 || string(name) == "." || string(name) == ".." {
					continue
				}
				e := dirEntry{name: string(name), typed: true}
				if direntTypesUnknown {
					typ = unix.DT_UNKNOWN
				}
				switch typ {
				case unix.DT_REG:
				case unix.DT_DIR:
					e.typ = fs.ModeDir
				case unix.DT_LNK:
					e.typ = fs.ModeSymlink
				case unix.DT_UNKNOWN:
					var st unix.Stat_t
					if err := unix.Fstatat(int(fd), e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
						if errors.Is(err, unix.ENOENT) {
							continue // removed while listing
						}
						derr = &fs.PathError{Op: "lstat", Path: dir + "/" + e.name, Err: err}
						return
					}
					f.listStats.Add(1)
					switch st.Mode & unix.S_IFMT {
					case unix.S_IFREG:
					case unix.S_IFDIR:
						e.typ = fs.ModeDir
					case unix.S_IFLNK:
						e.typ = fs.ModeSymlink
					default:
						e.typ = fs.ModeIrregular
					}
				default:
					e.typ = fs.ModeIrregular // a device, pipe or socket
				}
				ents = append(ents, e)
			}
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	return ents, derr
}
