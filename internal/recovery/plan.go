package recovery

import (
	"context"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
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
	// The start state exactly as Replay finds it (its own step).
	r := &replayer{st: counter, b: b, h: h, lister: lister, lastGen: -1,
		res: &Result{Binding: b, Head: *h, Sources: map[int64]string{}}}
	if err := r.startState(ctx); err != nil {
		return nil, err
	}
	p := &Plan{Head: h.Head, Trim: h.Trim, Skipped: []Candidate{}, Checkpoint: r.res.Chosen, Start: "first-object"}
	switch {
	case r.res.Genesis:
		p.Start = "genesis"
	case r.res.Chosen != nil:
		p.Start = "checkpoint"
	}
	for _, c := range r.res.Candidates {
		if c.Status == "skipped" {
			p.Skipped = append(p.Skipped, c)
		}
	}
	part, lastGen := r.part, r.lastGen
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
	rep, _, err := health.Gather(ctx, counter, b, health.Prior{Head: h, Lister: lister, ObjectsFrom: lister.ListedFrom(), Manifests: lister.readManifests(), Known: r.res.known, Skipped: skippedCheckpoints(r.res.Candidates, b, h)})
	if err != nil {
		return nil, fmt.Errorf("replay plan %s: %w", b.Name(), err)
	}
	p.Health = rep
	lister.wait() // every read ahead counted
	p.PlanRequests = counter.Total()
	p.Requests = p.PlanRequests + int64(p.Objects)
	return p, nil
}
