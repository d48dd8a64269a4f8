package retention

import (
	"context"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/timecut"
)

// ErrUnknownPartition is Kafka's UNKNOWN_TOPIC_OR_PARTITION.
const ErrUnknownPartition = "UNKNOWN_TOPIC_OR_PARTITION"

// Request is what to do to one partition.
type Request struct {
	// Clock is the producer-expiration clock of the replay (and of the
	// pre-trim checkpoint, which records it); zero: no expiration.
	Clock state.Clock

	TP layout.TopicPartition
	// DeleteRecords is a target offset (-1 = HW), nil when none.
	DeleteRecords *int64
	// BeforeMs, when set (and DeleteRecords nil), is a time: the target
	// is the earliest offset whose timestamp is at or after it, as
	// ListOffsets by timestamp answers (timecut.Find), with a preflight of
	// the timestamps out of order around it.
	BeforeMs *int64
	// Retention applies retention.ms / retention.bytes as well.
	Retention bool
	NowMs     int64
	DryRun    bool
	// PlanOnly is a dry run that stops at the plan: no pre-trim checkpoint
	// is built to name it (a cheap first pass, e.g. to find full trims).
	PlanOnly bool
	Hooks    Hooks
	// ConfirmFull, when set, is asked before a real trim that removes
	// every record of the partition (the new log start is the HW); an
	// error refuses the trim: nothing is written for the partition.
	ConfirmFull func(r *Result) error
}

// ErrNotConfirmed names a trim refused because it was not confirmed.
const ErrNotConfirmed = "NOT_CONFIRMED"

// RemovesEverything reports a plan that removes every record of the
// partition: the log start moves up to the HW.
func (p *Plan) RemovesEverything() bool { return p.Changes() && p.NewLogStart >= p.HW }

// RemovesEverything reports a result whose trim removes (or would remove)
// every record of the partition.
func (r *Result) RemovesEverything() bool {
	return r.Plan != nil && r.OK() && r.Plan.RemovesEverything()
}

// Result is the outcome for one partition: the JSON contract of trim,
// delete-records and retention run (docs/json-output.md).
type Result struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	CurrentLogStart int64  `json:"current_log_start"`
	NewLogStart     int64  `json:"new_log_start"`
	HW              int64  `json:"hw"`
	// Error is a Kafka error name (OFFSET_OUT_OF_RANGE, POLICY_VIOLATION,
	// UNKNOWN_TOPIC_OR_PARTITION) or "ERROR" for a failure of the tool.
	Error       string `json:"error"`
	ErrorDetail string `json:"error_detail,omitempty"`
	Plan        *Plan  `json:"plan,omitempty"`
	// TimeCut is the offset a --before time answered and its preflight
	// (trim --before only).
	TimeCut *timecut.Cut `json:"time_cut,omitempty"`
	Trim    *TrimResult  `json:"trim,omitempty"`
	// Checkpoint is the pre-trim checkpoint written (or, in a dry run,
	// the one that would be written; "" when an existing one serves).
	Checkpoint string `json:"checkpoint"`
	// RequestsEstimate is what a real run costs in store requests.
	RequestsEstimate int64 `json:"requests_estimate"`
	// Requests is what this run cost.
	Requests int64 `json:"requests"`
	Err      error `json:"-"`
}

// OK reports a partition that succeeded.
func (r *Result) OK() bool { return r.Error == "" }

// Trimmed reports a partition whose log start moved (or would move).
func (r *Result) Trimmed() bool { return r.OK() && r.NewLogStart > r.CurrentLogStart }

// RunPartition plans one partition and, unless DryRun, performs the trim.
func RunPartition(ctx context.Context, st store.Store, req Request) *Result {
	if req.PlanOnly {
		req.DryRun = true
	}
	counter := store.NewCounter(st)
	out := &Result{Topic: req.TP.Topic, Partition: req.TP.Partition, Error: ""}
	defer func() { out.Requests = counter.Total() }()
	fail := func(err error) *Result {
		out.Error, out.ErrorDetail, out.Err = "ERROR", err.Error(), err
		return out
	}
	b, etag, err := layout.LoadBinding(ctx, counter, req.TP.Topic, req.TP.Partition)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			out.Error, out.ErrorDetail = ErrUnknownPartition, fmt.Sprintf("no binding %s", req.TP)
			out.Err = fmt.Errorf("%s: %w", req.TP, err)
			return out
		}
		return fail(err)
	}
	// The health gate: a partition verify would fail is refused, dry run
	// or not (nothing is written; the finding names its runbook).
	res, err := recovery.Replay(ctx, counter, b, recovery.Options{Clock: req.Clock, RequireHealthy: true})
	if err != nil {
		return fail(err)
	}
	replayCost := counter.Total()
	sealTimes, err := sealTimesOf(ctx, counter, b.StreamID, res, req.Retention)
	if err != nil {
		return fail(err)
	}
	segs := SegmentsOf(res.State, sealTimes)
	if req.BeforeMs != nil && req.DeleteRecords == nil {
		// The time's offset; a topic DeleteRecords refuses is refused
		// by the planner below without reading its records.
		target := res.State.LogStart
		if b.Config.HasPolicy("delete") && !kafka.IsInternalTopic(b.Topic) {
			before := counter.Total()
			cut, err := timecut.Find(ctx, counter, b, res.State.LogStart, res.State.HW(), *req.BeforeMs)
			if err != nil {
				return fail(err)
			}
			replayCost += counter.Total() - before // a real run searches again
			out.TimeCut, target = cut, cut.Offset
		}
		req.DeleteRecords = &target
	}
	if req.Retention && b.Config.HasPolicy("compact") && b.Config.HasPolicy("delete") && b.Coverage.State == layout.CoverageActive {
		// compact,delete: plan on what readers see (ViewSegments).
		view, err := viewObjects(ctx, counter, b)
		if err != nil {
			return fail(err)
		}
		segs = ViewSegments(segs, b.Coverage.Start, b.Coverage.End, view, b.Config.SegmentBytes)
		if err := cleanedTimes(ctx, counter, b, segs, view); err != nil {
			return fail(err)
		}
	}
	plan := Compute(Input{
		Topic: b.Topic, Config: b.Config, LogStart: res.State.LogStart, HW: res.State.HW(),
		Segments: segs, NowMs: req.NowMs,
		DeleteRecords: req.DeleteRecords, Retention: req.Retention,
	})
	out.Plan = &plan
	out.CurrentLogStart, out.NewLogStart, out.HW = plan.CurrentLogStart, plan.NewLogStart, plan.HW
	if plan.Error != "" {
		out.Error, out.ErrorDetail = plan.Error, plan.ErrorDetail
		out.Err = fmt.Errorf("%s: %s: %s", req.TP, plan.Error, plan.ErrorDetail)
		out.NewLogStart = plan.CurrentLogStart
		return out
	}
	if !plan.Changes() {
		// An interrupted trim left the head ahead of the binding: finish
		// the sequence (the head's trim is durable; only the binding lags).
		// The partition reports that trim, from the binding's log start,
		// and the garbage it made (the sealed segments between the two),
		// which the interrupted run could not record.
		if b.ObservedLogStart < res.Head.Trim && !req.DryRun {
			from := b.ObservedLogStart
			garbage, err := sealedBytesBetween(ctx, counter, b.StreamID, from, res.Head.Trim)
			if err != nil {
				return fail(err)
			}
			tr, err := trim(ctx, counter, b, etag, res.Head.Trim, res, req.Hooks)
			out.Trim = tr
			if err != nil {
				return fail(err)
			}
			out.CurrentLogStart, out.NewLogStart = from, res.Head.Trim
			p := plan
			p.CurrentLogStart, p.NewLogStart, p.GarbageSize = from, res.Head.Trim, garbage
			out.Plan = &p
		}
		return out
	}
	// The estimate: the replay again, the pre-trim checkpoint (anchor
	// object GET, checkpoint PUT, binding GET+PUT), the head (GET, PUT,
	// GET to verify) and the binding (GET, PUT).
	out.RequestsEstimate = replayCost + 4 + 3 + 2
	if c := res.Chosen; c != nil && c.Anchor >= plan.NewLogStart {
		out.RequestsEstimate -= 4
	}
	if req.PlanOnly {
		return out
	}
	if req.DryRun {
		if c := res.Chosen; c == nil || c.Anchor < plan.NewLogStart {
			_, _, data, root, err := recovery.BuildFrom(ctx, counter, b, res)
			if err != nil {
				return fail(err)
			}
			out.Checkpoint = fmt.Sprintf("%s (%d bytes)", layout.CheckpointKey(b.StreamID, res.Head.Head, root), len(data))
		} else {
			out.Checkpoint = c.Key + " (existing)"
		}
		return out
	}
	if plan.RemovesEverything() && req.ConfirmFull != nil {
		if err := req.ConfirmFull(out); err != nil {
			out.Error, out.ErrorDetail, out.Err = ErrNotConfirmed, err.Error(), err
			out.NewLogStart = plan.CurrentLogStart
			return out
		}
	}
	tr, err := trim(ctx, counter, b, etag, plan.NewLogStart, res, req.Hooks)
	out.Trim = tr
	if tr != nil {
		out.Checkpoint = tr.Checkpoint
	}
	if err != nil {
		return fail(err)
	}
	return out
}

// cleanedTimes gives each cleaned segment of a compact,delete partition
// the largest timestamp Kafka's cleaned segment has (CleanedTimes): the
// view's retained rows in its range, read from the view objects' block
// indexes (compaction.ReadViewTimes: a ranged GET of each object's tail,
// and of each block that spans a cleaned segment's bound), or, for a
// cleaned segment with no retained row, its last segment's seal time (a
// manifest GET). Only retention.ms reads the timestamps: without it
// nothing is read.
func cleanedTimes(ctx context.Context, st store.Store, b *layout.Binding, segs []Segment, view []layout.ObjectRef) error {
	if b.Config.RetentionMs < 0 {
		return nil
	}
	var cuts []int64
	for _, s := range segs {
		if s.Cleaned {
			cuts = append(cuts, s.Base, s.End)
		}
	}
	if len(cuts) == 0 {
		return nil
	}
	vt, err := compaction.ReadViewTimes(ctx, st, view, cuts)
	if err != nil {
		return fmt.Errorf("retention %s: %w", b.Name(), err)
	}
	sealed := map[int64]int64{}
	for _, s := range segs {
		if s.Cleaned && s.Gen >= 0 {
			if _, ok := vt.MaxIn(s.Base, s.End); ok {
				continue
			}
			g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, s.Gen)
			if err != nil {
				return fmt.Errorf("retention %s: %w", b.Name(), err)
			}
			sealed[s.Gen] = g.CreatedMs
		}
	}
	CleanedTimes(segs, vt.MaxIn, func(gen int64) (int64, bool) {
		t, ok := sealed[gen]
		return t, ok
	})
	return nil
}

// importedOpenSegment is the open segment an import recorded
// (layout.ImportRecord.OpenSegment) while the stream still ends where the
// import left it, nil otherwise: once a broker appends, its newest object's
// write time is the segment's last append, as the file's mtime was.
func importedOpenSegment(res *recovery.Result) *layout.ImportedSegment {
	b := res.Binding
	if b == nil || b.Import == nil || b.Import.OpenSegment == nil {
		return nil
	}
	if os := b.Import.OpenSegment; os.End == res.Head.Head {
		return os
	}
	return nil
}

// sealedBytesBetween is the bytes of the COMMITTED generations ending in
// (from, to]: the sealed segments a trim from from to to made garbage,
// while gc has not collected them (a manifest already gone counts
// nothing).
func sealedBytesBetween(ctx context.Context, st store.Store, sid string, from, to int64) (int64, error) {
	gens, err := layout.ListGenerations(ctx, st, sid)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, gen := range gens {
		g, _, err := layout.LoadGeneration(ctx, st, sid, gen)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if g.Kind != layout.KindCommitted || g.End <= from || g.End > to {
			continue
		}
		for _, ob := range g.Objects {
			n += ob.Size
		}
	}
	return n, nil
}

// sealTimesOf maps the generation of each sealed segment without record
// timestamps to its seal time (Kafka falls back to the segment file's
// modification time). Only retention.ms needs it, and only such segments
// cost a manifest GET.
func sealTimesOf(ctx context.Context, st store.Store, sid string, res *recovery.Result, need bool) (map[int64]int64, error) {
	out := map[int64]int64{}
	if !need {
		return out, nil
	}
	for _, s := range res.State.Segments {
		if os := importedOpenSegment(res); os != nil && s.MaxTimestamp < 0 && s.Open() && s.Base == os.Base {
			// Still the open segment import wrote from a .log file whose
			// batches carry no timestamp: Kafka ages it by that file's
			// mtime (R6), which the binding recorded.
			out[OpenSegmentTime] = os.LastModifiedMs
			continue
		}
		if s.MaxTimestamp < 0 && s.Open() && s.Bytes > 0 && res.HeadObject != "" {
			// The open segment's mtime analogue: its newest object's write time (R6).
			info, err := st.Head(ctx, res.HeadObject)
			if err != nil {
				return nil, err
			}
			out[OpenSegmentTime] = info.Modified.UnixMilli()
		}
		if s.MaxTimestamp >= 0 || s.Gen < 0 {
			continue
		}
		g, _, err := layout.LoadGeneration(ctx, st, sid, s.Gen)
		if err != nil {
			return nil, err
		}
		out[s.Gen] = g.CreatedMs
	}
	return out, nil
}
