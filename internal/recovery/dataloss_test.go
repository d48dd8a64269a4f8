package recovery

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// resealObject rewrites the COMMITTED manifest entry of key through the
// layout package (CAS on the manifest's ETag); it fails the test when no
// manifest lists key.
func (f *fixture) resealObject(t *testing.T, key string, change func(*layout.ObjectRef)) int64 {
	t.Helper()
	ctx := context.Background()
	gens, err := layout.ListGenerations(ctx, f.st, f.b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range gens {
		var g layout.Generation
		gk := layout.GenerationKey(f.b.StreamID, n)
		etag, err := layout.Load(ctx, f.st, gk, &g)
		if err != nil {
			t.Fatal(err)
		}
		for i := range g.Objects {
			if g.Objects[i].Key == key {
				change(&g.Objects[i])
				if _, err := layout.Replace(ctx, f.st, gk, &g, etag); err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
	}
	t.Fatalf("no COMMITTED manifest lists %s", key)
	return -1
}

// objects lists the stream's objects in offset order.
func (f *fixture) objects(t *testing.T) []layout.StreamObject {
	t.Helper()
	objs, err := layout.ListObjects(context.Background(), f.st, f.b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// objectAt returns the object holding offset off.
func (f *fixture) objectAt(t *testing.T, off int64) layout.StreamObject {
	t.Helper()
	for _, o := range f.objects(t) {
		if o.Base <= off && off < o.End {
			return o
		}
	}
	t.Fatalf("no object holds offset %d", off)
	return layout.StreamObject{}
}

func (f *fixture) del(t *testing.T, key string) {
	t.Helper()
	if err := f.st.Delete(context.Background(), key, store.None()); err != nil {
		t.Fatal(err)
	}
}

// storeKeys is every key and ETag of the store, to prove nothing changed.
func storeKeys(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	infos, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, in := range infos {
		out[in.Key] = in.ETag
	}
	return out
}

func sameKeys(t *testing.T, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("the store changed: %d objects before, %d after", len(before), len(after))
	}
	for k, e := range before {
		if after[k] != e {
			t.Fatalf("the store changed at %s", k)
		}
	}
}

// wantMissing asserts err is data loss naming exactly the range [a, b)
// between trim and head, with exit 3 and the restore hint.
func wantMissing(t *testing.T, what string, err error, a, b, trim, head int64) {
	t.Helper()
	var me *stream.MissingError
	if !errors.As(err, &me) {
		t.Fatalf("%s: want missing objects [%d, %d), got %v", what, a, b, err)
	}
	if len(me.Ranges) != 1 || me.Ranges[0] != [2]int64{a, b} || me.Trim != trim || me.Head != head {
		t.Fatalf("%s: missing %v between %d and %d, want [[%d %d]] between %d and %d", what, me.Ranges, me.Trim, me.Head, a, b, trim, head)
	}
	if !errors.Is(err, stream.ErrMissing) || !errkind.IsData(err) {
		t.Fatalf("%s: kind %v, want corrupt or missing: %v", what, errkind.Of(err), err)
	}
	want := "missing objects for offsets [" + itoa(a) + ", " + itoa(b) + ") between the durable trim " + itoa(trim) + " and the head " + itoa(head)
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "collected") {
		t.Fatalf("%s: message %q, want %q", what, err.Error(), want)
	}
	if h := errkind.HintOf(err); !strings.Contains(h, "docs/runbooks/restore-from-replica.md") {
		t.Fatalf("%s: hint %q", what, h)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// allPaths replays b the three ways and returns the three errors.
func allPaths(t *testing.T, f *fixture) (cp, full, create error) {
	t.Helper()
	ctx := context.Background()
	b, etag := f.binding(t)
	_, cp = Replay(ctx, f.st, b, Options{})
	_, full = Replay(ctx, f.st, b, Options{Full: true})
	_, create = Create(ctx, f.st, b, etag, false)
	return
}

// TestDataLossHoleWithoutCheckpoints: one object deleted from the middle of
// a live log with no checkpoint: the replay (which falls back to a full
// replay) and the full replay name the hole; nothing is published.
func TestDataLossHoleWithoutCheckpoints(t *testing.T) {
	f := newFixture(t, 11, 3000)
	for i := 0; i < 30; i++ {
		f.appendRandom(t)
	}
	h := f.w.Next()
	o := f.objectAt(t, h/2)
	f.del(t, o.Key)
	before := storeKeys(t, f.st)
	cp, full, create := allPaths(t, f)
	wantMissing(t, "replay", cp, o.Base, o.End, 0, h)
	wantMissing(t, "full replay", full, o.Base, o.End, 0, h)
	wantMissing(t, "checkpoint create", create, o.Base, o.End, 0, h)
	sameKeys(t, before, storeKeys(t, f.st))
}

// TestDataLossHoleWithCheckpoints: holes above and below the newest
// checkpoint's anchor (but above the trim) are data loss on every path:
// the checkpoint must not hide the one below its anchor, and the full
// replay must not start from a checkpoint above the hole and call it gc.
func TestDataLossHoleWithCheckpoints(t *testing.T) {
	for _, where := range []string{"below the newest anchor", "above the newest anchor", "below the oldest anchor"} {
		t.Run(where, func(t *testing.T) {
			f, cps := twoCheckpoints(t)
			f.setTrim(t, 5)
			h := f.w.Next()
			var off int64
			switch where {
			case "below the newest anchor":
				off = (cps[0].Anchor + cps[1].Anchor) / 2
			case "above the newest anchor":
				off = (cps[1].Anchor + h) / 2
			case "below the oldest anchor":
				off = (5 + cps[0].Anchor) / 2
			}
			o := f.objectAt(t, off)
			f.del(t, o.Key)
			before := storeKeys(t, f.st)
			cp, full, create := allPaths(t, f)
			wantMissing(t, "replay", cp, o.Base, o.End, 5, h)
			wantMissing(t, "full replay", full, o.Base, o.End, 5, h)
			wantMissing(t, "checkpoint create", create, o.Base, o.End, 5, h)
			sameKeys(t, before, storeKeys(t, f.st))
		})
	}
}

// TestDataLossTrimInsideMissingObject: the trim falls inside the deleted
// object: only its part above the trim is data loss, and the checkpoint
// path (which lists from the segment or index entry below the trim) still
// finds it.
func TestDataLossTrimInsideMissingObject(t *testing.T) {
	f, cps := twoCheckpoints(t)
	o := f.objectAt(t, cps[0].Anchor/2)
	if o.End-o.Base < 2 {
		o = f.objectAt(t, cps[0].Anchor/2+1)
	}
	trim := o.Base + 1
	f.setTrim(t, trim)
	f.del(t, o.Key)
	cp, full, _ := allPaths(t, f)
	wantMissing(t, "replay", cp, trim, o.End, trim, f.w.Next())
	wantMissing(t, "full replay", full, trim, o.End, trim, f.w.Next())
}

// TestGCBelowTrimReplaysFromFloor: objects legitimately gone below the trim
// (gc) are not data loss: the checkpoint path works and the full replay
// starts from the oldest valid checkpoint (the retention floor), replays
// every object from its anchor, and gives the same digest.
func TestGCBelowTrimReplaysFromFloor(t *testing.T) {
	ctx := context.Background()
	f, cps := twoCheckpoints(t)
	trim := cps[0].Anchor + 3
	f.setTrim(t, trim)
	// gc: every object wholly below the trim, including the older
	// checkpoint's anchor object (so the floor is the newer checkpoint),
	// deleted in no particular order.
	var gone int
	for _, o := range f.objects(t) {
		if o.End <= trim {
			f.del(t, o.Key)
			gone++
		}
	}
	if gone == 0 {
		t.Fatal("nothing below the trim")
	}
	b, _ := f.binding(t)
	res, err := Replay(ctx, f.st, b, Options{})
	if err != nil {
		t.Fatalf("checkpoint path: %v", err)
	}
	full, err := Replay(ctx, f.st, b, Options{Full: true})
	if err != nil {
		t.Fatalf("full replay: %v", err)
	}
	if !full.Floor || full.Chosen == nil || full.Chosen.Key != cps[1].Key {
		t.Fatalf("full replay: floor %v chosen %+v, want the floor at %s", full.Floor, full.Chosen, cps[1].Key)
	}
	if full.Tail.From != cps[1].Anchor || full.Tail.To != f.w.Next() {
		t.Fatalf("full replay replayed [%d, %d), want [%d, %d)", full.Tail.From, full.Tail.To, cps[1].Anchor, f.w.Next())
	}
	if res.Digest() != full.Digest() {
		t.Fatalf("digests differ: %s vs %s", res.Digest(), full.Digest())
	}
	// A hole below the trim among objects gc has not reached yet is gc's
	// business too, and so is a missing object below the trim with a
	// checkpoint above it.
	f2, cps2 := twoCheckpoints(t)
	f2.setTrim(t, cps2[1].Anchor)
	f2.del(t, f2.objectAt(t, cps2[0].Anchor).Key)
	b2, _ := f2.binding(t)
	if _, err := Replay(ctx, f2.st, b2, Options{}); err != nil {
		t.Fatalf("hole below the trim: checkpoint path: %v", err)
	}
	if r, err := Replay(ctx, f2.st, b2, Options{Full: true}); err != nil || !r.Floor {
		t.Fatalf("hole below the trim: full replay: floor %v, %v", r != nil && r.Floor, err)
	}
}

// TestGCBelowTrimWithoutCheckpointIsMissing: with the objects below the
// trim gone and no checkpoint to hold their state, the replay fails with
// exit 3 and says "missing", not "collected".
func TestGCBelowTrimWithoutCheckpointIsMissing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 12, 3000)
	for i := 0; i < 20; i++ {
		f.appendRandom(t)
	}
	first := f.objects(t)[0]
	f.setTrim(t, first.End)
	f.del(t, first.Key)
	b, _ := f.binding(t)
	for _, full := range []bool{false, true} {
		_, err := Replay(ctx, f.st, b, Options{Full: full})
		if !errors.Is(err, stream.ErrMissing) || !errkind.IsData(err) || !strings.Contains(err.Error(), "missing") || strings.Contains(err.Error(), "collected") {
			t.Fatalf("full=%v: %v (kind %v)", full, err, errkind.Of(err))
		}
	}
}

// flipProducerEpoch flips one bit of the producerEpoch field (covered by
// the batch CRC) of the first batch of key and returns that batch's base
// offset.
func flipProducerEpoch(t *testing.T, f *fixture, key string) int64 {
	t.Helper()
	ctx := context.Background()
	data, err := f.st.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := kafka.ParseHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	data[51] ^= 0x01 // producerEpoch: bytes 51-52 of the batch
	if _, err := f.st.Put(ctx, key, data, store.None()); err != nil {
		t.Fatal(err)
	}
	return h.BaseOffset
}

// TestCRCFlipInSealedTailObjectRefused: a one-bit flip in a CRC-covered
// header field of a sealed object in the tail is refused by the checkpoint
// path, the full replay and checkpoint create (exit 3, naming the object,
// the batch offset and "batch CRC"), and nothing is published.
func TestCRCFlipInSealedTailObjectRefused(t *testing.T) {
	f, cps := twoCheckpoints(t)
	// the first object after the newest anchor that a manifest lists
	var key string
	for _, o := range f.objects(t) {
		if o.Base >= cps[1].Anchor {
			key = o.Key
			break
		}
	}
	gen := f.resealObject(t, key, func(*layout.ObjectRef) {})
	if gen < 0 {
		t.Fatal("not sealed")
	}
	off := flipProducerEpoch(t, f, key)
	before := storeKeys(t, f.st)
	cp, full, create := allPaths(t, f)
	for what, err := range map[string]error{"replay": cp, "full replay": full, "checkpoint create": create} {
		if !errors.Is(err, kafka.ErrCRC) || !errkind.IsData(err) {
			t.Fatalf("%s: %v (kind %v), want a CRC mismatch, exit 3", what, err, errkind.Of(err))
		}
		msg := err.Error()
		for _, want := range []string{key, "batch at offset " + itoa(off), "batch CRC"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("%s: %q does not name %q", what, msg, want)
			}
		}
	}
	sameKeys(t, before, storeKeys(t, f.st))
}

// TestCRCFlipInOpenTailObjectRefused: the same in an object of the open
// segment (no manifest lists it yet): the batch CRC alone refuses it.
func TestCRCFlipInOpenTailObjectRefused(t *testing.T) {
	f, _ := twoCheckpoints(t)
	last := f.objects(t)[len(f.objects(t))-1]
	off := flipProducerEpoch(t, f, last.Key)
	cp, full, create := allPaths(t, f)
	for what, err := range map[string]error{"replay": cp, "full replay": full, "checkpoint create": create} {
		if !errors.Is(err, kafka.ErrCRC) || !strings.Contains(err.Error(), "batch at offset "+itoa(off)) {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// TestManifestMismatchRefused: a sealed object whose bytes differ from its
// COMMITTED manifest in size or CRC-32C is refused even when every batch
// CRC passes (the leader epoch is outside the batch CRC).
func TestManifestMismatchRefused(t *testing.T) {
	ctx := context.Background()
	for _, c := range []string{"crc32c", "size", "leader epoch"} {
		t.Run(c, func(t *testing.T) {
			f := newFixture(t, 21, 3000)
			for i := 0; i < 20; i++ {
				f.appendRandom(t)
			}
			o := f.objects(t)[2]
			switch c {
			case "crc32c":
				f.resealObject(t, o.Key, func(r *layout.ObjectRef) { r.CRC32C ^= 1 })
			case "size":
				f.resealObject(t, o.Key, func(r *layout.ObjectRef) { r.Size++ })
			case "leader epoch":
				f.resealObject(t, o.Key, func(*layout.ObjectRef) {})
				data, _ := f.st.Get(ctx, o.Key, nil)
				data[12] ^= 0x01 // partitionLeaderEpoch: not covered by the batch CRC
				if _, err := f.st.Put(ctx, o.Key, data, store.None()); err != nil {
					t.Fatal(err)
				}
			}
			before := storeKeys(t, f.st)
			cp, full, create := allPaths(t, f)
			want := "crc32c"
			if c == "size" {
				want = "bytes, its COMMITTED manifest"
			}
			for what, err := range map[string]error{"replay": cp, "full replay": full, "checkpoint create": create} {
				if !errors.Is(err, kafka.ErrCorrupt) || !errkind.IsData(err) || !strings.Contains(err.Error(), o.Key) || !strings.Contains(err.Error(), want) {
					t.Fatalf("%s: %v (kind %v)", what, err, errkind.Of(err))
				}
			}
			sameKeys(t, before, storeKeys(t, f.st))
		})
	}
}

// TestTruncatedBatchIsCorruption: a batchLength flipped so that the batch
// runs past the end of its object is corruption (exit 3), not a plain
// error.
func TestTruncatedBatchIsCorruption(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 31, 100000) // one open segment: no manifest check first
	for i := 0; i < 10; i++ {
		f.appendRandom(t)
	}
	o := f.objects(t)[4]
	data, _ := f.st.Get(ctx, o.Key, nil)
	data[8] ^= 0x40 // batchLength's high byte: the batch claims 1 GiB more
	if _, err := f.st.Put(ctx, o.Key, data, store.None()); err != nil {
		t.Fatal(err)
	}
	b, _ := f.binding(t)
	_, err := Replay(ctx, f.st, b, Options{Full: true})
	if !errors.Is(err, kafka.ErrCorrupt) || !errkind.IsData(err) || !strings.Contains(err.Error(), o.Key) {
		t.Fatalf("%v (kind %v), want corruption naming %s", err, errkind.Of(err), o.Key)
	}
}

// TestOpenWriterRefusesCorruptOpenSegment: the writer re-reads the open
// segment's objects to seal them later; a CRC flip there is refused, so no
// manifest is ever sealed over unverified bytes.
func TestOpenWriterRefusesCorruptOpenSegment(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 41, 100000) // one open segment
	for i := 0; i < 5; i++ {
		f.appendRandom(t)
	}
	objs := f.objects(t)
	off := flipProducerEpoch(t, f, objs[len(objs)-1].Key)
	_, err := stream.OpenWriter(ctx, f.st, f.b.StreamID, f.b.Config)
	if !errors.Is(err, kafka.ErrCRC) || !errkind.IsData(err) || !strings.Contains(err.Error(), "batch at offset "+itoa(off)) {
		t.Fatalf("open writer over a corrupt open segment: %v", err)
	}
}

// getRecorder records the keys a replay GETs (the tail is read ahead,
// several at once).
type getRecorder struct {
	store.Store
	mu   sync.Mutex
	keys []string
}

func (g *getRecorder) record(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keys = append(g.keys, key)
}

func (g *getRecorder) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	g.record(key)
	return g.Store.Get(ctx, key, r)
}

func (g *getRecorder) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	g.record(key)
	return store.GetInto(ctx, g.Store, key, buf)
}

// TestDataLossCheckCost: the check of [trim, anchor) adds one LIST and no
// GET to a checkpoint-path replay: the data objects read are the anchor
// object and the tail, as before.
func TestDataLossCheckCost(t *testing.T) {
	ctx := context.Background()
	f, cps := twoCheckpoints(t)
	f.setTrim(t, cps[0].Anchor+2) // the trim between the two anchors
	rec := &getRecorder{Store: f.st}
	ctr := store.NewCounter(rec)
	b, _ := f.binding(t)
	res, err := Replay(ctx, ctr, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Chosen == nil || res.Chosen.Key != cps[1].Key {
		t.Fatalf("chose %+v", res.Chosen)
	}
	// checkpoints/, objects after the anchor, objects from the trim,
	// generations after the checkpoint's
	if n := ctr.Counts()[store.VerbList]; n > 4 {
		t.Fatalf("%d LIST requests, want at most 4", n)
	}
	var got []string
	for _, k := range rec.keys {
		if strings.Contains(k, "/objects/") {
			got = append(got, k)
		}
	}
	objs := f.objects(t)
	chain, err := stream.Chain(objs, cps[1].Anchor, f.w.Next())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{f.objectAt(t, cps[1].Anchor-1).Key}
	for _, o := range chain {
		want = append(want, o.Key)
	}
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("object GETs %v, want the anchor object and the tail %v", got, want)
	}
}
