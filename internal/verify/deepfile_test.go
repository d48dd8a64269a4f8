package verify_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/verify"
)

// readCounter counts how a verification reads and lists a store.
type readCounter struct {
	store.Store
	mu                 sync.Mutex
	sized              map[string]int
	heads              int
	listKeys, listFull map[string]int
}

func newReadCounter(st store.Store) *readCounter {
	return &readCounter{Store: st, sized: map[string]int{}, listKeys: map[string]int{}, listFull: map[string]int{}}
}

func (r *readCounter) GetSizedInto(ctx context.Context, key string, buf []byte) ([]byte, store.ObjectInfo, error) {
	r.mu.Lock()
	r.sized[key]++
	r.mu.Unlock()
	return store.GetSizedInto(ctx, r.Store, key, buf)
}

func (r *readCounter) Head(ctx context.Context, key string) (store.ObjectInfo, error) {
	if strings.Contains(key, "/objects/") || strings.Contains(key, "/compacted/") {
		r.mu.Lock()
		r.heads++
		r.mu.Unlock()
	}
	return r.Store.Head(ctx, key)
}

func (r *readCounter) ListKeys(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	r.mu.Lock()
	r.listKeys[prefix]++
	r.mu.Unlock()
	return store.ListKeys(ctx, r.Store, prefix)
}

func (r *readCounter) List(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	r.mu.Lock()
	r.listFull[prefix]++
	r.mu.Unlock()
	return r.Store.List(ctx, prefix)
}

// committedTargets is the keys of the objects the COMMITTED manifests
// above the trim list.
func committedTargets(t *testing.T, st store.Store, b *layout.Binding) []string {
	t.Helper()
	ctx := context.Background()
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	gens, err := layout.ListGenerations(ctx, st, b.StreamID)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, n)
		if err != nil {
			t.Fatal(err)
		}
		if g.Kind == layout.KindCommitted && g.End > h.Trim {
			for _, o := range g.Objects {
				keys = append(keys, o.Key)
			}
		}
	}
	if len(keys) < 4 {
		t.Fatalf("%s: %d COMMITTED objects in manifests, too few to damage", b.Name(), len(keys))
	}
	return keys
}

// TestDeepVerifyHashesEachObjectOnce: on file://, verify --deep reads
// every object a manifest lists once, with the read that leaves the
// digests to it (store.GetSizedInto: the store hashes nothing, verify
// takes the SHA-256 and the ETag from the bytes), never with the read
// that hashes in the store too (a HEAD), and lists the
// stream's objects once, by key (store.ListKeys: no stat per entry).
func TestDeepVerifyHashesEachObjectOnce(t *testing.T) {
	ctx := context.Background()
	st, _ := fileClone(t, newDemoStore(t))
	b := loadB(t, st, ordersTP)
	targets := committedTargets(t, st, b)
	rc := newReadCounter(st)
	rep, err := verify.Partition(ctx, rc, b, verify.Options{Deep: true, ReadOnly: true})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("verify: %v, findings %+v", err, rep.Findings)
	}
	for _, k := range targets {
		if n := rc.sized[k]; n != 1 {
			t.Errorf("%s read %d times with GetSizedInto, want once", k, n)
		}
	}
	if len(rc.sized) != len(targets) || rc.heads != 0 {
		t.Errorf("%d objects read with GetSizedInto (want the %d of the manifests) and %d HEADs (want none)", len(rc.sized), len(targets), rc.heads)
	}
	p := layout.ObjectsPrefix(b.StreamID)
	if rc.listKeys[p] != 1 || rc.listFull[p] != 0 {
		t.Errorf("%s listed %d times by key and %d with sizes, want once by key", p, rc.listKeys[p], rc.listFull[p])
	}
	if rep.BytesHashed == 0 || rep.Objects < len(targets) {
		t.Errorf("report: %d objects, %d bytes hashed", rep.Objects, rep.BytesHashed)
	}
}

// TestDeepVerifyFileDamage: on file://, with the store's digests left to
// verify, --deep still finds a flipped byte (the SHA-256 and the ETag,
// both from the bytes read), a truncated object and one of the wrong size
// (size), and a missing one (head) among the manifests' objects; and in
// the open segment (listed by key, no sizes) a flipped byte (crc), a
// truncated object (structure) and a missing one (chain).
func TestDeepVerifyFileDamage(t *testing.T) {
	ctx := context.Background()
	base := newDemoStore(t)
	type damage struct {
		name   string
		open   bool // an open-segment object, else a manifest's
		scope  string
		checks []string
		do     func(t *testing.T, path string)
	}
	flip := func(t *testing.T, path string) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[70] ^= 0x20 // inside the first batch's CRC-covered bytes
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	truncate := func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, fi.Size()-7); err != nil {
			t.Fatal(err)
		}
	}
	grow := func(t *testing.T, path string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("trailing"))
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	damages := []damage{
		{"flipped byte", false, verify.ScopeCommitted, []string{verify.CheckSHA256, verify.CheckETag, verify.CheckCRC}, flip},
		{"truncated", false, verify.ScopeCommitted, []string{verify.CheckSize, verify.CheckSHA256}, truncate},
		{"wrong size", false, verify.ScopeCommitted, []string{verify.CheckSize, verify.CheckSHA256}, grow},
		{"missing", false, verify.ScopeCommitted, []string{verify.CheckHead}, remove},
		{"open segment: flipped byte", true, verify.ScopeOpenSegment, []string{verify.CheckCRC}, flip},
		{"open segment: truncated", true, verify.ScopeOpenSegment, []string{verify.CheckStructure}, truncate},
		{"open segment: missing", true, verify.ScopeOpenSegment, []string{verify.CheckChain}, remove},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			st, dir := fileClone(t, base)
			b := loadB(t, st, ordersTP)
			key := committedTargets(t, st, b)[1]
			if d.open {
				open := openSegment(t, st, b)
				key = open[len(open)-1].Key
			}
			d.do(t, filepath.Join(dir, filepath.FromSlash(key)))
			// A new store: nothing remembered from before the damage.
			st2, err := store.NewFile(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st2.Close()
			rep, err := verify.Partition(ctx, st2, b, verify.Options{Deep: true, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range d.checks {
				if !hasFinding(rep, d.scope, c) {
					t.Errorf("no %s %s finding: %+v", d.scope, c, rep.Findings)
				}
			}
			for _, f := range rep.Findings {
				if f.Scope == d.scope && f.Object != "" && f.Object != key {
					t.Errorf("a finding on an undamaged object: %+v", f)
				}
			}
		})
	}
}
