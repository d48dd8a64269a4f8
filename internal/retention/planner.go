// Package retention owns DeleteRecords trims and time/size retention: the
// planner that reproduces Kafka's own rules (the "stock retention oracle",
// docs/kafka-retention-rules.md), the durable trim sequence of docs/design.md §7,
// the retention run (lease, local progress, resume) and physical
// garbage collection.
//
// The planner is pure. The executor's only mutations are a pre-trim
// checkpoint (through package recovery), one CAS of the stream head's trim,
// and one CAS of the binding; each step is idempotent on retry.
package retention

import (
	"context"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Kafka error names a plan can carry (Errors.java).
const (
	ErrOffsetOutOfRange = "OFFSET_OUT_OF_RANGE"
	ErrPolicyViolation  = "POLICY_VIOLATION"
	ErrInvalidTopic     = "INVALID_TOPIC_EXCEPTION"
)

// Rules, in the order Kafka's deleteOldSegments runs them.
const (
	RuleDeleteRecords  = "delete-records"
	RuleLogStartBreach = "log-start"
	RuleRetentionBytes = "retention.bytes"
	RuleRetentionMs    = "retention.ms"
)

// Segment is a virtual segment as the planner sees it.
type Segment struct {
	Base         int64 `json:"base"`
	End          int64 `json:"end"` // upper bound: next base, or the head for the open one
	Bytes        int64 `json:"bytes"`
	MaxTimestamp int64 `json:"max_timestamp"` // largest record timestamp, or the seal time when none
	Open         bool  `json:"open"`
	Gen          int64 `json:"gen"`
	// Cleaned marks a segment ViewSegments made of covered segments: a
	// segment of Kafka's cleaned log (its Gen is its last segment's).
	Cleaned bool `json:"-"`
}

// Input is everything a plan depends on.
type Input struct {
	Topic    string
	Config   layout.TopicConfig
	LogStart int64
	HW       int64
	Segments []Segment // live segments, oldest first; the last may be open
	NowMs    int64
	// DeleteRecords is a requested target (-1 = HW), nil when none.
	DeleteRecords *int64
	// Retention applies time and size retention (the retention run); a
	// plain trim only applies DeleteRecords.
	Retention bool
}

// Candidate is one rule's proposed log start.
type Candidate struct {
	Rule     string `json:"rule"`
	Offset   int64  `json:"offset"`   // the log start after this rule, or -1 when the rule does not apply
	Segments int    `json:"segments"` // whole segments the rule deletes
	Bytes    int64  `json:"bytes"`
	Detail   string `json:"detail,omitempty"`
}

// Plan is the outcome for one partition.
type Plan struct {
	CurrentLogStart int64       `json:"current_log_start"`
	HW              int64       `json:"hw"`
	Candidates      []Candidate `json:"candidates"`
	NewLogStart     int64       `json:"new_log_start"`
	// Error is a Kafka error name for a refused DeleteRecords request.
	Error       string    `json:"error,omitempty"`
	ErrorDetail string    `json:"error_detail,omitempty"`
	Garbage     []Segment `json:"garbage_segments"`
	// GarbageSize is the bytes of the sealed segments in Garbage: what
	// gc collects once the trim is durable.
	GarbageSize int64 `json:"garbage_bytes"`
	// OpenSegmentBytes is the bytes of the open segment when the plan
	// deletes it too (every segment is due, as Kafka rolls and deletes
	// the active one): not garbage yet, since gc collects only sealed
	// segments; freed when the segment rolls (is sealed), by the gc after.
	OpenSegmentBytes int64 `json:"open_segment_bytes"`
	// RetentionSkipped says why retention.ms and retention.bytes were not
	// applied though cleanup.policy has delete (a coordinator topic).
	RetentionSkipped string `json:"retention_skipped,omitempty"`
}

// Changes reports whether the plan moves the log start.
func (p *Plan) Changes() bool { return p.Error == "" && p.NewLogStart > p.CurrentLogStart }

// OpenSegmentTime is the sealTimes key of the open segment's time: the
// open segment has no generation (its Gen is -1).
const OpenSegmentTime = -1

// SegmentsOf turns replayed state into planner segments: the sealed ones
// with their generation, the open one bounded by the head. sealTimes maps
// the generation of each segment without record timestamps to its seal
// time, and OpenSegmentTime to the write time of the open segment's
// newest object.
func SegmentsOf(p *state.Partition, sealTimes map[int64]int64) []Segment {
	out := make([]Segment, 0, len(p.Segments))
	for i, s := range p.Segments {
		end := s.End
		if s.Open() {
			end = p.NextOffset
		}
		if i+1 < len(p.Segments) {
			end = p.Segments[i+1].Base
		}
		ts := s.MaxTimestamp
		if ts < 0 {
			// LogSegment.largestTimestamp (storage/.../log/LogSegment.java)
			// falls back to the .log file's lastModified(), the time of
			// the segment's last append (R6). A sealed segment's analogue
			// is its generation's created_ms (the seal time; for an
			// imported segment the file's mtime); the open segment's is
			// the write time of its newest object. A time nobody knows
			// never expires.
			key := s.Gen
			if s.Open() {
				key = OpenSegmentTime
			}
			if t, ok := sealTimes[key]; ok {
				ts = t
			} else {
				ts = 1<<63 - 1
			}
		}
		out = append(out, Segment{Base: s.Base, End: end, Bytes: s.Bytes, MaxTimestamp: ts, Open: s.Open(), Gen: s.Gen})
	}
	return out
}

// ViewSegments replaces the segments of the compacted prefix [start, end)
// of a compact,delete partition with the segments a reader sees: Kafka's
// retention runs on the cleaned log (UnifiedLog.deleteOldSegments after
// LogCleaner.doClean), whose cleaned segments are the groups
// LogCleaner.groupSegmentsBySize makes of consecutive segments (sizes
// summing to at most segment.bytes), each with the group's first base and
// the cleaned bytes. nereusctl groups the covered segments the same way on
// their COMMITTED sizes (the first cleaning's rule); a group's bytes are
// the view's bytes in its offset range (each view object's size shared
// over the groups by the offsets of the object they hold). A group is
// marked Cleaned; its MaxTimestamp is still its segments' largest, until
// CleanedTimes sets the one Kafka's cleaned segment has. view lists the
// active set's objects; segments not wholly inside [start, end) are kept
// as they are.
func ViewSegments(segs []Segment, start, end int64, view []layout.ObjectRef, segmentBytes int64) []Segment {
	if len(view) == 0 || end <= start {
		return segs
	}
	viewBytes := func(from, to int64) int64 {
		var n float64
		for _, o := range view {
			lo, hi := max(from, o.Base), min(to, o.End)
			if hi > lo && o.End > o.Base {
				n += float64(o.Size) * float64(hi-lo) / float64(o.End-o.Base)
			}
		}
		return int64(n + 0.5)
	}
	out := make([]Segment, 0, len(segs))
	var group *Segment
	var groupSize int64
	flush := func() {
		if group != nil {
			group.Bytes = viewBytes(group.Base, group.End)
			out = append(out, *group)
			group = nil
		}
	}
	for _, s := range segs {
		if s.Open || s.Base < start || s.End > end {
			flush()
			out = append(out, s)
			continue
		}
		if group != nil && groupSize+s.Bytes > segmentBytes {
			flush()
		}
		if group == nil {
			g := s
			g.Cleaned = true
			group, groupSize = &g, 0
		} else {
			group.End = s.End
			group.MaxTimestamp = max(group.MaxTimestamp, s.MaxTimestamp)
			group.Gen = s.Gen
		}
		groupSize += s.Bytes
	}
	flush()
	return out
}

// CleanedTimes sets the largest timestamp of each Cleaned segment to the
// one Kafka's cleaned segment has (LogSegment.largestTimestamp): the
// largest timestamp of the records the cleaner kept in its range
// (LogCleaner.cleanInto appends only the retained batches to the cleaned
// segment), retained(base, end); when it kept none with a timestamp, the
// cleaned file's mtime, which LogCleaner.cleanSegments sets to its last
// source segment's (cleaned.setLastModified(segments.last.lastModified)):
// lastModified(gen) of the group's last segment, its seal time. A time
// neither gives never expires. Other segments are left as they are.
func CleanedTimes(segs []Segment, retained func(from, to int64) (int64, bool), lastModified func(gen int64) (int64, bool)) {
	for i := range segs {
		s := &segs[i]
		if !s.Cleaned {
			continue
		}
		if ts, ok := retained(s.Base, s.End); ok {
			s.MaxTimestamp = ts
		} else if ts, ok := lastModified(s.Gen); ok {
			s.MaxTimestamp = ts
		} else {
			s.MaxTimestamp = 1<<63 - 1
		}
	}
}

// viewObjects loads the objects of a binding's ACTIVE compacted set (one
// manifest GET per member, each checked against the digest the binding
// records).
func viewObjects(ctx context.Context, st store.Store, b *layout.Binding) ([]layout.ObjectRef, error) {
	var out []layout.ObjectRef
	for _, m := range b.Coverage.Members {
		g, sum, err := layout.LoadGeneration(ctx, st, b.StreamID, m.Gen)
		if err != nil {
			return nil, fmt.Errorf("load compacted set member %d: %w", m.Gen, err)
		}
		if sum != m.ManifestSHA256 {
			return nil, fmt.Errorf("compacted set member %d has manifest sha256 %s, the binding recorded %s: %w", m.Gen, sum, m.ManifestSHA256, layout.ErrObjectMismatch)
		}
		out = append(out, g.Objects...)
	}
	return out, nil
}

// Compute plans one partition. The new log start is
// max(current, DeleteRecords target, retention boundary) (docs/design.md §7).
func Compute(in Input) Plan {
	p := Plan{CurrentLogStart: in.LogStart, HW: in.HW, NewLogStart: in.LogStart, Candidates: []Candidate{}, Garbage: []Segment{}}
	hasDelete := in.Config.HasPolicy("delete")

	// DeleteRecords (Partition.deleteRecordsOnLeader): needs "delete" in
	// cleanup.policy; -1 means the HW; < 0 or > HW is out of range; any
	// offset, not only a segment boundary; never lowers the log start.
	if in.DeleteRecords != nil {
		t := *in.DeleteRecords
		switch {
		case kafka.IsInternalTopic(in.Topic):
			// ReplicaManager.deleteRecords refuses internal topics
			// (docs/kafka-retention-rules.md §9).
			p.Error = ErrInvalidTopic
			p.ErrorDetail = fmt.Sprintf("records of the internal topic %s cannot be deleted", in.Topic)
			return p
		case !hasDelete:
			p.Error = ErrPolicyViolation
			p.ErrorDetail = fmt.Sprintf("cleanup.policy is %q: records can be deleted only when it contains delete", in.Config.CleanupPolicy)
			return p
		case t == -1:
			t = in.HW
		case t < 0 || t > in.HW:
			p.Error = ErrOffsetOutOfRange
			p.ErrorDetail = fmt.Sprintf("offset %d is not in [0, HW %d] (or -1 for the HW)", t, in.HW)
			return p
		}
		c := Candidate{Rule: RuleDeleteRecords, Offset: max(t, in.LogStart)}
		p.Candidates = append(p.Candidates, c)
		p.NewLogStart = max(p.NewLogStart, c.Offset)
	}

	// Retention (UnifiedLog.deleteOldSegments): the log-start breach pass
	// always; size and time passes only when cleanup.policy has delete.
	// Each pass walks the surviving segments oldest first and stops at the
	// first segment that fails; a segment is eligible only if HW >= its
	// upper bound.
	segs := in.Segments
	logStart := p.NewLogStart
	deleteWhile := func(rule string, pred func(i int, s Segment, rest []Segment) bool) {
		n, bytes := 0, int64(0)
		for i, s := range segs {
			lastAndEmpty := i == len(segs)-1 && s.Bytes == 0
			if in.HW < s.End || lastAndEmpty || !pred(i, s, segs) {
				break
			}
			n++
			bytes += s.Bytes
		}
		c := Candidate{Rule: rule, Offset: -1, Segments: n, Bytes: bytes}
		if n > 0 {
			deleted := segs[:n]
			segs = segs[n:]
			// deleteSegments: the log start moves to the base of the
			// first surviving segment (after rolling the active one
			// when every segment goes, which leaves it at the head).
			next := in.HW
			if len(segs) > 0 {
				next = segs[0].Base
			}
			logStart = max(logStart, next)
			c.Offset = logStart
			p.Garbage = append(p.Garbage, deleted...)
			for _, s := range deleted {
				if s.Open {
					p.OpenSegmentBytes += s.Bytes
				} else {
					p.GarbageSize += s.Bytes
				}
			}
		}
		p.Candidates = append(p.Candidates, c)
	}
	deleteWhile(RuleLogStartBreach, func(i int, s Segment, rest []Segment) bool {
		// A segment goes when the next segment's base <= the log start.
		return i+1 < len(rest) && rest[i+1].Base <= logStart
	})
	coordinator := layout.IsCoordinatorTopic(in.Topic)
	if in.Retention && hasDelete && coordinator {
		// A coordinator topic's committed offsets and transaction states
		// never expire with their segments, whatever its cleanup.policy
		// says (config set refuses to drop compact from it): nothing is
		// trimmed by time or size.
		p.RetentionSkipped = in.Topic + " is a coordinator topic: retention never trims it by time or size"
	}
	if in.Retention && hasDelete && !coordinator {
		if in.Config.RetentionBytes >= 0 {
			var size int64
			for _, s := range segs {
				size += s.Bytes
			}
			diff := size - in.Config.RetentionBytes
			deleteWhile(RuleRetentionBytes, func(i int, s Segment, rest []Segment) bool {
				if diff-s.Bytes >= 0 {
					diff -= s.Bytes
					return true
				}
				return false
			})
		}
		if in.Config.RetentionMs >= 0 {
			deleteWhile(RuleRetentionMs, func(i int, s Segment, rest []Segment) bool {
				return in.NowMs-s.MaxTimestamp > in.Config.RetentionMs
			})
		}
	}
	p.NewLogStart = max(p.NewLogStart, logStart)
	return p
}
