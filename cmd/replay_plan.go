package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/recovery"
)

// planFindings is never null in the JSON.
func planFindings(p *recovery.Plan) []health.Finding {
	if p.Health == nil || p.Health.Findings == nil {
		return []health.Finding{}
	}
	return p.Health.Findings
}

// replayPlanJSON is replay --plan -o json
// (docs/json-output.md#replay---plan).
type replayPlanJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	StreamID      string `json:"stream_id"`
	*recovery.Plan
	// Findings are the partition's health findings, as replay's.
	Findings []health.Finding `json:"findings"`
}

func runReplayPlan(cmd *cobra.Command, g *globals, arg string) error {
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	b, _, err := loadBinding(ctx, st, arg)
	if err != nil {
		return err
	}
	p, err := recovery.PlanReplay(ctx, st, b)
	if err != nil {
		return replayDataLoss(g, b, err)
	}
	if g.json() {
		if err := writeJSON(g.stdout, replayPlanJSON{SchemaVersion: SchemaVersion, Topic: b.Topic, Partition: b.Partition, StreamID: b.StreamID, Plan: p, Findings: planFindings(p)}); err != nil {
			return err
		}
	} else {
		w := g.stdout
		fmt.Fprintf(w, "replay plan for %s (stream %s): trim %d, head %d\n", b.Name(), b.StreamID, p.Trim, p.Head)
		switch c := p.Checkpoint; {
		case c != nil:
			fmt.Fprintf(w, "  start:      %s %s (anchor %d, %d bytes)\n", p.Start, c.Key, c.Anchor, c.Size)
		default:
			fmt.Fprintf(w, "  start:      the first object (no usable checkpoint): offset %d\n", p.From)
		}
		for _, c := range p.Skipped {
			fmt.Fprintf(w, "  skipped:    %s (anchor %d): %s %s\n", c.Key, c.Anchor, c.Reason, c.Detail)
		}
		fmt.Fprintf(w, "  tail:       [%d, %d): %d objects, %d bytes (not read)\n", p.From, p.To, p.Objects, p.Bytes)
		fmt.Fprintf(w, "  manifests:  %d sealed after the checkpoint\n", p.Manifests)
		fmt.Fprintf(w, "  requests:   %d (this plan sent %d; the replay adds one GET per tail object)\n", p.Requests, p.PlanRequests)
		renderFindings(w, b.Name(), p.Health)
	}
	return healthErr("replay", p.Health)
}
