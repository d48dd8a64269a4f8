package compaction

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrEncoderMismatch: the generation was written by another NTC2 encoder
// than this build's (another format version, zstd library version or
// level), so a regenerate cannot reproduce its bytes. The store is not
// damaged by it; other sources of the bytes can still repair.
var ErrEncoderMismatch = errors.New("this build cannot reproduce the generation's bytes")

// EncoderMismatchError names both encoder identities. It is
// ErrEncoderMismatch.
type EncoderMismatchError struct {
	Gen      int64
	Recorded string // what the manifest says wrote the objects
	Running  string // this build's ntc2.EncoderIdentity
}

func (e *EncoderMismatchError) Error() string {
	return fmt.Sprintf("generation %d was written by the encoder %q and this build's is %q: %v", e.Gen, e.Recorded, e.Running, ErrEncoderMismatch)
}

// Is makes it ErrEncoderMismatch.
func (e *EncoderMismatchError) Is(target error) bool { return target == ErrEncoderMismatch }

// CheckEncoder refuses a generation whose recorded encoder is not this
// build's. A manifest that records none (written before the encoder was
// recorded) passes: this build cannot know, and the digest of what it
// regenerates decides.
func CheckEncoder(g *layout.Generation) error {
	if g.Compaction == nil || g.Compaction.Encoder == "" {
		return nil
	}
	if run := ntc2.EncoderIdentity(); g.Compaction.Encoder != run {
		return &EncoderMismatchError{Gen: g.Gen, Recorded: g.Compaction.Encoder, Running: run}
	}
	return nil
}

// Regenerate reruns the deterministic compaction that produced the
// TOPIC_COMPACTED generation g, from its recorded exact sources and
// parameters, and calls fn with every output object. It fails if any
// source manifest or object is gone or no longer has its recorded digest:
// only the exact inputs reproduce the exact bytes. It reads nothing when
// the manifest records another encoder than this build's
// (EncoderMismatchError): the same inputs would give other bytes.
func Regenerate(ctx context.Context, st store.Store, g *layout.Generation, maxMemory int64, fn func(ref layout.ObjectRef, data []byte)) error {
	if g.Kind != layout.KindTopicCompacted || g.Compaction == nil {
		return fmt.Errorf("regenerate generation %d: not a compacted generation with recorded parameters", g.Gen)
	}
	if err := CheckEncoder(g); err != nil {
		return fmt.Errorf("regenerate: %w", err)
	}
	p := &Plan{StreamID: g.StreamID, Base: g.Base, End: g.End, PrevEnd: g.Compaction.PrevEnd, Params: *g.Compaction, Sources: g.Sources, LogStart: g.Compaction.LogStart}
	p.aborts = newAbortIndex(g.Compaction.Aborted)
	for _, s := range g.Sources {
		sg, sum, err := layout.LoadGeneration(ctx, st, g.StreamID, s.Gen)
		if err != nil {
			return fmt.Errorf("regenerate generation %d: source generation %d: %w", g.Gen, s.Gen, err)
		}
		if sum != s.ManifestSHA256 {
			return fmt.Errorf("regenerate generation %d: %w: source generation %d has manifest sha256 %s, recorded %s", g.Gen, ErrSourceChanged, s.Gen, sum, s.ManifestSHA256)
		}
		src := source{gen: sg, sha256: sum}
		if sg.Kind == layout.KindTopicCompacted {
			p.prev = append(p.prev, src)
		} else {
			p.new = append(p.new, src)
		}
	}
	sort.Slice(p.prev, func(i, j int) bool { return p.prev[i].gen.Base < p.prev[j].gen.Base })
	sort.Slice(p.new, func(i, j int) bool { return p.new[i].gen.Base < p.new[j].gen.Base })
	if maxMemory <= 0 {
		maxMemory = DefaultMaxMemory
	}
	var stats Stats
	limit := g.Compaction.ObjectBytes
	if limit <= 0 {
		limit = defaultObjectBytes
	}
	em := &emitter{st: st, p: p, limit: limit, stats: &stats, onObject: fn}
	return p.run(ctx, st, Options{MaxMemory: maxMemory, TempDir: os.TempDir()}, em, &stats)
}
