package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/metrics"
	"github.com/nereusctl/nereusctl/internal/verify"
)

type verifyOptions struct {
	sel           partitionSel
	deep          bool
	sample        string
	readOnly      bool
	incremental   bool
	reverifyAfter string
	maxRequests   int64
	maxBytes      string
	maxAge        string
	plan          bool
	now           string
}

func newVerifyCmd(g *globals) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify (TOPIC-PARTITION... | --all) [--deep [--incremental] [--sample n/t] [--max-bytes SIZE] [--max-requests N]] [--max-age D] [--plan] [--read-only]",
		Short: "Verify compacted coverage, COMMITTED objects and checkpoints; quarantine what fails; prove objects in a ledger",
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

What only --deep finds: on s3:// the default level trusts the listing's size
and ETag (the MD5 the store recorded at upload), so a byte changed at rest —
bit rot, a disk or replication fault under the store — is invisible to it;
only reading the bytes (--deep) finds it. On file:// the ETag is the MD5 of
the bytes as of the file's last change of inode, size or mtime (kept in an
extended attribute until then): the default level sees an edit there, not a
change below the file system that keeps all three. Batch CRCs and SHA-256
against the manifest are --deep's alone on every store (docs/s3.md).

The proof ledger (streams/<sid>/proof.json, docs/layout.md): every --deep
run records, for each immutable object it read and found clean (COMMITTED
objects, the open segment's, NTC2 members, checkpoints), its key, size,
SHA-256, when and by which build, with a CAS after each partition. Mutable
documents (binding, head, coverage) are never proved: they are checked on
every run. A ledger that does not decode is a proof:ledger finding, proves
nothing and is rebuilt by the next --deep run.
--incremental (with --deep) hashes only the objects the ledger lacks, or
whose proof is --reverify-after old or older (default 30d), oldest proof
first; the others get the default level's checks.
--max-bytes SIZE and --max-requests N (with --deep) bound what the run reads
to prove objects (the bytes, and one read per object; the default level's
documents, listings and HEADs are not counted: --plan shows them): once the
next object would pass either bound the run stops reading at that object
boundary, reports complete: false, what is left and the estimated runs to
full coverage at this budget, and exits 0 when everything read so far is
clean. The next --incremental run continues from the oldest proofs.
--max-age D is a freshness verdict: every partition whose immutable objects
are not all proved within D has a proof:stale finding (exit 3), with its
unproved bytes and oldest proof's age. Without --deep it reads no object
bytes (the documents, the listings and the ledgers only).
--plan prints the objects, bytes and requests the run with the same flags
would take, reading no object bytes and writing nothing.

A finding on ACTIVE compacted coverage writes a quarantine record
(quarantine/<set_id>.json), CASes the coverage state to QUARANTINED and
reports the partition's coordinator as BLOCKED: no read path falls back to
COMMITTED data for that range until 'nereusctl repair' restores it. The
quarantine is decided and written holding the partition's lease: a
partition is checked first writing nothing but its proof ledger and, when
its coverage would be quarantined, checked again under its lease (a lease
another job holds past --lease-wait is exit 4 for it; nothing is
quarantined).
--read-only writes nothing at all, not even the proof ledger (check a
replica before restoring from it); the report names what would have been
quarantined.

With --all every partition is checked: a malformed binding, head or manifest
is a finding for that partition and the others are still verified. The exit
status is the worst over the partitions. -o json is written partition by
partition as they finish (docs/json-output.md).` + exitStatusHelp("3 when any check failed (corruption found, a stored document malformed, a damaged proof ledger, proof:stale under --max-age)", "4 when a partition is blocked by quarantined or missing mandatory coverage"),
		Example: `  nereusctl verify --all
  nereusctl verify __consumer_offsets-0 --deep
  nereusctl verify --all --deep --sample 3/7 --shard 0/2 -o json
  nereusctl verify --all --deep --incremental --max-bytes 50GiB
  nereusctl verify --all --max-age 7d
  nereusctl verify --all --deep --incremental --max-bytes 50GiB --plan`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd, g, o, args)
		},
	}
	o.sel.addFlags(c, true)
	c.Flags().BoolVar(&o.deep, "deep", false, "read and hash every byte (SHA-256 and every CRC), in parallel, and record the proofs in each partition's proof ledger")
	c.Flags().StringVar(&o.sample, "sample", "", "with --deep: hash only the deterministic slice n of t (n/t)")
	c.Flags().BoolVar(&o.readOnly, "read-only", false, "check everything, write nothing: no quarantine record, no coverage CAS, no proof ledger (the report says what would be quarantined); same exit codes")
	c.Flags().BoolVar(&o.incremental, "incremental", false, "with --deep: hash only the objects the proof ledger lacks or proved --reverify-after ago or earlier, oldest proof first")
	c.Flags().StringVar(&o.reverifyAfter, "reverify-after", "30d", "with --incremental: read an object again once its proof is this old (Go duration or days, e.g. 30d, 12h; 0s: every object is due)")
	c.Flags().Int64Var(&o.maxRequests, "max-requests", 0, "with --deep: read at most this many objects to prove them, then stop at an object boundary (0: no bound)")
	c.Flags().StringVar(&o.maxBytes, "max-bytes", "", "with --deep: read at most this many bytes to prove objects (e.g. 50GiB), then stop at an object boundary (default: no bound)")
	c.Flags().StringVar(&o.maxAge, "max-age", "", "freshness verdict: a proof:stale finding (exit 3) for every partition whose immutable objects are not all proved within this age (e.g. 7d); without --deep no object bytes are read")
	c.Flags().BoolVar(&o.plan, "plan", false, "print the objects, bytes and requests the run would take; read no object bytes, write nothing")
	c.Flags().StringVar(&o.now, "now", "", "the clock proofs are recorded at and judged against (RFC3339; default: now)")
	return c
}

// parseAge parses an age flag: a Go duration (12h, 90m, 0s) or whole days
// (30d), never negative.
func parseAge(flag, v string) (time.Duration, error) {
	bad := exitcode.UsageErr(fmt.Errorf("--%s %q: want a duration such as 30d, 12h or 0s", flag, v))
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > 100000 {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || strings.TrimSpace(v) != v {
		return 0, bad
	}
	return d, nil
}

// verifyJSON is verify's -o json document (docs/json-output.md). Its
// members are in the order they are written: those known at the start,
// the partitions as they finish, then the totals.
type verifyJSON struct {
	SchemaVersion int              `json:"schema_version"`
	Deep          bool             `json:"deep"`
	Incremental   bool             `json:"incremental"`
	ReadOnly      bool             `json:"read_only"`
	Plan          bool             `json:"plan"`
	Partitions    []*verify.Report `json:"partitions"`
	OK            bool             `json:"ok"`
	Findings      int              `json:"findings"`
	Blocked       int              `json:"blocked"`
	Errors        int              `json:"errors"`
	BytesHashed   int64            `json:"bytes_hashed"`
	Seconds       float64          `json:"seconds"`
	// Proof totals the partitions' proof reports (deep runs, --max-age,
	// --plan).
	Proof *proofTotals `json:"proof,omitempty"`
	// StoreFindings are the store-wide findings (orphan streams, stray
	// keys, unreadable quarantine records) of a run over --all (with
	// --shard, shard 0 checks them).
	StoreFindings []health.Finding `json:"store_findings"`
}

// proofTotals is the run's proof summary.
type proofTotals struct {
	// Complete: the run read every object due (no budget stopped it).
	Complete              bool  `json:"complete"`
	Objects               int   `json:"objects"`
	Bytes                 int64 `json:"bytes"`
	Hashed                int   `json:"hashed"`
	HashedBytes           int64 `json:"hashed_bytes"`
	Fresh                 int   `json:"fresh"`
	Left                  int   `json:"left"`
	LeftBytes             int64 `json:"left_bytes"`
	RunsToFullCoverage    int   `json:"runs_to_full_coverage"`
	WindowSeconds         int64 `json:"window_seconds"`
	Unproved              int   `json:"unproved"`
	UnprovedBytes         int64 `json:"unproved_bytes"`
	NeverProved           int   `json:"never_proved"`
	OldestProofAgeSeconds int64 `json:"oldest_proof_age_seconds"`
	LedgerBytes           int64 `json:"ledger_bytes"`
	MaxRequests           int64 `json:"max_requests"`
	MaxBytes              int64 `json:"max_bytes"`
	// UsedRequests and UsedBytes are what the run read within the budget
	// (BudgetSpent: it stopped at it).
	UsedRequests int64 `json:"used_requests"`
	UsedBytes    int64 `json:"used_bytes"`
	BudgetSpent  bool  `json:"budget_spent"`
	// Plan totals the partitions' plans (--plan).
	Plan *verify.Plan `json:"plan,omitempty"`
}

func (t *proofTotals) add(r *verify.ProofReport, p *verify.Plan) {
	t.Objects += r.Objects
	t.Bytes += r.Bytes
	t.Hashed += r.Hashed
	t.HashedBytes += r.HashedBytes
	t.Fresh += r.Fresh
	t.Left += r.Left
	t.LeftBytes += r.LeftBytes
	t.WindowSeconds = r.WindowSeconds
	t.Unproved += r.Unproved
	t.UnprovedBytes += r.UnprovedBytes
	t.NeverProved += r.NeverProved
	t.OldestProofAgeSeconds = max(t.OldestProofAgeSeconds, r.OldestProofAgeSeconds)
	t.LedgerBytes += r.LedgerBytes
	if p != nil {
		if t.Plan == nil {
			t.Plan = &verify.Plan{}
		}
		t.Plan.Objects += p.Objects
		t.Plan.Bytes += p.Bytes
		t.Plan.Left += p.Left
		t.Plan.LeftBytes += p.LeftBytes
		t.Plan.Requests += p.Requests
		t.Plan.ReadRequests += p.ReadRequests
		t.Plan.CheckRequests += p.CheckRequests
		t.Plan.DocumentRequests += p.DocumentRequests
	}
}

// verifyTally is what a verify run keeps of its partitions once printed:
// counts, the first of each kind of failure, and one small record per
// partition for the metrics and the store-wide check.
type verifyTally struct {
	findings, blocked, failed int
	hashed                    int64
	code                      exitcode.Code
	firstFinding              verify.Finding
	// hints are the findings' hints so far, one per kind (hintSeen);
	// proofFindings: a proof finding was met (proofHint)
	hints           []string
	hintSeen        map[string]bool
	proofFindings   bool
	firstBlocked    string
	firstErr        error
	known           map[layout.TopicPartition]string
	verified        []metrics.VerifiedPartition
	findingsByCheck map[string]int
	proof           *proofTotals
	n               int
}

func newVerifyTally() *verifyTally {
	return &verifyTally{code: exitcode.OK, hintSeen: map[string]bool{}, known: map[layout.TopicPartition]string{}, findingsByCheck: map[string]int{}}
}

func (t *verifyTally) take(tp layout.TopicPartition, r *verify.Report, leaseErr error) {
	t.n++
	t.known[tp] = r.StreamID
	t.findings += len(r.Findings)
	t.hashed += r.BytesHashed
	coverage := ""
	switch {
	case r.Quarantined:
		coverage = health.HintCoverageQuarantined
	case r.WouldQuarantine:
		coverage = health.HintCoverageReadOnly
	}
	for _, f := range r.Findings {
		if t.firstFinding.Check == "" {
			t.firstFinding = f
		}
		if f.Scope == verify.ScopeProof {
			t.proofFindings = true
		} else {
			t.hints = append(t.hints, health.Hints([]health.Finding{f}, coverage, t.hintSeen)...)
		}
		t.findingsByCheck[f.Check]++
	}
	if len(r.Findings) > 0 {
		t.code = exitcode.Worse(t.code, exitcode.Verify)
	}
	if r.Blocked {
		t.blocked++
		t.code = exitcode.Worse(t.code, exitcode.Blocked)
		if t.firstBlocked == "" {
			t.firstBlocked = r.Partition + ": " + r.BlockedReason
		}
	}
	rerr := r.Err()
	if rerr == nil {
		rerr = leaseErr // not quarantined: another job holds the partition
	}
	if rerr != nil {
		t.failed++
		t.code = exitcode.Worse(t.code, exitcode.Of(rerr))
		if t.firstErr == nil {
			t.firstErr = rerr
		}
	}
	ok := !r.Blocked && len(r.Findings) == 0 && rerr == nil
	t.verified = append(t.verified, metrics.VerifiedPartition{Topic: tp.Topic, Partition: tp.Partition, OK: ok})
	if r.Proof != nil {
		if t.proof == nil {
			t.proof = &proofTotals{}
		}
		t.proof.add(r.Proof, r.Plan)
	}
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
	reverify, err := parseAge("reverify-after", o.reverifyAfter)
	if err != nil {
		return err
	}
	var maxAge time.Duration
	if o.maxAge != "" {
		if maxAge, err = parseAge("max-age", o.maxAge); err != nil {
			return err
		}
		if maxAge <= 0 {
			return exitcode.UsageErr(fmt.Errorf("--max-age %s: want an age above 0, e.g. 7d", o.maxAge))
		}
	}
	budget := &verify.Budget{MaxRequests: o.maxRequests}
	if o.maxBytes != "" {
		if budget.MaxBytes, err = parseBytes(o.maxBytes); err != nil || budget.MaxBytes < 1 {
			return exitcode.UsageErr(fmt.Errorf("--max-bytes %q: want a size of at least 1B, e.g. 50GiB", o.maxBytes))
		}
	}
	if o.maxRequests < 0 {
		return exitcode.UsageErr(fmt.Errorf("--max-requests %d: want 0 (no bound) or more", o.maxRequests))
	}
	switch {
	case o.incremental && !o.deep:
		return exitcode.UsageErr(fmt.Errorf("--incremental goes with --deep: only a deep run proves objects"))
	case budget.Bounded() && !o.deep:
		return exitcode.UsageErr(fmt.Errorf("--max-bytes and --max-requests go with --deep: the default level reads no object bytes to bound"))
	case cmd.Flags().Changed("reverify-after") && !o.incremental:
		return exitcode.UsageErr(fmt.Errorf("--reverify-after goes with --deep --incremental"))
	}
	st, err := g.mutatingStore(ctx, o.readOnly || o.plan || (maxAge > 0 && !o.deep))
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
	if o.deep && !o.plan {
		prog = newProgress(g, "hashing", -1)
	}
	defer prog.done()
	start := time.Now()
	now, _, err := parseNow(o.now)
	if err != nil {
		return err
	}
	nowMs := now.UnixMilli()
	base := verify.Options{Deep: o.deep, Sample: sample, NowMs: nowMs, Incremental: o.incremental, ReverifyAfter: reverify,
		Budget: budget, Build: build(), MaxAge: maxAge, Plan: o.plan, WriteLedger: o.deep && !o.readOnly && !o.plan}
	out := newVerifyOut(g, o)
	// Every partition is checked, --parallel at once, and printed in the
	// order named as it finishes (fleet.Each): one that cannot be read is
	// a reported failure, never the end of the run. A partition is first
	// checked writing nothing but its proof ledger; one whose findings
	// would quarantine its coverage is checked again holding its lease
	// and quarantined then (a write, decided under the lease like every
	// other): the lease is taken only where there is something to write.
	type result struct {
		r        *verify.Report
		leaseErr error
	}
	err = fleet.Each(ctx, g.parallel(), tps, func(ctx context.Context, i int, tp layout.TopicPartition) (result, error) {
		if !o.deep || o.plan {
			defer prog.add(1)
		}
		vo := base
		vo.ReadOnly, vo.Progress, vo.Total = true, prog.add, prog.grow
		if o.plan || !o.deep {
			vo.Progress, vo.Total = nil, nil
		}
		r := verify.Named(ctx, st, tp, vo)
		if o.readOnly || o.plan || !r.WouldQuarantine || ctx.Err() != nil {
			return result{r: r}, ctx.Err()
		}
		// Again under the lease, to quarantine: every byte read again
		// (the budget is this run's first pass's), the ledger kept.
		vo.ReadOnly, vo.Progress, vo.Total, vo.Budget, vo.Incremental = false, nil, nil, nil, false
		var again *verify.Report
		if err := g.withPartition(ctx, st, tp, func(ctx context.Context) error {
			again = verify.Named(ctx, st, tp, vo)
			return nil
		}); err != nil {
			r.Error = err.Error()
			return result{r: r, leaseErr: err}, ctx.Err()
		}
		return result{r: again}, ctx.Err()
	}, func(i int, tp layout.TopicPartition, res result) error {
		out.tally.take(tp, res.r, res.leaseErr)
		return out.emit(res.r)
	})
	if err != nil && out.tally.n == 0 {
		return err
	}
	if err != nil {
		// The partitions done so far, then the error: a streamed
		// document is always closed.
		if ferr := out.finish(nil, time.Since(start).Seconds(), budget); ferr != nil {
			return ferr
		}
		return err
	}
	t := out.tally
	g.observe(func(r *metrics.Run) {
		r.Partitions = results(metrics.ResultOK, metrics.ResultBlocked, metrics.ResultFailed)
		r.Findings = t.findingsByCheck
		level := metrics.LevelDefault
		// Deep: every object of the partitions proved within the window
		// (a complete incremental run counts; one a budget stopped, or a
		// --sample slice, does not).
		if o.deep && sample == nil && (t.proof == nil || t.proof.Left == 0) {
			level = metrics.LevelDeep
		}
		v := &metrics.Verify{Level: level, Complete: o.sel.all, BytesHashed: t.hashed, Partitions: t.verified}
		for _, p := range t.verified {
			switch {
			case p.OK:
				r.Partitions[metrics.ResultOK]++
			default:
				r.Partitions[metrics.ResultFailed]++
			}
		}
		r.Partitions[metrics.ResultBlocked] = t.blocked
		r.Partitions[metrics.ResultFailed] -= t.blocked
		if t.proof != nil {
			v.Proof = &metrics.Proof{UnprovedBytes: t.proof.UnprovedBytes, OldestProofAgeSeconds: t.proof.OldestProofAgeSeconds}
		}
		r.Verify = v
	})
	prog.done()
	storeFindings := []health.Finding{}
	if o.sel.all && !o.plan && (o.sel.shard == "" || strings.HasPrefix(o.sel.shard, "0/")) {
		if storeFindings, err = health.Store(ctx, st, t.known, g.parallel()); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
	}
	findings := t.findings + len(storeFindings)
	code := t.code
	if len(storeFindings) > 0 {
		code = exitcode.Worse(code, exitcode.Verify)
	}
	if err := out.finish(storeFindings, time.Since(start).Seconds(), budget); err != nil {
		return err
	}
	switch code {
	case exitcode.OK:
		return nil
	case exitcode.Verify:
		if len(storeFindings) > 0 && t.firstFinding.Check == "" {
			f := storeFindings[0]
			return exitcode.Wrap(exitcode.Verify, fmt.Errorf("verify: %d findings; first: store: %s check failed on %s: %s", findings, f.Check, f.Object, f.Detail), health.HintFor(f))
		}
		f := t.firstFinding
		return exitcode.Wrap(exitcode.Verify, fmt.Errorf("verify: %d findings; first: %s: %s check failed on %s: %s", findings, f.Partition, f.Check, f.Object, f.Detail), t.hint(storeFindings))
	case exitcode.Blocked:
		return exitcode.BlockedErr(fmt.Errorf("verify: %d partition(s) blocked; first: %s", t.blocked, t.firstBlocked), "repair quarantined coverage with 'nereusctl repair TOPIC-PARTITION --digest sha256:...' (see 'nereusctl quarantine list'); restore a binding whose mandatory coverage is missing from a replica (docs/runbooks/coordinator-blocked.md)")
	}
	return exitcode.Wrap(code, fmt.Errorf("verify: %d of %d partitions could not be verified; first: %w", t.failed, t.n, t.firstErr), exitcode.HintOf(t.firstErr))
}

// proofHint is the operator's next step for proof findings.
const proofHint = "prove the objects with 'nereusctl verify --all --deep --incremental' (a budget spreads it over nights: docs/runbooks/prove-the-store-weekly.md); a damaged proof ledger is rebuilt by that run"

// hint is the hint of the run's findings: one per kind of finding
// (health.HintFor, in the order first met), a damaged compacted set's
// saying what the run did about it (quarantined it, or would have,
// read-only), then the store's findings', then proofHint for proof
// findings.
func (t *verifyTally) hint(storeFindings []health.Finding) string {
	hints := append([]string(nil), t.hints...)
	hints = append(hints, health.Hints(storeFindings, "", t.hintSeen)...)
	if t.proofFindings {
		hints = append(hints, proofHint)
	}
	return strings.Join(hints, "; ")
}

// verifyOut prints a verify run as its partitions finish, in the order
// named, so that the run keeps no partition's report: under -o json and
// -o yaml the document is written partition by partition, the very bytes
// writeJSON writes for the whole document (verifyJSON); the tables are
// written a block of rows at a time (tableRows: a run of up to tableBlock
// partitions prints them whole at the end), the lines about quarantined,
// blocked and failed partitions as they come.
type verifyOut struct {
	g          *globals
	o          *verifyOptions
	tally      *verifyTally
	doc        docStream // -o json and yaml
	rows, prow *tableRows
	nrows      int
}

// newVerifyOut prints a verify run with options o to g's stdout.
func newVerifyOut(g *globals, o *verifyOptions) *verifyOut {
	return &verifyOut{g: g, o: o, tally: newVerifyTally(), doc: docStream{w: g.stdout, what: "verify"}}
}

// head is the document with no partitions and no totals yet.
func (o *verifyOut) head() verifyJSON {
	return verifyJSON{SchemaVersion: SchemaVersion, Deep: o.o.deep, Incremental: o.o.incremental, ReadOnly: o.o.readOnly, Plan: o.o.plan, StoreFindings: []health.Finding{}, Partitions: []*verify.Report{}}
}

// emit prints one finished partition.
func (o *verifyOut) emit(r *verify.Report) error {
	if !o.g.json() {
		if o.rows == nil {
			o.rows = newTableRows(o.g.stdout, "PARTITION", "SCOPE", "CHECK", "OBJECT", "DETAIL")
			if o.o.plan {
				o.prow = newTableRows(o.g.stdout, "PARTITION", "OBJECTS", "BYTES", "LEFT", "REQUESTS")
			} else {
				o.prow = newTableRows(o.g.stdout, "PARTITION", "COVERAGE", "OBJECTS", "RESULT")
			}
		}
		for _, f := range r.Findings {
			if err := o.rows.add(r.Partition, f.Scope, f.Check, f.Object, f.Detail); err != nil {
				return err
			}
			o.nrows++
		}
		w := o.g.stdout
		switch {
		case r.Quarantined:
			fmt.Fprintf(w, "%s: QUARANTINED compacted set %s; the coordinator is blocked until repair\n", r.Partition, r.SetID)
		case r.WouldQuarantine && !o.o.plan:
			fmt.Fprintf(w, "%s: would QUARANTINE compacted set %s (read-only: nothing written)\n", r.Partition, r.SetID)
		case r.Blocked:
			fmt.Fprintf(w, "%s: BLOCKED: %s\n", r.Partition, r.BlockedReason)
		}
		if r.Error != "" {
			fmt.Fprintf(w, "%s: ERROR: %s\n", r.Partition, r.Error)
		}
		if p := r.Plan; o.o.plan && p != nil {
			return o.prow.add(r.Partition, fmt.Sprint(p.Objects), fmt.Sprint(p.Bytes), fmt.Sprint(p.Left), fmt.Sprint(p.Requests))
		}
		return o.prow.add(r.Partition, dash(r.Coverage, ""), fmt.Sprint(r.Objects), verifyResult(r))
	}
	return o.doc.item(o.head(), r)
}

// finish writes the rest: the document's end with the totals, or the
// tables and the summary lines.
func (o *verifyOut) finish(storeFindings []health.Finding, secs float64, budget *verify.Budget) error {
	t := o.tally
	if storeFindings == nil {
		storeFindings = []health.Finding{}
	}
	findings := t.findings + len(storeFindings)
	code := t.code
	if len(storeFindings) > 0 {
		code = exitcode.Worse(code, exitcode.Verify)
	}
	if t.proof != nil {
		t.proof.MaxRequests, t.proof.MaxBytes = budget.MaxRequests, budget.MaxBytes
		t.proof.UsedRequests, t.proof.UsedBytes = budget.Used()
		t.proof.BudgetSpent = budget.Spent()
		t.proof.Complete = t.proof.Left == 0
		left, leftBytes := t.proof.Left, t.proof.LeftBytes
		if o.o.plan && t.proof.Plan != nil {
			left, leftBytes = t.proof.Plan.Left+t.proof.Plan.Objects, t.proof.Plan.LeftBytes+t.proof.Plan.Bytes
			t.proof.Complete = t.proof.Plan.Left == 0
		}
		t.proof.RunsToFullCoverage = budget.RunsToFull(left, leftBytes)
	}
	if o.g.json() {
		v := o.head()
		v.OK, v.Findings, v.Blocked, v.Errors, v.BytesHashed, v.Seconds, v.Proof, v.StoreFindings = code == exitcode.OK, findings, t.blocked, t.failed, t.hashed, secs, t.proof, storeFindings
		return o.doc.end(v)
	}
	w := o.g.stdout
	for _, f := range storeFindings {
		fmt.Fprintln(w, findingNote("store", f))
	}
	if o.rows != nil && o.nrows > 0 {
		if err := o.rows.render(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if o.prow != nil {
		if err := o.prow.render(); err != nil {
			return err
		}
	}
	level := "default"
	if o.o.deep {
		level = "deep"
		if o.o.incremental {
			level = "deep, incremental"
		}
	}
	ro := ""
	if o.o.readOnly {
		ro = ", read-only"
	}
	errs := ""
	if t.failed > 0 {
		errs = fmt.Sprintf(", %d errors", t.failed)
	}
	if p := t.proof; o.o.plan && p != nil && p.Plan != nil {
		fmt.Fprintf(w, "verify plan (%s): %d partitions: would read %d objects (%d bytes) in %d requests (%d reads, %d HEADs, %d documents and listings); %d objects (%d bytes) left for later runs; %d runs to full coverage at this budget\n",
			level, t.n, p.Plan.Objects, p.Plan.Bytes, p.Plan.Requests, p.Plan.ReadRequests, p.Plan.CheckRequests, p.Plan.DocumentRequests, p.Plan.Left, p.Plan.LeftBytes, p.RunsToFullCoverage)
		return nil
	}
	fmt.Fprintf(w, "verify (%s%s): %d partitions, %d findings, %d blocked%s; %d bytes hashed in %.1fs\n", level, ro, t.n, findings, t.blocked, errs, t.hashed, secs)
	if p := t.proof; p != nil {
		state := "complete"
		if !p.Complete {
			state = fmt.Sprintf("INCOMPLETE: %d objects (%d bytes) left, about %d more runs at this budget", p.Left, p.LeftBytes, p.RunsToFullCoverage)
		}
		oldest := "oldest proof " + (time.Duration(p.OldestProofAgeSeconds) * time.Second).String() + " old"
		if p.Objects > 0 && p.NeverProved == p.Objects {
			oldest = "none proved"
		}
		fmt.Fprintf(w, "proof: %d objects (%d bytes): %d hashed (%d bytes), %d fresh; %s; %d unproved within %s (%d bytes), %s\n",
			p.Objects, p.Bytes, p.Hashed, p.HashedBytes, p.Fresh, state, p.Unproved, time.Duration(p.WindowSeconds)*time.Second, p.UnprovedBytes, oldest)
	}
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
