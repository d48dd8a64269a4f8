package recovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// batchesAt encodes one single-record batch per offset.
func batchesAt(t *testing.T, offsets ...int64) [][]byte {
	t.Helper()
	var out [][]byte
	for _, off := range offsets {
		s := kafka.NewBatchSpec(off, []kafka.Record{{Offset: off, Timestamp: 1_700_000_000_000 + off, Key: []byte(fmt.Sprint("k", off)), Value: []byte("v")}})
		b, err := kafka.EncodeBatch(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func bases(p *state.Partition) string {
	var out []string
	for _, s := range p.Segments {
		out = append(out, fmt.Sprint(s.Base))
	}
	return strings.Join(out, " ")
}

// segBaseStream writes [0, 5) sealed with next_segment_base next, then
// batches from 10 on, checkpointing the head after the first append
// (the segment [0, 5) still open: its seal lies in the tail) and after
// the second (the next segment, started at next, inside the checkpoint).
func segBaseStream(t *testing.T, next int64, checkpointAfterRoll bool) (store.Store, *layout.Binding) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMem("t")
	const sid = "s-segbase"
	if err := stream.CreateStream(ctx, st, sid, 0); err != nil {
		t.Fatal(err)
	}
	cfg := layout.DefaultTopicConfig()
	b := &layout.Binding{Topic: "t", TopicID: "tid", Partition: 0, StreamID: sid, Config: cfg, Coverage: layout.Coverage{State: layout.CoverageNone}, Version: 1}
	if _, err := layout.Create(ctx, st, layout.BindingKey("t", 0), b); err != nil {
		t.Fatal(err)
	}
	w, err := stream.OpenWriter(ctx, st, sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	step := func(fn func() error) {
		t.Helper()
		if err := fn(); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint := func() {
		t.Helper()
		cur, etag, err := layout.LoadBinding(ctx, st, "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Create(ctx, st, cur, etag, false); err != nil {
			t.Fatal(err)
		}
	}
	step(func() error { return w.Append(ctx, batchesAt(t, 0, 1, 2, 3, 4)) })
	checkpoint()
	step(func() error { return w.RollAt(ctx, next) })
	step(func() error { return w.Append(ctx, batchesAt(t, 10, 11)) })
	if checkpointAfterRoll {
		checkpoint()
	}
	step(func() error { return w.Append(ctx, batchesAt(t, 12)) })
	step(func() error { return w.Roll(ctx) })
	step(func() error { return w.Append(ctx, batchesAt(t, 15, 16)) })
	cur, _, err := layout.LoadBinding(ctx, st, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	return st, cur
}

// A generation that records next_segment_base (import: the next .log
// file's name, Kafka's base) makes replay open the next segment there
// when it seals the generation: the full replay, the checkpoint path
// whose tail holds the seal, and the checkpoint path whose checkpoint
// holds the rolled segment give the same segments and digest.
func TestReplayNextSegmentBase(t *testing.T) {
	ctx := context.Background()
	st, b := segBaseStream(t, 7, true)
	full, err := Replay(ctx, st, b, Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := bases(full.State); got != "0 7 15" {
		t.Fatalf("full replay: segment bases %s, want 0 7 15", got)
	}
	for _, anchor := range []int64{5, 12} {
		cp, err := Replay(ctx, st, b, Options{MaxAnchor: anchor})
		if err != nil {
			t.Fatal(err)
		}
		if cp.Chosen == nil || cp.Chosen.Anchor != anchor {
			t.Fatalf("anchor %d: chosen %+v", anchor, cp.Chosen)
		}
		if cp.Digest() != full.Digest() {
			t.Fatalf("checkpoint at %d: digest %s (bases %s) != full replay %s (bases %s)", anchor, cp.Digest(), bases(cp.State), full.Digest(), bases(full.State))
		}
	}
}

// A next_segment_base above the next segment's first batch is refused:
// replay fails as corruption (exit 3) naming the object and the
// generation, on every path.
func TestReplayNextSegmentBaseAboveFirstBatch(t *testing.T) {
	ctx := context.Background()
	st, b := segBaseStream(t, 11, false)
	for _, opt := range []Options{{Full: true}, {MaxAnchor: 5}} {
		_, err := Replay(ctx, st, b, opt)
		if err == nil {
			t.Fatalf("%+v: a segment base above its first batch was accepted", opt)
		}
		if !errkind.IsData(err) || !errors.Is(err, kafka.ErrCorrupt) {
			t.Fatalf("%+v: kind %v (corrupt %v), want corrupt: %v", opt, errkind.Of(err), errors.Is(err, kafka.ErrCorrupt), err)
		}
		for _, f := range []string{"objects/00000000000000000005-00000000000000000012.kb", "generation 0", "next_segment_base", "batch at 10 lies below 11"} {
			if !strings.Contains(err.Error(), f) {
				t.Fatalf("%+v: error does not name %q: %v", opt, f, err)
			}
		}
	}
}
