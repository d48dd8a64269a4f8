package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/status"
	"github.com/nereusctl/nereusctl/internal/verify"
)

// runTour shows the tool working on what the demo wrote: the same code paths
// as the commands it names.
func runTour(cmd *cobra.Command, g *globals, sum *demo.Summary) error {
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	w := g.stdout
	step := func(title, command string) {
		fmt.Fprintf(w, "\n== %s\n$ nereusctl %s\n", title, command)
	}

	step("Status: one row per binding", "status")
	rows, err := status.Collect(ctx, st, nil, time.Now(), g.parallel())
	if err != nil {
		return err
	}
	if err := renderStatus(g, rows, nil); err != nil {
		return err
	}

	step("Every checkpoint verified: object, CRCs, root, anchor digest, binding reference", "checkpoint verify --all")
	tps, err := layout.ListBindings(ctx, st)
	if err != nil {
		return err
	}
	reps := verifyCheckpoints(ctx, st, tps, g.parallel())
	if err := renderCheckpointVerify(g, reps, false); err != nil {
		return err
	}

	tp := "payments-0"
	step("Restart replay from the newest checkpoint, compared with a full replay", "replay "+tp+" --compare")
	b, _, err := loadBinding(ctx, st, tp)
	if err != nil {
		return err
	}
	res, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		return err
	}
	full, err := recovery.Replay(ctx, st, b, recovery.Options{Full: true})
	if err != nil {
		return err
	}
	anchor := "none"
	if res.Chosen != nil {
		anchor = fmt.Sprint(res.Chosen.Anchor)
	}
	verdict := "MATCH"
	if res.Digest() != full.Digest() {
		verdict = "MISMATCH"
	}
	fmt.Fprintf(w, "checkpoint anchor %s, tail %d objects / %d bytes; full replay %d objects / %d bytes\n", anchor, res.Tail.Objects, res.Tail.Bytes, full.Tail.Objects, full.Tail.Bytes)
	held := ""
	if res.State.LSO() < res.State.HW() {
		held = " (an open transaction holds it below the HW)"
	}
	fmt.Fprintf(w, "log start %d, HW %d, LSO %d%s, %d producers, %d aborted ranges\n", res.State.LogStart, res.State.HW(), res.State.LSO(), held, len(res.State.Producers), len(res.State.Aborted))
	fmt.Fprintf(w, "state digest %s ... %s\n", res.Digest()[:16], verdict)

	to := tourTrimTarget(rows)
	step("What a DeleteRecords trim would do, without doing it", fmt.Sprintf("trim orders-0 --to %d --dry-run", to))
	r := retention.RunPartition(ctx, st, retention.Request{TP: layout.TopicPartition{Topic: "orders", Partition: 0}, DeleteRecords: &to, NowMs: time.Now().UnixMilli(), DryRun: true})
	renderPlan(g, r, true)

	step("Mandatory compacted coverage of the coordinator topics, verified byte for byte", "verify --all --deep")
	vtps, err := layout.ListBindings(ctx, st)
	if err != nil {
		return err
	}
	findings, bytes := 0, int64(0)
	for _, tp := range vtps {
		b, _, err := loadBinding(ctx, st, tp.String())
		if err != nil {
			return err
		}
		rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true, NoQuarantine: true})
		if err != nil {
			return err
		}
		findings += len(rep.Findings)
		bytes += rep.BytesHashed
		if b.Coverage.State != layout.CoverageNone {
			fmt.Fprintf(w, "%-22s coverage %s [%d, %d), %d findings\n", tp, b.Coverage.State, b.Coverage.Start, b.Coverage.End, len(rep.Findings))
		}
	}
	fmt.Fprintf(w, "%d partitions, %d bytes hashed, %d findings\n", len(vtps), bytes, findings)

	fmt.Fprintf(w, "\nNext: nereusctl replay %s, nereusctl checkpoint inspect %s, nereusctl dump __consumer_offsets-0 --decoder offsets,\n      nereusctl trim orders-0 --to %d, nereusctl gc --dry-run, docs/runbooks/\n", tp, tp, to)
	return nil
}

// tourTrimTarget is the tour's trim example for orders-0, taken from the
// data: a quarter of its head, in hundreds when it has that many (1000 of
// the default demo's 4000), so the example trims whatever --records gave.
func tourTrimTarget(rows []status.Partition) int64 {
	for _, r := range rows {
		if r.Topic == "orders" && r.Partition == 0 {
			to := r.Head / 4
			if to >= 100 {
				to -= to % 100
			}
			return to
		}
	}
	return 0
}
