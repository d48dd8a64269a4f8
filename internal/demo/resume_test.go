package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

// dieAfter is a store that stops writing for good after n writes, as a
// process killed there would: every later Put and Delete fails.
type dieAfter struct {
	store.Store
	mu sync.Mutex
	n  int
}

var errKilled = errors.New("killed")

func (d *dieAfter) write() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n <= 0 {
		return errKilled
	}
	d.n--
	return nil
}

func (d *dieAfter) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	if err := d.write(); err != nil {
		return store.ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
	}
	return d.Store.Put(ctx, key, data, g)
}

func (d *dieAfter) Delete(ctx context.Context, key string, g store.Guard) error {
	if err := d.write(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return d.Store.Delete(ctx, key, g)
}

// contents is every object's bytes, by key.
func contents(t *testing.T, st store.Store) map[string][]byte {
	t.Helper()
	infos, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, in := range infos {
		b, err := st.Get(context.Background(), in.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[in.Key] = b
	}
	return out
}

func sameStore(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	var missing, extra, differ []string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case !bytes.Equal(g, v):
			differ = append(differ, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(differ)
	if len(missing)+len(extra)+len(differ) > 0 {
		t.Fatalf("%s: the resumed store differs from the demo: %d missing %v, %d extra %v, %d different %v", what, len(missing), head(missing), len(extra), head(extra), len(differ), head(differ))
	}
}

func head(l []string) []string { return l[:min(len(l), 5)] }

// TestInterruptedDemoResumesExactly: a demo killed after any number of
// its writes (here every 7th point, and the first and last), rerun with
// other flags, resumes with the options it was started with and ends
// with exactly the store (every key, every byte) and the summary of an
// uninterrupted run; a third run finds it whole. Before, the rerun found
// bindings, called the partial store the demo and exited 0.
func TestInterruptedDemoResumesExactly(t *testing.T) {
	ctx := context.Background()
	o := DefaultOptions()
	o.Records, o.Partitions, o.Checkpoints = 1200, 1, 2
	o.Topics = []string{"orders", "payments", "customers", "__consumer_offsets"}
	ref := store.NewMem(t.Name() + "-ref")
	counted := &dieAfter{Store: ref, n: 1 << 30}
	want, err := Run(ctx, counted, o)
	if err != nil {
		t.Fatal(err)
	}
	writes := 1<<30 - counted.n
	wantStore := contents(t, ref)
	points := []int{0, 1, writes - 1}
	for n := 7; n < writes-1; n += 7 {
		points = append(points, n)
	}
	for _, n := range points {
		st := store.NewMem(fmt.Sprintf("%s-%d", t.Name(), n))
		if _, err := Run(ctx, &dieAfter{Store: st, n: n}, o); !errors.Is(err, errKilled) {
			t.Fatalf("killed after %d of %d writes: %v, want the kill", n, writes, err)
		}
		other := o
		if n > 0 { // the record is the first write: once there, it wins
			other.Records, other.Partitions, other.Topics = 99, 3, nil // flags of another demo
		}
		got, err := Run(ctx, st, other)
		if err != nil {
			t.Fatalf("rerun after %d of %d writes: %v", n, writes, err)
		}
		if n > 0 && !got.Resumed {
			t.Fatalf("rerun after %d writes: not reported resumed: %+v", n, got)
		}
		sameStore(t, fmt.Sprintf("killed after %d of %d writes", n, writes), contents(t, st), wantStore)
		got.Resumed, got.Options, want.Options = false, nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("killed after %d writes: summary %+v, want %+v", n, got, want)
		}
		again, err := Run(ctx, st, o)
		if err != nil || !again.Existing || again.Resumed {
			t.Fatalf("third run after %d writes: %+v %v, want the demo existing", n, again, err)
		}
	}
	t.Logf("%d kill points of %d writes resumed to the same store", len(points), writes)
}

// TestDemoRefusesDuplicateTopics: --topics naming a topic twice is refused
// before anything is written.
func TestDemoRefusesDuplicateTopics(t *testing.T) {
	st := store.NewMem(t.Name())
	o := DefaultOptions()
	o.Records, o.Topics = 300, []string{"orders", "orders"}
	if _, err := Run(context.Background(), st, o); !errors.Is(err, ErrDuplicateTopic) {
		t.Fatalf("duplicate topics: %v, want ErrDuplicateTopic", err)
	}
	if objs, _ := st.List(context.Background(), ""); len(objs) != 0 {
		t.Fatalf("the refused demo wrote %d objects", len(objs))
	}
}
