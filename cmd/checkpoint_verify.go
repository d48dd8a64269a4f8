package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
)

type checkpointVerifyOptions struct {
	sel      partitionSel
	readOnly bool
}

func newCheckpointVerifyCmd(g *globals) *cobra.Command {
	o := &checkpointVerifyOptions{}
	c := &cobra.Command{
		Use:   "verify (TOPIC-PARTITION... | --all) [--read-only]",
		Short: "Verify checkpoints: object, every CRC, root, anchor digest, binding reference",
		Long: `Verify every checkpoint of the named partitions: the object (HEAD size and
ETag against the bytes), every section CRC-32C and digest, the root, the
anchor object's digest against the stream, the binding reference, and that
the binding's checkpoint_ref names an existing checkpoint with its digest.
Each finding names the object and the check that failed. Stale checkpoints
(anchor object collected below the trim) are not findings.

checkpoint verify never writes to the store; --read-only states it (as on
'nereusctl verify'), for scripts that check a replica. With --all every
partition is checked: one whose binding or head cannot be read is reported
with its error and the others are still verified; the exit status is the
worst over the partitions.` + exitStatusHelp("3 when any check failed or a binding or head is malformed or missing"),
		Example: `  nereusctl checkpoint verify payments-0
  nereusctl checkpoint verify --all -o json
  nereusctl --store s3://replica/nereus checkpoint verify --all --read-only`,
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
			reps := verifyCheckpoints(ctx, st, tps, g.parallel())
			return renderCheckpointVerify(g, reps, o.readOnly)
		},
	}
	o.sel.addFlags(c, true)
	c.Flags().BoolVar(&o.readOnly, "read-only", false, "write nothing (checkpoint verify never writes; accepted for symmetry with 'verify --read-only')")
	return c
}

// checkpointVerifyPartition is one partition's outcome in checkpoint
// verify's report (docs/json-output.md).
type checkpointVerifyPartition struct {
	Partition   string             `json:"partition"`
	Checkpoints int                `json:"checkpoints"`
	Findings    []recovery.Finding `json:"findings"`
	// Error is why the partition could not be verified.
	Error string `json:"error,omitempty"`
	err   error
}

// checkpointVerifyJSON is checkpoint verify's -o json document.
type checkpointVerifyJSON struct {
	SchemaVersion int                          `json:"schema_version"`
	OK            bool                         `json:"ok"`
	ReadOnly      bool                         `json:"read_only"`
	Checkpoints   int                          `json:"checkpoints"`
	Findings      int                          `json:"findings"`
	Errors        int                          `json:"errors"`
	Partitions    []*checkpointVerifyPartition `json:"partitions"`
}

// verifyCheckpoints checks every partition; a failure is that partition's
// row, never the end of the run.
func verifyCheckpoints(ctx context.Context, st store.Store, tps []layout.TopicPartition, parallel int) []*checkpointVerifyPartition {
	reps, _ := fleet.Map(ctx, parallel, tps, func(ctx context.Context, _ int, tp layout.TopicPartition) (*checkpointVerifyPartition, error) {
		p := &checkpointVerifyPartition{Partition: tp.String(), Findings: []recovery.Finding{}}
		if err := checkpointVerifyOne(ctx, st, tp, p); err != nil {
			p.err = err
			p.Error = err.Error()
		}
		return p, nil
	})
	for i, p := range reps {
		if p == nil {
			// Not started: the context ended (the caller reports it).
			err := ctx.Err()
			reps[i] = &checkpointVerifyPartition{Partition: tps[i].String(), Findings: []recovery.Finding{}, err: err, Error: fmt.Sprint(err)}
		}
	}
	return reps
}

func checkpointVerifyOne(ctx context.Context, st store.Store, tp layout.TopicPartition, p *checkpointVerifyPartition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, _, err := loadBinding(ctx, st, tp.String())
	if err != nil {
		return err
	}
	// The partition's health first (the head the checkpoints are checked
	// against, the stream's listing): a head that is missing or does not
	// decode is corruption, not an I/O error, and a partition verify
	// would fail fails here too (3, or 4 when only blocked), after its
	// checkpoints are checked.
	hrep, obs, err := health.Gather(ctx, st, b, health.Prior{})
	if err != nil {
		return fmt.Errorf("verify checkpoints of %s: %w", tp, err)
	}
	if obs.Head == nil {
		return fmt.Errorf("verify checkpoints of %s: %w", tp, hrep.Err())
	}
	rep, err := recovery.VerifyListed(ctx, st, b, obs.Head, obs.Objects, obs.Checkpoints)
	if err != nil {
		return fmt.Errorf("verify checkpoints of %s: %w", tp, err)
	}
	p.Checkpoints = rep.Checkpoints
	p.Findings = append(p.Findings, rep.Findings...)
	if !hrep.OK() {
		return fmt.Errorf("verify checkpoints of %s: %w", tp, hrep.Err())
	}
	return nil
}

func renderCheckpointVerify(g *globals, reps []*checkpointVerifyPartition, readOnly bool) error {
	total, checked := 0, 0
	var fails failures
	for _, r := range reps {
		total += len(r.Findings)
		checked += r.Checkpoints
		fails.add(r.err)
	}
	if g.json() {
		if err := writeJSON(g.stdout, checkpointVerifyJSON{SchemaVersion: SchemaVersion, OK: total == 0 && fails.n == 0, ReadOnly: readOnly, Checkpoints: checked, Findings: total, Errors: fails.n, Partitions: reps}); err != nil {
			return err
		}
	} else {
		rows := [][]string{}
		for _, r := range reps {
			for _, f := range r.Findings {
				rows = append(rows, []string{f.Partition, string(f.Check), f.Key, f.Detail})
			}
		}
		if len(rows) > 0 {
			if err := writeTable(g.stdout, []string{"PARTITION", "CHECK", "OBJECT", "DETAIL"}, rows); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout)
		}
		prow := [][]string{}
		for _, r := range reps {
			res := "ok"
			switch {
			case r.Error != "":
				res = "ERROR: " + r.Error
			case len(r.Findings) > 0:
				res = fmt.Sprintf("FAILED: %d findings", len(r.Findings))
			}
			prow = append(prow, []string{r.Partition, fmt.Sprint(r.Checkpoints), res})
		}
		if len(prow) > 0 {
			if err := writeTable(g.stdout, []string{"PARTITION", "CHECKPOINTS", "RESULT"}, prow); err != nil {
				return err
			}
		}
		errs := ""
		if fails.n > 0 {
			errs = fmt.Sprintf(", %d errors", fails.n)
		}
		fmt.Fprintf(g.stdout, "checkpoint verify: %d checkpoints in %d partitions, %d findings%s\n", checked, len(reps), total, errs)
	}
	if total > 0 {
		f := firstFinding(reps)
		fails.code = exitcode.Worse(fails.code, exitcode.Verify)
		if fails.n == 0 {
			return exitcode.Wrap(exitcode.Verify, fmt.Errorf("checkpoint verify: %d findings; first: %s: %s check failed: %s", total, f.Key, f.Check, f.Detail), checkpointHints(reps))
		}
	}
	return fails.err("checkpoint verify", len(reps))
}

// checkpointHints is the hint of checkpoint verify's findings, one per
// kind (health.HintFor of the check as verify names it, checkpoint:CHECK).
func checkpointHints(reps []*checkpointVerifyPartition) string {
	var fs []health.Finding
	for _, r := range reps {
		for _, f := range r.Findings {
			fs = append(fs, health.Finding{Partition: f.Partition, Scope: health.ScopeCheckpoint, Object: f.Key, Check: health.CheckCheckpoint + ":" + string(f.Check)})
		}
	}
	return strings.Join(health.Hints(fs, "", map[string]bool{}), "; ")
}

func firstFinding(reps []*checkpointVerifyPartition) recovery.Finding {
	for _, r := range reps {
		if len(r.Findings) > 0 {
			return r.Findings[0]
		}
	}
	return recovery.Finding{}
}
