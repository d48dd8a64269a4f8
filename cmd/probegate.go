package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/storeprobe"
)

// Mutations run only on a proved store (docs/s3.md, "Conditional writes"):
// every command that may write calls mutatingStore instead of store. Once
// per run, before the first write, it checks the store probe result kept
// in the store (layout.StoreProbeKey), probing first when there is none or
// it is older than --probe-max-age, and refuses (exit 3, naming each broken
// guarantee) when the store failed. file:// and mem:// are proved by
// construction: no probe, no document. Read-only commands (and dry runs)
// go through store, which only warns when the stored result failed.

// mutatingStore is store for a run that will write unless dryRun: the
// store once the probe gate passed.
func (g *globals) mutatingStore(ctx context.Context, dryRun bool) (store.Store, error) {
	if dryRun {
		return g.store(ctx)
	}
	g.probeNoted = true // the gate below decides, not the read-only warning
	st, err := g.store(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.proveStore(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// build names this nereusctl in a probe result.
func build() string { return fmt.Sprintf("nereusctl %s (%s)", Version, Commit) }

// probeOptions are the options of a probe of st by this run.
func (g *globals) probeOptions(st store.Store) storeprobe.EnsureOptions {
	return storeprobe.EnsureOptions{
		Target: storeprobe.TargetOf(st), Build: build(), MaxAge: g.cfg.ProbeMaxAge, Now: time.Now, Log: g.logger(),
		Probe: storeprobe.Options{KeepsSHA256: storeprobe.KeepsSHA256(st)},
	}
}

// proveStore is the gate, once per run.
func (g *globals) proveStore(ctx context.Context, st store.Store) error {
	if g.proved {
		return nil
	}
	if g.cfg.SkipStoreProbe {
		g.proved = true
		if storeprobe.Needed(st) {
			fmt.Fprintf(g.stderr, "nereusctl: store probe skipped (--skip-store-probe): the conditional writes of %s are trusted unproven\n", st)
		} else {
			fmt.Fprintf(g.stderr, "nereusctl: store probe skipped (--skip-store-probe): %s needs none (proved by construction)\n", st)
		}
		return nil
	}
	if !storeprobe.Needed(st) {
		g.proved = true
		return nil
	}
	out, err := storeprobe.Ensure(ctx, st, g.probeOptions(st))
	if err != nil {
		h := errorHint(err)
		if h == "" {
			h = "the store could not be probed before this command writes (docs/s3.md, \"Conditional writes\"); nothing was changed: rerun when the store answers"
		}
		return exitcode.Wrap(exitcode.Of(err), err, h)
	}
	if out.Probed {
		g.logger().Info("store probed", "store", out.Doc.Store, "endpoint", out.Doc.Endpoint, "reason", out.Reason, "ok", out.Doc.OK, "recorded", out.Recorded)
	}
	if refusal := storeprobe.Refusal(out.Doc); refusal != nil {
		return exitcode.Wrap(exitcode.Verify, refusal, storeprobe.Hint)
	}
	g.proved = true
	return nil
}

// noteStoreProbe warns once per run, on stderr, when the store's stored
// probe result failed: a read-only command still works, but no mutation
// will until the store passes. The result is read while the command's
// first reads are (it decides nothing the command does: on S3 it would
// otherwise be a round trip of its own before the first one), and the
// warning is written when the command returns (finishStoreProbeNote).
func (g *globals) noteStoreProbe(ctx context.Context) {
	if g.probeNoted {
		return
	}
	g.probeNoted = true
	if g.st == nil || !storeprobe.Needed(g.st) {
		return
	}
	st := g.st
	done := make(chan string, 1)
	g.probeNote = done
	go func() {
		doc, _, err := layout.LoadStoreProbe(ctx, st)
		if err != nil {
			if !isNotFound(err) {
				g.logger().Debug("store probe result not read", "error", err)
			}
			done <- ""
			return
		}
		if t := storeprobe.TargetOf(st); doc.Store != t.Store || doc.Endpoint != t.Endpoint {
			done <- "" // another store's, or through another endpoint: says nothing of this path
			return
		}
		done <- storeprobe.Warning(doc)
	}()
}

// finishStoreProbeNote waits for the stored probe result noteStoreProbe
// reads and writes its warning, if any.
func (g *globals) finishStoreProbeNote() {
	if g.probeNote == nil {
		return
	}
	w := <-g.probeNote
	g.probeNote = nil
	if w != "" {
		fmt.Fprintf(g.stderr, "nereusctl: %s\n", w)
	}
}
