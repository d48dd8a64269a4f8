package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
	"github.com/nereusctl/nereusctl/internal/repair"
	"github.com/nereusctl/nereusctl/internal/store"
)

type repairOptions struct {
	digest     string
	fromFile   string
	from       string
	allFrom    string
	regenerate bool
	dryRun     bool
}

func newRepairCmd(g *globals) *cobra.Command {
	o := &repairOptions{}
	c := &cobra.Command{
		Use:   "repair (TOPIC-PARTITION --digest sha256:HEX (--from-file PATH | --from URL | --regenerate) | --all-from URL) [--dry-run]",
		Short: "Restore a quarantined compacted set by digest and re-activate it",
		Long: `Repair quarantined compacted coverage. The candidate bytes for the member
object with the expected digest come from a local file (--from-file), from
another store holding the same keys such as a replica bucket (--from URL), or
from re-running the deterministic compaction from the generation's recorded
exact sources (--regenerate, only if every source still exists with its
recorded digest and the generation's manifest records this build's NTC2
encoder: another zstd version or level is refused with exit 1, nothing
changed). They are accepted only if their SHA-256 is the digest and
every NTC2 block CRC passes; wrong bytes are refused with exit 3 and nothing
changes. The restore is a guarded write (IfMatch on the damaged object's
ETag, IfAbsent if it is missing). Then the whole set is re-verified deeply;
when clean, the coverage is CASed back to ACTIVE and the quarantine record
is archived under quarantine/archive/. A rerun after a crash finishes.

--all-from URL repairs every damaged member of every quarantined set whose
bytes the replica store holds.` + exitStatusHelp("3 when the candidate bytes are wrong (nothing changed)", "4 when the set is still quarantined after the repair (other members need repair), or the partition's lease is held by another job past --lease-wait (the message names the holder)"),
		Example: `  nereusctl repair __consumer_offsets-0 --digest sha256:3f5a... --from-file ./member.ntc2
  nereusctl repair __consumer_offsets-0 --digest sha256:3f5a... --regenerate --dry-run
  nereusctl repair --all-from s3://replica-bucket/nereus`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRepair(cmd, g, o, args)
		},
	}
	f := c.Flags()
	f.StringVar(&o.digest, "digest", "", "sha256:HEX of the member object to restore (see 'nereusctl quarantine list')")
	f.StringVar(&o.fromFile, "from-file", "", "take the candidate bytes from this local file")
	f.StringVar(&o.from, "from", "", "take the candidate bytes from another store with the same keys (file:// or s3:// URL)")
	f.BoolVar(&o.regenerate, "regenerate", false, "re-run the deterministic compaction from the recorded exact sources")
	f.StringVar(&o.allFrom, "all-from", "", "repair every quarantined member found in this replica store")
	f.BoolVar(&o.dryRun, "dry-run", false, "fetch and check the candidate bytes; write nothing")
	return c
}

func runRepair(cmd *cobra.Command, g *globals, o *repairOptions, args []string) error {
	ctx := cmd.Context()
	sources := 0
	for _, s := range []bool{o.fromFile != "", o.from != "", o.regenerate} {
		if s {
			sources++
		}
	}
	if o.allFrom != "" {
		if len(args) > 0 || sources > 0 || o.digest != "" {
			return exitcode.UsageErr(errors.New("--all-from takes no partition, --digest or other source"))
		}
	} else if len(args) != 1 || o.digest == "" || sources != 1 {
		return exitcode.UsageErr(errors.New("give TOPIC-PARTITION, --digest and exactly one of --from-file, --from, --regenerate (or --all-from URL)"))
	}
	if o.fromFile != "" {
		if err := localFileArg("--from-file", o.fromFile); err != nil {
			return err
		}
	}
	st, err := g.mutatingStore(ctx, o.dryRun)
	if err != nil {
		return err
	}
	openReplica := func(url string) (store.Store, error) {
		rs, err := openStore(ctx, Config{Store: url, S3Endpoint: g.cfg.S3Endpoint, S3Region: g.cfg.S3Region, S3PathStyle: g.cfg.S3PathStyle, S3AllowHTTP: g.cfg.S3AllowHTTP, RequestTimeout: g.cfg.RequestTimeout}, false, g.logger())
		if err != nil {
			return nil, exitcode.UsageErr(fmt.Errorf("open replica store %s: %w", store.RedactURL(url), err))
		}
		return rs, nil
	}
	var results []*repair.Result
	if o.allFrom != "" {
		replica, err := openReplica(o.allFrom)
		if err != nil {
			return err
		}
		return runRepairAllFrom(ctx, g, st, replica, o.dryRun)
	}
	digest, err := repair.ParseDigest(o.digest)
	if err != nil {
		return exitcode.UsageErr(err)
	}
	b, _, err := loadBinding(ctx, st, args[0])
	if err != nil {
		return err
	}
	ro := repair.Options{Digest: digest, FromFile: o.fromFile, Regenerate: o.regenerate, DryRun: o.dryRun}
	if o.from != "" {
		if ro.From, err = openReplica(o.from); err != nil {
			return err
		}
	}
	wasActive := b.Coverage.State == layout.CoverageActive
	var r *repair.Result
	if o.dryRun {
		r, err = repair.Repair(ctx, st, b, ro)
	} else {
		// The partition's lease while its member is restored and its
		// coverage CASed; the binding is re-read under it.
		tp := layout.TopicPartition{Topic: b.Topic, Partition: b.Partition}
		err = g.withPartition(ctx, st, tp, func(ctx context.Context) error {
			b, _, err := loadBinding(ctx, st, args[0])
			if err != nil {
				return err
			}
			fenced := ro
			fenced.Fence = lease.Fence // every write proves the lease
			r, err = repair.Repair(ctx, st, b, fenced)
			return err
		})
	}
	if r != nil {
		results = append(results, r)
	}
	err = repairExit(err, results)
	if rerr := renderRepair(g, results, wasActive, err); rerr != nil {
		return rerr
	}
	return err
}

// renderRepair prints the results; wasActive says the one partition's
// coverage was ACTIVE before the run (a rerun of a finished repair).
// runErr is how the run fails (nil: it does not): -o json carries it as
// "error", as the error document would.
func renderRepair(g *globals, rs []*repair.Result, wasActive bool, runErr error) error {
	if g.json() {
		if rs == nil {
			rs = []*repair.Result{}
		}
		return writeJSON(g.stdout, repairJSON{SchemaVersion: SchemaVersion, Repairs: rs, Error: runErrorBody(runErr)})
	}
	for _, r := range rs {
		if wasActive && r.AlreadyGood && !r.Restored {
			fmt.Fprintf(g.stdout, "%s: %s already holds the right bytes and set %s is ACTIVE: nothing to repair\n", r.Partition, r.Object, r.SetID)
			continue
		}
		switch {
		case r.DryRun && r.AlreadyGood:
			fmt.Fprintf(g.stdout, "%s: %s already holds the right bytes (sha256:%s); would re-verify set %s and re-activate it\n", r.Partition, r.Object, r.Digest, r.SetID)
		case r.DryRun && r.Accepted:
			fmt.Fprintf(g.stdout, "%s: %s: candidate from %s has sha256:%s and passes every CRC; would restore it\n", r.Partition, r.Object, r.Source, r.Digest)
		case r.Restored || r.AlreadyGood:
			how := "restored from " + r.Source
			if r.AlreadyGood {
				how = "already holds the right bytes"
			}
			fmt.Fprintf(g.stdout, "%s: %s %s\n", r.Partition, r.Object, how)
		}
		if r.Reactivated {
			fmt.Fprintf(g.stdout, "%s: set %s verified clean and ACTIVE again; quarantine record archived\n", r.Partition, r.SetID)
		} else if len(r.Remaining) > 0 {
			fmt.Fprintf(g.stdout, "%s: still QUARANTINED: %d findings remain; first: %s check on %s\n", r.Partition, len(r.Remaining), r.Remaining[0].Check, r.Remaining[0].Object)
		}
	}
	return nil
}

func repairExit(err error, rs []*repair.Result) error {
	if err != nil {
		switch {
		case errors.Is(err, repair.ErrWrongBytes) && len(rs) == 1 && rs[0].Source == "regenerate":
			return exitcode.Wrap(exitcode.Verify, err, "nothing was changed; take bytes with the expected digest from a replica store (--from URL) or a saved copy (--from-file PATH)")
		case errors.Is(err, repair.ErrWrongBytes):
			return exitcode.Wrap(exitcode.Verify, err, "nothing was changed; find bytes with the expected digest (a replica bucket, a backup) or try --regenerate")
		case errors.Is(err, repair.ErrEncoderMismatch):
			return exitcode.Wrap(exitcode.Error, err, repair.EncoderMismatchHint(err))
		case errors.Is(err, repair.ErrNotQuarantined), errors.Is(err, repair.ErrUnknownDigest):
			return exitcode.Wrap(exitcode.Usage, err, "see 'nereusctl quarantine list' for the quarantined sets and their member digests")
		}
		return err
	}
	for _, r := range rs {
		if !r.DryRun && !r.Reactivated {
			return exitcode.BlockedErr(fmt.Errorf("repair: %s is still quarantined", r.Partition), "repair the remaining members, then run 'nereusctl verify'")
		}
	}
	return nil
}

// runRepairAllFrom repairs every quarantined partition from the replica,
// --parallel partitions at once, each under its lease (none in a dry run):
// the results in partition order, one partition's failure (a held lease,
// wrong bytes) reported and the others still repaired; the exit status is
// the worst partition's.
func runRepairAllFrom(ctx context.Context, g *globals, st, replica store.Store, dryRun bool) error {
	tps, err := repair.QuarantinedPartitions(ctx, st)
	if err != nil {
		return fmt.Errorf("repair --all-from: list quarantine records: %w", err)
	}
	nowMs := time.Now().UnixMilli()
	type outcome struct {
		rs  []*repair.Result
		err error
	}
	outs, err := fleet.Map(ctx, g.parallel(), tps, func(ctx context.Context, _ int, tp layout.TopicPartition) (outcome, error) {
		var rs []*repair.Result
		run := func(ctx context.Context) error {
			var err error
			ro := repair.Options{DryRun: dryRun, NowMs: nowMs}
			if !dryRun {
				ro.Fence = lease.Fence // under the partition's lease
			}
			rs, err = repair.AllFromPartition(ctx, st, replica, tp, ro)
			return err
		}
		var err error
		if dryRun {
			err = run(ctx)
		} else {
			err = g.withPartition(ctx, st, tp, run)
		}
		if err != nil {
			err = repairExit(err, rs)
		} else {
			err = repairExit(nil, rs)
		}
		return outcome{rs: rs, err: err}, nil
	})
	if err != nil {
		return err
	}
	var results []*repair.Result
	var fails failures
	for i := range tps {
		results = append(results, outs[i].rs...)
		fails.add(outs[i].err)
	}
	runErr := fails.err("repair --all-from", len(tps))
	if rerr := renderRepair(g, results, false, runErr); rerr != nil {
		return rerr
	}
	if len(tps) == 0 && !g.json() {
		fmt.Fprintf(g.stdout, "repair --all-from: nothing is quarantined in %s: no set to repair\n", st)
	}
	for i, tp := range tps {
		if e := outs[i].err; e != nil && !g.json() {
			fmt.Fprintf(g.stdout, "%s: error: %v\n", tp, e)
		}
	}
	return runErr
}

// repairJSON is repair's -o json document (docs/json-output.md).
type repairJSON struct {
	SchemaVersion int              `json:"schema_version"`
	Repairs       []*repair.Result `json:"repairs"`
	// Error is why the run failed (the exit code's reason), as the error
	// document's "error"; absent when it did not.
	Error *errorBody `json:"error,omitempty"`
}
