package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/storeprobe"
)

func newStoreCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "store",
		Short: "Look at raw objects in the store; prove its conditional writes; upgrade its documents",
		Long:  "Small operator commands over the raw object store: list, stat and print objects (they never write), probe the conditional writes every guarantee rests on, and upgrade the documents of a store written before document digests." + exitStatusHelp(),
		Example: `  nereusctl store ls bindings/
  nereusctl store stat streams/s-1/head.json
  nereusctl store cat streams/s-1/head.json
  nereusctl store probe
  nereusctl store upgrade --dry-run`,
	}
	c.AddCommand(newStoreLsCmd(g), newStoreStatCmd(g), newStoreCatCmd(g), newStoreProbeCmd(g), newStoreUpgradeCmd(g))
	return c
}

type objectJSON struct {
	Key      string `json:"key"`
	Size     int64  `json:"size"`
	ETag     string `json:"etag"`
	SHA256   string `json:"sha256,omitempty"`
	Modified string `json:"modified,omitempty"`
}

// storeLsJSON is the -o json output of store ls.
type storeLsJSON struct {
	SchemaVersion int          `json:"schema_version"`
	Objects       []objectJSON `json:"objects"`
}

// storeStatJSON is the -o json output of store stat.
type storeStatJSON struct {
	SchemaVersion int        `json:"schema_version"`
	Object        objectJSON `json:"object"`
}

func toObjectJSON(o store.ObjectInfo) objectJSON {
	j := objectJSON{Key: o.Key, Size: o.Size, ETag: o.ETag, SHA256: o.SHA256}
	if !o.Modified.IsZero() {
		j.Modified = o.Modified.UTC().Format(time.RFC3339)
	}
	return j
}

func newStoreLsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List objects under a prefix",
		Long:  "List every object whose key starts with PREFIX (all objects when omitted), in key order." + exitStatusHelp(),
		Example: `  nereusctl store ls
  nereusctl store ls streams/ -o json`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.store(cmd.Context())
			if err != nil {
				return err
			}
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			if err := keyArg("list", prefix); err != nil {
				return err
			}
			objs, err := st.List(cmd.Context(), prefix)
			if err != nil {
				return keyErr(fmt.Errorf("store ls: %w", err))
			}
			if g.json() {
				out := make([]objectJSON, 0, len(objs))
				for _, o := range objs {
					out = append(out, toObjectJSON(o))
				}
				return writeJSON(g.stdout, storeLsJSON{SchemaVersion: SchemaVersion, Objects: out})
			}
			rows := make([][]string, 0, len(objs))
			for _, o := range objs {
				rows = append(rows, []string{fmt.Sprint(o.Size), o.ETag, o.Key})
			}
			return writeTable(g.stdout, []string{"SIZE", "ETAG", "KEY"}, rows)
		},
	}
}

func newStoreStatCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "stat KEY",
		Short:   "Show an object's size and ETag",
		Long:    "HEAD one object and print its size, ETag and, where the store keeps it, its SHA-256." + exitStatusHelp(),
		Example: "  nereusctl store stat streams/s-1/head.json",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.store(cmd.Context())
			if err != nil {
				return err
			}
			if err := keyArg("stat", args[0]); err != nil {
				return err
			}
			info, err := st.Head(cmd.Context(), args[0])
			if err != nil {
				return keyErr(fmt.Errorf("stat %s: %w", args[0], err))
			}
			if g.json() {
				return writeJSON(g.stdout, storeStatJSON{SchemaVersion: SchemaVersion, Object: toObjectJSON(info)})
			}
			j := toObjectJSON(info)
			return writeTable(g.stdout, []string{"FIELD", "VALUE"}, [][]string{
				{"key", j.Key}, {"size", fmt.Sprint(j.Size)}, {"etag", j.ETag}, {"sha256", dash(j.SHA256, "")}, {"modified", dash(j.Modified, "")},
			})
		},
	}
}

func newStoreCatCmd(g *globals) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "cat KEY [--force]",
		Short: "Write an object's bytes to stdout",
		Long: `GET one object and write its bytes, unchanged, to stdout. Binary bytes (a
batch object, a checkpoint, a compacted view) are refused when stdout is a
terminal, where they would garble it: redirect stdout to a file or a pipe,
or pass --force.` + exitStatusHelp(),
		Example: "  nereusctl store cat streams/s-1/head.json\n  nereusctl store cat streams/s-1/objects/00000000000000000000-00000000000000000100.kb > obj.kb",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := keyArg("cat", args[0]); err != nil {
				return err
			}
			st, err := g.store(cmd.Context())
			if err != nil {
				return err
			}
			data, err := st.Get(cmd.Context(), args[0], nil)
			if err != nil {
				return keyErr(fmt.Errorf("cat %s: %w", args[0], err))
			}
			if g.isTTY && !force && isBinary(data) {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("cat %s: %d bytes of binary data: not written to the terminal", args[0], len(data)),
					fmt.Sprintf("redirect stdout ('nereusctl store cat %s > object.bin'), or pass --force", args[0]))
			}
			_, err = g.stdout.Write(data)
			return err
		},
	}
	c.Flags().BoolVar(&force, "force", false, "write binary bytes to a terminal too")
	return c
}

// isBinary reports bytes that are not text a terminal shows as it is:
// invalid UTF-8, or control characters other than tab, newline and
// carriage return (a NUL, an escape sequence).
func isBinary(data []byte) bool {
	if !utf8.Valid(data) {
		return true
	}
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return true
		}
	}
	return false
}

func newStoreUpgradeCmd(g *globals) *cobra.Command {
	var dryRun bool
	c := &cobra.Command{
		Use:   "upgrade [--dry-run]",
		Short: "Add digests to the documents of a store written before document digests",
		Long: `Rewrite every binding, stream head, quarantine record (open and archived)
and lease that has no digest field into the current form: the same content
plus its digest (docs/layout.md, "Document digests"). Each document is read,
decoded strictly and validated first; one that is malformed or invalid is
reported and never rewritten. Each rewrite is a Put If-Match on the ETag of
the bytes checked, so a document changed meanwhile is reported, not
overwritten. Documents that already carry a digest are skipped: a rerun is a
no-op. Generation manifests are immutable and referenced by the SHA-256 of
their bytes: those without a digest are checked and kept as they are. Each
binding is upgraded with its stream's head and manifests holding the
partition's lease (none in a dry run); a partition another job holds past
--lease-wait is reported blocked and left for a rerun.
Upgrade every nereusctl that writes to the store first: an older one writes
documents back without a digest.` + exitStatusHelp(
			"3 when a document is malformed or invalid (it is not rewritten)",
			"4 when a document changed meanwhile, or a partition's lease is held by another job (rerun)"),
		Example: `  nereusctl store upgrade --dry-run
  nereusctl store upgrade -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := g.mutatingStore(ctx, dryRun)
			if err != nil {
				return err
			}
			rep, err := layout.UpgradeWith(ctx, st, layout.UpgradeOptions{DryRun: dryRun,
				Partition: func(ctx context.Context, tp layout.TopicPartition, fn func(ctx context.Context) error) error {
					return g.withPartition(ctx, st, tp, fn)
				}})
			if err != nil {
				return err
			}
			if g.json() {
				if err := writeJSON(g.stdout, storeUpgradeJSON{SchemaVersion: SchemaVersion, Upgrade: rep}); err != nil {
					return err
				}
			} else {
				rows := make([][]string, 0, len(rep.Items))
				for _, it := range rep.Items {
					rows = append(rows, []string{it.Action, it.Kind, it.Key, it.Detail})
				}
				if len(rows) > 0 {
					if err := writeTable(g.stdout, []string{"ACTION", "KIND", "KEY", "DETAIL"}, rows); err != nil {
						return err
					}
				}
				verb := "upgraded"
				n := rep.Counts[layout.UpgradeUpgraded]
				if dryRun {
					verb, n = "would upgrade", rep.Counts[layout.UpgradeWould]
				}
				blocked := ""
				if n := rep.Counts[layout.UpgradeBlocked]; n > 0 {
					blocked = fmt.Sprintf(", %d partitions blocked (their leases held by another job)", n)
				}
				fmt.Fprintf(g.stdout, "store upgrade: %s %d of %d documents; %d already current, %d legacy manifests kept, %d refused, %d changed meanwhile%s\n",
					verb, n, rep.Scanned, rep.Counts[layout.UpgradeCurrent], rep.Counts[layout.UpgradeKept], rep.Counts[layout.UpgradeRefused], rep.Counts[layout.UpgradeChanged], blocked)
			}
			err = rep.Err()
			if errkind.Is(err, errkind.Blocked) {
				return exitcode.BlockedErr(err, "another job holds the partition's lease; rerun 'nereusctl store upgrade' once it is done (every document already upgraded is skipped)")
			}
			return err
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be upgraded; write nothing")
	return c
}

// storeUpgradeJSON is the -o json output of store upgrade.
type storeUpgradeJSON struct {
	SchemaVersion int                   `json:"schema_version"`
	Upgrade       *layout.UpgradeReport `json:"upgrade"`
}

func newStoreProbeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "probe",
		Short: "Check that the store honours the conditional writes every guarantee rests on",
		Long: `Check, on a scratch key under tasks/probe-<nonce>/ (removed afterwards, also
when a check fails), what nereusctl's guarantees need of the store: a PUT with
If-None-Match: * creates a new key and a second one fails with 412 leaving the
bytes; a PUT with If-Match on a stale ETag fails with 412 and on the current one
succeeds; ETags are the MD5 of the bytes; a GET and a LIST right after a write
see it; HEAD returns the SHA-256 the PUT sent; a DELETE with If-Match fails on a
stale ETag and on a missing key and removes the object on the current one (on
s3:// through nereusctl's HEAD-then-DELETE: docs/s3.md). Each check is printed
with the guarantee it backs (-o wide, -o json).

On s3:// the result is kept in the store (store-probe.json, docs/layout.md),
with the store, the endpoint, the time and this build: every mutating command
checks it before its first write, probes first when it is missing or older than
--probe-max-age, and refuses to write on a store that failed (exit 3), while
read-only commands still work and warn. Run this command again once a failing
store (or the proxy in front of it) is fixed. file:// and mem:// are proved by
construction: the checks run, nothing is kept, and mutations never wait for a
probe.` + exitStatusHelp("3 a check failed: the error names each broken guarantee"),
		Example: `  nereusctl --store s3://kafka-nereus/prod store probe
  nereusctl store probe -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			g.probeNoted = true // this run probes: no warning about the last result
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			o := g.probeOptions(st)
			o.Force = true
			var doc *layout.StoreProbe
			recorded := false
			if storeprobe.Needed(st) {
				out, err := storeprobe.Ensure(ctx, st, o)
				if err != nil {
					return err
				}
				doc, recorded = out.Doc, out.Recorded
			} else {
				res, err := storeprobe.Run(ctx, st, o.Probe)
				if err != nil {
					return err
				}
				doc = storeprobe.Document(res, o)
			}
			if err := renderStoreProbe(g, doc, recorded, storeprobe.Needed(st)); err != nil {
				return err
			}
			if err := storeprobe.Failed(doc); err != nil {
				return exitcode.Wrap(exitcode.Verify, err, storeprobe.Hint)
			}
			return nil
		},
	}
}

// storeProbeJSON is the -o json output of store probe.
type storeProbeJSON struct {
	SchemaVersion int                `json:"schema_version"`
	Probe         *layout.StoreProbe `json:"probe"`
	// Broken names the checks that failed (empty when all held).
	Broken []string `json:"broken"`
	// Recorded: the result was written to the store (Key); false on
	// file:// and mem://, and when another run recorded one meanwhile.
	Recorded bool   `json:"recorded"`
	Key      string `json:"key,omitempty"`
	// ProvedByConstruction: file:// or mem://, whose mutations never
	// wait for a probe.
	ProvedByConstruction bool `json:"proved_by_construction"`
}

func renderStoreProbe(g *globals, doc *layout.StoreProbe, recorded, needed bool) error {
	broken := []string{}
	for _, c := range doc.Broken() {
		broken = append(broken, c.Name)
	}
	if g.json() {
		j := storeProbeJSON{SchemaVersion: SchemaVersion, Probe: doc, Broken: broken, Recorded: recorded, ProvedByConstruction: !needed}
		if recorded {
			j.Key = layout.StoreProbeKey
		}
		return writeJSON(g.stdout, j)
	}
	head := []string{"CHECK", "RESULT", "DETAIL"}
	if g.wide() {
		head = append(head, "GUARANTEE")
	}
	rows := make([][]string, 0, len(doc.Checks))
	for _, c := range doc.Checks {
		r := []string{c.Name, "ok", c.Detail}
		if !c.OK {
			r[1] = "FAILED"
		}
		if g.wide() {
			r = append(r, c.Guarantee)
		}
		rows = append(rows, r)
	}
	if err := writeTable(g.stdout, head, rows); err != nil {
		return err
	}
	verdict := fmt.Sprintf("all %d checks held", len(doc.Checks))
	if !doc.OK {
		verdict = fmt.Sprintf("%d of %d checks FAILED (%s)", len(broken), len(doc.Checks), strings.Join(broken, ", "))
	}
	kept := fmt.Sprintf("%s is proved by construction: nothing is kept, mutations never wait for a probe", doc.Store)
	switch {
	case needed && recorded:
		kept = fmt.Sprintf("result kept in %s for mutating commands (trusted for %s, --probe-max-age)", layout.StoreProbeKey, g.cfg.ProbeMaxAge)
	case needed:
		kept = "another run recorded a result meanwhile: that one stands"
	}
	where := doc.Store
	if needed {
		where += " through " + doc.Endpoint
	}
	_, err := fmt.Fprintf(g.stdout, "store probe: %s: %s; %s\n", where, verdict, kept)
	return err
}
