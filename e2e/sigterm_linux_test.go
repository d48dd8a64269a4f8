//go:build linux

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
)

// TestEveryCommandEndsOnSIGTERM: a command waiting on something that may
// never come (a partition lease another job holds, a FIFO named as an
// input file, a FIFO where the store has an object) ends within a second
// of one SIGTERM: with 130 when it was interrupted, or with its own
// refusal when it never waited (a FIFO is refused without blocking: exit
// 2 for an input file, an error naming the key for a store key). Before,
// a FIFO blocked open(2) forever and SIGTERM did not end it.
func TestEveryCommandEndsOnSIGTERM(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	demoBase("--records", "1500", "--partitions", "1")(t, dir)
	st := fileStore(t, dir)
	holdLease(t, st, "orders", 0)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A FIFO in the store where payments-0's head is.
	b, _, err := layout.LoadBinding(context.Background(), st, "payments", 0)
	if err != nil {
		t.Fatal(err)
	}
	head := filepath.Join(dir, filepath.FromSlash(layout.HeadKey(b.StreamID)))
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(head, 0o600); err != nil {
		t.Fatal(err)
	}
	wait := []string{"--lease-wait", "10m"}
	cases := []struct {
		name  string
		args  []string
		codes []int // what it may end with
		want  string
	}{
		{"trim waiting for a held lease", append([]string{"trim", "orders-0", "--to", "10"}, wait...), []int{130}, ""},
		{"retention run waiting for a held lease", append([]string{"retention", "run", "orders-0", "--yes"}, wait...), []int{130}, ""},
		{"gc waiting for a held lease", append([]string{"gc"}, wait...), []int{130}, ""},
		{"config set waiting for a held lease", append([]string{"config", "set", "orders-0", "retention.ms=1000"}, wait...), []int{130}, ""},
		{"checkpoint create waiting for a held lease", append([]string{"checkpoint", "create", "orders-0"}, wait...), []int{130}, ""},
		{"delete-records from a FIFO", []string{"delete-records", "--offset-json-file", fifo}, []int{2, 130}, "not a regular file"},
		{"a FIFO as the config file", []string{"--config", fifo, "status"}, []int{2, 130}, "not a regular file"},
		{"checkpoint inspect of a FIFO", []string{"checkpoint", "inspect", "--file", fifo}, []int{2, 130}, "not a regular file"},
		{"replay over a FIFO head", []string{"replay", "payments-0"}, []int{1, 3, 130}, layout.HeadKey(b.StreamID)},
		{"store cat of a FIFO key", []string{"store", "cat", layout.HeadKey(b.StreamID)}, []int{1, 130}, layout.HeadKey(b.StreamID)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, out, errb := cliProc(t, "file://"+dir, nil, c.args...)
			done := make(chan error, 1)
			go func() { done <- p.Wait() }()
			time.Sleep(300 * time.Millisecond)
			_ = p.Process.Signal(syscall.SIGTERM)
			start := time.Now()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(time.Second):
				_ = p.Process.Kill()
				<-done
				t.Fatalf("still running a second after SIGTERM\n%s%s", out, errb)
			}
			code := exitOf(t, werr)
			ok := false
			for _, want := range c.codes {
				ok = ok || code == want
			}
			if !ok {
				t.Fatalf("exit %d, want one of %v\n%s%s", code, c.codes, out, errb)
			}
			if c.want != "" && code != 130 && !strings.Contains(out.String()+errb.String(), c.want) {
				t.Fatalf("the error does not say %q:\n%s%s", c.want, out, errb)
			}
			t.Logf("exit %d %s after SIGTERM", code, time.Since(start).Round(time.Millisecond))
		})
	}
}
