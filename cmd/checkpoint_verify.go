package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
)

type checkpointVerifyOptions struct {
	sel partitionSel
}

func newCheckpointVerifyCmd(g *globals) *cobra.Command {
	o := &checkpointVerifyOptions{}
	c := &cobra.Command{
		Use:   "verify (TOPIC-PARTITION... | --all)",
		Short: "Verify checkpoints: object, every CRC, root, anchor digest, binding reference",
		Long: `Verify every checkpoint of the named partitions: the object (HEAD size and
ETag against the bytes), every section CRC-32C and digest, the root, the
anchor object's digest against the stream, the binding reference, and that
the binding's checkpoint_ref names an existing checkpoint with its digest.
Each finding names the object and the check that failed. Stale checkpoints
(anchor object collected below the trim) are not findings.` + exitStatusHelp("3 when any check failed"),
		Example: `  nereusctl checkpoint verify payments-0
  nereusctl checkpoint verify --all -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			tps, err := o.sel.resolve(ctx, st, args)
			if err != nil {
				return err
			}
			reps, err := verifyCheckpoints(cmd, g, tps)
			if err != nil {
				return err
			}
			return renderCheckpointVerify(g, reps)
		},
	}
	o.sel.addFlags(c, true)
	return c
}

func verifyCheckpoints(cmd *cobra.Command, g *globals, tps []layout.TopicPartition) ([]*recovery.VerifyReport, error) {
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return nil, err
	}
	var reps []*recovery.VerifyReport
	for _, tp := range tps {
		b, _, err := loadBinding(ctx, st, tp.String())
		if err != nil {
			return nil, err
		}
		rep, err := recovery.Verify(ctx, st, b)
		if err != nil {
			return nil, fmt.Errorf("verify checkpoints of %s: %w", tp, err)
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

func renderCheckpointVerify(g *globals, reps []*recovery.VerifyReport) error {
	total, checked := 0, 0
	for _, r := range reps {
		total += len(r.Findings)
		checked += r.Checkpoints
	}
	if g.json() {
		if err := writeJSON(g.stdout, map[string]any{"schema_version": SchemaVersion, "ok": total == 0, "checkpoints": checked, "partitions": nonNil(reps)}); err != nil {
			return err
		}
	} else {
		rows := [][]string{}
		for _, r := range reps {
			for _, f := range r.Findings {
				rows = append(rows, []string{f.Partition, f.Check, f.Key, f.Detail})
			}
		}
		if len(rows) > 0 {
			if err := writeTable(g.stdout, []string{"PARTITION", "CHECK", "OBJECT", "DETAIL"}, rows); err != nil {
				return err
			}
		}
		fmt.Fprintf(g.stdout, "checkpoint verify: %d checkpoints in %d partitions, %d findings\n", checked, len(reps), total)
	}
	if total > 0 {
		f := firstFinding(reps)
		return exitcode.VerifyErr(fmt.Errorf("checkpoint verify: %d findings; first: %s: %s check failed: %s", total, f.Key, f.Check, f.Detail))
	}
	return nil
}

func firstFinding(reps []*recovery.VerifyReport) recovery.Finding {
	for _, r := range reps {
		if len(r.Findings) > 0 {
			return r.Findings[0]
		}
	}
	return recovery.Finding{}
}
