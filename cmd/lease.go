package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
)

// The bounds of --lease-ttl: a lease shorter than a second cannot be
// renewed over a slow store; one longer than an hour blocks a partition
// for that long when its holder dies on another host.
const (
	minLeaseTTL = time.Second
	maxLeaseTTL = time.Hour
)

// leaseOptions are how this run takes partition leases: --lease-ttl,
// --lease-wait and the run's logger. No holder id: each acquisition makes
// one of its own (lease.With), so two partitions of one run, or two
// goroutines on one partition, are distinct holders.
func (g *globals) leaseOptions() lease.Options {
	return lease.Options{TTL: g.cfg.LeaseTTL, Wait: g.cfg.LeaseWait, Log: g.log}
}

// withPartition runs fn holding tp's partition lease (docs/design.md,
// "Leases"). A lease another job keeps past --lease-wait is exit 4 naming
// the holder.
func (g *globals) withPartition(ctx context.Context, st store.Store, tp layout.TopicPartition, fn func(ctx context.Context) error) error {
	return leaseErr(tp, lease.WithPartition(ctx, st, tp, g.leaseOptions(), fn))
}

// leaseErr gives a held or lost partition lease its exit code and hint.
func leaseErr(tp layout.TopicPartition, err error) error {
	var he *lease.HeldError
	switch {
	case errors.As(err, &he):
		return exitcode.BlockedErr(fmt.Errorf("%s: %w", tp, he),
			fmt.Sprintf("another job is changing %s; wait for it (its lease expires at %s unless renewed), or rerun with a longer --lease-wait",
				tp, he.Until.UTC().Format(time.RFC3339)))
	case errors.Is(err, lease.ErrCorruptLease):
		// The partition's lease document does not decode (its hint names
		// 'lease break'): corruption, exit 3.
		return exitcode.Wrap(exitcode.Verify, fmt.Errorf("%s: %w", tp, err), errkind.HintOf(err))
	case errors.Is(err, lease.ErrExpired):
		return exitcode.BlockedErr(fmt.Errorf("%s: %w", tp, err),
			"this run could not renew the partition's lease in time (a slow or stalled store, or the process was paused), so it stopped before the lease could expire; rerun: every step is idempotent")
	case errors.Is(err, lease.ErrLost):
		return exitcode.BlockedErr(fmt.Errorf("%s: %w", tp, err),
			"another job took this partition's lease over (this run could not renew it in time); rerun: every step is idempotent")
	}
	return err
}

// trimLeased runs one partition's trim sequence holding its lease; a plan
// or a dry run takes none. A lease another job keeps past --lease-wait (or
// one lost mid-way) is that partition's failure, exit 4 naming the holder;
// the caller's other partitions go on.
func (g *globals) trimLeased(ctx context.Context, st store.Store, req retention.Request) *retention.Result {
	if req.DryRun || req.PlanOnly {
		return retention.RunPartition(ctx, st, req)
	}
	var r *retention.Result
	req.Hooks.Fence = lease.Fence // each write of the sequence proves the lease
	err := g.withPartition(ctx, st, req.TP, func(ctx context.Context) error {
		r = retention.RunPartition(ctx, st, req)
		return nil
	})
	if err != nil {
		if r == nil {
			r = &retention.Result{Topic: req.TP.Topic, Partition: req.TP.Partition}
		}
		r.Error, r.ErrorDetail, r.Err = "ERROR", err.Error(), err
	}
	return r
}
