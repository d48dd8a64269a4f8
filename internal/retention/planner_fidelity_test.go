package retention

import (
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/state"
)

func applyAt(t *testing.T, p *state.Partition, off, ts int64) {
	t.Helper()
	b, err := kafka.EncodeBatch(kafka.NewBatchSpec(off, []kafka.Record{{Key: []byte("k"), Value: []byte("v"), Offset: off, Timestamp: ts}}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := kafka.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(h, int64(len(b)), state.Marker{}, state.Position{}); err != nil {
		t.Fatal(err)
	}
}

// Appended data after an offset gap: the segment rolled for the batch at
// 10 starts at 10 (UnifiedLog.maybeRoll rolls at the first batch's
// offset), so retention deleting [0, 5) sets Kafka's log start 10, not 5.
func TestPlannerSegmentBaseAfterGap(t *testing.T) {
	p := state.New(0)
	for off := int64(0); off < 5; off++ {
		applyAt(t, p, off, 1000)
	}
	if err := p.Seal(0, 5); err != nil {
		t.Fatal(err)
	}
	for off := int64(10); off < 13; off++ {
		applyAt(t, p, off, 900_000)
	}
	segs := SegmentsOf(p, nil)
	if len(segs) != 2 || segs[0].End != 10 || segs[1].Base != 10 {
		t.Fatalf("segments %+v, want [0, 10) [10, 13)", segs)
	}
	plan := Compute(Input{Topic: "t", Config: cfg("delete", 100_000, -1), HW: p.HW(), Segments: segs, NowMs: 1_000_000, Retention: true})
	if plan.NewLogStart != 10 {
		t.Fatalf("new log start %d, want 10: %+v", plan.NewLogStart, plan)
	}
}
