// Package status owns the one-row-per-binding view of a store that
// `nereusctl status` prints: bounds from the head, the LSO from a restart
// replay (checkpoint plus tail), the checkpoint anchor and age, and the
// compacted coverage state. It only reads.
package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Partition is one status row.
type Partition struct {
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	StreamID         string `json:"stream_id"`
	LogStart         int64  `json:"log_start"`
	Head             int64  `json:"head"`
	LSO              int64  `json:"lso"`
	CheckpointAnchor *int64 `json:"checkpoint_anchor"`
	CheckpointAgeSec *int64 `json:"checkpoint_age_seconds"`
	TailObjects      int    `json:"tail_objects"`
	Coverage         string `json:"coverage"`
	CoverageStart    int64  `json:"coverage_start"`
	CoverageEnd      int64  `json:"coverage_end"`
	Blocked          bool   `json:"blocked"`
	CleanupPolicy    string `json:"cleanup_policy"`
	// ConfigSource is the binding's config_source: where its topic config
	// snapshot came from ("" when the binding has none).
	ConfigSource string `json:"config_source"`
	Producers    int    `json:"producers"`
	OpenTxns     int    `json:"open_transactions"`
	Error        string `json:"error,omitempty"`
	// DataLoss names the offsets between the durable trim and the head
	// that no object of the stream holds; nil when none are missing.
	DataLoss *DataLoss `json:"data_loss"`
	// Anchors are every checkpoint\'s anchor (valid or not), for the map.
	Anchors []int64 `json:"checkpoint_anchors"`
	// SkippedCheckpoints are the checkpoints replay found unusable and
	// skipped (newest first, as it tried them), with why: a restart
	// replays a longer tail than the newest checkpoint promises.
	SkippedCheckpoints []SkippedCheckpoint `json:"skipped_checkpoints"`
	// BindingLogStart is the binding's observed_log_start. Below LogStart
	// (the head's durable trim) it lags: a trim stopped between its head
	// and binding steps (BindingLagsTrim); rerunning it finishes.
	BindingLogStart int64 `json:"binding_log_start"`
	BindingLagsTrim bool  `json:"binding_lags_trim"`
	// Findings are the partition's health findings (internal/health, the
	// checks every command shares with verify's cheap level): the row is
	// printed, and status exits 3 (4 when only blocked) as verify would.
	Findings []health.Finding `json:"findings"`
	// BlockedReason says why Blocked.
	BlockedReason string `json:"blocked_reason,omitempty"`
	// Err is the replay's error behind Error or DataLoss, for the exit
	// status.
	Err error `json:"-"`
}

// SkippedCheckpoint is a checkpoint replay skipped.
type SkippedCheckpoint struct {
	Key    string `json:"key"`
	Anchor int64  `json:"anchor"`
	// Reason is replay's short reason (corrupt checkpoint, leads the
	// head, anchor object missing, …); Detail the check that failed.
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// DataLoss is the data_loss field of a status row.
type DataLoss struct {
	// Missing are half-open offset ranges [from, to).
	Missing [][2]int64 `json:"missing"`
}

// DataLossError returns the row's data loss as the error replay reported,
// nil when nothing is missing.
func (p *Partition) DataLossError() *stream.MissingError {
	if p.DataLoss == nil {
		return nil
	}
	return &stream.MissingError{Ranges: p.DataLoss.Missing, Trim: p.LogStart, Head: p.Head}
}

// Collect builds the status of each named partition (all when tps is nil),
// with at most parallel partitions in flight (internal/fleet); the rows
// are in the order of tps whatever finishes first. A partition that cannot
// be read gets its Error set; the others go on.
func Collect(ctx context.Context, st store.Store, tps []layout.TopicPartition, now time.Time, parallel int) ([]Partition, error) {
	return CollectAt(ctx, st, tps, now, state.Clock{}, parallel)
}

// CollectAt is Collect with producer expiration at clock (the producer
// counts are those at that clock).
func CollectAt(ctx context.Context, st store.Store, tps []layout.TopicPartition, now time.Time, clock state.Clock, parallel int) ([]Partition, error) {
	if tps == nil {
		var err error
		if tps, err = layout.ListBindings(ctx, st); err != nil {
			return nil, fmt.Errorf("list bindings in %s: %w", st, err)
		}
	}
	out, err := fleet.Map(ctx, parallel, tps, func(ctx context.Context, _ int, tp layout.TopicPartition) (Partition, error) {
		return collectOne(ctx, st, tp, now, clock), ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// collectOne is one partition's row.
func collectOne(ctx context.Context, st store.Store, tp layout.TopicPartition, now time.Time, clock state.Clock) (row Partition) {
	row = Partition{Topic: tp.Topic, Partition: tp.Partition, SkippedCheckpoints: []SkippedCheckpoint{}, Findings: []health.Finding{}}
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		// A corrupt binding is corruption (exit 3), not an unreadable
		// partition: Err carries the type for the exit code.
		row.Error, row.Err = err.Error(), err
		return row
	}
	row.StreamID = b.StreamID
	row.Coverage = b.Coverage.State
	row.CoverageStart, row.CoverageEnd = b.Coverage.Start, b.Coverage.End
	row.Blocked = b.Coverage.State == layout.CoverageQuarantined
	row.CleanupPolicy = b.Config.CleanupPolicy
	row.ConfigSource = b.ConfigSource
	row.BindingLogStart = b.ObservedLogStart
	defer func() { row.BindingLagsTrim = row.Error == "" && row.BindingLogStart < row.LogStart }()
	if row.Blocked {
		// No replay of a blocked partition: its health, and the head's
		// bounds.
		rep, obs, err := health.Gather(ctx, st, b, health.Prior{})
		if err != nil {
			row.Error, row.Err = err.Error(), err
			return row
		}
		row.Findings, row.BlockedReason = rep.Findings, rep.BlockedReason
		if h := obs.Head; h != nil {
			row.LogStart, row.Head, row.LSO = h.Trim, h.Head, -1
		} else {
			row.Error, row.Err = fmt.Sprintf("read head: %v", obs.HeadErr), obs.HeadErr
		}
		return row
	}
	res, err := recovery.Replay(ctx, st, b, recovery.Options{Clock: clock})
	if err != nil {
		row.Err = err
		var me *stream.MissingError
		if errors.As(err, &me) {
			// Data loss: the row is still printed, with the head's
			// bounds and the missing ranges; there is no state to show.
			row.DataLoss = &DataLoss{Missing: me.Ranges}
			row.LogStart, row.Head, row.LSO = me.Trim, me.Head, -1
			row.Anchors = []int64{}
		} else {
			row.Error = err.Error()
		}
		return row
	}
	row.Findings = res.Health.Findings
	row.Blocked, row.BlockedReason = res.Health.Blocked, res.Health.BlockedReason
	row.LogStart = res.State.LogStart
	row.Head = res.Head.Head
	row.LSO = res.State.LSO()
	row.TailObjects = res.Tail.Objects
	row.Producers = len(res.State.Producers)
	row.OpenTxns = len(res.State.Ongoing)
	row.Anchors = []int64{}
	for _, c := range res.Candidates {
		row.Anchors = append(row.Anchors, c.Anchor)
		if c.Status == "skipped" {
			row.SkippedCheckpoints = append(row.SkippedCheckpoints, SkippedCheckpoint{Key: c.Key, Anchor: c.Anchor, Reason: string(c.Reason), Detail: c.Detail})
		}
	}
	if c := res.Chosen; c != nil {
		a := c.Anchor
		row.CheckpointAnchor = &a
		if !c.Modified.IsZero() {
			age := int64(now.Sub(c.Modified).Seconds())
			row.CheckpointAgeSec = &age
		}
	}
	return row
}

// StoreFindings is the store-wide health check (health.Store) over the
// rows: streams no binding references, stray keys, quarantine records
// that do not decode.
func StoreFindings(ctx context.Context, st store.Store, rows []Partition, parallel int) ([]health.Finding, error) {
	known := make(map[layout.TopicPartition]string, len(rows))
	for _, r := range rows {
		known[layout.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.StreamID
	}
	return health.Store(ctx, st, known, parallel)
}

// Map draws each partition's offset line, scaled to width columns, in plain
// ASCII: '.' below the log start (unreadable), '=' retained COMMITTED data,
// '#' compacted coverage, 'X' quarantined coverage, '|' a checkpoint anchor,
// '?' a checkpoint replay skipped as unusable, 'L' the LSO when an open
// transaction holds it below the HW, '!' offsets whose objects are missing
// (data loss), ']' the head. The LSO is never hidden: when it falls in the
// head's column it is drawn just before it, and the line ends with its
// value. The legend wraps at width.
func Map(rows []Partition, width int) []string {
	nameW := 0
	var maxHead int64 = 1
	for _, r := range rows {
		nameW = max(nameW, len(fmt.Sprintf("%s-%d", r.Topic, r.Partition)))
		maxHead = max(maxHead, r.Head)
	}
	// the bar takes what the name and the widest bounds leave, so that
	// every line fits width (an 80-column terminal too)
	boundsW := len("LOG START..HEAD")
	for _, r := range rows {
		if r.Error == "" {
			boundsW = max(boundsW, len(mapBounds(r)))
		}
	}
	barW := max(width-nameW-4-boundsW-1, 10)
	col := func(off int64) int {
		c := int(off * int64(barW-1) / maxHead)
		return min(max(c, 0), barW-1)
	}
	out := []string{fmt.Sprintf("%-*s  %s  %s", nameW, "PARTITION", strings.Repeat(" ", barW), "LOG START..HEAD")}
	for _, r := range rows {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		if r.Error != "" {
			out = append(out, fmt.Sprintf("%-*s  error: %s", nameW, name, r.Error))
			continue
		}
		bar := []byte(strings.Repeat(" ", barW))
		for c := 0; c <= col(r.Head); c++ {
			bar[c] = '='
		}
		for c := 0; c < col(r.LogStart); c++ {
			bar[c] = '.'
		}
		if r.Coverage != "NONE" && r.CoverageEnd > r.CoverageStart {
			ch := byte('#')
			if r.Blocked {
				ch = 'X'
			}
			for c := col(max(r.CoverageStart, r.LogStart)); c < col(r.CoverageEnd); c++ {
				bar[c] = ch
			}
		}
		for _, a := range r.Anchors {
			bar[col(a)] = '|'
		}
		for _, k := range r.SkippedCheckpoints {
			bar[col(k.Anchor)] = '?'
		}
		if r.DataLoss != nil {
			for _, m := range r.DataLoss.Missing {
				for c := col(m[0]); c <= col(max(m[0], m[1]-1)); c++ {
					bar[c] = '!'
				}
			}
		}
		if r.LSO >= 0 && r.LSO < r.Head {
			c := col(r.LSO)
			if c == col(r.Head) && c > 0 {
				c-- // the head's column: just before it, still seen
			}
			bar[c] = 'L'
		}
		bar[col(r.Head)] = ']'
		out = append(out, fmt.Sprintf("%-*s  %s  %s", nameW, name, bar, mapBounds(r)))
	}
	return append(out, legend(width)...)
}

// mapBounds is the text after a map line: LOG START..HEAD, and the LSO
// when it is below the head.
func mapBounds(r Partition) string {
	b := fmt.Sprintf("%d..%d", r.LogStart, r.Head)
	if r.LSO >= 0 && r.LSO < r.Head {
		b += fmt.Sprintf(" LSO %d", r.LSO)
	}
	return b
}

// legend is the map's key, wrapped at width columns.
func legend(width int) []string {
	items := []string{". below log start", "= COMMITTED", "# compacted view", "X quarantined", "| checkpoint", "? skipped checkpoint", "L LSO", "! missing", "] head"}
	var out []string
	line := "legend:"
	for _, it := range items {
		if len(line)+2+len(it) > width && line != "legend:" && line != "       " {
			out = append(out, line)
			line = "       "
		}
		if line == "legend:" || line == "       " {
			line += " " + it
		} else {
			line += "  " + it
		}
	}
	return append(out, line)
}
