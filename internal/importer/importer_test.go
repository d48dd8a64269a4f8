package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// fixtureRoot is the repository's real Kafka fixtures (testdata/kafka).
const fixtureRoot = "../../testdata/kafka"

// fixtureDirs lists every fixture partition directory that has a .log file.
func fixtureDirs(t testing.TB) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(fixtureRoot, "*", "*", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 {
		t.Fatalf("no fixture logs under %s (testdata/kafka, see its README)", fixtureRoot)
	}
	seen := map[string]bool{}
	var dirs []string
	for _, l := range logs {
		d := filepath.Dir(l)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// copyPartition copies a partition directory (regular files only) into a
// fresh log directory and returns the copy's path; the parent's
// log-start-offset-checkpoint is not copied.
func copyPartition(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "logs", filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func appendFile(t testing.TB, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustDry is a dry run of opt without a store.
func mustDry(t testing.TB, opt Options) *Result {
	t.Helper()
	opt.DryRun = true
	return run(t, nil, opt)
}

func run(t testing.TB, st store.Store, opt Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), st, opt)
	if err != nil {
		t.Fatalf("import %s: %v", opt.Dir, err)
	}
	return res
}

func loadBinding(t testing.TB, st store.Store, res *Result) *layout.Binding {
	t.Helper()
	b, _, err := layout.LoadBinding(context.Background(), st, res.Topic, res.Partition)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every fixture partition imports; a full replay and the checkpoint path
// agree, the stream holds exactly the files' batches, and the leader
// epochs agree with leader-epoch-checkpoint (exactly, or explained by
// compaction).
func TestImportEveryFixture(t *testing.T) {
	ctx := context.Background()
	for _, dir := range fixtureDirs(t) {
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			st := store.NewMem(name)
			res := run(t, st, Options{Dir: dir})
			if res.BytesDropped != 0 || res.Resumed || res.DryRun {
				t.Fatalf("dropped %d, resumed %v, dry run %v", res.BytesDropped, res.Resumed, res.DryRun)
			}
			var fileBatches, fileBytes int64
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, l := range logs {
				data := readFile(t, l)
				fileBytes += int64(len(data))
				sc := kafka.NewScannerVerify(data)
				for sc.Next() {
					fileBatches++
				}
				if sc.Err() != nil {
					t.Fatal(sc.Err())
				}
			}
			if res.Batches != fileBatches || res.Bytes != fileBytes || len(res.Segments) != len(logs) {
				t.Fatalf("batches %d bytes %d segments %d, files hold %d, %d, %d", res.Batches, res.Bytes, len(res.Segments), fileBatches, fileBytes, len(logs))
			}
			if res.Generations != len(logs)-1 {
				t.Fatalf("%d generations for %d segments", res.Generations, len(logs))
			}
			b := loadBinding(t, st, res)
			if b.StreamID != res.StreamID || b.Config.HasPolicy("compact") != strings.HasPrefix(res.Topic, "__") {
				t.Fatalf("binding %+v", b)
			}
			full, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true, VerifyCRC: true})
			if err != nil {
				t.Fatal(err)
			}
			if full.Digest() != res.StateDigest || full.State.NextOffset != res.Head || full.Head.Head != res.Head {
				t.Fatalf("replay digest %s head %d, import says %s head %d", full.Digest(), full.State.NextOffset, res.StateDigest, res.Head)
			}
			if res.Epochs.Status != EpochsMatch && res.Epochs.Status != EpochsExplained {
				t.Fatalf("epochs %s: %v", res.Epochs.Status, res.Epochs.Notes)
			}
			// The stream's bytes are the files' bytes, batch for batch.
			objs, err := layout.ListObjects(ctx, st, res.StreamID)
			if err != nil {
				t.Fatal(err)
			}
			var stored []byte
			for _, o := range objs {
				data, err := st.Get(ctx, o.Key, nil)
				if err != nil {
					t.Fatal(err)
				}
				stored = append(stored, data...)
			}
			var files []byte
			for _, l := range logs {
				files = append(files, readFile(t, l)...)
			}
			if !bytes.Equal(stored, files) {
				t.Fatal("stored objects differ from the segment files")
			}
		})
	}
}

func TestImportConsumerOffsets18(t *testing.T) {
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18")})
	if res.Batches != 277 || res.Records != 499 || res.Head != 499 || res.Objects != 1 {
		t.Fatalf("batches %d records %d head %d objects %d", res.Batches, res.Records, res.Head, res.Objects)
	}
	if res.Epochs.Status != EpochsMatch || res.Config.CleanupPolicy != "compact" || res.Config.SegmentBytes != 100<<20 {
		t.Fatalf("epochs %s config %+v", res.Epochs.Status, res.Config)
	}
	if res.LogStart != 0 || res.GapsTotal != 0 {
		t.Fatalf("log start %d gaps %d", res.LogStart, res.GapsTotal)
	}
}

// The compacted fixtures have offset gaps and epochs whose first batches
// were cleaned away: reported, and explained.
func TestImportCompactedGapsAndEpochs(t *testing.T) {
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: filepath.Join(fixtureRoot, "kafka-2.7-compacted", "__consumer_offsets-39")})
	want := []Gap{{0, 4, "00000000000000000000.log", "before the first batch of"}, {5, 16, "00000000000000000000.log", "within"}}
	if fmt.Sprint(res.Gaps) != fmt.Sprint(want) || res.GapsTotal != 2 || res.GapOffsets != 15 {
		t.Fatalf("gaps %v (%d, %d offsets)", res.Gaps, res.GapsTotal, res.GapOffsets)
	}
	if res.Epochs.Status != EpochsExplained || len(res.Epochs.Derived) != 1 || res.Epochs.Derived[0].StartOffset != 4 {
		t.Fatalf("epochs %+v", res.Epochs)
	}
	g, _, err := layout.LoadGeneration(context.Background(), st, res.StreamID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind != layout.KindCommitted || g.Base != 0 || g.End != 18 || len(g.Objects) != 1 {
		t.Fatalf("generation 0: %+v", g)
	}
}

func TestImportTornTail(t *testing.T) {
	dir := copyPartition(t, filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18"))
	seg := filepath.Join(dir, "00000000000000000000.log")
	orig := readFile(t, seg)
	// The first batch (401 bytes) cut to 100 bytes: its header claims
	// more bytes than the file holds.
	appendFile(t, seg, orig[:100])
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir})
	s := res.Segments[0]
	if s.DroppedBytes != 100 || *s.DropPosition != int64(len(orig)) || !strings.Contains(s.DropReason, "torn write: the batch at byte 57161 claims 401 bytes, the file holds 100") {
		t.Fatalf("segment report %+v", s)
	}
	if res.Batches != 277 || res.Records != 499 || res.Head != 499 || res.BytesDropped != 100 {
		t.Fatalf("batches %d records %d head %d dropped %d", res.Batches, res.Records, res.Head, res.BytesDropped)
	}
	// Same bytes kept: same stream as the clean fixture.
	clean := run(t, store.NewMem("c"), Options{Dir: filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18")})
	if clean.StreamID != res.StreamID || clean.StateDigest != res.StateDigest {
		t.Fatalf("stream %s / %s, digest %s / %s", res.StreamID, clean.StreamID, res.StateDigest, clean.StateDigest)
	}
	// A torn header (fewer than 12 bytes) is torn too.
	dir2 := copyPartition(t, filepath.Join(fixtureRoot, "kafka-uncompacted", "first_topic-0"))
	appendFile(t, filepath.Join(dir2, "00000000000000000000.log"), []byte{0, 0, 0, 0, 0, 0, 0, 11, 0})
	res2 := run(t, store.NewMem("t2"), Options{Dir: dir2})
	if s := res2.Segments[0]; s.DroppedBytes != 9 || !strings.Contains(s.DropReason, "less than a batch's 12-byte offset and length") {
		t.Fatalf("segment report %+v", s)
	}
}

func TestImportZeroTail(t *testing.T) {
	dir := copyPartition(t, filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18"))
	seg := filepath.Join(dir, "00000000000000000000.log")
	appendFile(t, seg, make([]byte, 64<<10))
	res := run(t, store.NewMem("t"), Options{Dir: dir})
	s := res.Segments[0]
	if s.DroppedBytes != 64<<10 || *s.DropPosition != 57161 || s.Size != 57161+64<<10 || !strings.Contains(s.DropReason, "zero-filled preallocated tail") {
		t.Fatalf("segment report %+v", s)
	}
	if res.Batches != 277 || res.Head != 499 {
		t.Fatalf("batches %d head %d", res.Batches, res.Head)
	}
}

func TestImportTornTailInEarlierSegmentFails(t *testing.T) {
	dir := copyPartition(t, filepath.Join(fixtureRoot, "kafka-2.7-compacted", "__consumer_offsets-39"))
	seg := filepath.Join(dir, "00000000000000000000.log")
	appendFile(t, seg, readFile(t, seg)[:50])
	st := store.NewMem("t")
	_, err := Run(context.Background(), st, Options{Dir: dir})
	if !errors.Is(err, kafka.ErrCorrupt) || !strings.Contains(err.Error(), seg) || !strings.Contains(err.Error(), "at byte 361") || !strings.Contains(err.Error(), "not the last segment") {
		t.Fatalf("err = %v", err)
	}
	assertEmpty(t, st)
	// A zero tail there is refused too.
	dir = copyPartition(t, filepath.Join(fixtureRoot, "kafka-2.7-compacted", "__consumer_offsets-39"))
	appendFile(t, filepath.Join(dir, "00000000000000000000.log"), make([]byte, 4096))
	if _, err := Run(context.Background(), st, Options{Dir: dir}); !errors.Is(err, kafka.ErrCorrupt) || !strings.Contains(err.Error(), "zero-filled tail") {
		t.Fatalf("err = %v", err)
	}
}

func TestImportFlippedByteFails(t *testing.T) {
	dir := copyPartition(t, filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18"))
	seg := filepath.Join(dir, "00000000000000000000.log")
	data := readFile(t, seg)
	// Flip a byte inside a batch in the middle of the file and find the
	// batch's position.
	mid := len(data) / 2
	var at int64 = -1
	sc := kafka.NewScanner(data)
	for sc.Next() {
		if sc.Pos()+int64(sc.Header().Size()) > int64(mid) {
			at = sc.Pos()
			break
		}
	}
	data[mid] ^= 0xff
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st := store.NewMem("t")
	_, err := Run(context.Background(), st, Options{Dir: dir})
	if !errors.Is(err, kafka.ErrCRC) || !strings.Contains(err.Error(), seg) || !strings.Contains(err.Error(), fmt.Sprintf("at byte %d", at)) {
		t.Fatalf("err = %v (batch at %d)", err, at)
	}
	assertEmpty(t, st)
	// A dry run finds it too.
	if _, err := Run(context.Background(), nil, Options{Dir: dir, DryRun: true}); !errors.Is(err, kafka.ErrCRC) {
		t.Fatalf("dry run err = %v", err)
	}
}

func TestImportRefusesSymlinks(t *testing.T) {
	src := filepath.Join(fixtureRoot, "kafka-uncompacted", "first_topic-0")
	dir := copyPartition(t, src)
	abs, _ := filepath.Abs(filepath.Join(src, "00000000000000000000.log"))
	link := filepath.Join(dir, "00000000000000000011.log")
	if err := os.Symlink(abs, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	st := store.NewMem("t")
	_, err := Run(context.Background(), st, Options{Dir: dir})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v", err)
	}
	// A symlink that is not a segment is refused too.
	os.Remove(link)
	other := filepath.Join(dir, "leader-epoch-checkpoint")
	os.Remove(other)
	if err := os.Symlink("/etc/passwd", other); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), st, Options{Dir: dir}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), other) {
		t.Fatalf("err = %v", err)
	}
	// A symlinked partition directory is refused, with or without a
	// trailing slash.
	ldir := filepath.Join(t.TempDir(), "first_topic-0")
	absSrc, _ := filepath.Abs(src)
	if err := os.Symlink(absSrc, ldir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{ldir, ldir + "/"} {
		if _, err := Run(context.Background(), st, Options{Dir: d}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), ldir) {
			t.Fatalf("%s: err = %v", d, err)
		}
	}
	assertEmpty(t, st)
}

func TestImportRefusesNonRegularAndBadNames(t *testing.T) {
	st := store.NewMem("t")
	dir := copyPartition(t, filepath.Join(fixtureRoot, "kafka-uncompacted", "first_topic-0"))
	sub := filepath.Join(dir, "00000000000000000020.log")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), st, Options{Dir: dir}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), sub) {
		t.Fatalf("err = %v", err)
	}
	os.Remove(sub)
	bad := filepath.Join(dir, "0000000000000000020.log")
	if err := os.WriteFile(bad, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), st, Options{Dir: dir}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "20-digit") {
		t.Fatalf("err = %v", err)
	}
	os.Remove(bad)
	swap := filepath.Join(dir, "00000000000000000000.log.swap")
	if err := os.WriteFile(swap, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), st, Options{Dir: dir}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "interrupted log-cleaner swap") {
		t.Fatalf("err = %v", err)
	}
	os.Remove(swap)
	// Not a partition name, and no --topic.
	odd := filepath.Join(t.TempDir(), "backup")
	if err := os.Mkdir(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), st, Options{Dir: odd}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--topic") {
		t.Fatalf("err = %v", err)
	}
	// No segment files.
	if _, err := Run(context.Background(), st, Options{Dir: odd, Topic: "t", Partition: 0}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "no segment files") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Run(context.Background(), st, Options{Dir: dir, Topic: "bad/topic"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v", err)
	}
	if _, err := Run(context.Background(), st, Options{Dir: dir, MaxSegmentBytes: 100}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "cap") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Run(context.Background(), st, Options{Dir: dir, CleanupPolicy: "forever"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v", err)
	}
	assertEmpty(t, st)
}

// An import over the binding it made from the same bytes is "already
// imported" and writes nothing; another directory for the same partition
// (other bytes) is refused, naming both streams.
func TestImportRefusesExistingBinding(t *testing.T) {
	st := store.NewMem("t")
	dir := filepath.Join(fixtureRoot, "kafka-uncompacted", "first_topic-1")
	res := run(t, st, Options{Dir: dir})
	before, _ := st.List(context.Background(), "")
	again, err := Run(context.Background(), st, Options{Dir: dir})
	if err != nil || !again.AlreadyImported || again.StreamID != res.StreamID || !strings.Contains(strings.Join(again.Notes, "\n"), "already imported (same bytes)") {
		t.Fatalf("rerun over its own binding: %v %+v", err, again)
	}
	// Another directory for the same partition is refused.
	other := filepath.Join(fixtureRoot, "kafka-uncompacted", "first_topic-2")
	_, err = Run(context.Background(), st, Options{Dir: other, Topic: "first_topic", Partition: 1})
	otherID := StreamID("first_topic", 1, mustDry(t, Options{Dir: other, Topic: "first_topic", Partition: 1}).SHA256)
	if !errors.Is(err, ErrBindingExists) || !strings.Contains(err.Error(), res.StreamID) || !strings.Contains(err.Error(), otherID) {
		t.Fatalf("other bytes: %v (want both %s and %s named)", err, res.StreamID, otherID)
	}
	after, _ := st.List(context.Background(), "")
	if len(after) != len(before) {
		t.Fatalf("%d objects before, %d after", len(before), len(after))
	}
	// --topic/--partition name a fresh partition.
	res2 := run(t, st, Options{Dir: dir, Topic: "restored", Partition: 7, CleanupPolicy: "compact,delete", SegmentBytes: 1 << 20})
	b := loadBinding(t, st, res2)
	if b.Topic != "restored" || b.Partition != 7 || b.Config.CleanupPolicy != "compact,delete" || b.Config.SegmentBytes != 1<<20 || b.StreamID == res.StreamID {
		t.Fatalf("binding %+v", b)
	}
}

func TestImportDryRunWritesNothing(t *testing.T) {
	st := store.NewMem("t")
	dir := filepath.Join(fixtureRoot, "kafka-2.7-compacted", "__consumer_offsets-17")
	dry := run(t, st, Options{Dir: dir, DryRun: true})
	assertEmpty(t, st)
	res := run(t, st, Options{Dir: dir})
	if dry.StreamID != res.StreamID || dry.StateDigest != res.StateDigest || dry.Epochs.Status != res.Epochs.Status || dry.Head != res.Head {
		t.Fatalf("dry run %+v\nimport %+v", dry, res)
	}
	if again, err := Run(context.Background(), st, Options{Dir: dir, DryRun: true}); err != nil || !again.AlreadyImported {
		t.Fatalf("dry run over its own binding: %v", err)
	}
	nostore := run(t, nil, Options{Dir: dir, DryRun: true})
	if len(nostore.Notes) == 0 || !strings.Contains(nostore.Notes[0], "skipped") {
		t.Fatalf("notes %v", nostore.Notes)
	}
}

// A run stopped before the binding was created resumes into the same
// stream.
func TestImportResumes(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("t")
	dir := filepath.Join(fixtureRoot, "kafka-2.7-compacted", "__consumer_offsets-28")
	first := run(t, st, Options{Dir: dir, ObjectBytes: 1})
	if err := st.Delete(ctx, first.Binding, store.None()); err != nil {
		t.Fatal(err)
	}
	// Forget the last object and the head's last advance too: the stream
	// is as an interrupted run left it after its first segment.
	objs, _ := layout.ListObjects(ctx, st, first.StreamID)
	last := objs[len(objs)-1]
	if err := st.Delete(ctx, last.Key, store.None()); err != nil {
		t.Fatal(err)
	}
	h, etag, _ := layout.LoadHead(ctx, st, first.StreamID)
	h.Head = last.Base
	h.Version++
	if _, err := layout.Replace(ctx, st, layout.HeadKey(first.StreamID), h, etag); err != nil {
		t.Fatal(err)
	}
	again := run(t, st, Options{Dir: dir, ObjectBytes: 1})
	if !again.Resumed || again.StreamID != first.StreamID || again.StateDigest != first.StateDigest {
		t.Fatalf("resumed %v stream %s digest %s, first %s %s", again.Resumed, again.StreamID, again.StateDigest, first.StreamID, first.StateDigest)
	}
	gens, _ := layout.ListGenerations(ctx, st, first.StreamID)
	if len(gens) != 1 {
		t.Fatalf("generations %v", gens)
	}
}

// segment builds a segment file from batches of single records at the
// given offsets and leader epochs.
func segment(t testing.TB, offsets []int64, epochs []int32) []byte {
	t.Helper()
	var out []byte
	for i, off := range offsets {
		rec := kafka.Record{Key: []byte(fmt.Sprint("k", off)), Value: []byte("v"), Offset: off, Timestamp: 1_700_000_000_000 + off}
		spec := kafka.NewBatchSpec(off, []kafka.Record{rec})
		spec.PartitionLeaderEpoch = epochs[i]
		b, err := kafka.EncodeBatch(spec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

func writeSegments(t testing.TB, dir string, segs map[int64][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for base, data := range segs {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", base)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImportSegmentsGapsOverlapsAndEpochs(t *testing.T) {
	ctx := context.Background()
	logs := t.TempDir()
	dir := filepath.Join(logs, "orders-3")
	writeSegments(t, dir, map[int64][]byte{
		0:  segment(t, []int64{0, 1, 2, 3}, []int32{1, 1, 2, 2}),
		10: segment(t, []int64{12, 13}, []int32{2, 4}),
		14: nil, // an empty active segment
	})
	if err := os.WriteFile(filepath.Join(dir, "leader-epoch-checkpoint"), []byte("0\n3\n1 0\n2 2\n4 13\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "log-start-offset-checkpoint"), []byte("0\n2\norders 3 1\nother 0 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: dir})
	if res.Topic != "orders" || res.Partition != 3 || res.Config.CleanupPolicy != "delete" {
		t.Fatalf("%s-%d %+v", res.Topic, res.Partition, res.Config)
	}
	if res.Start != 0 || res.Head != 14 || res.KafkaLogEnd != 14 || res.LogStart != 1 || !strings.Contains(res.LogStartSource, "log-start-offset-checkpoint") {
		t.Fatalf("start %d head %d kafka end %d log start %d (%s)", res.Start, res.Head, res.KafkaLogEnd, res.LogStart, res.LogStartSource)
	}
	if fmt.Sprint(res.Gaps) != fmt.Sprint([]Gap{{4, 12, "00000000000000000010.log", "before the first batch of"}}) {
		t.Fatalf("gaps %v", res.Gaps)
	}
	// Checkpoint truncated from the log start 1: 1@1 2@2 4@13 = derived.
	if res.Epochs.Status != EpochsMatch {
		t.Fatalf("epochs %+v", res.Epochs)
	}
	if res.HeadDoc.Trim != 1 || res.HeadDoc.Head != 14 || res.Generations != 2 || res.Segments[2].Generation != nil {
		t.Fatalf("head %+v generations %d", res.HeadDoc, res.Generations)
	}
	b := loadBinding(t, st, res)
	if b.ObservedLogStart != 1 {
		t.Fatalf("observed log start %d", b.ObservedLogStart)
	}
	rr, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.State.LogStart != 1 || rr.Digest() != res.StateDigest {
		t.Fatalf("replay log start %d digest %s", rr.State.LogStart, rr.Digest())
	}

	// An empty last segment above the data: Kafka's log end is its base.
	dir2 := filepath.Join(t.TempDir(), "orders-4")
	writeSegments(t, dir2, map[int64][]byte{0: segment(t, []int64{0, 1}, []int32{0, 0}), 5: nil})
	res2 := run(t, store.NewMem("t2"), Options{Dir: dir2})
	if res2.KafkaLogEnd != 5 || res2.Head != 2 || len(res2.Notes) == 0 || !strings.Contains(strings.Join(res2.Notes, "\n"), "[2, 5) would be handed out again") {
		t.Fatalf("kafka end %d head %d notes %v", res2.KafkaLogEnd, res2.Head, res2.Notes)
	}
	if res2.Epochs.Status != EpochsNoCheckpoint {
		t.Fatalf("epochs %+v", res2.Epochs)
	}

	// Overlapping segments.
	dir3 := filepath.Join(t.TempDir(), "orders-5")
	writeSegments(t, dir3, map[int64][]byte{0: segment(t, []int64{0, 1, 2}, []int32{0, 0, 0}), 2: segment(t, []int64{3}, []int32{0})})
	if _, err := Run(ctx, store.NewMem("t3"), Options{Dir: dir3}); !errors.Is(err, kafka.ErrCorrupt) || !strings.Contains(err.Error(), "segments overlap") {
		t.Fatalf("err = %v", err)
	}
	// Offsets going back inside a file.
	dir4 := filepath.Join(t.TempDir(), "orders-6")
	writeSegments(t, dir4, map[int64][]byte{0: segment(t, []int64{0, 5, 3}, []int32{0, 0, 0})})
	if _, err := Run(ctx, store.NewMem("t4"), Options{Dir: dir4}); !errors.Is(err, kafka.ErrCorrupt) || !strings.Contains(err.Error(), "at byte") {
		t.Fatalf("err = %v", err)
	}
	// A log start above the data.
	logs5 := t.TempDir()
	dir5 := filepath.Join(logs5, "orders-7")
	writeSegments(t, dir5, map[int64][]byte{0: segment(t, []int64{0}, []int32{0})})
	os.WriteFile(filepath.Join(logs5, "log-start-offset-checkpoint"), []byte("0\n1\norders 7 9\n"), 0o644)
	if _, err := Run(ctx, store.NewMem("t5"), Options{Dir: dir5}); err == nil || !strings.Contains(err.Error(), "above the end of the data") {
		t.Fatalf("err = %v", err)
	}
}

func TestCompareEpochs(t *testing.T) {
	e := func(pairs ...int64) []state.EpochEntry {
		var out []state.EpochEntry
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, state.EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
		}
		return out
	}
	k := func(pairs ...int64) []kafka.EpochEntry {
		var out []kafka.EpochEntry
		for _, s := range e(pairs...) {
			out = append(out, kafka.EpochEntry{Epoch: s.Epoch, StartOffset: s.StartOffset})
		}
		return out
	}
	all := []offRange{{0, 100}}
	cases := []struct {
		name     string
		ckpt     []kafka.EpochEntry
		derived  []state.EpochEntry
		logStart int64
		covered  []offRange
		want     string
	}{
		{"equal", k(0, 0, 3, 50), e(0, 0, 3, 50), 0, all, EpochsMatch},
		{"truncated from start", k(0, 0, 3, 50), e(0, 10, 3, 50), 10, all, EpochsMatch},
		{"compacted start", k(0, 0, 3, 50), e(0, 4, 3, 50), 0, []offRange{{4, 100}}, EpochsExplained},
		{"epoch compacted away", k(0, 0, 3, 50, 5, 60), e(0, 0, 5, 60), 0, []offRange{{0, 50}, {60, 100}}, EpochsExplained},
		{"epoch at the log end", k(0, 0, 7, 100), e(0, 0), 0, all, EpochsExplained},
		{"start moved over data", k(0, 0, 3, 50), e(0, 0, 3, 55), 0, all, EpochsDiffer},
		{"unknown epoch in data", k(0, 0), e(0, 0, 2, 40), 0, all, EpochsDiffer},
		{"missing epoch with data", k(0, 0, 3, 50), e(0, 0), 0, all, EpochsDiffer},
	}
	for _, c := range cases {
		got := compareEpochs(c.ckpt, c.derived, c.logStart, 100, c.covered)
		if got.Status != c.want {
			t.Errorf("%s: %s, want %s (%v)", c.name, got.Status, c.want, got.Notes)
		}
	}
}

func TestParseOffsetCheckpoint(t *testing.T) {
	m, err := parseOffsetCheckpoint(readFile(t, filepath.Join(fixtureRoot, "kafka-2.7-compacted", "recovery-point-offset-checkpoint")))
	if err != nil || len(m) != 53 || m[tpKey{"__consumer_offsets", 39}] != 18 || m[tpKey{"myTopic", 0}] != 38 {
		t.Fatalf("%v %v", len(m), err)
	}
	for _, bad := range []string{"1\n0\n", "0\n2\na 0 1\n", "0\n1\na x 1\n", "0\n1\na 0\n", "0\nz\n"} {
		if _, err := parseOffsetCheckpoint([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if m, err := parseOffsetCheckpoint(nil); err != nil || len(m) != 0 {
		t.Fatalf("empty: %v %v", m, err)
	}
}

func TestParsePartitionMetadata(t *testing.T) {
	id, err := parsePartitionMetadata([]byte("version: 0\ntopic_id: 0cTSb-HJQ7qpE6OI8WHJkw\n"))
	if err != nil || id != "0cTSb-HJQ7qpE6OI8WHJkw" {
		t.Fatalf("%q %v", id, err)
	}
	if _, err := parsePartitionMetadata([]byte("version: 1\ntopic_id: x\n")); err == nil {
		t.Fatal("version 1 accepted")
	}
}

// Objects are cut at about ObjectBytes, never across segments.
func TestImportObjectSizes(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("t")
	res := run(t, st, Options{Dir: filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18"), ObjectBytes: 4096})
	objs, err := layout.ListObjects(ctx, st, res.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != res.Objects || len(objs) < 14 {
		t.Fatalf("%d objects, report says %d", len(objs), res.Objects)
	}
	for _, o := range objs[:len(objs)-1] {
		if o.Size > 4096 {
			t.Fatalf("%s: %d bytes", o.Key, o.Size)
		}
	}
	b := loadBinding(t, st, res)
	if _, err := stream.Chain(objs, 0, res.Head); err != nil {
		t.Fatal(err)
	}
	rr, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true})
	if err != nil || rr.Digest() != res.StateDigest {
		t.Fatalf("replay %v digest %s vs %s", err, rr.Digest(), res.StateDigest)
	}
}

func assertEmpty(t testing.TB, st store.Store) {
	t.Helper()
	infos, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 0 {
		t.Fatalf("the store holds %d objects, first %s", len(infos), infos[0].Key)
	}
}
