package status

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Collect with many partitions in flight gives exactly the rows of one at
// a time, in the order named, a damaged partition's failure included in
// its place (run under -race by scripts/race.sh).
func TestCollectParallelEqualsSerial(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records, o.Partitions = 3000, 3
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	// One partition that cannot be read: its binding does not decode.
	if _, err := st.Put(ctx, layout.BindingKey("payments", 1), []byte("{"), store.None()); err != nil {
		t.Fatal(err)
	}
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	// Reverse the order: the rows must follow the order named.
	for i, j := 0, len(tps)-1; i < j; i, j = i+1, j-1 {
		tps[i], tps[j] = tps[j], tps[i]
	}
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	serial, err := Collect(ctx, st, tps, now, 1)
	if err != nil {
		t.Fatal(err)
	}
	parallel, err := Collect(ctx, st, tps, now, 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(serial) != len(tps) || len(parallel) != len(tps) {
		t.Fatalf("%d and %d rows for %d partitions", len(serial), len(parallel), len(tps))
	}
	for i := range tps {
		if serial[i].Topic != tps[i].Topic || serial[i].Partition != tps[i].Partition {
			t.Fatalf("row %d is %s-%d, want %s", i, serial[i].Topic, serial[i].Partition, tps[i])
		}
		a, b := serial[i], parallel[i]
		a.Err, b.Err = nil, nil // same text in Error; distinct error values
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("row %d differs:\nserial   %+v\nparallel %+v", i, a, b)
		}
	}
	bad := 0
	for _, r := range parallel {
		if r.Error != "" {
			bad++
			if r.Topic != "payments" || r.Partition != 1 {
				t.Fatalf("unexpected failure %s-%d: %s", r.Topic, r.Partition, r.Error)
			}
		}
	}
	if bad != 1 {
		t.Fatalf("%d failed rows, want the one damaged partition", bad)
	}
}
