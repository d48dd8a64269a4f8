package kafka

import (
	"fmt"
	"strconv"
	"strings"
)

// leader-epoch-checkpoint files (LeaderEpochCheckpointFile.java over
// CheckpointFile.java): text, one line with the version (0), one with the
// entry count, then one "epoch startOffset" line per entry, lines ended by
// "\n".

const epochCheckpointVersion = 0

// EpochEntry is one line of a leader-epoch-checkpoint: the epoch and the
// first offset written under it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// maxCheckpointLine bounds one line of a checkpoint file; real lines are
// under 40 bytes.
const maxCheckpointLine = 4096

// ReadEpochCheckpoint parses a leader-epoch-checkpoint as Kafka's
// CheckpointReadBuffer does: an empty file, or one with only the version
// line, holds no entries; the version must be 0; each entry line is two
// integers separated by whitespace; the number of entries must equal the
// count line. Lines end with "\n", "\r\n" or "\r" (Java's readLine).
func ReadEpochCheckpoint(b []byte) ([]EpochEntry, error) {
	lines := javaLines(b)
	line, ok, err := lines.next()
	if err != nil {
		return nil, fmt.Errorf("read leader-epoch-checkpoint: %w", err)
	}
	if !ok {
		return nil, nil
	}
	v, err := strconv.ParseInt(line, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("read leader-epoch-checkpoint: line 1: malformed version %q: %w", clip(line), ErrCorrupt)
	}
	if v != epochCheckpointVersion {
		return nil, fmt.Errorf("read leader-epoch-checkpoint: version %d, want %d: %w", v, epochCheckpointVersion, ErrCorrupt)
	}
	line, ok, err = lines.next()
	if err != nil {
		return nil, fmt.Errorf("read leader-epoch-checkpoint: %w", err)
	}
	if !ok {
		return nil, nil
	}
	count, err := strconv.ParseInt(line, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("read leader-epoch-checkpoint: line 2: malformed count %q: %w", clip(line), ErrCorrupt)
	}
	if count < 0 {
		return nil, fmt.Errorf("read leader-epoch-checkpoint: negative count %d: %w", count, ErrCorrupt)
	}
	var entries []EpochEntry
	for n := 3; ; n++ {
		line, ok, err = lines.next()
		if err != nil {
			return nil, fmt.Errorf("read leader-epoch-checkpoint: %w", err)
		}
		if !ok {
			break
		}
		f := strings.FieldsFunc(line, isJavaSpace)
		if len(f) != 2 || (len(line) > 0 && isJavaSpace(rune(line[0]))) {
			return nil, fmt.Errorf("read leader-epoch-checkpoint: line %d: malformed entry %q: %w", n, clip(line), ErrCorrupt)
		}
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		start, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("read leader-epoch-checkpoint: line %d: malformed entry %q: %w", n, clip(line), ErrCorrupt)
		}
		if int64(len(entries)) >= count {
			return nil, fmt.Errorf("read leader-epoch-checkpoint: more than the %d entries declared: %w", count, ErrCorrupt)
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	if int64(len(entries)) != count {
		return nil, fmt.Errorf("read leader-epoch-checkpoint: %d entries declared, %d present: %w", count, len(entries), ErrTruncated)
	}
	return entries, nil
}

// WriteEpochCheckpoint formats entries as Kafka writes the file.
func WriteEpochCheckpoint(entries []EpochEntry) []byte {
	b := make([]byte, 0, 8+len(entries)*16)
	b = strconv.AppendInt(b, epochCheckpointVersion, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(len(entries)), 10)
	b = append(b, '\n')
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.Epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.StartOffset, 10)
		b = append(b, '\n')
	}
	return b
}

// isJavaSpace matches the characters of Java's regex \s: space, \t, \n,
// \x0B, \f, \r.
func isJavaSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\x0b', '\f', '\r':
		return true
	}
	return false
}

type lineReader struct {
	b    []byte
	line int
}

func javaLines(b []byte) *lineReader { return &lineReader{b: b} }

// next returns the next line as java.io.BufferedReader.readLine would.
func (r *lineReader) next() (string, bool, error) {
	if len(r.b) == 0 {
		return "", false, nil
	}
	r.line++
	for i, c := range r.b {
		if i >= maxCheckpointLine {
			return "", false, fmt.Errorf("line %d longer than %d bytes: %w", r.line, maxCheckpointLine, ErrCorrupt)
		}
		if c == '\n' || c == '\r' {
			line := string(r.b[:i])
			r.b = r.b[i+1:]
			if c == '\r' && len(r.b) > 0 && r.b[0] == '\n' {
				r.b = r.b[1:]
			}
			return line, true, nil
		}
	}
	if len(r.b) > maxCheckpointLine {
		return "", false, fmt.Errorf("line %d longer than %d bytes: %w", r.line, maxCheckpointLine, ErrCorrupt)
	}
	line := string(r.b)
	r.b = nil
	return line, true, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
