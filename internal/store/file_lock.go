package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// fileLock is a held per-key lock file of the file:// backend (see File).
type fileLock struct {
	f     *File
	name  string
	token string
}

// lockName is the lock file of key, relative to the root.
func lockName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return lockDir + "/" + hex.EncodeToString(sum[:16]) + ".lock"
}

// lockOwner names this host and pid namespace, so a lock left by a dead pid
// can be broken at once only where that pid is meaningful.
func lockOwner() string {
	host, _ := os.Hostname()
	ns := pidNamespace()
	if host == "" || ns == "" {
		return ""
	}
	return host + "/" + ns
}

// lock acquires key's lock file, waiting (with ctx) while another live
// holder has it and breaking it when its holder is gone.
func (f *File) lock(ctx context.Context, key string) (*fileLock, error) {
	name := lockName(key)
	token := randHex(16)
	body := fmt.Sprintf("nereus-lock v1\ntoken=%s\nowner=%s\npid=%d\ntime=%s\n",
		token, f.owner, os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano))
	wait := time.Millisecond
	for {
		fh, err := f.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
		if err == nil {
			_, werr := fh.WriteString(body)
			cerr := fh.Close()
			if werr != nil || cerr != nil {
				_ = f.root.Remove(name)
				return nil, fmt.Errorf("write lock file %s: %w", name, errors.Join(werr, cerr))
			}
			return &fileLock{f: f, name: name, token: token}, nil
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := f.root.MkdirAll(lockDir, dirPerm); err != nil {
				return nil, fmt.Errorf("create lock folder: %w", err)
			}
			continue
		case errors.Is(err, fs.ErrExist):
			if f.breakIfStale(name) {
				continue
			}
		default:
			return nil, fmt.Errorf("create lock file %s: %w", name, err)
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for lock %s: %w", name, ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, 20*time.Millisecond)
	}
}

// lockInfo is what a lock file says about its holder.
type lockInfo struct {
	raw   []byte
	token string
	owner string
	pid   int
	mtime time.Time
}

func (f *File) readLock(name string) (lockInfo, error) {
	fi, err := f.root.Stat(name)
	if err != nil {
		return lockInfo{}, err
	}
	raw, err := f.root.ReadFile(name)
	if err != nil {
		return lockInfo{}, err
	}
	li := lockInfo{raw: raw, mtime: fi.ModTime()}
	for line := range strings.SplitSeq(string(raw), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "token":
			li.token = v
		case "owner":
			li.owner = v
		case "pid":
			li.pid, _ = strconv.Atoi(v)
		}
	}
	return li, nil
}

// breakIfStale removes the lock file name if its holder is gone and reports
// whether the caller should try to create it again at once.
func (f *File) breakIfStale(name string) bool {
	li, err := f.readLock(name)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	if !f.isStale(li) {
		return false
	}
	// Only one breaker at a time, and only of the very lock judged stale:
	// a fresh lock created after another breaker's removal has a new token.
	brk := name + ".break"
	fh, err := f.root.OpenFile(brk, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		if fi, serr := f.root.Stat(brk); serr == nil && time.Since(fi.ModTime()) > f.stale {
			_ = f.root.Remove(brk) // a breaker died between two syscalls
		}
		return false
	}
	fh.Close()
	defer f.root.Remove(brk)
	again, err := f.readLock(name)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	if !bytes.Equal(again.raw, li.raw) || !again.mtime.Equal(li.mtime) {
		return true // changed hands meanwhile: look again
	}
	return f.root.Remove(name) == nil
}

// isStale decides whether a lock's holder is gone: its pid is dead on this
// host and pid namespace, or the lock is older than the stale age (a live
// holder keeps it for milliseconds).
func (f *File) isStale(li lockInfo) bool {
	if f.owner != "" && li.owner == f.owner && li.pid > 0 && li.token != "" && !pidAlive(li.pid) {
		return true
	}
	return time.Since(li.mtime) > f.stale
}

// verify checks that the lock is still ours just before a commit; a holder
// stalled past the stale age may have lost it to a breaker.
func (l *fileLock) verify() error {
	li, err := l.f.readLock(l.name)
	if err != nil || li.token != l.token {
		return fmt.Errorf("lock %s was broken as stale while held: %w", l.name, ErrConflict)
	}
	return nil
}

// release removes the lock file if it is still ours.
func (l *fileLock) release() {
	if li, err := l.f.readLock(l.name); err == nil && li.token == l.token {
		_ = l.f.root.Remove(l.name)
	}
}
