package retention

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

func gcDemo(t *testing.T) (*store.Mem, []layout.TopicPartition) {
	t.Helper()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records, o.Partitions = 3000, 1
	if _, err := demo.Run(context.Background(), st, o); err != nil {
		t.Fatal(err)
	}
	tps, err := layout.ListBindings(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return st, tps
}

func streamKeys(t *testing.T, st store.Store, sid string) []string {
	t.Helper()
	infos, err := st.List(context.Background(), layout.StreamPrefix(sid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range infos {
		out = append(out, in.Key)
	}
	return out
}

func gcPartitionOf(t *testing.T, rep *GCReport, name string) GCPartition {
	t.Helper()
	for _, p := range rep.Partitions {
		if p.Partition == name {
			return p
		}
	}
	t.Fatalf("gc report has no partition %s: %+v", name, rep.Partitions)
	return GCPartition{}
}

// A head rolled back below the stream's data: the objects above it are
// data, not an append's leftovers; gc deletes nothing in the partition.
func TestGCRefusesBeyondHeadAfterRollback(t *testing.T) {
	ctx := context.Background()
	st, tps := gcDemo(t)
	b, _, err := layout.LoadBinding(ctx, st, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	h, etag, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	h.Head = 800
	if _, err := layout.Replace(ctx, st, layout.HeadKey(b.StreamID), h, etag); err != nil {
		t.Fatal(err)
	}
	before := streamKeys(t, st, b.StreamID)
	rep, err := GC(ctx, st, tps, GCOptions{Grace: 0, Now: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	p := gcPartitionOf(t, rep, "orders-0")
	if !errors.Is(p.Err(), layout.ErrHeadRollback) || p.Objects != 0 {
		t.Fatalf("rolled-back head: want ErrHeadRollback and nothing collected, got %+v (%v)", p, p.Err())
	}
	for _, it := range rep.Items {
		if strings.HasPrefix(it.Key, layout.StreamPrefix(b.StreamID)) {
			t.Fatalf("gc deleted %s (%s) in the rolled-back partition", it.Key, it.Category)
		}
	}
	if after := streamKeys(t, st, b.StreamID); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the partition's objects changed: %d before, %d after", len(before), len(after))
	}
	if len(rep.Partitions) != len(tps) {
		t.Fatalf("gc reported %d of %d partitions", len(rep.Partitions), len(tps))
	}
	for _, q := range rep.Partitions {
		if q.Partition != "orders-0" && q.Err() != nil {
			t.Fatalf("%s: %v", q.Partition, q.Err())
		}
	}
}

// A generation manifest that does not decode may name live objects: gc
// leaves the partition whole and types the failure as malformed.
func TestGCMalformedManifestIsCorruption(t *testing.T) {
	ctx := context.Background()
	st, tps := gcDemo(t)
	b, _, err := layout.LoadBinding(ctx, st, "payments", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, layout.GenerationKey(b.StreamID, 2), []byte(`{"stream_id":`), store.None()); err != nil {
		t.Fatal(err)
	}
	before := streamKeys(t, st, b.StreamID)
	rep, err := GC(ctx, st, tps, GCOptions{Grace: 0, Now: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	p := gcPartitionOf(t, rep, "payments-0")
	if !layout.IsCorrupt(p.Err()) || p.Error == "" {
		t.Fatalf("malformed manifest: want ErrMalformed, got %+v (%v)", p, p.Err())
	}
	if after := streamKeys(t, st, b.StreamID); len(after) != len(before) {
		t.Fatalf("gc changed the partition: %d objects before, %d after", len(before), len(after))
	}
}
