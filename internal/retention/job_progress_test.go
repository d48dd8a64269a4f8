package retention

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/store"
)

// progressPuts is a store that records the size of every write of a
// retention progress document.
type progressPuts struct {
	store.Store
	mu    sync.Mutex
	sizes []int
}

func (s *progressPuts) Put(ctx context.Context, k string, d []byte, g store.Guard) (store.ObjectInfo, error) {
	if strings.HasPrefix(k, layout.RetentionTasksPrefix) {
		s.mu.Lock()
		s.sizes = append(s.sizes, len(d))
		s.mu.Unlock()
	}
	return s.Store.Put(ctx, k, d, g)
}

// fleetOptions is a run over a demo store of perTopic partitions in each
// of its three topics, writing its progress after every partition.
func fleetOptions(t *testing.T, perTopic, records int) (*store.Mem, JobOptions) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem(fmt.Sprintf("%s-%d", t.Name(), perTopic))
	if _, err := demo.Run(ctx, st, demo.Options{Partitions: perTopic, Records: records * perTopic, Seed: 1, Checkpoints: 1, Parallel: 4}); err != nil {
		t.Fatal(err)
	}
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return st, JobOptions{
		Partitions: tps, Selection: "--all ", Now: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), NowExplicit: true,
		ProgressFile: filepath.Join(t.TempDir(), "p.json"), StoreID: "mem://" + t.Name(),
		Lease: lease.Options{Holder: "test", TTL: time.Minute}, Parallel: 4, FlushEvery: 0,
	}
}

// TestJobProgressBytesBoundedByParallel: the progress a run writes after
// every partition is as large at 3,006 partitions as at 306 (with
// --parallel 4): a watermark, the window past it and counts, not a record
// per partition. (A record per partition made the last write at 3,006
// partitions ten times the one at 306, and the bytes written per run grow
// with the square of the partitions.) The local file follows it.
func TestJobProgressBytesBoundedByParallel(t *testing.T) {
	var last, most []int
	for _, perTopic := range []int{101, 1001} {
		mem, o := fleetOptions(t, perTopic, 4)
		st := &progressPuts{Store: mem}
		o.Emit = func(r *Result) error {
			if !r.OK() {
				return fmt.Errorf("%s-%d: %s", r.Topic, r.Partition, r.ErrorDetail)
			}
			return nil
		}
		rep, err := RunJob(context.Background(), st, o)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := layout.LoadRetentionProgress(context.Background(), st, rep.ProgressKey)
		if err != nil || !p.Complete || p.DoneCount() != len(o.Partitions) || rep.Trimmed == 0 {
			t.Fatalf("%d partitions: progress %+v (%v), trimmed %d: want complete, every partition counted", len(o.Partitions), p, err, rep.Trimmed)
		}
		if len(st.sizes) < len(o.Partitions)/2 {
			t.Fatalf("%d progress writes for %d partitions: want about one a partition (FlushEvery 0)", len(st.sizes), len(o.Partitions))
		}
		big, total := 0, 0
		for _, n := range st.sizes {
			big = max(big, n)
			total += n
		}
		local, err := os.Stat(o.ProgressFile)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d partitions, --parallel %d: %d progress writes, largest %d bytes, last %d, %d bytes in all; local file %d bytes",
			len(o.Partitions), o.Parallel, len(st.sizes), big, st.sizes[len(st.sizes)-1], total, local.Size())
		last = append(last, st.sizes[len(st.sizes)-1], int(local.Size()))
		most = append(most, big)
	}
	// What may differ: the counts' and positions' digits, and how full
	// the window past the watermark was at the largest write (at most
	// 2 x --parallel positions, each a line of its own). Nothing may grow
	// with the partitions.
	window := 2 * 4 * len(`\n    3006,`)
	if most[1] > most[0]+window+16 || last[2] > last[0]+16 || last[3] > last[1]+32 {
		t.Fatalf("progress writes: largest %d bytes at the small fleet, %d at the large one; last %d and %d; local file %d and %d: want the same size, give or take the digits and the window (%d bytes)",
			most[0], most[1], last[0], last[2], last[1], last[3], window)
	}
}

// partState is what a retention run leaves of a partition.
type partState struct {
	trim, head, observed int64
}

func states(t *testing.T, st store.Store, tps []layout.TopicPartition) []partState {
	t.Helper()
	out := make([]partState, len(tps))
	for i, tp := range tps {
		s := snap(t, st, tp)
		out[i] = partState{trim: s.head.Trim, head: s.head.Head, observed: s.binding.ObservedLogStart}
	}
	return out
}

// TestJobResumeConvergesAtEveryCut: a run cut short at several points
// (between partitions, and right after a partition's head CAS, before
// its binding step), then rerun, leaves every partition as one
// uninterrupted run does, the rerun's summary has the uninterrupted run's
// totals (the partitions it resumed counted from the progress), and it
// redoes none of the partitions the progress counted done.
func TestJobResumeConvergesAtEveryCut(t *testing.T) {
	base, o := fleetOptions(t, 9, 300)
	ref := store.NewMem("ref")
	if err := copyStore(base, ref); err != nil {
		t.Fatal(err)
	}
	o.ProgressFile = filepath.Join(t.TempDir(), "ref.json")
	want, err := RunJob(context.Background(), ref, o)
	if err != nil || want.Trimmed == 0 || want.Errors != 0 || want.GarbageBytes == 0 {
		t.Fatalf("uninterrupted run: %+v, %v", want, err)
	}
	wantState := states(t, ref, o.Partitions)
	for _, cut := range []struct {
		name  string
		after int
		step  string // cancel once this step of the after-th partition is done
	}{{"first partition", 1, ""}, {"a few", 5, ""}, {"most", len(o.Partitions) - 3, ""}, {"head CAS", 7, StepHead}, {"checkpoint", 3, StepCheckpoint}} {
		t.Run(cut.name, func(t *testing.T) {
			st := store.NewMem("cut")
			if err := copyStore(base, st); err != nil {
				t.Fatal(err)
			}
			oc := o
			oc.ProgressFile = filepath.Join(t.TempDir(), "p.json")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			n := 0
			if cut.step == "" {
				oc.OnPartition = func(done, _ int, _ *Result) {
					if done == cut.after {
						cancel()
					}
				}
			} else {
				oc.Hooks = Hooks{After: func(step string) error {
					mu.Lock()
					defer mu.Unlock()
					if step == cut.step {
						if n++; n == cut.after {
							cancel()
						}
					}
					return nil
				}}
			}
			if _, err := RunJob(ctx, st, oc); !errors.Is(err, context.Canceled) {
				t.Fatalf("cut run: err %v, want canceled", err)
			}
			atCut, _, err := layout.LoadRetentionProgress(context.Background(), st, layout.RetentionProgressKey(o.Selection))
			if err != nil || atCut.Complete || atCut.DoneCount() == 0 {
				t.Fatalf("progress at the cut: %+v, %v: want some partitions done, not complete", atCut, err)
			}
			mid := states(t, st, o.Partitions)
			midVersions := make([]int64, len(o.Partitions))
			for i, tp := range o.Partitions {
				midVersions[i] = snap(t, st, tp).head.Version
			}
			oc.OnPartition, oc.Hooks = nil, Hooks{}
			got, err := RunJob(context.Background(), st, oc)
			if err != nil {
				t.Fatal(err)
			}
			if got.Resumed != atCut.DoneCount() || got.Trimmed != want.Trimmed || got.Unchanged != want.Unchanged || got.Errors != 0 || got.GarbageBytes != want.GarbageBytes {
				t.Fatalf("rerun after the cut (%d done, watermark %d, ahead %v): %+v\nwant the uninterrupted %+v, %d resumed",
					atCut.DoneCount(), atCut.Watermark, atCut.Ahead, got.JobSummary, want.JobSummary, atCut.DoneCount())
			}
			if gotState := states(t, st, o.Partitions); fmt.Sprint(gotState) != fmt.Sprint(wantState) {
				t.Fatalf("after the rerun: %v\nuninterrupted: %v", gotState, wantState)
			}
			for i, tp := range o.Partitions {
				if atCut.IsDone(i) && (snap(t, st, tp).head.Version != midVersions[i] || states(t, st, o.Partitions)[i] != mid[i]) {
					t.Fatalf("%s, counted done at the cut, was redone", tp)
				}
			}
			if p, _, err := layout.LoadRetentionProgress(context.Background(), st, layout.RetentionProgressKey(o.Selection)); err != nil || !p.Complete {
				t.Fatalf("progress after the rerun: %+v, %v: want complete", p, err)
			}
		})
	}
}

// legacyProgress is a store progress document of the shape nereusctl
// wrote before the watermark: a record per done partition, self-digesting.
func legacyProgress(t *testing.T, o JobOptions, done []layout.RetentionDone) []byte {
	t.Helper()
	names := make([]string, len(o.Partitions))
	for i, tp := range o.Partitions {
		names[i] = tp.String()
	}
	sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
	now := time.Now().UnixMilli()
	plain := layout.Encode(map[string]any{ // no digest: added below, as the old writer did
		"selection": o.Selection, "targets": len(names), "targets_sha256": hex.EncodeToString(sum[:]),
		"now_ms": o.Now.UnixMilli(), "started_ms": now - 1000, "updated_ms": now, "holder": "old-nereusctl",
		"done": done, "complete": false,
	})
	// The old writer's canonical order is the struct's, not a map's:
	// re-marshal in field order.
	var ordered bytes.Buffer
	ordered.WriteString("{\n")
	for k, f := range []string{"selection", "targets", "targets_sha256", "now_ms", "started_ms", "updated_ms", "holder", "done", "complete"} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(plain, &m); err != nil {
			t.Fatal(err)
		}
		v, _ := json.MarshalIndent(m[f], "  ", "  ")
		if k > 0 {
			ordered.WriteString(",\n")
		}
		fmt.Fprintf(&ordered, "  %q: %s", f, v)
	}
	ordered.WriteString("\n}\n")
	d := sha256.Sum256(ordered.Bytes())
	body := bytes.TrimSuffix(ordered.Bytes(), []byte("\n}\n"))
	return append(body, []byte(",\n  \"digest\": \"sha256:"+hex.EncodeToString(d[:])+"\"\n}\n")...)
}

// TestJobResumesOldShapeProgress: an interrupted run's progress of the old
// shape (a record per partition) is resumed across the upgrade, from the
// store or from a version 1 local file: the partitions it names are
// counted (with their garbage) and not redone, the rerun's totals are an
// uninterrupted run's, and its writes are of the new shape. An old-shape
// document whose digest does not match is refused as corrupt.
func TestJobResumesOldShapeProgress(t *testing.T) {
	base, o := fleetOptions(t, 4, 300)
	ref := store.NewMem("ref")
	if err := copyStore(base, ref); err != nil {
		t.Fatal(err)
	}
	o.ProgressFile = filepath.Join(t.TempDir(), "ref.json")
	want, err := RunJob(context.Background(), ref, o)
	if err != nil || want.Trimmed == 0 {
		t.Fatalf("uninterrupted run: %+v, %v", want, err)
	}
	wantState := states(t, ref, o.Partitions)
	// What the old run had finished: every third partition, trimmed as
	// the uninterrupted run trimmed it (its trim landed).
	var done []layout.RetentionDone
	records := map[string]*Result{}
	donePos := map[int]bool{}
	for i, tp := range o.Partitions {
		if i%3 != 0 {
			continue
		}
		s := wantState[i]
		d := layout.RetentionDone{Partition: tp.String(), LogStart: 0, NewLogStart: s.trim, HW: s.head, GarbageBytes: 0}
		if s.trim > 0 {
			d.GarbageBytes = 1000 + int64(i)
		}
		done = append(done, d)
		records[tp.String()] = &Result{Topic: tp.Topic, Partition: tp.Partition, CurrentLogStart: 0, NewLogStart: s.trim, HW: s.head, Plan: &Plan{GarbageSize: d.GarbageBytes}}
		donePos[i] = true
	}
	// The store as the old run left it: those partitions trimmed.
	for _, from := range []string{"store", "local v1"} {
		t.Run(from, func(t *testing.T) {
			st := store.NewMem("old")
			if err := copyStore(base, st); err != nil {
				t.Fatal(err)
			}
			oc := o
			oc.ProgressFile = filepath.Join(t.TempDir(), "p.json")
			// Trim the partitions the old run finished, with a run of
			// those alone (its own selection and progress).
			var first []layout.TopicPartition
			for i, tp := range o.Partitions {
				if donePos[i] {
					first = append(first, tp)
				}
			}
			op := oc
			op.Partitions, op.Selection, op.ProgressFile = first, "old", filepath.Join(t.TempDir(), "old.json")
			if r, err := RunJob(context.Background(), st, op); err != nil || r.Errors != 0 {
				t.Fatalf("the old run's trims: %+v, %v", r, err)
			}
			mid := states(t, st, o.Partitions)
			var garbage int64
			trimmed := 0
			for _, d := range done {
				garbage += d.GarbageBytes
				if d.NewLogStart > d.LogStart {
					trimmed++
				}
			}
			key := layout.RetentionProgressKey(o.Selection)
			if from == "store" {
				if _, err := st.Put(context.Background(), key, legacyProgress(t, o, done), store.None()); err != nil {
					t.Fatal(err)
				}
			} else {
				names := make([]string, len(o.Partitions))
				for i, tp := range o.Partitions {
					names[i] = tp.String()
				}
				v1, _ := json.Marshal(map[string]any{"version": 1, "store": oc.StoreID, "selection": o.Selection, "partitions": names,
					"now_ms": o.Now.UnixMilli(), "started_ms": time.Now().UnixMilli() - 1000, "updated_ms": time.Now().UnixMilli(), "done": records, "complete": false})
				if err := os.WriteFile(oc.ProgressFile, v1, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := RunJob(context.Background(), st, oc)
			if err != nil {
				t.Fatal(err)
			}
			// The partitions the old run did are counted as it recorded
			// them (its garbage figures); the rest as the uninterrupted run.
			if got.Resumed != len(done) || got.Trimmed != want.Trimmed || got.Unchanged != want.Unchanged || got.Errors != 0 || len(got.Partitions) != len(o.Partitions)-len(done) {
				t.Fatalf("resumed run: %+v with %d listed\nwant %d resumed (%d trimmed, %d garbage bytes) and the uninterrupted %+v", got.JobSummary, len(got.Partitions), len(done), trimmed, garbage, want.JobSummary)
			}
			listed := garbage
			for _, r := range got.Partitions {
				if r.Trimmed() && r.Plan != nil {
					listed += r.Plan.GarbageSize
				}
			}
			if got.GarbageBytes != listed {
				t.Fatalf("resumed run: %d garbage bytes, want the old records' %d and the listed partitions' (%d in all)", got.GarbageBytes, garbage, listed)
			}
			if gotState := states(t, st, o.Partitions); fmt.Sprint(gotState) != fmt.Sprint(wantState) {
				t.Fatalf("after the resumed run: %v\nuninterrupted: %v", gotState, wantState)
			}
			for i, tp := range o.Partitions {
				if donePos[i] && states(t, st, o.Partitions)[i] != mid[i] {
					t.Fatalf("%s, done by the old run, was redone", tp)
				}
			}
			raw, err := st.Get(context.Background(), key, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := layout.DecodeRetentionProgress(key, raw)
			if err != nil || p.Legacy != nil || !p.Complete || p.DoneCount() != len(o.Partitions) || bytes.Contains(raw, []byte(`"done"`)) {
				t.Fatalf("progress after the resumed run: %s (%v): want the new shape, complete", raw, err)
			}
			if p.Trimmed != got.Trimmed {
				t.Fatalf("progress counts %d trimmed, the run reported %d", p.Trimmed, got.Trimmed)
			}
		})
	}
	t.Run("damaged", func(t *testing.T) {
		st := store.NewMem("damaged")
		if err := copyStore(base, st); err != nil {
			t.Fatal(err)
		}
		doc := legacyProgress(t, o, done)
		doc = bytes.Replace(doc, []byte(`"holder": "old-nereusctl"`), []byte(`"holder": "old-nereusctX"`), 1)
		key := layout.RetentionProgressKey(o.Selection)
		if _, err := st.Put(context.Background(), key, doc, store.None()); err != nil {
			t.Fatal(err)
		}
		before := states(t, st, o.Partitions)
		oc := o
		oc.ProgressFile = filepath.Join(t.TempDir(), "p.json")
		_, err := RunJob(context.Background(), st, oc)
		if !errors.Is(err, ErrProgressCorrupt) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "digest") {
			t.Fatalf("damaged old-shape progress: err %v, want corrupt naming %s and the digest", err, key)
		}
		if after := states(t, st, o.Partitions); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatal("a refused run changed the partitions")
		}
	})
}

// TestRecorderWatermarkAndFailedCap: the recorder advances the watermark
// over positions finished in any order within the window, lists the
// failed ones behind it, and, past MaxRetentionFailed failures, holds the
// watermark at the next one and records nothing past the window (a resume
// redoes it): the document stays valid and bounded however many fail.
func TestRecorderWatermarkAndFailedCap(t *testing.T) {
	const window = 8
	n := layout.MaxRetentionFailed + 200
	rc := &recorder{st: store.NewMem("cap"), key: "tasks/retention/x.json", file: filepath.Join(t.TempDir(), "p.json"),
		flushEvery: time.Hour, lastFlush: time.Now(), window: window, failedAhead: map[int]bool{},
		doc: layout.RetentionProgress{Selection: "x", Targets: 2 * n, TargetsSHA256: strings.Repeat("a", 64), StartedMs: 1, UpdatedMs: 1, Holder: "h", Failed: []int{}, Ahead: []int{}}}
	ctx := context.Background()
	// Positions finish out of order within the window: each block of
	// four in reverse. Even positions fail; odd ones are done, every
	// third of them trimmed with 10 bytes of garbage.
	for b := 0; b < 2*n; b += 4 {
		for i := min(b+3, 2*n-1); i >= b; i-- {
			if err := rc.record(ctx, i, i%2 == 1, i%3 == 0, 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := rc.doc
	if err := p.Validate(); err != nil {
		t.Fatalf("progress: %v", err)
	}
	if len(p.Failed) != layout.MaxRetentionFailed || p.Watermark != 2*layout.MaxRetentionFailed || len(p.Ahead) > window {
		t.Fatalf("watermark %d, %d failed, ahead %v: want the watermark held at the failure past %d, the window at most %d", p.Watermark, len(p.Failed), p.Ahead, layout.MaxRetentionFailed, window)
	}
	// Every odd position below the watermark is counted done, with the
	// ones ahead; nothing past the window.
	done := 0
	for i := range 2 * n {
		if p.IsDone(i) {
			if i%2 == 0 || i >= p.Watermark+window {
				t.Fatalf("position %d counted done", i)
			}
			done++
		}
	}
	if done != p.DoneCount() || done != layout.MaxRetentionFailed+len(p.Ahead) {
		t.Fatalf("%d positions done, counts say %d", done, p.DoneCount())
	}
	// A failed position behind the watermark redone (as a resumed run
	// does) leaves the failed list: room for the failure the watermark
	// was held at, which it then passes.
	held := p.Watermark
	if err := rc.record(ctx, 4, true, false, 0); err != nil {
		t.Fatal(err)
	}
	if !rc.doc.IsDone(4) || len(rc.doc.Failed) != layout.MaxRetentionFailed || rc.doc.Watermark <= held || rc.doc.Validate() != nil {
		t.Fatalf("after redoing position 4: failed %d, done %v, watermark %d (held at %d), %v", len(rc.doc.Failed), rc.doc.IsDone(4), rc.doc.Watermark, held, rc.doc.Validate())
	}
}
