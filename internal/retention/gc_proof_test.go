package retention

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
)

// TestGCDropsTheProofsOfWhatItCollects: after a trim, gc deletes the
// objects below it and drops their entries from the stream's proof ledger
// (a CAS), keeping every other proof; a rerun changes nothing.
func TestGCDropsTheProofsOfWhatItCollects(t *testing.T) {
	ctx := context.Background()
	st, tps := gcDemo(t)
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	// A ledger proving every object and checkpoint of the stream.
	var proofs []layout.Proof
	for _, k := range streamKeys(t, st, b.StreamID) {
		if strings.Contains(k, "/objects/") || strings.Contains(k, "/checkpoints/") {
			proofs = append(proofs, layout.Proof{Key: k, Size: 1, SHA256: strings.Repeat("a", 64), ProvedMs: 1000, Build: "test"})
		}
	}
	if _, _, err := layout.SaveProofLedger(ctx, st, tp, b.StreamID, nil, "", layout.ProofUpdate{Add: proofs}, 1000); err != nil {
		t.Fatal(err)
	}
	target := int64(600)
	if r := RunPartition(ctx, st, Request{TP: tp, DeleteRecords: &target, NowMs: time.Now().UnixMilli()}); !r.OK() {
		t.Fatalf("trim: %+v", r)
	}
	o := GCOptions{Grace: 0, Now: time.Now().Add(time.Hour)}
	rep, err := GC(ctx, st, tps, o)
	if err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for _, it := range rep.Items {
		if strings.HasPrefix(it.Key, layout.StreamPrefix(b.StreamID)) {
			deleted[it.Key] = true
		}
	}
	if len(deleted) == 0 {
		t.Fatal("gc collected nothing of orders-0")
	}
	l, _, err := layout.LoadProofLedger(ctx, st, b.StreamID)
	if err != nil || l == nil {
		t.Fatal(err)
	}
	kept := l.Index()
	for k := range deleted {
		if _, ok := kept[k]; ok {
			t.Errorf("%s was collected but keeps its proof", k)
		}
	}
	for _, p := range proofs {
		if _, ok := kept[p.Key]; !ok && !deleted[p.Key] {
			t.Errorf("%s was not collected but lost its proof", p.Key)
		}
	}
	before, _ := st.Get(ctx, layout.ProofKey(b.StreamID), nil)
	if _, err := GC(ctx, st, tps, o); err != nil {
		t.Fatal(err)
	}
	after, _ := st.Get(ctx, layout.ProofKey(b.StreamID), nil)
	if string(before) != string(after) {
		t.Fatal("a second gc changed the ledger")
	}
}
