package compaction

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/ntc2"
)

// TestSpillLeavesNothingBehind: a spill file's name is gone from its
// folder while the pass still writes and reads it, so no kill (SIGKILL
// included) leaves record bytes in the temp folder; a killed run's
// leftover from a platform that keeps open files' names is removed by the
// next compaction once a day old, and a young one is left to its run.
func TestSpillLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, spillPrefix+"4242-1.spill")
	young := filepath.Join(dir, spillPrefix+"4243-2.spill")
	other := filepath.Join(dir, "someone-else.spill")
	for _, p := range []string{old, young, other} {
		if err := os.WriteFile(p, []byte("rows"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{old, other} {
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	s, err := newSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := []ntc2.Row{{Offset: 1, Key: []byte("k1"), Value: []byte("secret-1")}, {Offset: 2, Key: []byte("k2"), Value: nil}}
	for i := range rows {
		if err := s.write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	if names[filepath.Base(old)] {
		t.Errorf("a day-old leftover %s was not removed", old)
	}
	if !names[filepath.Base(young)] || !names[filepath.Base(other)] {
		t.Errorf("removed a young spill or a file not ours: %v", names)
	}
	if runtime.GOOS != "windows" && len(names) != 2 {
		t.Fatalf("the open spill file has a name in %s: %v (a kill would leave it)", dir, names)
	}
	var got []ntc2.Row
	if err := s.each(func(r *ntc2.Row) error { got = append(got, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].Value) != "secret-1" || got[1].Value != nil {
		t.Fatalf("read back %+v", got)
	}
	s.remove()
}
