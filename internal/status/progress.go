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

// EachAtProgress is CollectAtProgress that hands each row to emit as soon
// as it and every row before it are made, in the order of tps (fleet.Each),
// and keeps none: a caller that writes each row as it comes holds
// about --parallel rows, whatever the partition count. An error from emit
// ends the run and is returned.
func EachAtProgress(ctx context.Context, st store.Store, tps []layout.TopicPartition, now time.Time, clock state.Clock, parallel int, done func(int64), emit func(i int, row Partition) error) error {
	return fleet.Each(ctx, parallel, tps, func(ctx context.Context, _ int, tp layout.TopicPartition) (Partition, error) {
		row := collectOne(ctx, st, tp, now, clock)
		done(1)
		return row, ctx.Err()
	}, func(i int, _ layout.TopicPartition, row Partition) error {
		return emit(i, row)
	})
}
