package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/verify"
)

type verifyOptions struct {
	sel      partitionSel
	deep     bool
	sample   string
	readOnly bool
}

func newVerifyCmd(g *globals) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify (TOPIC-PARTITION... | --all) [--deep [--sample n/t]] [--read-only]",
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
  generation kinds: a TOPIC_COMPACTED manifest names its sources and holds
    NTC2 objects, a COMMITTED one batch objects; the sealed COMMITTED
    generations above the trim tile their range with no gap;
  the head against the stream: no object starting, generation ending or
    checkpoint anchored above it (a rolled-back head);
  mandatory coverage: a binding whose coverage is NONE while its stream
    holds TOPIC_COMPACTED generations is reported BLOCKED;
  with --deep, the open segment (objects above the last sealed generation):
    they reach the head back to back and every batch passes its CRC;
  checkpoints, as 'checkpoint verify' does.
The default level is cheap in requests (HEADs and documents); --deep reads
and hashes every byte on all cores. --sample n/t (with --deep) hashes only a
deterministic 1/t slice of the objects, so t nightly runs (n = 0..t-1) cover
everything.

A finding on ACTIVE compacted coverage writes a quarantine record
(quarantine/<set_id>.json), CASes the coverage state to QUARANTINED and
reports the partition's coordinator as BLOCKED: no read path falls back to
COMMITTED data for that range until 'nereusctl repair' restores it. The
quarantine is decided and written holding the partition's lease: a
partition is checked first writing nothing and, when its coverage would be
quarantined, checked again under its lease (a lease another job holds past
--lease-wait is exit 4 for it; nothing is quarantined).
--read-only writes nothing at all (check a replica before restoring from
it); the report names what would have been quarantined.

With --all every partition is checked: a malformed binding, head or manifest
is a finding for that partition and the others are still verified. The exit
status is the worst over the partitions.` + exitStatusHelp("3 when any check failed (corruption found, a stored document malformed)", "4 when a partition is blocked by quarantined or missing mandatory coverage"),
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
	c.Flags().BoolVar(&o.readOnly, "read-only", false, "check everything, write nothing: no quarantine record, no coverage CAS (the report says what would be quarantined); same exit codes")
	return c
}

// verifyJSON is verify's -o json document (docs/json-output.md).
type verifyJSON struct {
	SchemaVersion int              `json:"schema_version"`
	OK            bool             `json:"ok"`
	Deep          bool             `json:"deep"`
	ReadOnly      bool             `json:"read_only"`
	Findings      int              `json:"findings"`
	Blocked       int              `json:"blocked"`
	Errors        int              `json:"errors"`
	BytesHashed   int64            `json:"bytes_hashed"`
	Seconds       float64          `json:"seconds"`
	Partitions    []*verify.Report `json:"partitions"`
	// StoreFindings are the store-wide findings (orphan streams, stray
	// keys, unreadable quarantine records) of a run over --all (with
	// --shard, shard 0 checks them).
	StoreFindings []health.Finding `json:"store_findings"`
}

func runVerify(cmd *cobra.Command, g *globals, o *verifyOptions, args []string) error {
	ctx := cmd.Context()
	var sample *verify.Sample
	if o.sample != "" {
		if !o.deep {
			return exitcode.UsageErr(fmt.Errorf("--sample %s goes with --deep: the default level reads no bytes to sample", o.sample))
		}
		s, err := verify.ParseSample(o.sample)
		if err != nil {
			return exitcode.UsageErr(err)
		}
		sample = s
	}
	st, err := g.mutatingStore(ctx, o.readOnly)
	if err != nil {
		return err
	}
	tps, err := o.sel.resolve(ctx, st, args)
	if err != nil {
		return err
	}
	// --deep: the bytes to hash, their total from the manifests as each
	// partition's are read; else the partitions.
	prog := g.progress("partitions", int64(len(tps)))
	if o.deep {
		prog = newProgress(g, "hashing", -1)
	}
	defer prog.done()
	start := time.Now()
	// Every partition is checked, --parallel at once, in the order named:
	// one that cannot be read is a reported failure, never the end of the
	// run.
	// A partition is first checked writing nothing; one whose findings
	// would quarantine its coverage is checked again holding its lease
	// and quarantined then (a write, decided under the lease like every
	// other): the lease is taken only where there is something to write.
	leaseErrs := make([]error, len(tps))
	reps, err := fleet.Map(ctx, g.parallel(), tps, func(ctx context.Context, i int, tp layout.TopicPartition) (*verify.Report, error) {
		if !o.deep {
			defer prog.add(1)
		}
		vo := verify.Options{Deep: o.deep, Sample: sample, ReadOnly: true, NowMs: time.Now().UnixMilli(), Progress: prog.add, Total: prog.grow}
		r := verify.Named(ctx, st, tp, vo)
		if o.readOnly || !r.WouldQuarantine || ctx.Err() != nil {
			return r, ctx.Err()
		}
		vo.ReadOnly, vo.Progress, vo.Total = false, nil, nil
		var again *verify.Report
		if err := g.withPartition(ctx, st, tp, func(ctx context.Context) error {
			again = verify.Named(ctx, st, tp, vo)
			return nil
		}); err != nil {
			leaseErrs[i] = err
			r.Error = err.Error()
			return r, ctx.Err()
		}
		return again, ctx.Err()
	})
	if err != nil {
		return err
	}
	g.observeVerify(reps, o.deep && sample == nil, o.sel.all)
	prog.done()
	storeFindings := []health.Finding{}
	if o.sel.all && (o.sel.shard == "" || strings.HasPrefix(o.sel.shard, "0/")) {
		known := make(map[layout.TopicPartition]string, len(reps))
		for i, r := range reps {
			known[tps[i]] = r.StreamID
		}
		if storeFindings, err = health.Store(ctx, st, known, g.parallel()); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
	}
	findings, blocked, failed, hashed := len(storeFindings), 0, 0, int64(0)
	code := exitcode.OK
	if len(storeFindings) > 0 {
		code = exitcode.Verify
	}
	var firstErr error
	for i, r := range reps {
		findings += len(r.Findings)
		hashed += r.BytesHashed
		if len(r.Findings) > 0 {
			code = worse(code, exitcode.Verify)
		}
		if r.Blocked {
			blocked++
			code = worse(code, exitcode.Blocked)
		}
		rerr := r.Err()
		if rerr == nil {
			rerr = leaseErrs[i] // not quarantined: another job holds the partition
		}
		if rerr != nil {
			failed++
			code = worse(code, exitcode.Of(rerr))
			if firstErr == nil {
				firstErr = rerr
			}
		}
	}
	secs := time.Since(start).Seconds()
	if g.json() {
		if err := writeJSON(g.stdout, verifyJSON{SchemaVersion: SchemaVersion, OK: code == exitcode.OK, Deep: o.deep, ReadOnly: o.readOnly, Findings: findings, Blocked: blocked, Errors: failed, BytesHashed: hashed, Seconds: secs, Partitions: reps, StoreFindings: storeFindings}); err != nil {
			return err
		}
	} else {
		for _, f := range storeFindings {
			fmt.Fprintln(g.stdout, findingNote("store", f))
		}
		if err := renderVerifyText(g, reps, o.deep, o.readOnly, findings, blocked, failed, hashed, secs); err != nil {
			return err
		}
	}
	switch code {
	case exitcode.OK:
		return nil
	case exitcode.Verify:
		if len(storeFindings) > 0 && firstVerifyFinding(reps).Check == "" {
			f := storeFindings[0]
			return exitcode.Wrap(exitcode.Verify, fmt.Errorf("verify: %d findings; first: store: %s check failed on %s: %s", findings, f.Check, f.Object, f.Detail), health.HintFor(f))
		}
		f := firstVerifyFinding(reps)
		return exitcode.Wrap(exitcode.Verify, fmt.Errorf("verify: %d findings; first: %s: %s check failed on %s: %s", findings, f.Partition, f.Check, f.Object, f.Detail), verifyHints(reps, storeFindings))
	case exitcode.Blocked:
		return exitcode.BlockedErr(fmt.Errorf("verify: %d partition(s) blocked; first: %s", blocked, firstBlocked(reps)), "repair quarantined coverage with 'nereusctl repair TOPIC-PARTITION --digest sha256:...' (see 'nereusctl quarantine list'); restore a binding whose mandatory coverage is missing from a replica (docs/runbooks/coordinator-blocked.md)")
	}
	return exitcode.Wrap(code, fmt.Errorf("verify: %d of %d partitions could not be verified; first: %w", failed, len(reps), firstErr), exitcode.HintOf(firstErr))
}

// renderVerifyText prints verify's table output: the findings' table, a
// line for each partition quarantined, blocked or failed, the partitions'
// table and the summary line. The tables are tableRows (writeTable's
// layout without tablewriter's working copies, kilobytes a row).
func renderVerifyText(g *globals, reps []*verify.Report, deep, readOnly bool, findings, blocked, failed int, hashed int64, secs float64) error {
	rows := newTableRows("PARTITION", "SCOPE", "CHECK", "OBJECT", "DETAIL")
	n := 0
	for _, r := range reps {
		for _, f := range r.Findings {
			rows.add(r.Partition, f.Scope, f.Check, f.Object, f.Detail)
			n++
		}
		switch {
		case r.Quarantined:
			fmt.Fprintf(g.stdout, "%s: QUARANTINED compacted set %s; the coordinator is blocked until repair\n", r.Partition, r.SetID)
		case r.WouldQuarantine:
			fmt.Fprintf(g.stdout, "%s: would QUARANTINE compacted set %s (read-only: nothing written)\n", r.Partition, r.SetID)
		case r.Blocked:
			fmt.Fprintf(g.stdout, "%s: BLOCKED: %s\n", r.Partition, r.BlockedReason)
		}
		if r.Error != "" {
			fmt.Fprintf(g.stdout, "%s: ERROR: %s\n", r.Partition, r.Error)
		}
	}
	if n > 0 {
		if err := rows.render(g.stdout); err != nil {
			return err
		}
		fmt.Fprintln(g.stdout)
	}
	prow := newTableRows("PARTITION", "COVERAGE", "OBJECTS", "RESULT")
	for _, r := range reps {
		prow.add(r.Partition, dash(r.Coverage, ""), fmt.Sprint(r.Objects), verifyResult(r))
	}
	if err := prow.render(g.stdout); err != nil {
		return err
	}
	level := "default"
	if deep {
		level = "deep"
	}
	ro := ""
	if readOnly {
		ro = ", read-only"
	}
	errs := ""
	if failed > 0 {
		errs = fmt.Sprintf(", %d errors", failed)
	}
	fmt.Fprintf(g.stdout, "verify (%s%s): %d partitions, %d findings, %d blocked%s; %d bytes hashed in %.1fs\n", level, ro, len(reps), findings, blocked, errs, hashed, secs)
	return nil
}

// verifyResult is a partition's one-word outcome and its counts.
func verifyResult(r *verify.Report) string {
	var parts []string
	if n := len(r.Findings); n > 0 {
		parts = append(parts, fmt.Sprintf("FAILED: %d findings", n))
	}
	switch {
	case r.Quarantined:
		parts = append(parts, "QUARANTINED")
	case r.WouldQuarantine:
		parts = append(parts, "would quarantine")
	}
	if r.Blocked {
		parts = append(parts, "BLOCKED")
	}
	if r.Error != "" {
		parts = append(parts, "ERROR")
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, "; ")
}

func firstBlocked(reps []*verify.Report) string {
	for _, r := range reps {
		if r.Blocked {
			return r.Partition + ": " + r.BlockedReason
		}
	}
	return ""
}

// findingScopes lists the scopes of every finding, in report order.
// verifyHints is the hint of verify's findings: one per kind of finding
// (health.HintFor), a damaged compacted set's saying what this run did
// about it (quarantined it, or would have, read-only).
func verifyHints(reps []*verify.Report, storeFindings []health.Finding) string {
	seen := map[string]bool{}
	var hints []string
	for _, r := range reps {
		coverage := ""
		switch {
		case r.Quarantined:
			coverage = health.HintCoverageQuarantined
		case r.WouldQuarantine:
			coverage = health.HintCoverageReadOnly
		}
		hints = append(hints, health.Hints(r.Findings, coverage, seen)...)
	}
	hints = append(hints, health.Hints(storeFindings, "", seen)...)
	return strings.Join(hints, "; ")
}

func firstVerifyFinding(reps []*verify.Report) verify.Finding {
	for _, r := range reps {
		if len(r.Findings) > 0 {
			return r.Findings[0]
		}
	}
	return verify.Finding{}
}
