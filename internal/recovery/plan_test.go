package recovery_test

import (
	"context"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
)

// The plan names the checkpoint the replay hydrates and the tail it reads,
// and its request count is what the replay sends, without a GET of a tail
// object.
func TestPlanReplayMatchesReplay(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records = 6000
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	for _, tp := range []layout.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "payments", Partition: 1}, {Topic: "customers", Partition: 0}} {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		pc := store.NewCounter(st)
		p, err := recovery.PlanReplay(ctx, pc, b)
		if err != nil {
			t.Fatal(err)
		}
		rc := store.NewCounter(st)
		res, err := recovery.Replay(ctx, rc, b, recovery.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if (p.Checkpoint == nil) != (res.Chosen == nil) || p.Checkpoint != nil && p.Checkpoint.Key != res.Chosen.Key {
			t.Errorf("%s: plan checkpoint %v, replay chose %v", tp, p.Checkpoint, res.Chosen)
		}
		if p.From != res.Tail.From || p.To != res.Tail.To || p.Objects != res.Tail.Objects || p.Bytes != res.Tail.Bytes {
			t.Errorf("%s: plan tail [%d, %d) %d objects %d bytes; replay [%d, %d) %d objects %d bytes", tp, p.From, p.To, p.Objects, p.Bytes, res.Tail.From, res.Tail.To, res.Tail.Objects, res.Tail.Bytes)
		}
		if p.Requests != rc.Total() {
			t.Errorf("%s: plan says %d requests, the replay sent %d", tp, p.Requests, rc.Total())
		}
		if p.Objects == 0 {
			t.Errorf("%s: an empty tail tests nothing", tp)
		}
		// The plan's GETs are the replay's but the tail's.
		if pg, rg := pc.Counts()[store.VerbGet], rc.Counts()[store.VerbGet]; pg != rg-int64(p.Objects) {
			t.Errorf("%s: the plan sent %d GETs, the replay %d with %d tail objects", tp, pg, rg, p.Objects)
		}
		if p.PlanRequests != pc.Total() {
			t.Errorf("%s: plan_requests %d, counted %d", tp, p.PlanRequests, pc.Total())
		}
	}
}
