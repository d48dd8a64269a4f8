package importer

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
)

// A .log file without batches that is not the last is a segment of its
// own to Kafka (UnifiedLog.deleteRetentionMsBreachedSegments walks the
// segments in order and stops at the first it keeps; deletableSegments'
// upper bound is the next segment's base), and its largest timestamp is
// the file's mtime (LogSegment.largestTimestamp: maxTimestampSoFar() when
// >= 0, else lastModified()). With retention.ms one hour and every batch
// two hours old, Kafka deletes [0, 5), keeps the empty segment [5, 7) when
// its file is fresh and stops there: log start 5. When the empty file is
// old too, it goes and so does everything after it: log start = HW 12.
// Merged into the next segment (before), retention planned past it and
// deleted [7, 12), which Kafka keeps.
func TestImportEmptySegmentStopsRetention(t *testing.T) {
	now := time.Now()
	old := now.Add(-2 * time.Hour).UnixMilli()
	for _, c := range []struct {
		name     string
		mtime    time.Time // of the empty file
		logStart int64     // Kafka's after one retention pass at now
	}{
		{"fresh empty file", now.Add(-time.Minute), 5},
		{"old empty file", now.Add(-3 * time.Hour), 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs", "empty-0")
			writeSegments(t, dir, map[int64][]byte{
				0:  segmentTs(t, offsets(0, 5), old),
				5:  nil,
				7:  segmentTs(t, offsets(7, 10), old),
				10: segmentTs(t, offsets(10, 12), old),
			})
			setMtime(t, filepath.Join(dir, "00000000000000000005.log"), c.mtime)
			st := store.NewMem("t")
			res := run(t, st, Options{Dir: dir, TopicConfig: []retention.KV{{Key: "retention.ms", Value: "3600000"}}})
			if e := res.Segments[1].EmptySegmentEnd; e == nil || *e != 7 || res.Segments[1].Generation != nil {
				t.Fatalf("empty file report %+v", res.Segments[1])
			}
			g, _, err := layout.LoadGeneration(context.Background(), st, res.StreamID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.EmptySegments) != 1 || g.EmptySegments[0].Base != 5 || g.EmptySegments[0].End != 7 || g.EmptySegments[0].LastModifiedMs/1000 != c.mtime.UnixMilli()/1000 {
				t.Fatalf("generation 0 empty_segments %+v", g.EmptySegments)
			}
			full := replayPaths(t, st, loadBinding(t, st, res))
			if got := segmentBases(full.State); got != "0 5 7 10" {
				t.Fatalf("segment bases %s, want 0 5 7 10 (the empty file is a segment)", got)
			}
			if r := planRetention(t, st, "empty", 0, now); r.NewLogStart != c.logStart {
				t.Fatalf("new log start %d, want Kafka's %d; plan %+v", r.NewLogStart, c.logStart, r.Plan)
			}
		})
	}
}

// An empty file before every batch has no manifest before it: the genesis
// checkpoint at the stream's first offset holds it, so every replay sees
// it, and retention stops at it while it is fresh.
func TestImportLeadingEmptySegment(t *testing.T) {
	now := time.Now()
	old := now.Add(-2 * time.Hour).UnixMilli()
	dir := filepath.Join(t.TempDir(), "logs", "lead-0")
	writeSegments(t, dir, map[int64][]byte{
		0: nil,
		5: segmentTs(t, offsets(6, 8), old), // named below its first batch
		8: segmentTs(t, offsets(8, 9), old),
	})
	setMtime(t, filepath.Join(dir, "00000000000000000000.log"), now.Add(-time.Minute))
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir, TopicConfig: []retention.KV{{Key: "retention.ms", Value: "3600000"}}})
	b := loadBinding(t, st, res)
	if g := b.ImportGenesis(); g == nil || g.Anchor != 0 {
		t.Fatalf("binding import record %+v: want a genesis at 0", b.Import)
	}
	full := replayPaths(t, st, b)
	if got := segmentBases(full.State); got != "0 5 8" {
		t.Fatalf("segment bases %s, want 0 5 8", got)
	}
	if r := planRetention(t, st, "lead", 0, now); r.NewLogStart != 0 {
		t.Fatalf("new log start %d, want 0 (Kafka keeps the fresh empty segment [0, 5) and stops); plan %+v", r.NewLogStart, r.Plan)
	}
	if r := planRetention(t, st, "lead", 0, now.Add(2*time.Hour)); r.NewLogStart != 9 {
		t.Fatalf("two hours on: new log start %d, want 9 (everything expired)", r.NewLogStart)
	}
}

// An imported open segment whose batches carry no timestamp is aged by
// its .log file's mtime, as Kafka ages its active segment
// (LogSegment.largestTimestamp; the active segment is a candidate,
// deleted after a roll when every segment before it went, R3/R4): the
// binding records the mtime (import.open_segment) while the stream ends
// where the import left it. Before, it was aged by the import's write
// time and kept an hour longer than Kafka keeps it.
func TestImportOpenSegmentAgedByMtime(t *testing.T) {
	now := time.Now()
	dir := filepath.Join(t.TempDir(), "logs", "open-0")
	writeSegments(t, dir, map[int64][]byte{0: segmentTs(t, offsets(0, 4), -1)})
	setMtime(t, filepath.Join(dir, "00000000000000000000.log"), now.Add(-2*time.Hour))
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir, TopicConfig: []retention.KV{{Key: "retention.ms", Value: "3600000"}}})
	b := loadBinding(t, st, res)
	if os := b.Import.OpenSegment; os == nil || os.Base != 0 || os.End != 4 || os.LastModifiedMs/1000 != now.Add(-2*time.Hour).UnixMilli()/1000 {
		t.Fatalf("import record %+v", b.Import)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "import.open_segment") {
		t.Fatalf("notes %q", res.Notes)
	}
	if r := planRetention(t, st, "open", 0, now); r.NewLogStart != 4 {
		t.Fatalf("new log start %d, want 4: the open segment's file is 2 h old (retention.ms 1 h); plan %+v", r.NewLogStart, r.Plan)
	}
	// Half an hour before the file was an hour old, it stays.
	if r := planRetention(t, st, "open", 0, now.Add(-90*time.Minute)); r.NewLogStart != 0 {
		t.Fatalf("earlier: new log start %d, want 0", r.NewLogStart)
	}
}
