package health_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
)

func demoStore(t *testing.T) *store.Mem {
	t.Helper()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records, o.Partitions = 1200, 1
	if _, err := demo.Run(context.Background(), st, o); err != nil {
		t.Fatal(err)
	}
	return st
}

func binding(t *testing.T, st store.Store, topic string) *layout.Binding {
	t.Helper()
	b, _, err := layout.LoadBinding(context.Background(), st, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checks(r *health.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Check)
	}
	return out
}

// getCounter counts the GETs of each key.
type getCounter struct {
	store.Store
	mu   sync.Mutex
	gets map[string]int
}

func (g *getCounter) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	g.mu.Lock()
	g.gets[key]++
	g.mu.Unlock()
	return g.Store.Get(ctx, key, r)
}

// A healthy demo partition passes; each damage is the finding it names,
// of the kind (and exit) verify gives.
func TestGatherFindsEachDamage(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		topic  string
		damage func(t *testing.T, st store.Store, b *layout.Binding)
		check  string
		kind   errkind.Kind
	}{
		{"healthy", "orders", func(*testing.T, store.Store, *layout.Binding) {}, "", errkind.None},
		{"head missing", "orders", func(t *testing.T, st store.Store, b *layout.Binding) {
			_ = st.Delete(ctx, layout.HeadKey(b.StreamID), store.None())
		}, health.CheckStreamHead, errkind.Missing},
		{"head rolled back", "orders", func(t *testing.T, st store.Store, b *layout.Binding) {
			h, _, _ := layout.LoadHead(ctx, st, b.StreamID)
			h.Head = b.CheckpointRef.Anchor
			_, _ = st.Put(ctx, layout.HeadKey(b.StreamID), layout.Encode(h), store.None())
		}, health.CheckBeyondHead, errkind.Corrupt},
		{"manifest garbage", "orders", func(t *testing.T, st store.Store, b *layout.Binding) {
			_, _ = st.Put(ctx, layout.GenerationKey(b.StreamID, 0), []byte("garbage"), store.None())
		}, health.CheckManifest, errkind.Corrupt},
		{"sealed object missing", "orders", func(t *testing.T, st store.Store, b *layout.Binding) {
			g, _, _ := layout.LoadGeneration(ctx, st, b.StreamID, 1)
			_ = st.Delete(ctx, g.Objects[0].Key, store.None())
		}, health.CheckHead, errkind.Missing},
		{"compacted member missing", "__consumer_offsets", func(t *testing.T, st store.Store, b *layout.Binding) {
			infos, _ := st.List(ctx, layout.CompactedPrefix(b.StreamID))
			_ = st.Delete(ctx, infos[0].Key, store.None())
		}, health.CheckHead, errkind.Missing},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := demoStore(t)
			b := binding(t, st, c.topic)
			c.damage(t, st, b)
			rep, _, err := health.Gather(ctx, st, b, health.Prior{})
			if err != nil {
				t.Fatal(err)
			}
			if c.check == "" {
				if !rep.OK() || rep.Err() != nil {
					t.Fatalf("healthy partition: %v", checks(rep))
				}
				return
			}
			if rep.OK() || !strings.Contains(strings.Join(checks(rep), " "), c.check) {
				t.Fatalf("want a %s finding, got %v", c.check, checks(rep))
			}
			if k := errkind.Of(rep.Err()); k != c.kind {
				t.Fatalf("kind %v, want %v (%v)", k, c.kind, rep.Err())
			}
			if health.HintFor(rep.Findings[0]) == "" {
				t.Fatal("no hint")
			}
		})
	}
}

// Coverage set to NONE over a stream that holds TOPIC_COMPACTED generations
// is blocked (4), unless an interrupted compaction's task says the
// generation is its unactivated output.
func TestMandatoryCoverageBlocks(t *testing.T) {
	ctx := context.Background()
	st := demoStore(t)
	b := binding(t, st, "__consumer_offsets")
	b.Coverage = layout.Coverage{State: layout.CoverageNone}
	rep, _, err := health.Gather(ctx, st, b, health.Prior{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Blocked || len(rep.Findings) != 0 || errkind.Of(rep.Err()) != errkind.Blocked || !errors.Is(rep.Err(), layout.ErrBlocked) {
		t.Fatalf("coverage NONE over compacted generations: blocked %v, findings %v, err %v", rep.Blocked, checks(rep), rep.Err())
	}
	if _, err := st.Put(ctx, layout.CompactionTaskKey(b.StreamID), []byte("{}"), store.None()); err != nil {
		t.Fatal(err)
	}
	if rep, _, _ := health.Gather(ctx, st, b, health.Prior{}); rep.Blocked {
		t.Fatalf("with a compaction task: still blocked (%s)", rep.BlockedReason)
	}
}

// A checkpoint's manifests section spares the restart's health check the
// manifests it recorded while the listing shows them unchanged; a manifest
// replaced since (another ETag) is read, and its damage found.
func TestKnownManifestsAreNotReadAgain(t *testing.T) {
	ctx := context.Background()
	st := demoStore(t)
	b := binding(t, st, "orders")
	// A checkpoint at the head, made by this build (with the section).
	if _, err := recovery.Create(ctx, st, b, "", false); err != nil {
		t.Fatal(err)
	}
	b = binding(t, st, "orders")
	gens, err := layout.ListGenerations(ctx, st, b.StreamID)
	if err != nil || len(gens) < 3 {
		t.Fatalf("generations %v, %v", gens, err)
	}
	replay := func() (*recovery.Result, map[string]int) {
		gc := &getCounter{Store: st, gets: map[string]int{}}
		res, err := recovery.Replay(ctx, gc, b, recovery.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res, gc.gets
	}
	res, gets := replay()
	if !res.Health.OK() {
		t.Fatalf("healthy: %v", checks(res.Health))
	}
	for _, g := range gens {
		if n := gets[layout.GenerationKey(b.StreamID, g)]; n != 0 {
			t.Fatalf("generation %d read %d times by a restart at a fresh checkpoint", g, n)
		}
	}
	// Damage one: the listing shows another ETag, so it is read.
	key := layout.GenerationKey(b.StreamID, gens[1])
	if _, err := st.Put(ctx, key, []byte(`{"not": "a manifest"}`), store.None()); err != nil {
		t.Fatal(err)
	}
	res, gets = replay()
	if gets[key] != 1 || res.Health.OK() || res.Health.Findings[0].Object != key || res.Health.Findings[0].Check != health.CheckManifest {
		t.Fatalf("replaced manifest: read %d times, findings %+v", gets[key], res.Health.Findings)
	}
	if err := res.Health.MutationErr(); !errkind.IsData(err) {
		t.Fatalf("a damaged manifest must refuse a mutation: %v", err)
	}
}

// A damaged checkpoint alone fails the readers' check but not a mutation's.
func TestMutationErrIgnoresCheckpointFindings(t *testing.T) {
	r := &health.Report{Partition: "orders-0", Findings: []health.Finding{{Scope: health.ScopeCheckpoint, Check: "checkpoint:structure", Object: "k"}}}
	if r.Err() == nil || errkind.Of(r.Err()) != errkind.Corrupt {
		t.Fatalf("reader: %v", r.Err())
	}
	if err := r.MutationErr(); err != nil {
		t.Fatalf("mutation refused for a checkpoint finding: %v", err)
	}
	r.Findings = append(r.Findings, health.Finding{Scope: health.ScopeStream, Check: health.CheckBeyondHead, Object: "o"})
	if err := r.MutationErr(); err == nil || !errors.Is(err, layout.ErrHeadRollback) || strings.Contains(err.Error(), "checkpoint:structure") {
		t.Fatalf("mutation: %v", err)
	}
}

// The store-wide check: a stream no binding references is an orphan unless
// recorded as deleted; none is called an orphan when a binding could not be
// read; stray keys are named.
func TestStoreAccountsForEveryStream(t *testing.T) {
	ctx := context.Background()
	st := demoStore(t)
	known := map[layout.TopicPartition]string{}
	tps, _ := layout.ListBindings(ctx, st)
	for _, tp := range tps {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		known[tp] = b.StreamID
	}
	fs, err := health.Store(ctx, st, known, 4)
	if err != nil || len(fs) != 0 {
		t.Fatalf("healthy store: %+v %v", fs, err)
	}
	orders := layout.TopicPartition{Topic: "orders", Partition: 0}
	sid := known[orders]
	delete(known, orders)
	if err := st.Delete(ctx, layout.BindingKey("orders", 0), store.None()); err != nil {
		t.Fatal(err)
	}
	_, _ = st.Put(ctx, "bindings/README", []byte("x"), store.None())
	_, _ = st.Put(ctx, "leases/notes.txt", []byte("x"), store.None())
	fs, err = health.Store(ctx, st, known, 4)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range fs {
		got[f.Object] = f.Check
	}
	if got[layout.StreamPrefix(sid)] != health.CheckOrphanStream || got["bindings/README"] != health.CheckStrayKey || got["leases/notes.txt"] != health.CheckStrayKey || len(fs) != 3 {
		t.Fatalf("findings %+v", fs)
	}
	// A binding that could not be read: no orphan is named.
	known[layout.TopicPartition{Topic: "payments", Partition: 0}] = ""
	fs, _ = health.Store(ctx, st, known, 4)
	for _, f := range fs {
		if f.Check == health.CheckOrphanStream {
			t.Fatalf("an orphan named while a binding is unreadable: %+v", f)
		}
	}
	// Recorded as deleted: no finding.
	delete(known, layout.TopicPartition{Topic: "payments", Partition: 0})
	d := &layout.Deletion{StreamID: sid, Topic: "orders", Partition: 0, Reason: "topic deleted", DeletedMs: 1, Build: "test"}
	if _, err := layout.Create(ctx, st, layout.DeletionKey(sid), d); err != nil {
		t.Fatal(err)
	}
	fs, _ = health.Store(ctx, st, known, 4)
	for _, f := range fs {
		if f.Check == health.CheckOrphanStream {
			t.Fatalf("a deleted stream called an orphan: %+v", f)
		}
	}
}
