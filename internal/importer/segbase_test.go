package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// segmentBases is the base offset of every virtual segment of a replay.
func segmentBases(p *state.Partition) string {
	var out []string
	for _, s := range p.Segments {
		out = append(out, strconv.FormatInt(s.Base, 10))
	}
	return strings.Join(out, " ")
}

// replayPaths replays b's stream from its genesis (full) and through a
// checkpoint made at the head, and fails unless both give one state
// digest; it returns the full replay.
func replayPaths(t *testing.T, st store.Store, b *layout.Binding) *recovery.Result {
	t.Helper()
	ctx := context.Background()
	full, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recovery.Create(ctx, st, b, "", false); err != nil {
		t.Fatal(err)
	}
	b2, _, err := layout.LoadBinding(ctx, st, b.Topic, b.Partition)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := recovery.Replay(ctx, st, b2, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Chosen == nil {
		t.Fatalf("no checkpoint chosen: %+v", cp.Candidates)
	}
	if cp.Digest() != full.Digest() {
		t.Fatalf("checkpoint path %s (bases %s) != full replay %s (bases %s)", cp.Digest(), segmentBases(cp.State), full.Digest(), segmentBases(full.State))
	}
	return full
}

// nextBases is the next_segment_base of every generation ("-" when none).
func nextBases(t *testing.T, st store.Store, sid string) string {
	t.Helper()
	ctx := context.Background()
	gens, err := layout.ListGenerations(ctx, st, sid)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, st, sid, n)
		if err != nil {
			t.Fatal(err)
		}
		if g.NextSegmentBase == nil {
			out = append(out, "-")
		} else {
			out = append(out, strconv.FormatInt(*g.NextSegmentBase, 10))
		}
	}
	return strings.Join(out, " ")
}

// Kafka's segment base is the .log file's name (LogSegment, LocalLog;
// LogCleaner.cleanSegments keeps segments.head.baseOffset when it removes
// a segment's first batches). A file named 7 that holds batches from 10 on,
// after a segment that ends at 5, is a segment starting at 7, sealed in
// the middle of the log or the open one at its end: deleting [0, 5) by
// retention.ms puts the log start at 7, Kafka's, not at the first batch
// 10. Import, a full replay and the checkpoint path give the same
// segments; only the manifest before the shortened file records the base.
func TestImportSegmentBaseIsFileName(t *testing.T) {
	now := time.Now()
	old := now.Add(-2 * time.Hour).UnixMilli()
	fresh := now.UnixMilli()
	for _, c := range []struct {
		name  string
		segs  map[int64][]byte
		bases string // of the replayed segments
		nexts string // of the generations' manifests
	}{
		{"sealed", map[int64][]byte{
			0:  segmentTs(t, []int64{0, 1, 2, 3, 4}, old),
			7:  segmentTs(t, []int64{10, 11, 12, 13, 14}, fresh),
			15: segmentTs(t, []int64{15, 16}, fresh),
		}, "0 7 15", "7 -"},
		{"open", map[int64][]byte{
			0: segmentTs(t, []int64{0, 1, 2, 3, 4}, old),
			7: segmentTs(t, []int64{10, 11, 12}, fresh),
		}, "0 7", "7"},
		{"after an empty file", map[int64][]byte{
			0: segmentTs(t, []int64{0, 1, 2, 3, 4}, old),
			5: nil, // no batches: a segment of its own [5, 7) (its mtime is now: retention stops there)
			7: segmentTs(t, []int64{7, 8}, fresh),
		}, "0 5 7", "-"},
		{"named at the end", map[int64][]byte{
			0: segmentTs(t, []int64{0, 1, 2, 3, 4}, old),
			5: segmentTs(t, []int64{10, 11}, fresh),
		}, "0 5", "5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs", "base-0")
			writeSegments(t, dir, c.segs)
			st := store.NewMem("t")
			res := run(t, st, Options{Dir: dir, TopicConfig: []retention.KV{{Key: "retention.ms", Value: "3600000"}}})
			for _, n := range res.Notes {
				if strings.Contains(n, "Kafka's segment starts at") {
					t.Fatalf("import still notes a segment base it does not keep: %q", n)
				}
			}
			if got := nextBases(t, st, res.StreamID); got != c.nexts {
				t.Fatalf("next_segment_base of the generations: %s, want %s", got, c.nexts)
			}
			full := replayPaths(t, st, loadBinding(t, st, res))
			if got := segmentBases(full.State); got != c.bases {
				t.Fatalf("segment bases %s, want the file names %s", got, c.bases)
			}
			if full.Digest() != res.StateDigest {
				t.Fatalf("replay digest %s, import's %s", full.Digest(), res.StateDigest)
			}
			want := c.bases[strings.IndexByte(c.bases, ' ')+1:]
			want = strings.Fields(want)[0]
			if r := planRetention(t, st, "base", 0, now); fmt.Sprint(r.NewLogStart) != want {
				t.Fatalf("new log start %d, want Kafka's %s (the file name, not the first batch 10); plan %+v", r.NewLogStart, want, r.Plan)
			}
		})
	}
}

// The real compacted fixtures import with segment bases equal to their
// .log file names, and so does a log built from their unchanged files
// where the cleaner's removal of the first batches shows at a file name:
// __consumer_offsets-39's first file (batches from 4, the cleaner removed
// 0-3) named 2, after __consumer_offsets-17's first file (offset 0).
func TestImportFixtureSegmentBasesAreFileNames(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, dir string) {
		t.Helper()
		st := store.NewMem("t")
		res := run(t, st, Options{Dir: dir})
		b := loadBinding(t, st, res)
		full := replayPaths(t, st, b)
		var names []string
		for _, s := range res.Segments {
			if s.Batches > 0 {
				names = append(names, strconv.FormatInt(s.BaseOffset, 10))
			}
		}
		if got, want := segmentBases(full.State), strings.Join(names, " "); got != want {
			t.Fatalf("%s: segment bases %s, file names %s", dir, got, want)
		}
		if _, err := recovery.Replay(ctx, st, b, recovery.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	dirs, err := filepath.Glob(filepath.Join(fixtureRoot, "kafka-2.7-compacted", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if logs, _ := filepath.Glob(filepath.Join(d, "*.log")); len(logs) > 1 {
			t.Run(filepath.Base(d), func(t *testing.T) { check(t, copyPartition(t, d)) })
			n++
		}
	}
	if n == 0 {
		t.Fatal("no compacted fixture with several segments")
	}

	dir := filepath.Join(t.TempDir(), "logs", "__consumer_offsets-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for src, name := range map[string]int64{
		"__consumer_offsets-17/00000000000000000000.log": 0,
		"__consumer_offsets-39/00000000000000000000.log": 2,
		"__consumer_offsets-39/00000000000000000018.log": 18,
	} {
		data := readFile(t, filepath.Join(fixtureRoot, "kafka-2.7-compacted", src))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", name)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir})
	if f := res.Segments[1].FirstOffset; f == nil || *f != 4 {
		t.Fatalf("the file named 2 starts at %v, want its first batch at 4", f)
	}
	full := replayPaths(t, st, loadBinding(t, st, res))
	if got := segmentBases(full.State); got != "0 2 18" {
		t.Fatalf("segment bases %s, want the file names 0 2 18", got)
	}
	if got := nextBases(t, st, res.StreamID); got != "2 -" {
		t.Fatalf("next_segment_base of the generations: %s, want 2 -", got)
	}
}
