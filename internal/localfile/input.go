package localfile

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrNotRegular is an input path that names a FIFO, socket, device or
// folder where a file is wanted.
var ErrNotRegular = errkind.New(errkind.Usage, "not a regular file")

// ErrTooBig is an input file larger than its cap.
var ErrTooBig = errkind.New(errkind.Usage, "file too large")

// ReadInput reads the local file path, of at most max bytes, that the
// operator named (a flag's file, a config file). It never blocks in
// open(2): the file is opened with O_NONBLOCK and checked with fstat
// before any read, so a FIFO with no writer (or a socket, a device, a
// folder) is refused at once with ErrNotRegular, naming the path and what
// it is, rather than waiting forever. The check is on the open file, so a
// path swapped for a FIFO after a stat cannot slip through.
func ReadInput(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: it is a %s", path, ErrNotRegular, store.FileKind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than %d", path, ErrTooBig, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: more than %d bytes (it grew while read)", path, ErrTooBig, max)
	}
	return b, nil
}
