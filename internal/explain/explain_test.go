package explain

import (
	"context"
	"testing"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// explain's verdict is the read path's: an offset is readable exactly when
// a READ_COMMITTED fetch (compaction.Read: the compacted view, then the
// COMMITTED tail with aborted data and control records filtered, up to the
// LSO) returns a record at it, for every offset of a transactional and a
// compacted partition; and every unreadable offset has a reason other than
// readable.
func TestReadableIsWhatAFetchReturns(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records = 1500
	o.Topics = []string{"payments", "customers"}
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, tp := range []layout.TopicPartition{{Topic: "payments", Partition: 0}, {Topic: "customers", Partition: 1}} {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		served := map[int64]bool{}
		info, err := compaction.Read(ctx, st, b, 0, func(r compaction.Record) error {
			served[r.Offset] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < info.HW+2; off++ {
			e, err := Explain(ctx, st, b, off)
			if err != nil {
				t.Fatal(err)
			}
			if e.Damage != nil {
				t.Fatalf("%s offset %d: damage on a healthy demo: %v", tp, off, e.Damage)
			}
			if e.Readable != served[off] {
				t.Fatalf("%s offset %d: readable %v (%s: %s), the fetch returns it: %v", tp, off, e.Readable, e.Reason, e.Detail, served[off])
			}
			if !e.Readable && e.Reason == ReasonReadable {
				t.Fatalf("%s offset %d: not readable with reason readable", tp, off)
			}
			reasons[e.Reason]++
		}
	}
	// The demo holds every kind the partitions can show.
	for _, r := range []string{ReasonReadable, ReasonAborted, ReasonControl, ReasonCompactedAway, ReasonNotYetWritten, ReasonOpenTxn} {
		if reasons[r] == 0 {
			t.Errorf("no offset explained as %s (%v)", r, reasons)
		}
	}
}
