package status

import (
	"context"
	"time"

	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// CollectAtProgress is CollectAt over the named partitions that calls done
// with 1 as each partition's row is made (a progress bar's count; done may
// be called from several goroutines at once). The rows are CollectAt's, in
// the order of tps.
func CollectAtProgress(ctx context.Context, st store.Store, tps []layout.TopicPartition, now time.Time, clock state.Clock, parallel int, done func(int64)) ([]Partition, error) {
	return fleet.Map(ctx, parallel, tps, func(ctx context.Context, _ int, tp layout.TopicPartition) (Partition, error) {
		row := collectOne(ctx, st, tp, now, clock)
		done(1)
		return row, ctx.Err()
	})
}
