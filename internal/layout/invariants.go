package layout

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nereusctl/nereusctl/internal/errkind"
)

// ErrInvariant: documents that are each valid contradict one another
// (docs/layout.md, "Cross-document invariants"). It is corruption (exit 3);
// for a coordinator topic (__consumer_offsets, __transaction_state) the
// error also wraps ErrBlocked (exit 4): its coordinator must not load state
// from a stream whose documents disagree.
var ErrInvariant = errkind.New(errkind.Corrupt, "documents contradict each other")

// CheckpointAnchor is what one checkpoint records about its stream: the
// anchor offset and the partition log start at the anchor (NKC1 anchor
// offset and log_start).
type CheckpointAnchor struct {
	Key      string
	Anchor   int64
	LogStart int64
}

// GenerationSummary is the part of a generation manifest the tiling rules
// read (see Summary).
type GenerationSummary struct {
	Gen  int64
	Kind string
	Base int64
	End  int64
}

// Summary returns the manifest's summary.
func (g *Generation) Summary() GenerationSummary {
	return GenerationSummary{Gen: g.Gen, Kind: g.Kind, Base: g.Base, End: g.End}
}

// IsCoordinatorTopic reports Kafka's internal topics whose state a
// coordinator loads (__consumer_offsets, __transaction_state): their
// compacted coverage is mandatory, and retention never trims them by time
// or size (a committed offset or a transaction's state must not expire
// with its segment).
func IsCoordinatorTopic(topic string) bool {
	return topic == "__consumer_offsets" || topic == "__transaction_state"
}

// MandatoryCoverage reports a binding whose compacted coverage readers
// depend on: a coordinator topic's, or any binding whose coverage is not
// NONE. Its cleanup.policy must keep compact.
func (b *Binding) MandatoryCoverage() bool {
	return IsCoordinatorTopic(b.Topic) || b.Coverage.State != CoverageNone
}

func violation(topic, subject, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if IsCoordinatorTopic(topic) {
		return fmt.Errorf("check %s: %w: %s (coordinator blocked): %w", subject, ErrInvariant, msg, ErrBlocked)
	}
	return fmt.Errorf("check %s: %w: %s", subject, ErrInvariant, msg)
}

// CheckInvariants checks what a binding, its stream head and the stream's
// checkpoints must agree on. Each document is assumed to have decoded (and
// validated) on its own; anchors may be empty (the binding's checkpoint_ref
// is always checked). Rules, with O = observed_log_start:
//
//   - the binding and the head name the same stream;
//   - O <= head trim <= head (O lags the trim only while a trim is
//     unfinished, never leads it);
//   - ACTIVE or QUARANTINED coverage [start, end) is non-empty
//     (start < end), starts within the stream at or below the trim
//     (head start <= start <= trim: it starts at the log start it was
//     computed from, which trims can only have raised since) and ends at or
//     below the head;
//   - every checkpoint (the binding's checkpoint_ref and anchors) is
//     anchored at or below the head, and the log start it recorded is at or
//     below the head's trim (trims only raise it) and at or below its anchor.
//
// The first violation is returned, wrapping ErrInvariant and naming the
// partition, the documents and the values in plain words.
func CheckInvariants(b *Binding, h *Head, anchors ...CheckpointAnchor) error {
	subject := b.Name()
	fail := func(format string, a ...any) error { return violation(b.Topic, subject, format, a...) }
	bkey, hkey := BindingKey(b.Topic, b.Partition), HeadKey(h.StreamID)
	if b.StreamID != h.StreamID {
		return fail("%s names stream %s, but the head read is %s", bkey, b.StreamID, hkey)
	}
	if h.Trim > h.Head {
		return fail("%s has trim %d above its head %d", hkey, h.Trim, h.Head)
	}
	if b.ObservedLogStart > h.Trim {
		return fail("%s observed_log_start %d is above the durable trim %d in %s", bkey, b.ObservedLogStart, h.Trim, hkey)
	}
	if c := b.Coverage; c.State == CoverageActive || c.State == CoverageQuarantined {
		switch {
		case c.Start >= c.End:
			return fail("%s compacted coverage [%d, %d) is empty", bkey, c.Start, c.End)
		case c.Start < h.Start:
			return fail("%s compacted coverage starts at %d, below the stream's start %d", bkey, c.Start, h.Start)
		case c.Start > h.Trim:
			return fail("%s compacted coverage starts at %d, above the durable trim %d: it must start at the log start it was computed from", bkey, c.Start, h.Trim)
		case c.End > h.Head:
			return fail("%s compacted coverage ends at %d, beyond the head %d", bkey, c.End, h.Head)
		}
	}
	if r := b.CheckpointRef; r != nil && r.Anchor > h.Head {
		return fail("%s checkpoint_ref %s is anchored at %d, beyond the head %d", bkey, r.Key, r.Anchor, h.Head)
	}
	if r := b.ImportGenesis(); r != nil && (r.Anchor > h.Head || r.Anchor < h.Start) {
		return fail("%s import.genesis %s is anchored at %d, outside the stream [%d, %d]", bkey, r.Key, r.Anchor, h.Start, h.Head)
	}
	for _, a := range anchors {
		switch {
		case a.Anchor > h.Head:
			return fail("checkpoint %s is anchored at %d, beyond the head %d", a.Key, a.Anchor, h.Head)
		case a.LogStart > h.Trim:
			return fail("checkpoint %s records log start %d, above the durable trim %d", a.Key, a.LogStart, h.Trim)
		case a.LogStart > a.Anchor:
			return fail("checkpoint %s records log start %d above its anchor %d", a.Key, a.LogStart, a.Anchor)
		}
	}
	return nil
}

// CheckGenerations checks a stream's generation manifests against its head
// and, when b is not nil, its binding's coverage. gens are the summaries of
// every manifest listed (any order). Rules:
//
//   - every generation lies within [head start, head) and is not reversed;
//     a COMMITTED one is non-empty;
//   - COMMITTED generations, in generation-number order, tile the sealed
//     stream: each starts at or after the previous one's end (no overlap),
//     and where one starts after it (a gap) the gap lies below the trim
//     (its data was trimmed before the segment was sealed), and so does any
//     gap before the first one;
//   - the members of ACTIVE or QUARANTINED coverage are listed, are
//     TOPIC_COMPACTED, and their ranges, ordered by base, tile
//     [start, end) exactly: the first starts at start, each starts where
//     the previous ended, the last ends at end.
func CheckGenerations(b *Binding, h *Head, gens []GenerationSummary) error {
	topic, subject := "", "stream "+h.StreamID
	if b != nil {
		topic, subject = b.Topic, b.Name()
	}
	fail := func(format string, a ...any) error { return violation(topic, subject, format, a...) }
	key := func(g GenerationSummary) string { return GenerationKey(h.StreamID, g.Gen) }
	sorted := append([]GenerationSummary(nil), gens...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Gen < sorted[j].Gen })
	byGen := make(map[int64]GenerationSummary, len(sorted))
	var prev *GenerationSummary
	for i := range sorted {
		g := sorted[i]
		if _, dup := byGen[g.Gen]; dup {
			return fail("generation %d is listed twice", g.Gen)
		}
		byGen[g.Gen] = g
		switch {
		case g.End < g.Base:
			return fail("%s range [%d, %d) is reversed", key(g), g.Base, g.End)
		case g.Base < h.Start:
			return fail("%s starts at %d, below the stream's start %d", key(g), g.Base, h.Start)
		case g.End > h.Head:
			return fail("%s ends at %d, beyond the head %d", key(g), g.End, h.Head)
		}
		if g.Kind != KindCommitted {
			continue
		}
		if g.Base == g.End {
			return fail("%s is a COMMITTED generation with an empty range at %d", key(g), g.Base)
		}
		from := h.Start
		if prev != nil {
			from = prev.End
			if g.Base < prev.End {
				return fail("%s [%d, %d) overlaps %s [%d, %d)", key(g), g.Base, g.End, key(*prev), prev.Base, prev.End)
			}
		}
		if g.Base > from && g.Base > h.Trim {
			return fail("sealed data is missing: %s starts at %d, but the sealed stream before it ends at %d and the durable trim is %d", key(g), g.Base, from, h.Trim)
		}
		prev = &sorted[i]
	}
	if b == nil {
		return nil
	}
	c := b.Coverage
	if c.State != CoverageActive && c.State != CoverageQuarantined {
		return nil
	}
	bkey := BindingKey(b.Topic, b.Partition)
	members := make([]GenerationSummary, 0, len(c.Members))
	for _, m := range c.Members {
		g, ok := byGen[m.Gen]
		if !ok {
			return fail("%s compacted coverage member generation %d has no manifest", bkey, m.Gen)
		}
		if g.Kind != KindTopicCompacted {
			return fail("%s compacted coverage member %s is %s, not TOPIC_COMPACTED", bkey, key(g), g.Kind)
		}
		members = append(members, g)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Base < members[j].Base })
	at := c.Start
	var ranges []string
	for _, g := range members {
		ranges = append(ranges, fmt.Sprintf("%d [%d, %d)", g.Gen, g.Base, g.End))
	}
	for _, g := range members {
		if g.Base != at {
			return fail("%s compacted coverage [%d, %d) is not tiled by its members (generations %s): expected one to start at %d", bkey, c.Start, c.End, strings.Join(ranges, ", "), at)
		}
		at = g.End
	}
	if at != c.End {
		return fail("%s compacted coverage [%d, %d) is not tiled by its members (generations %s): they end at %d", bkey, c.Start, c.End, strings.Join(ranges, ", "), at)
	}
	return nil
}
