package retention

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// tracing records every request a store is sent, as "OP key", and can act
// before a PUT (to change the store under a running trim).
type tracing struct {
	store.Store
	mu     sync.Mutex
	log    []string
	onPut  func(key string)
	putHit bool
}

func (s *tracing) note(op, key string) {
	s.mu.Lock()
	s.log = append(s.log, op+" "+key)
	s.mu.Unlock()
}

func (s *tracing) count(op, suffix string) int {
	n := 0
	for _, l := range s.log {
		if strings.HasPrefix(l, op+" ") && strings.HasSuffix(l, suffix) {
			n++
		}
	}
	return n
}

func (s *tracing) Get(ctx context.Context, k string, r *store.Range) ([]byte, error) {
	s.note("GET", k)
	return s.Store.Get(ctx, k, r)
}

func (s *tracing) Head(ctx context.Context, k string) (store.ObjectInfo, error) {
	s.note("HEAD", k)
	return s.Store.Head(ctx, k)
}

func (s *tracing) Put(ctx context.Context, k string, d []byte, g store.Guard) (store.ObjectInfo, error) {
	if s.onPut != nil && !s.putHit {
		s.putHit = true
		s.onPut(k)
	}
	s.note("PUT", k)
	return s.Store.Put(ctx, k, d, g)
}

func (s *tracing) Delete(ctx context.Context, k string, g store.Guard) error {
	s.note("DELETE", k)
	return s.Store.Delete(ctx, k, g)
}

func (s *tracing) List(ctx context.Context, p string) ([]store.ObjectInfo, error) {
	s.note("LIST", p)
	return s.Store.List(ctx, p)
}

func (s *tracing) ListAfter(ctx context.Context, p, a string) ([]store.ObjectInfo, error) {
	s.note("LIST", p)
	return s.Store.ListAfter(ctx, p, a)
}

// TestRunPartitionReadsOnce: a real retention trim of a partition replays
// it once (one listing of its checkpoints), reads its binding once and its
// head twice — the replay's read and the read-back the durable sequence
// verifies the trim with (docs/design.md §7, step 4) — and writes the
// checkpoint, the head and the binding (CreateFrom's checkpoint_ref and
// the observed log start) once each.
func TestRunPartitionReadsOnce(t *testing.T) {
	st := &tracing{Store: demoStore(t)}
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	r := RunPartition(context.Background(), st, Request{TP: tp, Retention: true, NowMs: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()})
	if !r.Trimmed() || r.Trim == nil || !r.Trim.HeadMutated || !r.Trim.CheckpointPublished {
		t.Fatalf("want a real trim with a new checkpoint: %+v %v", r.Trim, r.Err)
	}
	for _, c := range []struct {
		op, suffix string
		want       int
	}{
		{"GET", "bindings/orders/0.json", 1},
		{"GET", "/head.json", 2},
		{"LIST", "/checkpoints/", 1},
		{"PUT", "/head.json", 1},
		{"PUT", "bindings/orders/0.json", 2},
		{"PUT", ".nkc1", 1},
	} {
		if got := st.count(c.op, c.suffix); got != c.want {
			t.Errorf("%s *%s: %d requests, want %d\n%s", c.op, c.suffix, got, c.want, strings.Join(st.log, "\n"))
		}
	}
	if int64(len(st.log)) != r.Requests {
		t.Errorf("the result reports %d requests, the store saw %d", r.Requests, len(st.log))
	}
}

// TestRunPartitionHeadMovedIsReplayed: the head changes after the planning
// replay (a new head version) and an object between the trim and the head
// goes missing: the head CAS on the replay's head loses its precondition,
// and the trim replays the moved head before trying again, so it refuses
// the hole (data loss, exit 3) instead of trimming over it.
func TestRunPartitionHeadMovedIsReplayed(t *testing.T) {
	mem := demoStore(t)
	ctx := context.Background()
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	b := mustBinding(t, mem, tp)
	objs, err := layout.ListObjects(ctx, mem, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	victim := objs[len(objs)/2]
	st := &tracing{Store: mem, onPut: func(key string) {
		// Before the first write (the pre-trim checkpoint): lose an object
		// and move the head to a new version.
		if err := mem.Delete(ctx, victim.Key, store.None()); err != nil {
			t.Error(err)
		}
		h, etag, err := layout.LoadHead(ctx, mem, b.StreamID)
		if err != nil {
			t.Error(err)
			return
		}
		h.Version++
		if _, err := layout.Replace(ctx, mem, layout.HeadKey(b.StreamID), h, etag); err != nil {
			t.Error(err)
		}
	}}
	before := snap(t, mem, tp)
	r := RunPartition(ctx, st, Request{TP: tp, Retention: true, NowMs: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()})
	var me *stream.MissingError
	if r.OK() || !errors.As(r.Err, &me) || !errkind.IsData(r.Err) {
		t.Fatalf("want the hole refused (exit 3): ok %v, err %v", r.OK(), r.Err)
	}
	after := snap(t, mem, tp)
	if after.head.Trim != before.head.Trim || after.head.Version != before.head.Version+1 || after.binding.ObservedLogStart != before.binding.ObservedLogStart {
		t.Fatalf("trimmed over the hole: head trim %d -> %d (version %d -> %d), binding observed %d -> %d",
			before.head.Trim, after.head.Trim, before.head.Version, after.head.Version, before.binding.ObservedLogStart, after.binding.ObservedLogStart)
	}
	if st.count("LIST", "/checkpoints/") != 2 {
		t.Errorf("the moved head was not replayed again:\n%s", strings.Join(st.log, "\n"))
	}
}
