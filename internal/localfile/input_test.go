//go:build unix

package localfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
)

// ReadInput refuses a FIFO (no writer), a folder and a file over its cap
// at once, as usage errors naming the path; a regular file reads whole.
func TestReadInputNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "offsets.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range []struct {
			path string
			want error
		}{{fifo, ErrNotRegular}, {dir, ErrNotRegular}, {big, ErrTooBig}} {
			_, err := ReadInput(c.path, 10)
			if !errors.Is(err, c.want) || !errkind.Is(err, errkind.Usage) || !errorNames(err, c.path) {
				t.Errorf("%s: %v, want %v naming it", c.path, err, c.want)
			}
		}
		if b, err := ReadInput(ok, 10); err != nil || string(b) != "hello" {
			t.Errorf("regular file: %q %v", b, err)
		}
		if _, err := ReadInput(filepath.Join(dir, "none"), 10); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("missing file: %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ReadInput blocked on a FIFO")
	}
}

func errorNames(err error, path string) bool {
	return err != nil && len(path) > 0 && strings.Contains(err.Error(), path)
}
