//go:build linux

package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

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
	buf := make([]byte, 256)
	n, err := unix.Fgetxattr(int(fh.Fd()), digestAttr, buf)
	if err != nil {
		return digestEntry{}, false
	}
	var e digestEntry
	var v string
	if _, err := fmt.Sscanf(string(buf[:n]), "%s %d %d %d %s %s", &v, &e.size, &e.mtime, &e.recorded, &e.d.md5, &e.d.sha); err != nil || v != "v1" {
		return digestEntry{}, false
	}
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
