package verify_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/verify"
)

var (
	ordersTP  = layout.TopicPartition{Topic: "orders", Partition: 0}
	offsetsTP = layout.TopicPartition{Topic: "__consumer_offsets", Partition: 0}
)

// newDemoStore is a demo cluster on a fresh mem:// store.
func newDemoStore(t *testing.T) *store.Mem {
	t.Helper()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records, o.Partitions = 3000, 1
	if _, err := demo.Run(context.Background(), st, o); err != nil {
		t.Fatal(err)
	}
	return st
}

func loadB(t *testing.T, st store.Store, tp layout.TopicPartition) *layout.Binding {
	t.Helper()
	b, _, err := layout.LoadBinding(context.Background(), st, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func put(t *testing.T, st store.Store, key string, data []byte) {
	t.Helper()
	if _, err := st.Put(context.Background(), key, data, store.None()); err != nil {
		t.Fatal(err)
	}
}

// snapshot is every key with its ETag.
func snapshot(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	infos, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, in := range infos {
		h, err := st.Head(ctx, in.Key)
		if err != nil {
			t.Fatal(err)
		}
		out[in.Key] = h.ETag
	}
	return out
}

func hasFinding(rep *verify.Report, scope, check string) bool {
	for _, f := range rep.Findings {
		if f.Scope == scope && f.Check == check {
			return true
		}
	}
	return false
}

func TestNamedMalformedBindingIsAFinding(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	put(t, st, layout.BindingKey("orders", 0), []byte("{not json"))
	rep := verify.Named(ctx, st, ordersTP, verify.Options{})
	if rep.Err() != nil || !hasFinding(rep, verify.ScopeBinding, verify.CheckBinding) {
		t.Fatalf("malformed binding: want a binding finding and no error, got %+v (err %v)", rep, rep.Err())
	}
	if !strings.Contains(rep.Findings[0].Detail, layout.ErrCorruptDocument.Error()) {
		t.Fatalf("detail %q does not say the document is malformed", rep.Findings[0].Detail)
	}
	// a binding that is simply absent is an error, not a finding
	rep = verify.Named(ctx, st, layout.TopicPartition{Topic: "nosuch", Partition: 0}, verify.Options{})
	if rep.Err() == nil || !errors.Is(rep.Err(), store.ErrNotFound) || len(rep.Findings) != 0 {
		t.Fatalf("absent binding: want ErrNotFound, got %+v", rep)
	}
}

func TestMalformedHeadIsAFinding(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	b := loadB(t, st, ordersTP)
	put(t, st, layout.HeadKey(b.StreamID), []byte(`{"stream_id": 5}`))
	rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true})
	if err != nil || !hasFinding(rep, verify.ScopeStream, verify.CheckStreamHead) {
		t.Fatalf("malformed head: want a stream-head finding, got %+v, %v", rep, err)
	}
	if err := st.Delete(ctx, layout.HeadKey(b.StreamID), store.None()); err != nil {
		t.Fatal(err)
	}
	rep, err = verify.Partition(ctx, st, b, verify.Options{})
	if err != nil || !hasFinding(rep, verify.ScopeStream, verify.CheckStreamHead) {
		t.Fatalf("missing head: want a stream-head finding, got %+v, %v", rep, err)
	}
}

func TestMalformedDocumentsAreTyped(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	b := loadB(t, st, ordersTP)
	put(t, st, layout.GenerationKey(b.StreamID, 1), []byte("[]"))
	if _, _, err := layout.LoadGeneration(ctx, st, b.StreamID, 1); !layout.IsCorrupt(err) {
		t.Fatalf("generation: want ErrMalformed, got %v", err)
	}
	if _, _, err := layout.LoadGeneration(ctx, st, b.StreamID, 99); layout.IsCorrupt(err) || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("absent generation: want ErrNotFound only, got %v", err)
	}
	put(t, st, layout.HeadKey(b.StreamID), []byte("{}\n{}"))
	if _, _, err := layout.LoadHead(ctx, st, b.StreamID); !layout.IsCorrupt(err) {
		t.Fatalf("head with trailing data: want ErrMalformed, got %v", err)
	}
	// a binding stored under another partition's key
	other, err := st.Get(ctx, layout.BindingKey("payments", 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, st, layout.BindingKey("orders", 0), other)
	if _, _, err := layout.LoadBinding(ctx, st, ordersTP.Topic, ordersTP.Partition); !layout.IsCorrupt(err) {
		t.Fatalf("binding naming another partition: want ErrMalformed, got %v", err)
	}
}

// rewriteGen re-encodes generation n of sid after edit.
func rewriteGen(t *testing.T, st store.Store, sid string, n int64, edit func(*layout.Generation)) {
	t.Helper()
	g, _, err := layout.LoadGeneration(context.Background(), st, sid, n)
	if err != nil {
		t.Fatal(err)
	}
	edit(g)
	put(t, st, layout.GenerationKey(sid, n), layout.Encode(g))
}

func TestFlippedKindIsFound(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	b := loadB(t, st, ordersTP)
	clean, err := verify.Partition(ctx, st, b, verify.Options{})
	if err != nil || len(clean.Findings) != 0 {
		t.Fatalf("demo orders-0 does not verify clean: %+v %v", clean, err)
	}
	rewriteGen(t, st, b.StreamID, 3, func(g *layout.Generation) { g.Kind = layout.KindTopicCompacted })
	rep, err := verify.Partition(ctx, st, b, verify.Options{})
	if err != nil || !hasFinding(rep, verify.ScopeCommitted, verify.CheckKind) || !hasFinding(rep, verify.ScopeCommitted, verify.CheckCommittedGap) {
		t.Fatalf("flipped kind: want kind and committed-gap findings, got %+v, %v", rep.Findings, err)
	}
	if rep.Objects >= clean.Objects {
		t.Fatalf("objects checked %d, clean run %d: the flipped generation's objects should drop out", rep.Objects, clean.Objects)
	}
	// with sources kept but COMMITTED objects: still the wrong kind
	rewriteGen(t, st, b.StreamID, 3, func(g *layout.Generation) {
		g.Sources = []layout.SourceRef{{Gen: 2, ManifestSHA256: strings.Repeat("a", 64)}}
	})
	rep, _ = verify.Partition(ctx, st, b, verify.Options{})
	if !hasFinding(rep, verify.ScopeCommitted, verify.CheckKind) {
		t.Fatalf("TOPIC_COMPACTED over COMMITTED objects: want a kind finding, got %+v", rep.Findings)
	}
	// and not counted as compacted coverage the binding lacks
	if rep.Blocked {
		t.Fatalf("a wrong-kind generation must not count as compacted data: %+v", rep)
	}
}

func TestMandatoryCoverageMissingBlocks(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	b := loadB(t, st, offsetsTP)
	b.Coverage = layout.Coverage{State: layout.CoverageNone}
	rep, err := verify.Partition(ctx, st, b, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Blocked || !strings.Contains(rep.BlockedReason, "mandatory compacted coverage is missing") || len(rep.Findings) != 0 || rep.Quarantined {
		t.Fatalf("coverage NONE over compacted generations: want blocked without findings, got %+v", rep)
	}
	// a partition that never had compacted data is not blocked
	rep, err = verify.Partition(ctx, st, loadB(t, st, ordersTP), verify.Options{})
	if err != nil || rep.Blocked {
		t.Fatalf("orders-0: %+v %v", rep, err)
	}
}

func TestHeadRollbackIsFound(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	b := loadB(t, st, ordersTP)
	h, etag, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	h.Head = 800
	if _, err := layout.Replace(ctx, st, layout.HeadKey(b.StreamID), h, etag); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Partition(ctx, st, b, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var objs, gens, cps int
	for _, f := range rep.Findings {
		if f.Check != verify.CheckBeyondHead {
			continue
		}
		switch {
		case strings.Contains(f.Object, "/objects/"):
			objs++
		case strings.Contains(f.Object, "/generations/"):
			gens++
		case strings.Contains(f.Object, "/checkpoints/"):
			cps++
		}
	}
	if objs == 0 || gens == 0 || cps == 0 {
		t.Fatalf("rolled-back head: want beyond-head findings on objects, generations and checkpoints, got %d/%d/%d in %+v", objs, gens, cps, rep.Findings)
	}
}

func TestBeyondHeadSparesFailedAppends(t *testing.T) {
	h := &layout.Head{StreamID: "s-1", Head: 100}
	obj := func(base, end int64) layout.StreamObject {
		return layout.StreamObject{Key: layout.ObjectKey("s-1", base, end), Base: base, End: end}
	}
	// chain [0,50) [50,100); a failed append at the head [100,120); a
	// failed append that raced the winner [50,100) at 50: [50,130)
	objs := []layout.StreamObject{obj(0, 50), obj(50, 100), obj(100, 120), obj(50, 130)}
	if fs := health.BeyondHead(h, objs, nil, nil); len(fs) != 0 {
		t.Fatalf("leftovers of failed appends reported as a rollback: %+v", fs)
	}
	// an object starting above the head, and one reaching across it with
	// no sibling
	objs = []layout.StreamObject{obj(0, 50), obj(50, 90), obj(90, 110), obj(110, 120)}
	fs := health.BeyondHead(h, objs, nil, nil)
	if len(fs) != 2 || fs[0].Object != obj(90, 110).Key || fs[1].Object != obj(110, 120).Key {
		t.Fatalf("want [90,110) and [110,120) reported, got %+v", fs)
	}
	gens := []*layout.Generation{{StreamID: "s-1", Gen: 0, Kind: layout.KindCommitted, Base: 0, End: 100}, {StreamID: "s-1", Gen: 1, Kind: layout.KindCommitted, Base: 100, End: 101}}
	cps := []store.ObjectInfo{{Key: layout.CheckpointKey("s-1", 100, "aaaaaaaaaaaa")}, {Key: layout.CheckpointKey("s-1", 101, "bbbbbbbbbbbb")}}
	fs = health.BeyondHead(h, nil, gens, cps)
	if len(fs) != 2 || fs[0].Gen != 1 || fs[1].Object != cps[1].Key {
		t.Fatalf("want generation 1 and the checkpoint at 101, got %+v", fs)
	}
}

func TestReadOnlyWritesNothing(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	b := loadB(t, st, offsetsTP)
	g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, b.Coverage.Members[0].Gen)
	if err != nil {
		t.Fatal(err)
	}
	key := g.Objects[0].Key
	data, err := st.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	data[100] ^= 0xff
	put(t, st, key, data)
	before := snapshot(t, st)
	rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.WouldQuarantine || rep.Quarantined || rep.Blocked || len(rep.Findings) == 0 {
		t.Fatalf("read-only: want findings and would_quarantine only, got %+v", rep)
	}
	after := snapshot(t, st)
	if len(after) != len(before) {
		t.Fatalf("read-only verify changed the store: %d objects before, %d after", len(before), len(after))
	}
	for k, e := range before {
		if after[k] != e {
			t.Fatalf("read-only verify changed %s", k)
		}
	}
	if b.Coverage.State != layout.CoverageActive {
		t.Fatalf("read-only verify changed the binding in memory: %s", b.Coverage.State)
	}
	// the same check without ReadOnly quarantines
	rep, err = verify.Partition(ctx, st, b, verify.Options{Deep: true})
	if err != nil || !rep.Quarantined || !rep.Blocked {
		t.Fatalf("without read-only: want quarantined, got %+v %v", rep, err)
	}
}

// openSegment returns orders-0's objects above the last sealed generation.
func openSegment(t *testing.T, st store.Store, b *layout.Binding) []layout.StreamObject {
	t.Helper()
	ctx := context.Background()
	gens, err := layout.ListGenerations(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	sealed := int64(0)
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, n)
		if err != nil {
			t.Fatal(err)
		}
		sealed = max(sealed, g.End)
	}
	objs, err := layout.ListObjects(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	var out []layout.StreamObject
	for _, o := range objs {
		if o.Base >= sealed {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		t.Fatal("orders-0 has no open segment")
	}
	return out
}

func TestDeepChecksTheOpenSegment(t *testing.T) {
	ctx := context.Background()
	st := newDemoStore(t)
	b := loadB(t, st, ordersTP)
	open := openSegment(t, st, b)
	last := open[len(open)-1]
	data, err := st.Get(ctx, last.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	data[70] ^= 0xff // inside the first batch's CRC-covered bytes
	put(t, st, last.Key, data)
	rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true})
	if err != nil || !hasFinding(rep, verify.ScopeOpenSegment, verify.CheckCRC) {
		t.Fatalf("flipped byte in the open segment: want an open-segment crc finding, got %+v %v", rep.Findings, err)
	}
	// the default level reads no bytes
	rep, err = verify.Partition(ctx, st, b, verify.Options{})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("default level: %+v %v", rep.Findings, err)
	}
	// a hole: the last object is gone
	if err := st.Delete(ctx, last.Key, store.None()); err != nil {
		t.Fatal(err)
	}
	rep, err = verify.Partition(ctx, st, b, verify.Options{Deep: true})
	if err != nil || !hasFinding(rep, verify.ScopeOpenSegment, verify.CheckChain) {
		t.Fatalf("missing open-segment object: want a chain finding, got %+v %v", rep.Findings, err)
	}
}
