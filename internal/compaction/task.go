package compaction

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Task is a compaction's workflow state (tasks/compact-<sid>/task.json).
// It is never authority: a reader only follows the binding's coverage.
type Task struct {
	StreamID string             `json:"stream_id"`
	Plan     *Plan              `json:"plan"`
	Step     string             `json:"step"`
	Objects  []layout.ObjectRef `json:"objects,omitempty"`
	Gen      int64              `json:"gen,omitempty"`
}

// Validate lets a task be decoded with layout.Decode.
func (t *Task) Validate() error {
	if t.StreamID == "" || t.Plan == nil {
		return errors.New("task needs a stream and a plan")
	}
	return nil
}

func taskKey(sid string) string { return layout.CompactionTaskKey(sid) }

// TaskPrefix is where the compaction task of stream sid lives
// (layout.CompactionTaskPrefix).
func TaskPrefix(sid string) string { return layout.CompactionTaskPrefix(sid) }

func loadTask(ctx context.Context, st store.Store, sid string) (*Task, string, error) {
	var t Task
	etag, err := layout.Load(ctx, st, taskKey(sid), &t)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read compaction task: %w", err)
	}
	return &t, etag, nil
}

func saveTask(ctx context.Context, st store.Store, t *Task, etag string) (string, error) {
	info, err := layout.Replace(ctx, st, taskKey(t.StreamID), t, etag)
	if err != nil {
		return "", fmt.Errorf("update compaction task: %w", err)
	}
	return info.ETag, nil
}

// sameInputs reports whether a recorded task froze the same inputs as a
// fresh freeze made with the task's clock. The encoder is not an input: a
// task another build froze resumes, and what is published records the
// identity of the build that writes the objects (the fresh plan's).
func sameInputs(a, b *Plan) bool {
	if a.Base != b.Base || a.End != b.End || a.PrevEnd != b.PrevEnd {
		return false
	}
	pa, pb := a.Params, b.Params
	pa.Encoder, pb.Encoder = "", ""
	return string(layout.Encode(pa)) == string(layout.Encode(pb)) && string(layout.Encode(a.Sources)) == string(layout.Encode(b.Sources))
}

// segmentTime is a COMMITTED segment's largest timestamp as Kafka's
// LogSegment.largestTimestamp gives it: the largest batch timestamp, or,
// when no batch carries one, the file's last-modified time, whose analogue
// is the generation's seal time (created_ms; an import records the .log
// file's mtime there). LogCleanerManager.cleanableOffsets measures
// min.compaction.lag.ms and max.compaction.lag.ms on it
// (docs/kafka-retention-rules.md R6).
func segmentTime(g *layout.Generation) int64 {
	if g.MaxTimestamp >= 0 {
		return g.MaxTimestamp
	}
	return g.CreatedMs
}

// Due is whether Kafka's log cleaner would pick the partition now, and
// why: LogCleanerManager.grabFilthiestCompactedLog keeps a log when
// (needCompactionNow && cleanableBytes > 0) || cleanableRatio >
// min.cleanable.dirty.ratio, with LogToClean's cleanableRatio =
// cleanableBytes / (cleanBytes + cleanableBytes) and needCompactionNow =
// maxCompactionDelay > 0. nereusctl compacts when asked whatever this
// says; it reports it (compact --dry-run) so that an operator sees what
// the broker's cleaner would do.
type Due struct {
	Due bool `json:"due"`
	// CleanBytes are the bytes already compacted (the active set's view,
	// Kafka's segments below the first dirty offset); CleanableBytes the
	// closed segments the plan compacts (firstDirty to firstUncleanable).
	CleanBytes             int64   `json:"clean_bytes"`
	CleanableBytes         int64   `json:"cleanable_bytes"`
	DirtyRatio             float64 `json:"dirty_ratio"`
	MinCleanableDirtyRatio float64 `json:"min_cleanable_dirty_ratio"`
	MinCompactionLagMs     int64   `json:"min_compaction_lag_ms"`
	MaxCompactionLagMs     int64   `json:"max_compaction_lag_ms"`
	// MaxCompactionDelayMs is LogCleanerManager.maxCompactionDelay: how
	// far the earliest first-batch timestamp of the dirty closed segments
	// lies before now - max.compaction.lag.ms (0: none does).
	MaxCompactionDelayMs int64  `json:"max_compaction_delay_ms"`
	Reason               string `json:"reason"`
}

// firstBatchTimestamp is LogSegment.getFirstBatchTimestamp for a COMMITTED
// generation: its first batch's max timestamp, read with one ranged GET of
// the first object's batch header; -1 when it has none.
func firstBatchTimestamp(ctx context.Context, st store.Store, g *layout.Generation) (int64, error) {
	if len(g.Objects) == 0 {
		return -1, nil
	}
	o := g.Objects[0]
	b, err := st.Get(ctx, o.Key, &store.Range{Offset: 0, Length: kafka.HeaderSize})
	if err != nil {
		return 0, fmt.Errorf("read the first batch header of %s: %w", o.Key, err)
	}
	h, err := kafka.ParseHeader(b)
	if err != nil {
		return 0, fmt.Errorf("read the first batch header of %s: %w", o.Key, err)
	}
	return h.MaxTimestamp, nil
}

// due decides Due for a frozen plan (uncleanable is Freeze's reason for
// stopping, "" when it did not stop early).
func (p *Plan) due(ctx context.Context, st store.Store, cfg layout.TopicConfig, nowMs int64, uncleanable string) (*Due, error) {
	// The topic's min.cleanable.dirty.ratio (Kafka's default 0.5 when the
	// binding's snapshot has none): LogCleanerManager compares
	// ltc.cleanableRatio with ltc.log.config.minCleanableRatio.
	minRatio := cfg.CleanableRatio()
	minText := strconv.FormatFloat(minRatio, 'f', -1, 64)
	d := &Due{MinCleanableDirtyRatio: minRatio, MinCompactionLagMs: cfg.MinCompactionLagMs, MaxCompactionLagMs: cfg.MaxCompactionLagMs}
	for _, s := range p.prev {
		for _, o := range s.gen.Objects {
			d.CleanBytes += o.Size
		}
	}
	for _, s := range p.new {
		for _, o := range s.gen.Objects {
			d.CleanableBytes += o.Size
		}
	}
	if total := d.CleanBytes + d.CleanableBytes; total > 0 {
		d.DirtyRatio = float64(d.CleanableBytes) / float64(total)
	}
	// maxCompactionDelay: the earliest positive first-batch timestamp of
	// the dirty non-active segments against now - max.compaction.lag.ms.
	// With the default lag (Long.MAX_VALUE) no timestamp can be that old:
	// no request is made.
	if cleanUntil := nowMs - max(cfg.MaxCompactionLagMs, 0); cleanUntil > 0 {
		earliest := int64(1<<63 - 1)
		for _, s := range p.dirty {
			ts, err := firstBatchTimestamp(ctx, st, s.gen)
			if err != nil {
				return nil, err
			}
			if ts > 0 {
				earliest = min(earliest, ts)
			}
		}
		if earliest < cleanUntil {
			d.MaxCompactionDelayMs = cleanUntil - earliest
		}
	}
	ratio := fmt.Sprintf("dirty ratio %.3f (%d cleanable of %d bytes)", d.DirtyRatio, d.CleanableBytes, d.CleanBytes+d.CleanableBytes)
	lag := "no dirty segment is older than max.compaction.lag.ms"
	if d.MaxCompactionDelayMs > 0 {
		lag = fmt.Sprintf("a dirty segment's first batch is %d ms past max.compaction.lag.ms %d", d.MaxCompactionDelayMs, cfg.MaxCompactionLagMs)
	}
	switch {
	case d.MaxCompactionDelayMs > 0 && d.CleanableBytes > 0:
		d.Due = true
		d.Reason = fmt.Sprintf("due: %s (LogCleanerManager needCompactionNow), %s vs min.cleanable.dirty.ratio %s", lag, ratio, minText)
	case d.DirtyRatio > minRatio:
		d.Due = true
		d.Reason = fmt.Sprintf("due: %s > min.cleanable.dirty.ratio %s; %s", ratio, minText, lag)
	case d.CleanableBytes == 0:
		d.Reason = fmt.Sprintf("not due: nothing cleanable, %s; %s", ratio, lag)
	default:
		d.Reason = fmt.Sprintf("not due: %s <= min.cleanable.dirty.ratio %s and %s", ratio, minText, lag)
	}
	if uncleanable != "" {
		d.Reason += "; the cleanable range stops: " + uncleanable
		if cfg.MinCompactionLagMs > 0 && strings.Contains(uncleanable, "min.compaction.lag.ms") {
			d.Reason += fmt.Sprintf(" (%d ms)", cfg.MinCompactionLagMs)
		}
	}
	return d, nil
}
