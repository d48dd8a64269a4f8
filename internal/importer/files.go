package importer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Caps on what the importer reads from a Kafka directory (docs/design.md §14).
const (
	// DefaultMaxSegmentBytes caps one .log file: Kafka's segment.bytes is
	// an int, so no broker writes a larger segment.
	DefaultMaxSegmentBytes = 1<<31 - 1
	// maxCheckpointBytes caps leader-epoch-checkpoint,
	// log-start-offset-checkpoint and partition.metadata.
	maxCheckpointBytes = 16 << 20
)

// segmentFile is one NNNNNNNNNNNNNNNNNNNN.log file of the partition.
type segmentFile struct {
	path string
	name string
	base int64
	size int64
	// mtimeMs is the file's last-modified time (ms since the epoch):
	// LogSegment.lastModified, what LogSegment.largestTimestamp falls back
	// to for a segment whose batches carry no timestamp.
	mtimeMs int64
}

// refused wraps ErrRefused with a message naming the path.
func refused(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrRefused)
}

// checkRegular refuses anything but a regular file reached without a
// symlink; info must come from os.Lstat.
func checkRegular(path string, info os.FileInfo) error {
	if info.Mode()&os.ModeSymlink != 0 {
		return refused("%s is a symbolic link (links are never followed)", path)
	}
	if !info.Mode().IsRegular() {
		return refused("%s is not a regular file (%s)", path, info.Mode().Type())
	}
	return nil
}

// readRegular reads a regular file that is not a symlink, at most max
// bytes. The file opened must be the file Lstat saw (no link swapped in
// between), and must not grow while it is read.
func readRegular(path string, max int64) ([]byte, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(path, li); err != nil {
		return nil, err
	}
	if li.Size() > max {
		return nil, refused("%s: %d bytes, more than the %d-byte cap", path, li.Size(), max)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(li, fi) {
		return nil, refused("%s changed while it was opened (replaced by a link or another file?)", path)
	}
	if fi.Size() > max {
		return nil, refused("%s: %d bytes, more than the %d-byte cap", path, fi.Size(), max)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("read %s: %w (did it shrink while being read?)", path, err)
	}
	var one [1]byte
	if n, _ := f.Read(one[:]); n > 0 {
		return nil, refused("%s grew while it was read; stop the broker before importing", path)
	}
	return data, nil
}

// readOptional reads a small file that may be absent (nil, nil then).
func readOptional(path string) ([]byte, error) {
	data, err := readRegular(path, maxCheckpointBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// listSegments lists the partition directory dir: it refuses symlinks and
// non-regular entries, refuses an interrupted log-cleaner swap, and returns
// the .log files in base-offset order plus notes about ignored files.
func listSegments(dir string) ([]segmentFile, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read directory %s: %w", dir, err)
	}
	var segs []segmentFile
	var notes []string
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		info, err := os.Lstat(path)
		if err != nil {
			return nil, nil, err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil, nil, refused("%s is a symbolic link (links are never followed)", path)
		}
		if !info.Mode().IsRegular() {
			return nil, nil, refused("%s is not a regular file (%s)", path, info.Mode().Type())
		}
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".swap"):
			return nil, nil, refused("%s is left over from an interrupted log-cleaner swap; start the broker once so that it completes the swap, then import", path)
		case strings.HasSuffix(name, ".cleaned"), strings.HasSuffix(name, ".deleted"):
			notes = append(notes, fmt.Sprintf("ignored %s: Kafka deletes such files when it loads the log", name))
			continue
		case !strings.HasSuffix(name, ".log"):
			continue
		}
		stem := strings.TrimSuffix(name, ".log")
		base, err := strconv.ParseInt(stem, 10, 64)
		if len(stem) != 20 || err != nil || base < 0 || strings.TrimLeft(stem, "0123456789") != "" {
			return nil, nil, refused("%s is not a segment file: a segment is named by its 20-digit base offset", path)
		}
		segs = append(segs, segmentFile{path: path, name: name, base: base, size: info.Size(), mtimeMs: info.ModTime().UnixMilli()})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].base < segs[j].base })
	return segs, notes, nil
}

// tpKey names a topic-partition in a checkpoint file.
type tpKey struct {
	topic     string
	partition int32
}

// parseOffsetCheckpoint reads a broker offset checkpoint file
// (log-start-offset-checkpoint, recovery-point-offset-checkpoint …;
// OffsetCheckpointFile over CheckpointFile): version 0, a count line, then
// "topic partition offset" lines.
func parseOffsetCheckpoint(b []byte) (map[tpKey]int64, error) {
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	out := map[tpKey]int64{}
	if len(lines) == 0 {
		return out, nil
	}
	if strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("version %q, want 0", clip(lines[0]))
	}
	if len(lines) == 1 {
		return out, nil
	}
	count, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || count < 0 {
		return nil, fmt.Errorf("line 2: malformed count %q", clip(lines[1]))
	}
	if len(lines)-2 != count {
		return nil, fmt.Errorf("%d entries declared, %d present", count, len(lines)-2)
	}
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: malformed entry %q", i+3, clip(l))
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("line %d: malformed entry %q", i+3, clip(l))
		}
		out[tpKey{f[0], int32(p)}] = off
	}
	return out, nil
}

// parsePartitionMetadata reads the topic id from a partition.metadata file
// (Kafka 2.8+: "version: 0" and "topic_id: <base64 uuid>").
func parsePartitionMetadata(b []byte) (string, error) {
	var version, id string
	for _, l := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "version":
			version = strings.TrimSpace(v)
		case "topic_id":
			id = strings.TrimSpace(v)
		}
	}
	if version != "0" {
		return "", fmt.Errorf("version %q, want 0", clip(version))
	}
	if id == "" || len(id) > 64 {
		return "", fmt.Errorf("topic_id %q: want 1..64 characters", clip(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return "", fmt.Errorf("topic_id %q: want printable ASCII", clip(id))
		}
	}
	return id, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
