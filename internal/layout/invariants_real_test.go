package layout_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/importer"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/importrun"
)

// TestInvariantsHoldOnDemoStore: the rules accept every partition of a real
// store (the demo's topics: plain, compacted and coordinator partitions,
// checkpoints, compacted coverage), read the way the callers will: binding,
// head, every checkpoint's anchor, every manifest's summary.
func TestInvariantsHoldOnDemoStore(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("demo")
	o := demo.DefaultOptions()
	o.Records = 3000
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	checked, anchors, gens, covered := checkStore(t, st)
	if checked == 0 || anchors == 0 || gens == 0 || covered == 0 {
		t.Fatalf("the demo store exercised too little: %d partitions, %d checkpoints, %d manifests, %d with coverage", checked, anchors, gens, covered)
	}
	t.Logf("%d partitions, %d checkpoints, %d manifests, %d with ACTIVE coverage: no violation", checked, anchors, gens, covered)
}

// TestInvariantsHoldOnImportedFixtures: the same on every real Kafka
// partition folder of testdata/kafka imported as it is (cleaned
// __consumer_offsets partitions with offset gaps, a log start above 0).
func TestInvariantsHoldOnImportedFixtures(t *testing.T) {
	ctx := context.Background()
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "kafka", "*", "*-[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]store.Store{} // one store per fixture set: their names repeat
	imported := 0
	for _, d := range dirs {
		if logs, _ := filepath.Glob(filepath.Join(d, "*.log")); len(logs) == 0 {
			continue
		}
		set := filepath.Base(filepath.Dir(d))
		if stores[set] == nil {
			stores[set] = store.NewMem(set)
		}
		if _, err := importrun.Run(ctx, stores[set], importer.Options{Dir: d}); err != nil {
			t.Fatalf("import %s: %v", d, err)
		}
		imported++
	}
	var checked, gens int
	for _, st := range stores {
		c, _, g, _ := checkStore(t, st)
		checked, gens = checked+c, gens+g
	}
	if imported < 3 || checked != imported {
		t.Fatalf("imported %d fixtures, checked %d partitions", imported, checked)
	}
	t.Logf("%d imported partitions, %d manifests: no violation", checked, gens)
}

func checkStore(t *testing.T, st store.Store) (checked, anchors, gens, covered int) {
	t.Helper()
	ctx := context.Background()
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tps {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := layout.LoadHead(ctx, st, b.StreamID)
		if err != nil {
			t.Fatal(err)
		}
		cps, err := st.List(ctx, layout.CheckpointsPrefix(b.StreamID))
		if err != nil {
			t.Fatal(err)
		}
		var as []layout.CheckpointAnchor
		for _, in := range cps {
			data, err := st.Get(ctx, in.Key, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := nkc1.Open(data)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := r.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			as = append(as, layout.CheckpointAnchor{Key: in.Key, Anchor: cp.Anchor.Offset, LogStart: cp.Anchor.LogStart})
		}
		if err := layout.CheckInvariants(b, h, as...); err != nil {
			t.Errorf("%s: %v", tp, err)
		}
		ns, err := layout.ListGenerations(ctx, st, b.StreamID)
		if err != nil {
			t.Fatal(err)
		}
		var sums []layout.GenerationSummary
		for _, n := range ns {
			g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, n)
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, g.Summary())
		}
		if err := layout.CheckGenerations(b, h, sums); err != nil {
			t.Errorf("%s: %v", tp, err)
		}
		checked++
		anchors += len(as)
		gens += len(sums)
		if b.Coverage.State == layout.CoverageActive {
			covered++
		}
	}
	return checked, anchors, gens, covered
}
