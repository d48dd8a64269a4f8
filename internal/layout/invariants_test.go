package layout

import (
	"errors"
	"strings"
	"testing"
)

func invBinding() *Binding {
	b := validBinding()
	b.ObservedLogStart = 100
	members := []SetMember{{Gen: 5, ManifestSHA256: strings.Repeat("d", 64)}}
	b.Coverage = Coverage{State: CoverageActive, SetID: SetID(members), Start: 50, End: 400, Members: members}
	b.CheckpointRef = &CheckpointRef{Key: CheckpointKey("s-abc", 300, strings.Repeat("e", 12)), SHA256: strings.Repeat("e", 64), Anchor: 300}
	return b
}

func invHead() *Head {
	return &Head{StreamID: "s-abc", Epoch: 1, Start: 0, Head: 900, Trim: 120, Version: 3}
}

func invGens() []GenerationSummary {
	return []GenerationSummary{
		{Gen: 0, Kind: KindCommitted, Base: 0, End: 200},
		{Gen: 1, Kind: KindCommitted, Base: 200, End: 450},
		{Gen: 5, Kind: KindTopicCompacted, Base: 50, End: 400},
		{Gen: 6, Kind: KindCommitted, Base: 450, End: 800},
	}
}

func mustViolate(t *testing.T, what string, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted", what)
		return
	}
	if !errors.Is(err, ErrInvariant) {
		t.Errorf("%s: not an invariant violation: %v", what, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%s: error does not say %q: %v", what, f, err)
		}
	}
}

func TestCheckInvariantsAcceptsConsistentDocuments(t *testing.T) {
	anchors := []CheckpointAnchor{{Key: "c1", Anchor: 300, LogStart: 100}, {Key: "c0", Anchor: 120, LogStart: 0}}
	if err := CheckInvariants(invBinding(), invHead(), anchors...); err != nil {
		t.Fatal(err)
	}
	if err := CheckGenerations(invBinding(), invHead(), invGens()); err != nil {
		t.Fatal(err)
	}
	// Boundaries: O = trim = coverage start, trim = head, coverage end = head.
	b, h := invBinding(), invHead()
	h.Trim, h.Head, b.ObservedLogStart, b.Coverage.Start, b.Coverage.End, b.CheckpointRef.Anchor = 400, 400, 400, 400, 400, 400
	b.Coverage.Start = 120
	if err := CheckInvariants(b, h); err != nil {
		t.Fatal(err)
	}
	// NONE coverage: its range is not looked at.
	b = invBinding()
	b.Coverage = Coverage{State: CoverageNone}
	if err := CheckInvariants(b, invHead()); err != nil {
		t.Fatal(err)
	}
	// A gap below the trim (data trimmed before its segment was sealed),
	// and the first generations collected by gc.
	h = invHead()
	h.Trim = 300
	gens := []GenerationSummary{{Gen: 1, Kind: KindCommitted, Base: 250, End: 450}, {Gen: 6, Kind: KindCommitted, Base: 450, End: 800}}
	if err := CheckGenerations(nil, h, gens); err != nil {
		t.Fatal(err)
	}
	if err := CheckGenerations(nil, h, []GenerationSummary{{Gen: 0, Kind: KindCommitted, Base: 0, End: 100}, {Gen: 1, Kind: KindCommitted, Base: 150, End: 450}}); err != nil {
		t.Fatal(err)
	}
}

func TestCheckInvariantsRules(t *testing.T) {
	type mut func(b *Binding, h *Head, a *[]CheckpointAnchor)
	cases := []struct {
		what      string
		mut       mut
		fragments []string
	}{
		{"other stream", func(b *Binding, h *Head, a *[]CheckpointAnchor) { h.StreamID = "s-other" }, []string{"names stream s-abc", "streams/s-other/head.json"}},
		{"trim above head", func(b *Binding, h *Head, a *[]CheckpointAnchor) { h.Trim = 901 }, []string{"trim 901 above its head 900"}},
		{"observed log start above trim", func(b *Binding, h *Head, a *[]CheckpointAnchor) { b.ObservedLogStart = 121 }, []string{"observed_log_start 121 is above the durable trim 120"}},
		{"empty coverage", func(b *Binding, h *Head, a *[]CheckpointAnchor) { b.Coverage.Start, b.Coverage.End = 0, 0 }, []string{"compacted coverage [0, 0) is empty"}},
		{"quarantined coverage empty", func(b *Binding, h *Head, a *[]CheckpointAnchor) {
			b.Coverage.State = CoverageQuarantined
			b.Coverage.End = b.Coverage.Start
		}, []string{"is empty"}},
		{"coverage below stream start", func(b *Binding, h *Head, a *[]CheckpointAnchor) { h.Start = 60; b.ObservedLogStart = 60 }, []string{"coverage starts at 50, below the stream's start 60"}},
		{"coverage above trim", func(b *Binding, h *Head, a *[]CheckpointAnchor) { b.Coverage.Start = 121 }, []string{"coverage starts at 121, above the durable trim 120"}},
		{"coverage beyond head", func(b *Binding, h *Head, a *[]CheckpointAnchor) { b.Coverage.End = 901 }, []string{"coverage ends at 901, beyond the head 900"}},
		{"checkpoint_ref beyond head", func(b *Binding, h *Head, a *[]CheckpointAnchor) { b.CheckpointRef.Anchor = 901 }, []string{"checkpoint_ref", "anchored at 901, beyond the head 900"}},
		{"checkpoint beyond head", func(b *Binding, h *Head, a *[]CheckpointAnchor) {
			*a = append(*a, CheckpointAnchor{Key: "streams/s-abc/checkpoints/x.nkc1", Anchor: 950, LogStart: 0})
		}, []string{"checkpoint streams/s-abc/checkpoints/x.nkc1 is anchored at 950, beyond the head 900"}},
		{"checkpoint log start above trim", func(b *Binding, h *Head, a *[]CheckpointAnchor) {
			*a = append(*a, CheckpointAnchor{Key: "k", Anchor: 500, LogStart: 121})
		}, []string{"checkpoint k records log start 121, above the durable trim 120"}},
		{"checkpoint log start above its anchor", func(b *Binding, h *Head, a *[]CheckpointAnchor) {
			h.Trim, b.ObservedLogStart = 500, 500
			*a = append(*a, CheckpointAnchor{Key: "k", Anchor: 100, LogStart: 110})
		}, []string{"log start 110 above its anchor 100"}},
	}
	for _, c := range cases {
		b, h := invBinding(), invHead()
		var anchors []CheckpointAnchor
		c.mut(b, h, &anchors)
		err := CheckInvariants(b, h, anchors...)
		mustViolate(t, c.what, err, append([]string{"orders-3"}, c.fragments...)...)
		if errors.Is(err, ErrBlocked) {
			t.Errorf("%s: a user topic is not blocked: %v", c.what, err)
		}
	}
}

func TestCheckGenerationsRules(t *testing.T) {
	cases := []struct {
		what      string
		mut       func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary
		fragments []string
	}{
		{"reversed", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			g[3].Base, g[3].End = 800, 450
			return g
		}, []string{"00000000000000000006.json range [800, 450) is reversed"}},
		{"below stream start", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			h.Start = 10
			return g
		}, []string{"00000000000000000000.json starts at 0, below the stream's start 10"}},
		{"beyond head", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			h.Head = 799
			return g
		}, []string{"ends at 800, beyond the head 799"}},
		{"empty committed", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			return append(g, GenerationSummary{Gen: 7, Kind: KindCommitted, Base: 800, End: 800})
		}, []string{"COMMITTED generation with an empty range at 800"}},
		{"overlap", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			g[1].Base = 199
			return g
		}, []string{"00000000000000000001.json [199, 450) overlaps", "00000000000000000000.json [0, 200)"}},
		{"out of order", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			h.Trim = 450 // the gap before the first is below the trim
			g[0].Gen, g[1].Gen = 1, 0
			return g
		}, []string{"00000000000000000001.json [0, 200) overlaps"}},
		{"gap above the trim", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			g[3].Base = 460
			return g
		}, []string{"sealed data is missing", "starts at 460, but the sealed stream before it ends at 450 and the durable trim is 120"}},
		{"first starts above the trim", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			return []GenerationSummary{{Gen: 3, Kind: KindCommitted, Base: 130, End: 200}}
		}, []string{"starts at 130, but the sealed stream before it ends at 0 and the durable trim is 120"}},
		{"duplicate", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			return append(g, g[2])
		}, []string{"generation 5 is listed twice"}},
		{"member missing", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			return g[:2]
		}, []string{"member generation 5 has no manifest"}},
		{"member committed", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			b.Coverage.Members[0].Gen = 1
			return g
		}, []string{"member streams/s-abc/generations/00000000000000000001.json is COMMITTED, not TOPIC_COMPACTED"}},
		{"member starts late", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			g[2].Base = 60
			return g
		}, []string{"coverage [50, 400) is not tiled by its members (generations 5 [60, 400)): expected one to start at 50"}},
		{"member ends short", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			g[2].End = 390
			return g
		}, []string{"they end at 390"}},
		{"members overlap", func(b *Binding, h *Head, g []GenerationSummary) []GenerationSummary {
			b.Coverage.Members = append(b.Coverage.Members, SetMember{Gen: 8, ManifestSHA256: strings.Repeat("f", 64)})
			g[2].End = 300
			return append(g, GenerationSummary{Gen: 8, Kind: KindTopicCompacted, Base: 250, End: 400})
		}, []string{"expected one to start at 300"}},
	}
	for _, c := range cases {
		b, h := invBinding(), invHead()
		gens := c.mut(b, h, invGens())
		mustViolate(t, c.what, CheckGenerations(b, h, gens), c.fragments...)
	}
	// Two members that tile the coverage are fine.
	b := invBinding()
	b.Coverage.Members = append(b.Coverage.Members, SetMember{Gen: 8, ManifestSHA256: strings.Repeat("f", 64)})
	g := invGens()
	g[2].End = 300
	g = append(g, GenerationSummary{Gen: 8, Kind: KindTopicCompacted, Base: 300, End: 400})
	if err := CheckGenerations(b, invHead(), g); err != nil {
		t.Fatal(err)
	}
}

// TestInvariantsBlockCoordinatorTopics: a violation on a coordinator topic
// is an invariant violation and blocks its coordinator.
func TestInvariantsBlockCoordinatorTopics(t *testing.T) {
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		b, h := invBinding(), invHead()
		b.Topic = topic
		b.Coverage.End = 901
		err := CheckInvariants(b, h)
		if !errors.Is(err, ErrInvariant) || !errors.Is(err, ErrBlocked) {
			t.Errorf("%s: %v, want an invariant violation that blocks", topic, err)
		}
		gens := invGens()
		gens[1].Base = 150
		err = CheckGenerations(b, h, gens)
		if !errors.Is(err, ErrInvariant) || !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), topic) {
			t.Errorf("%s generations: %v, want an invariant violation that blocks", topic, err)
		}
	}
}
