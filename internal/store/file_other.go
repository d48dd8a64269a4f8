//go:build !linux

package store

import (
	"io/fs"
	"os"
)

// fileID identifies an inode; not tracked on this platform, so digests are
// not cached in memory here.
type fileID struct{ ok bool }

func idOf(fs.FileInfo) fileID { return fileID{} }

func readDigestAttr(*os.File) (digestEntry, bool) { return digestEntry{}, false }

func writeDigestAttr(*os.File, digestEntry) {}

// pidNamespace is unknown here, so dead-pid locks wait for the stale age.
func pidNamespace() string { return "" }

func pidAlive(int) bool { return true }

// openInFolder has no fast path here: opens go through the store root.
func (f *File) openInFolder(string) (*os.File, bool) { return nil, false }

// readInFolder has no fast path here.
func (f *File) readInFolder(string, *Range, []byte) ([]byte, bool) { return nil, false }

// readSizedInFolder has no fast path here.
func (f *File) readSizedInFolder(string, []byte) ([]byte, ObjectInfo, bool) {
	return nil, ObjectInfo{}, false
}

// readDirTyped reads folder dir through the store root with its
// entries' types (ReadDir stats every entry here: the types are right,
// the stats not saved).
func (f *File) readDirTyped(dir string) ([]dirEntry, error) {
	d, err := f.open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	ents := make([]dirEntry, len(des))
	for i, de := range des {
		ents[i] = dirEntry{name: de.Name(), typ: de.Type(), typed: true}
	}
	return ents, nil
}
