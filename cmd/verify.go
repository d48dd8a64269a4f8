package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/verify"
)

type verifyOptions struct {
	sel    partitionSel
	deep   bool
	sample string
}

func newVerifyCmd(g *globals) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify (TOPIC-PARTITION... | --all) [--deep] [--sample n/t]",
		Short: "Verify compacted coverage, COMMITTED objects and checkpoints; quarantine what fails",
		Long: `Verify what readers depend on:
  compacted coverage (the activation constraint): the generation-set identity
    recomputed from its members equals the binding's set_id; each member
    manifest has its recorded digest; coverage is gap-free from the log
    start to the compacted end; each member object exists with the size and
    ETag of its manifest, and with --deep, its full SHA-256 and every block
    CRC-32C;
  COMMITTED objects above the trim against their generation manifests (HEAD,
    size, ETag; with --deep, SHA-256 and every batch CRC);
  checkpoints, as 'checkpoint verify' does.
The default level is cheap in requests (HEADs and documents); --deep reads
and hashes every byte on all cores. --sample n/t hashes only a deterministic
1/t slice of the objects, so t nightly runs (n = 0..t-1) cover everything.

A finding on ACTIVE compacted coverage writes a quarantine record
(quarantine/<set_id>.json), CASes the coverage state to QUARANTINED and
reports the partition's coordinator as BLOCKED: no read path falls back to
COMMITTED data for that range until 'nereusctl repair' restores it.` + exitStatusHelp("3 when any check failed (corruption found)", "4 when a partition is blocked by quarantined coverage"),
		Example: `  nereusctl verify --all
  nereusctl verify __consumer_offsets-0 --deep
  nereusctl verify --all --deep --sample 3/7 --shard 0/2 -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd, g, o, args)
		},
	}
	o.sel.addFlags(c, true)
	c.Flags().BoolVar(&o.deep, "deep", false, "read and hash every byte (SHA-256 and every CRC), in parallel")
	c.Flags().StringVar(&o.sample, "sample", "", "with --deep: hash only the deterministic slice n of t (n/t)")
	return c
}

func runVerify(cmd *cobra.Command, g *globals, o *verifyOptions, args []string) error {
	ctx := cmd.Context()
	var sample *verify.Sample
	if o.sample != "" {
		s, err := verify.ParseSample(o.sample)
		if err != nil {
			return exitcode.UsageErr(err)
		}
		sample = s
	}
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	tps, err := o.sel.resolve(ctx, st, args)
	if err != nil {
		return err
	}
	prog := newProgress(g, "hashing", -1)
	defer prog.done()
	var reps []*verify.Report
	start := time.Now()
	for _, tp := range tps {
		b, _, err := loadBinding(ctx, st, tp.String())
		if err != nil {
			return err
		}
		rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: o.deep, Sample: sample, NowMs: time.Now().UnixMilli(), Progress: prog.add})
		if err != nil {
			return fmt.Errorf("verify %s: %w", tp, err)
		}
		reps = append(reps, rep)
	}
	prog.done()
	findings, blocked, hashed := 0, 0, int64(0)
	for _, r := range reps {
		findings += len(r.Findings)
		hashed += r.BytesHashed
		if r.Blocked {
			blocked++
		}
	}
	secs := time.Since(start).Seconds()
	if g.json() {
		if err := writeJSON(g.stdout, map[string]any{"schema_version": SchemaVersion, "ok": findings == 0 && blocked == 0, "deep": o.deep, "findings": findings, "blocked": blocked, "bytes_hashed": hashed, "seconds": secs, "partitions": nonNil(reps)}); err != nil {
			return err
		}
	} else {
		rows := [][]string{}
		for _, r := range reps {
			for _, f := range r.Findings {
				rows = append(rows, []string{r.Partition, f.Scope, f.Check, f.Object, f.Detail})
			}
			if r.Quarantined {
				fmt.Fprintf(g.stdout, "%s: QUARANTINED compacted set %s; the coordinator is blocked until repair\n", r.Partition, r.SetID)
			} else if r.Blocked {
				fmt.Fprintf(g.stdout, "%s: compacted set %s is QUARANTINED; the coordinator is blocked\n", r.Partition, r.SetID)
			}
		}
		if len(rows) > 0 {
			if err := writeTable(g.stdout, []string{"PARTITION", "SCOPE", "CHECK", "OBJECT", "DETAIL"}, rows); err != nil {
				return err
			}
		}
		level := "default"
		if o.deep {
			level = "deep"
		}
		fmt.Fprintf(g.stdout, "verify (%s): %d partitions, %d findings, %d blocked; %d bytes hashed in %.1fs\n", level, len(reps), findings, blocked, hashed, secs)
	}
	switch {
	case findings > 0:
		f := firstVerifyFinding(reps)
		return exitcode.Wrap(exitcode.Verify, fmt.Errorf("verify: %d findings; first: %s: %s check failed on %s: %s", findings, f.Partition, f.Check, f.Object, f.Detail), "see 'nereusctl quarantine list' and docs/runbooks/coordinator-blocked.md")
	case blocked > 0:
		return exitcode.BlockedErr(fmt.Errorf("verify: %d partition(s) blocked by quarantined compacted coverage", blocked), "repair with 'nereusctl repair TOPIC-PARTITION --digest sha256:...'; see 'nereusctl quarantine list'")
	}
	return nil
}

func firstVerifyFinding(reps []*verify.Report) verify.Finding {
	for _, r := range reps {
		if len(r.Findings) > 0 {
			return r.Findings[0]
		}
	}
	return verify.Finding{}
}
