package recovery

import (
	"context"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Plan is what a restart replay of a partition would do, found without
// reading the tail: the checkpoint it would start from (chosen and
// verified exactly as Replay chooses it), the tail's objects and bytes
// from the listing, and the requests the replay would send.
type Plan struct {
	Head int64 `json:"head"`
	Trim int64 `json:"trim"`
	// Checkpoint is the one the replay would hydrate; nil: it would
	// replay from the stream's first object (From).
	Checkpoint *Candidate `json:"checkpoint"`
	// Start says where the replay starts: "checkpoint", "genesis" (the
	// import's genesis checkpoint), "retention-floor" (the oldest valid
	// checkpoint, the objects below it collected) or "first-object".
	Start string `json:"start"`
	// Skipped are the checkpoints looked at and passed over, with why.
	Skipped []Candidate `json:"skipped"`
	// From and To bound the tail [From, To) the replay would read.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Objects and Bytes are the tail's objects and their listed sizes:
	// what the replay would GET.
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
	// Manifests is the generation manifests sealed after the checkpoint
	// (the replay reads each; the plan read them too).
	Manifests int `json:"manifests"`
	// Requests is what the replay would send in all: the plan's own
	// requests (the head, the listings, the checkpoint reads and checks,
	// the manifests, the health check) plus one GET per tail object.
	Requests int64 `json:"requests"`
	// PlanRequests is what the plan itself sent.
	PlanRequests int64 `json:"plan_requests"`
	// Health is the partition's health check, as the replay would report
	// it (the tail's batches excepted: their CRCs are read only by a
	// replay).
	Health *health.Report `json:"-"`
}

// PlanReplay finds what Replay(ctx, st, b, Options{}) would read, without
// reading the tail: it reads the head, lists the stream, chooses and
// verifies the checkpoint the replay would (those reads are the replay's
// own first steps), checks that no object is missing between the trim and
// the head (data loss is an error, as in Replay), reads the manifests
// sealed after the checkpoint and runs the health check; the tail's
// objects are only listed.
func PlanReplay(ctx context.Context, st store.Store, b *layout.Binding) (*Plan, error) {
	if err := b.CheckNotBlocked(); err != nil {
		return nil, fmt.Errorf("replay plan: %w", err)
	}
	counter := store.NewCounter(st)
	// The head and the listing as the replay reads them (the same reads
	// ahead, so the same requests).
	h, lister, err := openStream(ctx, counter, b, false)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	defer lister.wait()
	p := &Plan{Head: h.Head, Trim: h.Trim, Skipped: []Candidate{}, Start: "checkpoint"}
	var part *state.Partition
	lastGen := int64(-1)
	cands, chosen, cp, err := choose(ctx, counter, b, h, lister, true, 0)
	if err != nil {
		return nil, err
	}
	for _, c := range cands {
		if c.Status == "skipped" {
			p.Skipped = append(p.Skipped, c)
		}
	}
	if chosen >= 0 {
		p.Checkpoint = &cands[chosen]
		part = cp.State
		_, lastGen = part.SealedEnd()
		lastGen = max(lastGen, maxSourceGen(cp.Coverage.Sources))
	}
	if err := checkRetained(ctx, lister, b, h, part); err != nil {
		return nil, err
	}
	if part == nil {
		// As Replay: the retention floor, the import's genesis, a
		// checkpoint at the first offset, or the first object.
		all, err := lister.All(ctx)
		if err != nil {
			return nil, fmt.Errorf("replay plan %s: %w", b.Name(), err)
		}
		first := stream.FirstOffset(all, h.Head)
		p.Start = "first-object"
		switch {
		case first > h.Trim:
			if _, err := stream.Chain(all, h.Trim, h.Head); err != nil {
				return nil, fmt.Errorf("replay plan %s: %w", b.Name(), err)
			}
			return nil, fmt.Errorf("replay plan %s: %w: the chain of objects to the head starts at %d, above the durable trim %d", b.Name(), stream.ErrMissing, first, h.Trim)
		case first > h.Start:
			// Replay without --full takes no floor: it has no state for
			// the collected objects.
			return nil, fmt.Errorf("replay plan %s: %w: the objects for offsets [%d, %d), below the durable trim %d, are missing and no valid checkpoint holds the state they carried", b.Name(), stream.ErrMissing, h.Start, first, h.Trim)
		case b.ImportGenesis() != nil:
			g := b.ImportGenesis()
			cands, chosen, cp, err = chooseKey(ctx, counter, b, h, lister, g.Key, g.SHA256)
			if err == nil && chosen >= 0 {
				p.Start = "genesis"
			}
		default:
			cands, chosen, cp, err = choose(ctx, counter, b, h, lister, false, max(first, 1))
			if err == nil && chosen >= 0 && cp.Anchor.Offset != first {
				chosen = -1
			}
		}
		if err != nil {
			return nil, err
		}
		if chosen >= 0 {
			p.Checkpoint = &cands[chosen]
			part = cp.State
			_, lastGen = part.SealedEnd()
			lastGen = max(lastGen, maxSourceGen(cp.Coverage.Sources))
		} else {
			part = state.New(first)
		}
	}
	p.From, p.To = part.NextOffset, h.Head
	if _, _, _, _, _, err := sealsAfter(ctx, counter, lister, lastGen); err != nil {
		return nil, fmt.Errorf("replay plan %s: %w", b.Name(), err)
	}
	p.Manifests = len(lister.readManifests())
	if p.From < p.To {
		objs, err := lister.From(ctx, p.From)
		if err != nil {
			return nil, fmt.Errorf("replay plan %s: %w", b.Name(), err)
		}
		chain, err := stream.Chain(objs, p.From, p.To)
		if err != nil {
			return nil, fmt.Errorf("replay plan %s: %w", b.Name(), err)
		}
		p.Objects = len(chain)
		for _, o := range chain {
			p.Bytes += o.Size
		}
	}
	var known map[int64]health.KnownManifest
	if p.Checkpoint != nil && cp != nil {
		known = knownManifests(cp)
	}
	rep, _, err := health.Gather(ctx, counter, b, health.Prior{Head: h, Lister: lister, ObjectsFrom: lister.ListedFrom(), Manifests: lister.readManifests(), Known: known, Skipped: skippedCheckpoints(cands, b, h)})
	if err != nil {
		return nil, fmt.Errorf("replay plan %s: %w", b.Name(), err)
	}
	p.Health = rep
	lister.wait() // every read ahead counted
	p.PlanRequests = counter.Total()
	p.Requests = p.PlanRequests + int64(p.Objects)
	return p, nil
}
