package demo

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
)

// storeBytes is every key of st with its bytes' digest.
func storeBytes(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	infos, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, in := range infos {
		b, err := st.Get(ctx, in.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[in.Key] = store.SHA256Of(b)
	}
	return out
}

// TestRunParallelSameBytesAndOrder: the demo written 8 partitions at once
// holds exactly the bytes of the one written one at a time, and its
// summary lists the partitions in the same (plan) order.
func TestRunParallelSameBytesAndOrder(t *testing.T) {
	ctx := context.Background()
	o := DefaultOptions()
	o.Records, o.Partitions = 2000, 3
	one := store.NewMem(t.Name() + "-1")
	o.Parallel = 1
	s1, err := Run(ctx, one, o)
	if err != nil {
		t.Fatal(err)
	}
	many := store.NewMem(t.Name() + "-8")
	o.Parallel = 8
	s8, err := Run(ctx, many, o)
	if err != nil {
		t.Fatal(err)
	}
	names := func(s *Summary) string {
		var n []string
		for _, p := range s.Partitions {
			n = append(n, p.Topic+"-"+string(rune('0'+p.Partition)))
		}
		return strings.Join(n, " ")
	}
	if names(s1) != names(s8) || len(s8.Partitions) != len(s1.Partitions) || strings.Join(s1.Compacted, ",") != strings.Join(s8.Compacted, ",") {
		t.Fatalf("summary order differs:\n  --parallel 1: %s (%v)\n  --parallel 8: %s (%v)", names(s1), s1.Compacted, names(s8), s8.Compacted)
	}
	a, b := storeBytes(t, one), storeBytes(t, many)
	var diff []string
	for k, v := range a {
		if b[k] != v {
			diff = append(diff, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diff = append(diff, k)
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 || len(a) == 0 {
		t.Fatalf("%d keys differ between --parallel 1 and 8 (of %d); first: %v", len(diff), len(a), diff[:min(3, len(diff))])
	}
}

// TestRunParallelFailureIsolated: one partition whose writes fail does not
// stop the others: the demo reports it (and how many failed) and every
// other partition is written and in the summary, in order.
func TestRunParallelFailureIsolated(t *testing.T) {
	ctx := context.Background()
	o := DefaultOptions()
	o.Records, o.Partitions, o.Parallel = 2000, 3, 4
	mem := store.NewMem(t.Name())
	st := faultstore.New(mem).Add(faultstore.Rule{Verb: store.VerbPut, Prefix: layout.BindingKey("orders", 1), Kind: faultstore.FailCall, Err: errors.New("injected: disk full")})
	sum, err := Run(ctx, st, o)
	if err == nil || !strings.Contains(err.Error(), "1 of ") || !strings.Contains(err.Error(), "orders-1") {
		t.Fatalf("demo with orders-1 failing: %v, want one failure naming orders-1", err)
	}
	want := 0
	for _, tp := range plans(o) {
		want += tp.partitions
	}
	if len(sum.Partitions) != want-1 {
		t.Fatalf("%d partitions written, want %d (all but orders-1)", len(sum.Partitions), want-1)
	}
	last := ""
	for i, p := range sum.Partitions {
		if p.Topic == "orders" && p.Partition == 1 {
			t.Fatal("orders-1 in the summary")
		}
		if _, _, err := layout.LoadBinding(ctx, mem, p.Topic, p.Partition); err != nil {
			t.Fatalf("%s-%d: %v", p.Topic, p.Partition, err)
		}
		if i > 0 && p.Topic == last && p.Partition <= sum.Partitions[i-1].Partition {
			t.Fatalf("summary out of order at %s-%d", p.Topic, p.Partition)
		}
		last = p.Topic
	}
}
