package importer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
)

// segmentTs writes one single-record batch per offset, every record (and
// so every batch) with timestamp ts (-1: NO_TIMESTAMP).
func segmentTs(t testing.TB, offsets []int64, ts int64) []byte {
	t.Helper()
	var out []byte
	for _, off := range offsets {
		rec := kafka.Record{Key: []byte(fmt.Sprint("k", off)), Value: []byte("v"), Offset: off, Timestamp: ts}
		spec := kafka.NewBatchSpec(off, []kafka.Record{rec})
		spec.PartitionLeaderEpoch = 0
		if ts < 0 {
			spec.BaseTimestamp, spec.MaxTimestamp = -1, -1
		}
		b, err := kafka.EncodeBatch(spec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

func setMtime(t testing.TB, path string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func planRetention(t testing.TB, st store.Store, topic string, partition int32, now time.Time) *retention.Result {
	t.Helper()
	r := retention.RunPartition(context.Background(), st, retention.Request{
		TP: layout.TopicPartition{Topic: topic, Partition: partition}, Retention: true, NowMs: now.UnixMilli(), PlanOnly: true,
	})
	if r.Err != nil {
		t.Fatalf("plan: %v", r.Err)
	}
	return r
}

// Segments whose batches carry no timestamp (-1) are aged by the .log
// file's mtime (LogSegment.largestTimestamp), the open one by the write
// time of its newest object: a retention run does not delete them at once.
func TestImportNoTimestampsAgedByMtime(t *testing.T) {
	now := time.Now()
	dir := filepath.Join(t.TempDir(), "logs", "nots-0")
	writeSegments(t, dir, map[int64][]byte{
		0:  segmentTs(t, []int64{0, 1, 2, 3, 4}, -1),
		5:  segmentTs(t, []int64{5, 6, 7, 8, 9}, -1),
		10: segmentTs(t, []int64{10, 11}, -1),
	})
	setMtime(t, filepath.Join(dir, "00000000000000000000.log"), now.Add(-2*time.Hour))
	setMtime(t, filepath.Join(dir, "00000000000000000005.log"), now.Add(-10*time.Minute))
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir, TopicConfig: []retention.KV{{Key: "retention.ms", Value: "3600000"}}})
	if !strings.Contains(strings.Join(res.Notes, "\n"), "00000000000000000000.log: no batch carries a timestamp; its seal time is the file's modification time") {
		t.Fatalf("notes %q", res.Notes)
	}
	g, _, err := layout.LoadGeneration(context.Background(), st, res.StreamID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(-2 * time.Hour).UnixMilli(); g.MaxTimestamp != -1 || g.CreatedMs/1000 != want/1000 {
		t.Fatalf("generation 0: max timestamp %d, created %d, want the mtime %d", g.MaxTimestamp, g.CreatedMs, want)
	}
	// Now: only [0, 5) is older than retention.ms (1 h) by its mtime.
	if r := planRetention(t, st, "nots", 0, now); r.NewLogStart != 5 {
		t.Fatalf("new log start %d, want 5 (only the segment 2 h old); plan %+v", r.NewLogStart, r.Plan)
	}
	// Two hours on, every segment expired, the open one too (its newest
	// object was written by the import, now): log start = HW.
	if r := planRetention(t, st, "nots", 0, now.Add(2*time.Hour)); r.NewLogStart != 12 {
		t.Fatalf("new log start %d, want 12 (the open segment expires by its newest object's time); plan %+v", r.NewLogStart, r.Plan)
	}
}

// min.compaction.lag.ms measures a segment without timestamps by the same
// fallback: the one sealed 10 minutes ago (by its file's mtime) is too
// young for a 1 h lag, the one 2 h old is not.
func TestImportNoTimestampsMinCompactionLag(t *testing.T) {
	now := time.Now()
	dir := filepath.Join(t.TempDir(), "logs", "notsc-0")
	writeSegments(t, dir, map[int64][]byte{
		0:  segmentTs(t, []int64{0, 1, 2, 3, 4}, -1),
		5:  segmentTs(t, []int64{5, 6, 7, 8, 9}, -1),
		10: segmentTs(t, []int64{10, 11}, -1),
	})
	setMtime(t, filepath.Join(dir, "00000000000000000000.log"), now.Add(-2*time.Hour))
	setMtime(t, filepath.Join(dir, "00000000000000000005.log"), now.Add(-10*time.Minute))
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir, CleanupPolicy: "compact", TopicConfig: []retention.KV{{Key: "min.compaction.lag.ms", Value: "3600000"}}})
	b := loadBinding(t, st, res)
	p, reason, err := compaction.Freeze(context.Background(), st, b, now.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if p.End != 5 || !strings.Contains(reason, "[5, 10) is younger than min.compaction.lag.ms") {
		t.Fatalf("compactable end %d (%s), want 5: [5, 10) is 10 minutes old by its mtime", p.End, reason)
	}
}

// After an offset gap between segment files a virtual segment starts at
// the base offset Kafka gives it (here the file name and the first batch,
// 10), not at the previous segment's end (5): deleting [0, 5) by
// retention.ms puts the log start at 10, as Kafka's deleteSegments does.
func TestImportSegmentBaseAfterGap(t *testing.T) {
	now := time.Now()
	old := now.Add(-2 * time.Hour).UnixMilli()
	dir := filepath.Join(t.TempDir(), "logs", "gap-0")
	writeSegments(t, dir, map[int64][]byte{
		0:  segmentTs(t, []int64{0, 1, 2, 3, 4}, old),
		10: segmentTs(t, []int64{10, 11, 12, 13, 14}, now.UnixMilli()),
		15: segmentTs(t, []int64{15, 16}, now.UnixMilli()),
	})
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir, TopicConfig: []retention.KV{{Key: "retention.ms", Value: "3600000"}}})
	b := loadBinding(t, st, res)
	rr, err := recovery.Replay(context.Background(), st, b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rr.State.Segments[0].Base, rr.State.Segments[1].Base, rr.State.Segments[2].Base); got != "0 10 15" {
		t.Fatalf("segment bases %s, want 0 10 15", got)
	}
	if r := planRetention(t, st, "gap", 0, now); r.NewLogStart != 10 {
		t.Fatalf("new log start %d, want Kafka's 10; plan %+v", r.NewLogStart, r.Plan)
	}
	// A file whose first batch lies above its name: the segment starts at
	// the name, Kafka's base (TestImportSegmentBaseIsFileName).
	dir2 := filepath.Join(t.TempDir(), "logs", "gap-1")
	writeSegments(t, dir2, map[int64][]byte{0: segmentTs(t, []int64{0, 1}, old), 10: segmentTs(t, []int64{12}, old)})
	st2 := store.NewMem("t2")
	res2 := run(t, st2, Options{Dir: dir2})
	rr2, err := recovery.Replay(context.Background(), st2, loadBinding(t, st2, res2), recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(rr2.State); got != "0 10" {
		t.Fatalf("segment bases %s, want 0 10 (the file names)", got)
	}
}

// --recover: a CRC failure in the middle of a segment that is not the
// last truncates that segment there (LogSegment.recover) and drops the
// segments after it (LogLoader.recoverLog); without --recover the import
// refuses with ErrNeedsRecovery.
func TestImportRecoverTruncatesAndDropsLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs", "rec-0")
	mid := segmentTs(t, []int64{5, 6, 7, 8, 9}, 1000)
	one := len(mid) / 5
	mid[2*one+30] ^= 0xff // inside the batch at offset 7
	writeSegments(t, dir, map[int64][]byte{
		0:  segmentTs(t, []int64{0, 1, 2, 3, 4}, 1000),
		5:  mid,
		10: segmentTs(t, []int64{10, 11}, 1000),
	})
	if _, err := Run(context.Background(), store.NewMem("t0"), Options{Dir: dir}); !errors.Is(err, ErrNeedsRecovery) || !errors.Is(err, kafka.ErrCRC) {
		t.Fatalf("without --recover: %v", err)
	}
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir, Recover: true})
	if res.Head != 7 || res.Generations != 1 || !res.Recover {
		t.Fatalf("head %d generations %d recover %v", res.Head, res.Generations, res.Recover)
	}
	s1, s2 := res.Segments[1], res.Segments[2]
	if s1.Bytes != int64(2*one) || s1.DroppedBytes != int64(3*one) || *s1.DropPosition != int64(2*one) || !strings.Contains(s1.DropReason, "failing its CRC") {
		t.Fatalf("segment 5: %+v", s1)
	}
	if s2.Bytes != 0 || s2.DroppedBytes != s2.Size || s2.Size == 0 || !strings.Contains(s2.DropReason, "deleted whole") || s2.Generation != nil {
		t.Fatalf("segment 10: %+v", s2)
	}
	if res.BytesDropped != int64(3*one)+s2.Size {
		t.Fatalf("bytes dropped %d, want %d", res.BytesDropped, int64(3*one)+s2.Size)
	}
	b := loadBinding(t, st, res)
	rr, err := recovery.Replay(context.Background(), st, b, recovery.Options{Full: true})
	if err != nil || rr.State.HW() != 7 || len(rr.State.Segments) != 2 || !rr.State.Segments[1].Open() {
		t.Fatalf("replay: %v %+v", err, rr)
	}
}

// A sealed segment's time index ends with the entry Kafka writes when the
// segment is rolled (LogSegment.onBecomeInactiveSegment: max timestamp
// and its offset): the imported state's index equals the broker's own
// .timeindex files of the real fixtures.
func TestImportFinalTimeIndexEntryMatchesKafka(t *testing.T) {
	idx, err := filepath.Glob(filepath.Join(fixtureRoot, "*", "*", "*.timeindex"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range idx {
		b := readFile(t, f)
		if len(b) == 0 {
			continue
		}
		dir := filepath.Dir(f)
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		base := strings.TrimSuffix(filepath.Base(f), ".timeindex")
		if len(logs) < 2 || filepath.Base(logs[len(logs)-1]) == base+".log" {
			continue // only sealed (rolled) segments
		}
		baseOff, err := strconv.ParseInt(base, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kafka.ReadTimeIndex(b, baseOff)
		if err != nil {
			t.Fatal(err)
		}
		st := store.NewMem("t")
		res := run(t, st, Options{Dir: copyPartition(t, dir)})
		rr, err := recovery.Replay(context.Background(), st, loadBinding(t, st, res), recovery.Options{Full: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rr.State.Segments {
			if s.Base != baseOff {
				continue
			}
			var got []kafka.TimeIndexEntry
			for _, e := range s.TimeIndex {
				got = append(got, kafka.TimeIndexEntry{Timestamp: e.Timestamp, Offset: e.Offset})
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: time index %v, Kafka's file %v", f, got, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no sealed fixture segment with a time index")
	}
}

// compactDue imports [0,20) at base, [20,21) at base+10m and an open
// [21,22), compacts [0,20) at base+35m (min.compaction.lag.ms 30m keeps
// [20,21) out), then asks a dry run at base+2h whether Kafka's cleaner
// would pick the partition.
func compactDue(t *testing.T, maxLag string) *compaction.Result {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }
	var first []int64
	for i := int64(0); i < 20; i++ {
		first = append(first, i)
	}
	dir := filepath.Join(t.TempDir(), "logs", "due-0")
	writeSegments(t, dir, map[int64][]byte{
		0:  segmentTs(t, first, ms(0)),
		20: segmentTs(t, []int64{20}, ms(10*time.Minute)),
		21: segmentTs(t, []int64{21}, ms(20*time.Minute)),
	})
	st := store.NewMem("t")
	kv := []retention.KV{{Key: "min.compaction.lag.ms", Value: "1800000"}}
	if maxLag != "" {
		kv = append(kv, retention.KV{Key: "max.compaction.lag.ms", Value: maxLag})
	}
	res := run(t, st, Options{Dir: dir, CleanupPolicy: "compact", TopicConfig: kv})
	r, err := compaction.Compact(ctx, st, loadBinding(t, st, res), compaction.Options{NowMs: ms(35 * time.Minute)})
	if err != nil || !r.Activated || r.Plan.End != 20 {
		t.Fatalf("first compaction: %v %+v", err, r)
	}
	r, err = compaction.Compact(ctx, st, loadBinding(t, st, res), compaction.Options{NowMs: ms(2 * time.Hour), DryRun: true})
	if err != nil || r.Due == nil || r.Plan.End != 21 {
		t.Fatalf("dry run: %v %+v", err, r)
	}
	return r
}

// max.compaction.lag.ms makes a partition due below the dirty ratio
// (LogCleanerManager: needCompactionNow when maxCompactionDelay > 0), and
// compact --dry-run says why it is or is not due.
func TestCompactDueMaxCompactionLag(t *testing.T) {
	d := compactDue(t, "").Due // default: Long.MAX_VALUE
	if d.Due || d.DirtyRatio <= 0 || d.DirtyRatio >= 0.5 || d.CleanBytes == 0 || d.MaxCompactionDelayMs != 0 || !strings.HasPrefix(d.Reason, "not due: dirty ratio ") {
		t.Fatalf("default max lag: %+v", d)
	}
	d = compactDue(t, "3600000").Due // 1 h: [20,21)'s first batch (10m) is 50m past it
	if !d.Due || d.DirtyRatio >= 0.5 || d.MaxCompactionDelayMs != 50*60*1000 || !strings.Contains(d.Reason, "past max.compaction.lag.ms 3600000") {
		t.Fatalf("max lag 1h: %+v", d)
	}
	d = compactDue(t, "10800000").Due // 3 h: nothing is that old
	if d.Due || d.MaxCompactionDelayMs != 0 {
		t.Fatalf("max lag 3h: %+v", d)
	}
}

// segmentSameKey writes one single-record batch per offset, all with the
// key "k", timestamp ts.
func segmentSameKey(t testing.TB, offsets []int64, ts int64) []byte {
	t.Helper()
	var out []byte
	for _, off := range offsets {
		b, err := kafka.EncodeBatch(kafka.NewBatchSpec(off, []kafka.Record{{Key: []byte("k"), Value: []byte("value"), Offset: off, Timestamp: ts}}))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// compact,delete with ACTIVE coverage: retention.bytes is measured on what
// readers see. Two closed segments of one key compact to a single record;
// Kafka's cleaned log is then one small segment [0, 40) plus the open one,
// under retention.bytes: nothing is deleted (the uncompacted sizes would
// delete the first closed segment).
func TestRetentionPlansOnCompactedView(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	offs := func(from, to int64) []int64 {
		var out []int64
		for o := from; o < to; o++ {
			out = append(out, o)
		}
		return out
	}
	dir := filepath.Join(t.TempDir(), "logs", "cd-0")
	writeSegments(t, dir, map[int64][]byte{
		0:  segmentSameKey(t, offs(0, 20), now.UnixMilli()),
		20: segmentSameKey(t, offs(20, 40), now.UnixMilli()),
		40: segmentSameKey(t, offs(40, 60), now.UnixMilli()),
	})
	openBytes := int64(len(segmentSameKey(t, offs(40, 60), now.UnixMilli())))
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir, CleanupPolicy: "compact,delete", TopicConfig: []retention.KV{{Key: "retention.bytes", Value: fmt.Sprint(2*openBytes - 10)}}})
	before := planRetention(t, st, "cd", 0, now)
	if before.NewLogStart != 20 {
		t.Fatalf("before compaction: new log start %d, want 20 (the uncompacted segments exceed retention.bytes by more than [0, 20))", before.NewLogStart)
	}
	if r, err := compaction.Compact(ctx, st, loadBinding(t, st, res), compaction.Options{NowMs: now.UnixMilli()}); err != nil || !r.Activated || r.Plan.End != 40 {
		t.Fatalf("compact: %v %+v", err, r)
	}
	after := planRetention(t, st, "cd", 0, now)
	if after.NewLogStart != 0 {
		t.Fatalf("after compaction: new log start %d, want 0 (the view's [0, 40) is far under retention.bytes); plan %+v", after.NewLogStart, after.Plan)
	}
	if c := after.Plan.Candidates; len(c) < 2 || c[1].Rule != retention.RuleRetentionBytes || c[1].Segments != 0 {
		t.Fatalf("candidates %+v", c)
	}
}
