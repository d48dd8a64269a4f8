package store

import (
	"path/filepath"
	"time"
)

// Test hooks for the external test package.

// SetLockStale changes the stale age of f's lock files.
func SetLockStale(f *File, d time.Duration) { f.stale = d }

// LockPath is the absolute path of key's lock file in f.
func LockPath(f *File, key string) string {
	return filepath.Join(f.dir, filepath.FromSlash(lockName(key)))
}

// LockOwner is this process's lock owner identity.
func LockOwner() string { return lockOwner() }

// SetMaxDirsCached changes how many folder handles a File keeps, and
// returns a func restoring it.
func SetMaxDirsCached(n int) func() {
	old := maxDirsCached
	maxDirsCached = n
	return func() { maxDirsCached = old }
}

// Opens is how many times f opened an object for reading.
func Opens(f *File) int64 { return f.opens.Load() }

// ListStats is how many entries f's listings stat'ed.
func ListStats(f *File) int64 { return f.listStats.Load() }

// DigestBytes is how many bytes f hashed for the digests of its infos.
func DigestBytes(f *File) int64 { return f.digestBytes.Load() }

// SetDirentTypesUnknown makes ListKeys take every folder entry as one of
// unknown type, and returns a func restoring it.
func SetDirentTypesUnknown(v bool) func() {
	old := direntTypesUnknown
	direntTypesUnknown = v
	return func() { direntTypesUnknown = old }
}
