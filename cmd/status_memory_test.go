package cmd

import (
	"context"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// heapLive is the live heap after a full collection.
func heapLive() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// heapAtRead is a store that, each time key is read, notes the live heap.
type heapAtRead struct {
	store.Store
	key string
	mu  sync.Mutex
	at  int64
}

func (s *heapAtRead) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	if key == s.key {
		s.mu.Lock()
		s.at = heapLive()
		s.mu.Unlock()
	}
	return s.Store.Get(ctx, key, r)
}

// statusRetained runs status over the first n partitions of st (named,
// --parallel 1, stdout discarded) and returns the heap the command held
// when it read its last partition's binding: the live heap then, less the
// live heap once the command has returned. The store and the names are in
// both and cancel out; what is left is what status keeps of the rows
// before the last (and its own working set, the same at any n).
func statusRetained(t *testing.T, st store.Store, tps []layout.TopicPartition, n int, format string) int64 {
	t.Helper()
	last := tps[n-1]
	w := &heapAtRead{Store: st, key: layout.BindingKey(last.Topic, last.Partition), at: -1}
	args := []string{"--store", "mem://" + t.Name(), "-o", format, "--parallel", "1", "status", "--now", "2030-01-01T00:00:00Z"}
	for _, tp := range tps[:n] {
		args = append(args, tp.String())
	}
	g := &globals{stderr: io.Discard, st: w}
	if code := execute(context.Background(), g, args, io.Discard); code != 0 {
		t.Fatalf("status over %d partitions: exit %d", n, code)
	}
	g = nil
	after := heapLive()
	runtime.KeepAlive(args)
	runtime.KeepAlive(st)
	if w.at < 0 {
		t.Fatalf("the binding of %s was never read", last)
	}
	return w.at - after
}

// TestStatusHoldsNoRowPerPartition: status holds about nothing per
// partition it has printed, under -o table and -o json: the heap it keeps
// when it reads its last partition grows by at most a few bytes for each
// partition added (the selection's own entry), not by a row (today's
// table held 1.5 KB a partition, its JSON the whole document). Both
// counts are multiples of tableBlock, so that the table holds a block of
// the same size at the last read of each.
func TestStatusHoldsNoRowPerPartition(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	const n1, n2 = 1000, 2000
	const bound = 64 // bytes held per added partition
	ctx := context.Background()
	st := store.NewMem(t.Name())
	if _, err := demo.Run(ctx, st, demo.Options{Partitions: n2/3 + 1, Records: 10 * n2, Seed: 1, Checkpoints: 1, Parallel: 4}); err != nil {
		t.Fatal(err)
	}
	tps, err := layout.ListBindings(ctx, st)
	if err != nil || len(tps) < n2 {
		t.Fatalf("%v: %d bindings", err, len(tps))
	}
	for _, format := range []string{"table", "json"} {
		r1 := statusRetained(t, st, tps, n1, format)
		r2 := statusRetained(t, st, tps, n2, format)
		per := float64(r2-r1) / float64(n2-n1)
		t.Logf("%s: %d bytes held at %d partitions, %d at %d: %.0f bytes per added partition", format, r1, n1, r2, n2, per)
		if per > bound {
			t.Errorf("%s: %.0f bytes held per added partition, want at most %d", format, per, bound)
		}
	}
}
