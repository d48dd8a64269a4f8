package verify_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/verify"
)

// getCounter counts GETs by key over a store that lists in pages.
type getCounter struct {
	*store.Counter
	mu   sync.Mutex
	gets map[string]int
}

func (g *getCounter) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	g.mu.Lock()
	g.gets[key]++
	g.mu.Unlock()
	return g.Counter.Get(ctx, key, r)
}

// TestVerifyListsTheStreamOnceOnAPagingStore: on a store that lists in
// pages (S3; mem:// as S3 does), verify lists a stream that fits a page
// in one LIST, sends no HEAD for the objects the listing shows with their
// ETags, and reads each generation manifest once (the coverage members
// too), with the findings of the per-prefix path: none on a sound
// partition, the same missing-object finding on one that lost an object.
func TestVerifyListsTheStreamOnceOnAPagingStore(t *testing.T) {
	ctx := context.Background()
	for _, tp := range []layout.TopicPartition{ordersTP, {Topic: "customers", Partition: 0}} {
		st := newDemoStore(t)
		b := loadB(t, st, tp)
		gc := &getCounter{Counter: store.NewCounter(st), gets: map[string]int{}}
		rep, err := verify.Partition(ctx, gc, b, verify.Options{ReadOnly: true})
		if err != nil || len(rep.Findings) != 0 || rep.Objects == 0 {
			t.Fatalf("%s: verify: %v, %d objects, findings %+v", tp, err, rep.Objects, rep.Findings)
		}
		c := gc.Counts()
		if c[store.VerbList] != 1 || c[store.VerbHead] != 0 {
			t.Errorf("%s: %d LISTs and %d HEADs for %d objects, want 1 and 0", tp, c[store.VerbList], c[store.VerbHead], rep.Objects)
		}
		manifests := 0
		for key, n := range gc.gets {
			if strings.Contains(key, "/generations/") {
				manifests++
				if n != 1 {
					t.Errorf("%s: manifest %s read %d times", tp, key, n)
				}
			}
		}
		if manifests == 0 {
			t.Fatalf("%s: no manifest read: the test proves nothing", tp)
		}
		if tp.Topic == "customers" && b.Coverage.State != layout.CoverageActive {
			t.Fatalf("customers-0 coverage is %s: the members' second read is not exercised", b.Coverage.State)
		}

		// One object gone: the listing says so as HEAD did.
		objs, err := layout.ListObjects(ctx, st, b.StreamID)
		if err != nil || len(objs) < 2 {
			t.Fatalf("%s: objects: %v", tp, err)
		}
		if err := st.Delete(ctx, objs[0].Key, store.None()); err != nil {
			t.Fatal(err)
		}
		paged, err := verify.Partition(ctx, st, b, verify.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		per, err := verify.Partition(ctx, &listCounter{Store: st, lists: map[string]int{}}, b, verify.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(paged.Findings) == 0 || !reflect.DeepEqual(paged.Findings, per.Findings) {
			t.Fatalf("%s: a deleted object: findings from the listing %+v, from HEADs %+v", tp, paged.Findings, per.Findings)
		}
	}
}
