package compaction

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// workload writes random batches into one compacted partition: keyed
// updates and tombstones, keyless records, transactions that commit, abort
// or stay open, several segments.
type workload struct {
	st   *store.Mem
	b    *layout.Binding
	w    *stream.Writer
	rng  *rand.Rand
	ts   int64
	open map[int64]bool
	ep   map[int64]int16
	keys int
}

func newWorkload(t *testing.T, seed uint64) *workload {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem(fmt.Sprintf("%s-%d", t.Name(), seed))
	sid := fmt.Sprintf("s-%d", seed)
	if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	cfg.CleanupPolicy = "compact"
	cfg.SegmentBytes = 1500
	cfg.DeleteRetentionMs = 10_000
	b := &layout.Binding{Topic: "c", TopicID: "tid", Partition: 0, StreamID: sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("c", 0), b); err != nil {
		t.Fatal(err)
	}
	w, err := stream.OpenWriter(ctx, st, sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	return &workload{st: st, b: b, w: w, rng: rng, ts: 1_000_000, open: map[int64]bool{}, ep: map[int64]int16{}, keys: 3 + rng.IntN(30)}
}

func (wl *workload) append(t *testing.T, objects int, closeAll bool) {
	t.Helper()
	for i := 0; i < objects; i++ {
		next := wl.w.Next()
		var batches [][]byte
		for j := 0; j < 1+wl.rng.IntN(3); j++ {
			wl.ts += int64(wl.rng.IntN(100))
			pid := int64(wl.rng.IntN(4)) // 0: plain, 1-3: transactional
			var b []byte
			var err error
			if pid > 0 && wl.open[pid] && (wl.rng.IntN(3) == 0 || closeAll) {
				b, err = kafka.MarkerBatch(next, 0, pid, wl.ep[pid], wl.rng.IntN(3) != 0, 0, wl.ts)
				wl.open[pid] = false
			} else {
				n := 1 + wl.rng.IntN(5)
				recs := make([]kafka.Record, n)
				for k := range recs {
					r := kafka.Record{Offset: next + int64(k), Timestamp: wl.ts}
					if wl.rng.IntN(12) != 0 {
						r.Key = []byte(fmt.Sprintf("key-%d", wl.rng.IntN(wl.keys)))
					}
					if wl.rng.IntN(6) != 0 {
						r.Value = []byte(fmt.Sprintf("v%d@%d", wl.rng.IntN(1000), next+int64(k)))
					}
					recs[k] = r
				}
				s := kafka.NewBatchSpec(next, recs)
				s.Codec = kafka.Codec(wl.rng.IntN(5))
				if pid > 0 {
					s.ProducerID, s.ProducerEpoch, s.BaseSequence, s.Transactional = pid, wl.ep[pid], 0, true
					wl.open[pid] = true
				}
				b, err = kafka.EncodeBatch(s)
			}
			if err != nil {
				t.Fatal(err)
			}
			h, _ := kafka.ParseHeader(b)
			next = h.LastOffset() + 1
			batches = append(batches, b)
		}
		if err := wl.w.Append(context.Background(), batches); err != nil {
			t.Fatal(err)
		}
	}
	if closeAll {
		for pid := int64(1); pid <= 3; pid++ {
			if wl.open[pid] {
				b, _ := kafka.MarkerBatch(wl.w.Next(), 0, pid, 0, true, 0, wl.ts)
				if err := wl.w.Append(context.Background(), [][]byte{b}); err != nil {
					t.Fatal(err)
				}
				wl.open[pid] = false
			}
		}
	}
}

type modelRec struct {
	offset int64
	key    []byte // nil: keyless
	value  []byte
}

// committedRecords decodes the whole stream independently and returns the
// records a READ_COMMITTED consumer would see, and the LSO.
func committedRecords(t *testing.T, st store.Store, sid string) ([]modelRec, int64) {
	t.Helper()
	ctx := context.Background()
	h, _, _ := layout.LoadHead(ctx, st, sid)
	objs, _ := layout.ListObjects(ctx, st, sid)
	chain, err := stream.Chain(objs, 0, h.Head)
	if err != nil {
		t.Fatal(err)
	}
	type txn struct{ recs []modelRec }
	open := map[int64]*txn{}
	var out []modelRec
	var pending []struct {
		first int64
		recs  []modelRec
	}
	_ = pending
	firstOpen := map[int64]int64{}
	for _, o := range chain {
		data, _ := st.Get(ctx, o.Key, nil)
		sc := kafka.NewScanner(data)
		for sc.Next() {
			b, err := kafka.DecodeBatch(sc.Batch(), kafka.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			hd := b.Header
			if hd.IsControl() {
				tx := open[hd.ProducerID]
				_, typ, _ := kafka.ParseControlKey(b.Records[0].Key)
				if tx != nil && typ == kafka.ControlCommit {
					out = append(out, tx.recs...)
				}
				delete(open, hd.ProducerID)
				delete(firstOpen, hd.ProducerID)
				continue
			}
			var recs []modelRec
			for _, r := range b.Records {
				recs = append(recs, modelRec{offset: r.Offset, key: r.Key, value: r.Value})
			}
			if hd.IsTransactional() {
				if open[hd.ProducerID] == nil {
					open[hd.ProducerID] = &txn{}
					firstOpen[hd.ProducerID] = hd.BaseOffset
				}
				open[hd.ProducerID].recs = append(open[hd.ProducerID].recs, recs...)
				continue
			}
			out = append(out, recs...)
		}
	}
	lso := h.Head
	for _, f := range firstOpen {
		lso = min(lso, f)
	}
	var vis []modelRec
	for _, r := range out {
		if r.offset < lso {
			vis = append(vis, r)
		}
	}
	sort.Slice(vis, func(i, j int) bool { return vis[i].offset < vis[j].offset })
	return vis, lso
}

// expected: below end, the latest record per key (keyless dropped), with
// tombstones kept while alive[key-offset] says so; from end on, everything.
func expected(recs []modelRec, end int64, tombstoneAlive func(r modelRec) bool) []modelRec {
	latest := map[string]int64{}
	for _, r := range recs {
		if r.offset < end && r.key != nil {
			latest[string(r.key)] = r.offset
		}
	}
	var out []modelRec
	for _, r := range recs {
		if r.offset >= end {
			out = append(out, r)
			continue
		}
		if r.key == nil || latest[string(r.key)] != r.offset {
			continue
		}
		if r.value == nil && !tombstoneAlive(r) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func readAll(t *testing.T, st store.Store, b *layout.Binding) []modelRec {
	t.Helper()
	var got []modelRec
	_, err := Read(context.Background(), st, b, 0, func(r Record) error {
		got = append(got, modelRec{offset: r.Offset, key: r.Key, value: r.Value})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sameRecs(t *testing.T, what string, got, want []modelRec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, model %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].offset != want[i].offset || !bytes.Equal(got[i].key, want[i].key) || !bytes.Equal(got[i].value, want[i].value) || (got[i].value == nil) != (want[i].value == nil) {
			t.Fatalf("%s: record %d is %d %q=%q, model %d %q=%q", what, i, got[i].offset, got[i].key, got[i].value, want[i].offset, want[i].key, want[i].value)
		}
	}
}

func loadB(t *testing.T, st store.Store) *layout.Binding {
	t.Helper()
	b, _, err := layout.LoadBinding(context.Background(), st, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompactionMatchesModel: for random workloads, view + tail equals
// "latest committed value per key, tombstones kept until their horizon",
// over two compactions (the second drops the first one's expired
// tombstones).
func TestCompactionMatchesModel(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 25; seed++ {
		wl := newWorkload(t, seed)
		wl.append(t, 15+wl.rng.IntN(30), false)
		now1 := int64(2_000_000)
		r1, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: now1})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		b := loadB(t, wl.st)
		recs, _ := committedRecords(t, wl.st, wl.b.StreamID)
		if !r1.UpToDate {
			if b.Coverage.State != layout.CoverageActive || b.Coverage.End != r1.Plan.End {
				t.Fatalf("seed %d: coverage %+v", seed, b.Coverage)
			}
		}
		end1 := int64(0)
		if b.Coverage.State == layout.CoverageActive {
			end1 = b.Coverage.End
		}
		sameRecs(t, fmt.Sprintf("seed %d first", seed), readAll(t, wl.st, b), expected(recs, end1, func(modelRec) bool { return true }))

		// More data, then a compaction after the first horizon passed.
		wl.append(t, 10+wl.rng.IntN(20), true)
		now2 := now1 + wl.b.Config.DeleteRetentionMs + 1
		if _, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: now2}); err != nil {
			t.Fatalf("seed %d second: %v", seed, err)
		}
		b = loadB(t, wl.st)
		recs, _ = committedRecords(t, wl.st, wl.b.StreamID)
		end2 := int64(0)
		if b.Coverage.State == layout.CoverageActive {
			end2 = b.Coverage.End
		}
		alive := func(r modelRec) bool { return r.offset >= end1 } // first-run tombstones expired
		sameRecs(t, fmt.Sprintf("seed %d second", seed), readAll(t, wl.st, b), expected(recs, end2, alive))
	}
}

func ntcObjects(t *testing.T, st store.Store, b *layout.Binding) []string {
	t.Helper()
	var keys []string
	for _, m := range b.Coverage.Members {
		g, _, err := layout.LoadGeneration(context.Background(), st, b.StreamID, m.Gen)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range g.Objects {
			keys = append(keys, o.Key+"@"+o.SHA256)
		}
	}
	return keys
}

// TestCompactionDeterministicAndBounded: the same input gives byte-identical
// NTC2 objects, with plenty of memory or with a map of a few keys (passes).
func TestCompactionDeterministicAndBounded(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 8; seed++ {
		var outs [][]string
		for _, mem := range []int64{DefaultMaxMemory, 24 * 20, 24 * 20, 24 * 64} {
			wl := newWorkload(t, seed)
			wl.keys = 200
			wl.append(t, 40, true)
			r, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 5_000_000, MaxMemory: mem, TempDir: t.TempDir()})
			if err != nil {
				t.Fatalf("seed %d mem %d: %v", seed, mem, err)
			}
			if mem < 1000 && r.Stats.Passes < 2 {
				t.Fatalf("seed %d: %d passes with a %d-byte map", seed, r.Stats.Passes, mem)
			}
			outs = append(outs, ntcObjects(t, wl.st, loadB(t, wl.st)))
		}
		for i := 1; i < len(outs); i++ {
			if fmt.Sprint(outs[i]) != fmt.Sprint(outs[0]) {
				t.Fatalf("seed %d: run %d produced %v, run 0 %v", seed, i, outs[i], outs[0])
			}
		}
	}
}

// TestCompactionCrashAtEveryStep: stop after each step, rerun; the active
// set is complete and verified, and there is one compacted generation.
func TestCompactionCrashAtEveryStep(t *testing.T) {
	ctx := context.Background()
	crash := errors.New("crash")
	for _, step := range []string{StepFrozen, StepWritten, StepPublished, StepActivated} {
		wl := newWorkload(t, 42)
		wl.append(t, 30, true)
		_, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 3_000_000, After: func(s string) error {
			if s == step {
				return crash
			}
			return nil
		}})
		if !errors.Is(err, crash) {
			t.Fatalf("%s: %v", step, err)
		}
		b := loadB(t, wl.st)
		if step != StepActivated && b.Coverage.State != layout.CoverageNone {
			t.Fatalf("%s: coverage activated before step 6: %+v", step, b.Coverage)
		}
		// the rerun uses another clock: a resumed task keeps the first one
		r, err := Compact(ctx, wl.st, b, Options{NowMs: 9_000_000})
		if err != nil {
			t.Fatalf("%s rerun: %v", step, err)
		}
		b = loadB(t, wl.st)
		if b.Coverage.State != layout.CoverageActive {
			t.Fatalf("%s: not active after the rerun", step)
		}
		gens, _ := layout.ListGenerations(ctx, wl.st, wl.b.StreamID)
		compacted := 0
		for _, n := range gens {
			g, _, _ := layout.LoadGeneration(ctx, wl.st, wl.b.StreamID, n)
			if g.Kind == layout.KindTopicCompacted {
				compacted++
				if g.Compaction.NowMs != 3_000_000 {
					t.Fatalf("%s: generation made with clock %d, want the frozen 3000000", step, g.Compaction.NowMs)
				}
			}
		}
		if compacted != 1 {
			t.Fatalf("%s: %d compacted generations, want 1 (r=%+v)", step, compacted, r)
		}
		if tasks, _ := wl.st.List(ctx, layout.TasksPrefix); len(tasks) != 0 {
			t.Fatalf("%s: task left behind: %v", step, tasks)
		}
		recs, _ := committedRecords(t, wl.st, wl.b.StreamID)
		sameRecs(t, step, readAll(t, wl.st, b), expected(recs, b.Coverage.End, func(modelRec) bool { return true }))
	}
}

func TestQuarantinedCoverageRefusesReads(t *testing.T) {
	ctx := context.Background()
	wl := newWorkload(t, 7)
	wl.append(t, 20, true)
	if _, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 3_000_000}); err != nil {
		t.Fatal(err)
	}
	b, etag, _ := layout.LoadBinding(ctx, wl.st, "c", 0)
	b.Coverage.State = layout.CoverageQuarantined
	b.Version++
	if _, err := layout.Replace(ctx, wl.st, layout.BindingKey("c", 0), b, etag); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, wl.st, b, 0, func(Record) error { return nil }); !errors.Is(err, ErrBlocked) {
		t.Fatalf("read under quarantine: %v", err)
	}
	if _, err := Compact(ctx, wl.st, b, Options{NowMs: 4_000_000}); !errors.Is(err, ErrBlocked) {
		t.Fatalf("compact under quarantine: %v", err)
	}
}

// changingStore serves a changed copy of one object from its nth Get on.
type changingStore struct {
	store.Store
	key  string
	from int
	gets int
}

func (c *changingStore) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	data, err := c.Store.Get(ctx, key, r)
	if err != nil || key != c.key {
		return data, err
	}
	c.gets++
	if c.gets < c.from {
		return data, nil
	}
	// A valid object with different content: the last byte of the first
	// batch changed and its CRC made right again, so only a content
	// check against what was verified can see it.
	out := append([]byte(nil), data...)
	h, err := kafka.ParseHeader(out)
	if err != nil {
		return nil, err
	}
	out[h.Size()-1] ^= 0x01
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:h.Size()], crc32.MakeTable(crc32.Castagnoli)))
	return out, nil
}

// TestSourceChangedAborts: a source object that differs from its manifest
// on the first read, or from that verified read on the re-read (step 3),
// aborts the compaction with ErrSourceChanged naming the object; nothing
// is published or activated, and a rerun on the unchanged store succeeds.
func TestSourceChangedAborts(t *testing.T) {
	ctx := context.Background()
	wl := newWorkload(t, 9)
	wl.keys = 50
	wl.append(t, 30, true)
	gens, err := layout.ListGenerations(ctx, wl.st, wl.b.StreamID)
	if err != nil || len(gens) < 2 {
		t.Fatalf("generations %v: %v", gens, err)
	}
	g, _, err := layout.LoadGeneration(ctx, wl.st, wl.b.StreamID, gens[0])
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for _, o := range g.Objects {
		data, _ := wl.st.Get(ctx, o.Key, nil)
		if h, err := kafka.ParseHeader(data); err == nil && h.Codec() == kafka.CodecNone && h.RecordsCount > 0 {
			key = o.Key
			break
		}
	}
	if key == "" {
		t.Fatal("no object starting with an uncompressed batch")
	}
	// How many times one compaction reads that object (replay, scan,
	// re-read): counted on a dry run.
	count := &changingStore{Store: wl.st, key: key, from: 1 << 30}
	if _, err := Compact(ctx, count, loadB(t, wl.st), Options{NowMs: 5_000_000, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if count.gets < 2 {
		t.Fatalf("the object is read %d times", count.gets)
	}
	for _, c := range []struct {
		from int
		want string
	}{
		{count.gets - 1, "has sha256"},                        // the scan's first read
		{count.gets, "changed since this compaction read it"}, // step 3's re-read
	} {
		cs := &changingStore{Store: wl.st, key: key, from: c.from}
		_, err := Compact(ctx, cs, loadB(t, wl.st), Options{NowMs: 5_000_000})
		if !errors.Is(err, ErrSourceChanged) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("changed from read %d: %v", c.from, err)
		}
		if b := loadB(t, wl.st); b.Coverage.State != layout.CoverageNone {
			t.Fatalf("changed from read %d: coverage %+v", c.from, b.Coverage)
		}
		gs, _ := layout.ListGenerations(ctx, wl.st, wl.b.StreamID)
		for _, n := range gs {
			if g, _, _ := layout.LoadGeneration(ctx, wl.st, wl.b.StreamID, n); g.Kind == layout.KindTopicCompacted {
				t.Fatalf("changed from read %d: compacted generation %d published", c.from, n)
			}
		}
	}
	r, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 5_000_000})
	if err != nil || !r.Activated {
		t.Fatalf("rerun: %+v, %v", r, err)
	}
}

// TestRegenerateReproducesEveryObject: a view split into many objects is
// regenerated byte for byte from its recorded sources and parameters, each
// object handed over in turn (the emitter reuses its buffers between them).
func TestRegenerateReproducesEveryObject(t *testing.T) {
	ctx := context.Background()
	wl := newWorkload(t, 11)
	wl.keys = 12000
	wl.append(t, 1300, true)
	// Objects close at a block boundary past ObjectBytes: one block each.
	r, err := Compact(ctx, wl.st, loadB(t, wl.st), Options{NowMs: 5_000_000, ObjectBytes: 1})
	if err != nil || !r.Activated {
		t.Fatalf("compact: %+v, %v", r, err)
	}
	if len(r.Objects) < 3 {
		t.Fatalf("%d objects: want several", len(r.Objects))
	}
	g, _, err := layout.LoadGeneration(ctx, wl.st, wl.b.StreamID, r.Gen)
	if err != nil {
		t.Fatal(err)
	}
	var got []layout.ObjectRef
	var datas [][]byte
	err = Regenerate(ctx, wl.st, g, 0, func(ref layout.ObjectRef, data []byte) {
		got = append(got, ref)
		datas = append(datas, bytes.Clone(data))
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(g.Objects) {
		t.Fatalf("regenerated refs differ:\n%v\n%v", got, g.Objects)
	}
	for i, ref := range g.Objects {
		stored, err := wl.st.Get(ctx, ref.Key, nil)
		if err != nil || !bytes.Equal(stored, datas[i]) || store.SHA256Of(datas[i]) != ref.SHA256 {
			t.Fatalf("object %d (%s): regenerated bytes differ (%v)", i, ref.Key, err)
		}
	}
}
