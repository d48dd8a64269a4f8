package retention

import (
	"context"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Steps of the durable trim sequence (docs/design.md §7), named for hooks, logs and
// the crash harness.
const (
	StepCheckpoint = "checkpoint" // the pre-trim checkpoint is durable
	StepHead       = "head"       // the head's trim was CASed
	StepVerify     = "verify"     // the trim was read back
	StepBinding    = "binding"    // the binding's observed_log_start was CASed
)

// Hooks lets tests and the crash harness act between steps, and the
// partition lease fence the steps.
type Hooks struct {
	// After is called after each step completes; an error stops the
	// sequence there (as a crash would).
	After func(step string) error
	// Fence, when set, is called before each write of the sequence (the
	// pre-trim checkpoint, the head CAS, the binding CAS): it proves the
	// partition lease the trim runs under is still this run's
	// (lease.Fence), so a run paused past its lease writes nothing.
	Fence func(ctx context.Context, step string) error
}

func (h Hooks) after(step string) error {
	if h.After == nil {
		return nil
	}
	return h.After(step)
}

func (h Hooks) fence(ctx context.Context, step string) error {
	if h.Fence == nil {
		return nil
	}
	return h.Fence(ctx, step)
}

// maxCASAttempts bounds re-reads after a lost precondition (a broker
// appending concurrently moves the head version).
const maxCASAttempts = 8

// TrimResult says what a trim did.
type TrimResult struct {
	CurrentLogStart int64  `json:"current_log_start"`
	NewLogStart     int64  `json:"new_log_start"`
	Checkpoint      string `json:"checkpoint,omitempty"`
	// CheckpointPublished: a new pre-trim checkpoint object was written
	// (false when an existing one anchored at or above the target served).
	CheckpointPublished bool `json:"checkpoint_published"`
	HeadMutated         bool `json:"head_mutated"`
	BindingMutated      bool `json:"binding_mutated"`
	// AlreadyDone: the head's trim was already at or above the target; only
	// the binding was brought up to date if it lagged.
	AlreadyDone bool `json:"already_done"`
}

// trim runs the durable sequence for one partition and target:
// pre-trim NKC1 checkpoint → CAS the head's trim → read back and verify →
// CAS the binding's observed_log_start and checkpoint_ref. Physical GC is
// left to gc. Rerunning with the same target after a lost response or a
// crash at any step finishes the sequence with no second checkpoint and no
// second head mutation. target must already be planned (0 <= target <= HW).
// res is the replay the caller has just planned the trim on (RunPartition,
// under the partition's lease): its head is the one the sequence starts
// from, so neither the head nor the binding is read again before its CAS
// (nil, or a replay of another stream: the head is read). Each CAS is
// guarded by the ETag of what was read; a lost precondition re-reads, and a
// head that changed since the replay is replayed again (the trim never
// moves over a hole the replay did not see) before the next CAS.
func trim(ctx context.Context, st store.Store, b *layout.Binding, bindingETag string, target int64, res *recovery.Result, hooks Hooks) (*TrimResult, error) {
	name := b.Name()
	var (
		h        *layout.Head
		headETag string
		err      error
	)
	if res != nil && res.Binding != nil && res.Binding.StreamID == b.StreamID {
		// The head the replay read, and its ETag: that of the document's
		// canonical bytes (a head stored in another encoding fails the
		// CAS below, which re-reads it: one request more, never a wrong
		// write).
		hh := res.Head
		h, headETag = &hh, store.ETagOf(layout.Encode(&hh))
	} else if h, headETag, err = layout.LoadHead(ctx, st, b.StreamID); err != nil {
		return nil, fmt.Errorf("trim %s: read head: %w", name, err)
	}
	out := &TrimResult{CurrentLogStart: h.Trim, NewLogStart: max(h.Trim, target)}
	if h.Trim >= target {
		// The head already carries the trim: a retry after the head CAS.
		out.AlreadyDone = true
		out.CurrentLogStart = b.ObservedLogStart
		return out, finishBinding(ctx, st, b, bindingETag, h.Trim, nil, out, hooks)
	}
	if target > h.Head {
		return nil, fmt.Errorf("trim %s to %d: %s: the head is %d", name, target, ErrOffsetOutOfRange, h.Head)
	}

	// 1. The pre-trim checkpoint: the state below the new trim survives in
	// it after gc. An existing valid checkpoint anchored at or above the
	// target already holds that state: no second checkpoint on a retry.
	// A replay of another head (an append, or another trim, since) is
	// redone: the trim is only ever planned on a replay that found every
	// object between the trim and the head, so it never moves over a hole
	// (which would make lost data look like gc's).
	if res == nil || res.Head != *h {
		var clock state.Clock // the caller's producer-expiration clock
		if res != nil {
			clock = res.Clock
		}
		if res, err = recovery.Replay(ctx, st, b, recovery.Options{Clock: clock}); err != nil {
			return nil, fmt.Errorf("trim %s: pre-trim replay: %w", name, err)
		}
		if res.Head != *h {
			hh := res.Head
			h, headETag = &hh, ""
		}
	}
	var ref *layout.CheckpointRef
	if c := res.Chosen; c != nil && c.Anchor >= target {
		ref = &layout.CheckpointRef{Key: c.Key, SHA256: c.SHA256, Anchor: c.Anchor}
	} else {
		if err := hooks.fence(ctx, "trim "+StepCheckpoint); err != nil {
			return nil, fmt.Errorf("trim %s: %w", name, err)
		}
		cr, err := recovery.CreateFrom(ctx, st, b, bindingETag, res, false)
		if err != nil {
			return nil, fmt.Errorf("trim %s: pre-trim checkpoint: %w", name, err)
		}
		ref = &layout.CheckpointRef{Key: cr.Key, SHA256: cr.SHA256, Anchor: cr.Anchor}
		out.CheckpointPublished = cr.Published
		if cr.RefUpdate {
			// b is what CreateFrom wrote: its ETag is that of its bytes.
			bindingETag = store.ETagOf(layout.Encode(b))
		}
	}
	out.Checkpoint = ref.Key
	if err := hooks.after(StepCheckpoint); err != nil {
		return out, err
	}

	// 2. CAS the stream head's trim: first on the head the replay saw,
	// then, after a lost precondition (an append, a trim), on the head
	// re-read, replayed again if it changed (a hole since is refused).
	for attempt := 0; ; attempt++ {
		cur, etag := h, headETag
		if attempt > 0 || etag == "" {
			if cur, etag, err = layout.LoadHead(ctx, st, b.StreamID); err != nil {
				return out, fmt.Errorf("trim %s: read head: %w", name, err)
			}
			if cur.Trim < target && *cur != res.Head {
				if res, err = recovery.Replay(ctx, st, b, recovery.Options{}); err != nil {
					return out, fmt.Errorf("trim %s: replay the head that moved: %w", name, err)
				}
				if res.Head != *cur {
					// It moved again: re-read (bounded like a lost CAS).
					if attempt+1 >= maxCASAttempts {
						return out, fmt.Errorf("trim %s: CAS head trim to %d: the head kept moving: %w", name, target, store.ErrPreconditionFailed)
					}
					continue
				}
			}
		}
		if cur.Trim >= target {
			break // our earlier write landed, its response was lost
		}
		nh := *cur
		nh.Trim = target
		nh.Version++
		if err := hooks.fence(ctx, "trim "+StepHead); err != nil {
			return out, fmt.Errorf("trim %s: %w", name, err)
		}
		_, err = layout.Replace(ctx, st, layout.HeadKey(b.StreamID), &nh, etag)
		if err == nil {
			out.HeadMutated = true
			break
		}
		if !errors.Is(err, store.ErrPreconditionFailed) || attempt+1 >= maxCASAttempts {
			return out, fmt.Errorf("trim %s: CAS head trim to %d: %w", name, target, err)
		}
	}
	if err := hooks.after(StepHead); err != nil {
		return out, err
	}

	// 3. Read back and verify the durable trim.
	cur, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return out, fmt.Errorf("trim %s: verify: read head: %w", name, err)
	}
	if cur.Trim < target {
		return out, fmt.Errorf("trim %s: verify: the head's trim is %d after writing %d", name, cur.Trim, target)
	}
	if err := hooks.after(StepVerify); err != nil {
		return out, err
	}

	// 4. The binding's observed log start and checkpoint reference.
	if err := finishBinding(ctx, st, b, bindingETag, cur.Trim, ref, out, hooks); err != nil {
		return out, err
	}
	return out, hooks.after(StepBinding)
}

// finishBinding CASes observed_log_start up to trim and checkpoint_ref to
// ref when it is newer: first on b as last read or written (etag, when
// known), then on the binding re-read after a lost precondition.
func finishBinding(ctx context.Context, st store.Store, b *layout.Binding, etag string, trim int64, ref *layout.CheckpointRef, out *TrimResult, hooks Hooks) error {
	for attempt := 0; ; attempt++ {
		cur := b
		if attempt > 0 || etag == "" {
			var err error
			if cur, etag, err = layout.LoadBinding(ctx, st, b.Topic, b.Partition); err != nil {
				return fmt.Errorf("trim %s: read binding: %w", b.Name(), err)
			}
		}
		nb := *cur
		changed := false
		if nb.ObservedLogStart < trim {
			nb.ObservedLogStart = trim
			changed = true
		}
		if ref != nil && (nb.CheckpointRef == nil || nb.CheckpointRef.Anchor < ref.Anchor) {
			nb.CheckpointRef = ref
			changed = true
		}
		if !changed {
			*b = *cur
			return nil
		}
		nb.Version++
		if err := hooks.fence(ctx, "trim "+StepBinding); err != nil {
			return fmt.Errorf("trim %s: %w", b.Name(), err)
		}
		_, err := layout.Replace(ctx, st, layout.BindingKey(b.Topic, b.Partition), &nb, etag)
		if err == nil {
			*b = nb
			out.BindingMutated = true
			return nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) || attempt+1 >= maxCASAttempts {
			return fmt.Errorf("trim %s: CAS binding observed_log_start to %d: %w", b.Name(), trim, err)
		}
	}
}
