package demo

import (
	"context"
	"testing"

	"github.com/nereusctl/nereusctl/internal/dumplog"
	"github.com/nereusctl/nereusctl/internal/kafka/coord"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Every consumer group and transactional id is written only to the
// partition its coordinator uses (coord.PartitionFor), as a Kafka cluster
// does, and every partition of __consumer_offsets holds some group.
func TestCoordinatorPartitions(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	o := DefaultOptions()
	o.Records = 4000
	o.Topics = []string{"__consumer_offsets", "__transaction_state"}
	if _, err := Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		topic string
		n     int32
	}{{"__consumer_offsets", 2}, {"__transaction_state", 1}} {
		for p := int32(0); p < c.n; p++ {
			b, _, err := layout.LoadBinding(ctx, st, c.topic, p)
			if err != nil {
				t.Fatal(err)
			}
			src, err := dumplog.OpenCommitted(ctx, st, b)
			if err != nil {
				t.Fatal(err)
			}
			dec := dumplog.DecoderOffsets
			if c.topic == "__transaction_state" {
				dec = dumplog.DecoderTxn
			}
			ids := map[string]int{}
			_, err = dumplog.Run(ctx, src, dumplog.Options{From: -1, Deep: true, Decoder: dec}, func(l dumplog.Line) error {
				rl, ok := l.(*dumplog.RecordLine)
				if !ok || rl.Decoded == nil {
					return nil
				}
				var id string
				switch r := rl.Decoded.(type) {
				case *coord.OffsetsRecord:
					id, _ = r.GroupOf()
				case *coord.TxnRecord:
					id, _ = r.TransactionalIDOf()
				}
				ids[id]++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) == 0 {
				t.Errorf("%s-%d holds no coordinator record", c.topic, p)
			}
			for id := range ids {
				want, _ := coord.PartitionFor(id, c.n)
				if want != p {
					t.Errorf("%s-%d holds records of %q, whose coordinator partition is %d", c.topic, p, id, want)
				}
			}
		}
	}
}
