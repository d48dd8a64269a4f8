package cmd

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/localfile"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
)

type checkpointInspectOptions struct {
	key     string
	file    string
	section string
}

func newCheckpointInspectCmd(g *globals) *cobra.Command {
	o := &checkpointInspectOptions{}
	c := &cobra.Command{
		Use:   "inspect [TOPIC-PARTITION] [--key KEY | --file PATH] [--section NAME]",
		Short: "Show every section of a checkpoint in readable form",
		Long: `Show a checkpoint's header, section table, root and every section (anchor,
producers, transactions, aborted ranges, leader epochs, virtual segments,
indexes, coverage, binding reference, and the clock producer expiration
was applied at when the checkpoint records one) in readable form. By default the
partition's referenced checkpoint; --key names another one; --file reads a
local copy (no store needed). --section shows one section only, decoding no
other.` + exitStatusHelp("3 when the checkpoint or the section is corrupt"),
		Example: `  nereusctl checkpoint inspect payments-0
  nereusctl checkpoint inspect payments-0 --section producers -o json
  nereusctl checkpoint inspect --file ./copy.nkc1`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (o.file != "") == (len(args) == 1) {
				return exitcode.UsageErr(fmt.Errorf("give exactly one of TOPIC-PARTITION and --file"))
			}
			if o.file != "" && o.key != "" {
				return exitcode.UsageErr(fmt.Errorf("--key goes with TOPIC-PARTITION, not --file"))
			}
			return runCheckpointInspect(cmd, g, o, args)
		},
	}
	c.Flags().StringVar(&o.key, "key", "", "checkpoint object key (default: the binding's checkpoint_ref, else the newest)")
	c.Flags().StringVar(&o.file, "file", "", "read a local NKC1 file instead of the store")
	c.Flags().StringVar(&o.section, "section", "", "show only this section: anchor, producers, transactions, aborted, epochs, segments, indexes, coverage, binding, clock (when the checkpoint has one)")
	return c
}

func runCheckpointInspect(cmd *cobra.Command, g *globals, o *checkpointInspectOptions, args []string) error {
	ctx := cmd.Context()
	var data []byte
	name := o.file
	if o.file != "" {
		var err error
		if err := localFileArg("--file", o.file); err != nil {
			return err
		}
		if data, err = readCappedFile(o.file, recovery.MaxCheckpointBytes); err != nil {
			return exitcode.UsageErr(err)
		}
	} else {
		if err := keyArg("--key", o.key); err != nil {
			return err
		}
		st, err := g.store(ctx)
		if err != nil {
			return err
		}
		b, _, err := loadBinding(ctx, st, args[0])
		if err != nil {
			return err
		}
		key := o.key
		if own := layout.CheckpointsPrefix(b.StreamID); key != "" && !strings.HasPrefix(key, own) {
			fmt.Fprintf(g.stderr, "warning: --key %s is not a checkpoint of %s (its checkpoints are under %s): showing it anyway\n", key, b.Name(), own)
		}
		if key == "" && b.CheckpointRef != nil {
			key = b.CheckpointRef.Key
		}
		if key == "" {
			infos, err := st.List(ctx, layout.CheckpointsPrefix(b.StreamID))
			if err != nil {
				return err
			}
			if len(infos) == 0 {
				return fmt.Errorf("inspect %s: the partition has no checkpoint", b.Name())
			}
			key = infos[len(infos)-1].Key
		}
		if data, err = store.GetCapped(ctx, st, key, recovery.MaxCheckpointBytes); err != nil {
			return keyErr(fmt.Errorf("inspect %s: %w", key, err))
		}
		name = key
	}
	r, err := nkc1.Open(data)
	if err != nil {
		return exitcode.VerifyErr(fmt.Errorf("inspect %s: %w", name, err))
	}
	ids := []uint16{}
	if o.section != "" {
		id, ok := nkc1.SectionByName(o.section)
		if !ok {
			return exitcode.UsageErr(fmt.Errorf("--section %q: unknown section", o.section))
		}
		ids = append(ids, id)
	} else {
		for _, s := range r.Sections() {
			ids = append(ids, s.ID)
		}
	}
	sections := map[string]json.RawMessage{}
	var firstErr error
	for _, id := range ids {
		raw, err := r.Section(id)
		if err == nil {
			var v any
			if v, err = nkc1.DescribeSection(id, raw); err == nil {
				var b []byte
				if b, err = json.Marshal(v); err == nil {
					sections[nkc1.SectionName(id)] = b
					continue
				}
			}
		}
		b, _ := json.Marshal(sectionErrorJSON{Error: err.Error()})
		sections[nkc1.SectionName(id)] = b
		firstErr = cmpErr(firstErr, err)
	}
	findings := r.Verify()
	if g.json() {
		if err := writeJSON(g.stdout, checkpointInspectJSON{
			SchemaVersion: SchemaVersion, Object: name, Size: len(data), Version: r.Version(),
			Root: r.Root(), SectionTable: nonNil(r.Sections()), Sections: sections, Findings: nonNil(findings),
		}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.stdout, "Checkpoint %s\n  size %d bytes, NKC1 version %d, root %s\n\n", name, len(data), r.Version(), r.Root())
		rows := [][]string{}
		for _, s := range r.Sections() {
			rows = append(rows, []string{fmt.Sprint(s.ID), s.Name, s.Codec, fmt.Sprint(s.Offset), fmt.Sprint(s.StoredLen), fmt.Sprint(s.RawLen), fmt.Sprintf("%08x", s.CRC32C), s.SHA256[:16]})
		}
		if err := writeTable(g.stdout, []string{"ID", "SECTION", "CODEC", "OFFSET", "STORED", "RAW", "CRC32C", "SHA256"}, rows); err != nil {
			return err
		}
		for _, id := range ids {
			b, _ := json.MarshalIndent(sections[nkc1.SectionName(id)], "  ", "  ")
			fmt.Fprintf(g.stdout, "\n[%s]\n  %s\n", nkc1.SectionName(id), b)
		}
		for _, f := range findings {
			fmt.Fprintf(g.stdout, "FINDING: %s check failed in section %s: %s\n", f.Check, f.Section, f.Detail)
		}
	}
	if firstErr != nil || len(findings) > 0 {
		if firstErr == nil {
			firstErr = fmt.Errorf("%s check failed in section %s: %s", findings[0].Check, findings[0].Section, findings[0].Detail)
		}
		return exitcode.VerifyErr(fmt.Errorf("inspect %s: %w", name, firstErr))
	}
	return nil
}

// checkpointInspectJSON is checkpoint inspect's -o json document.
type checkpointInspectJSON struct {
	SchemaVersion int                `json:"schema_version"`
	Object        string             `json:"object"`
	Size          int                `json:"size"`
	Version       int                `json:"version"`
	Root          string             `json:"root"`
	SectionTable  []nkc1.SectionInfo `json:"section_table"`
	// Sections maps a section name to its decoded content
	// (docs/formats/nkc1.md) or to a sectionErrorJSON.
	Sections map[string]json.RawMessage `json:"sections"`
	Findings []nkc1.Finding             `json:"findings"`
}

// sectionErrorJSON stands for a section that could not be read or decoded.
type sectionErrorJSON struct {
	Error string `json:"error"`
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// readCappedFile reads a local input file of at most max bytes; a FIFO,
// socket, device or folder is refused without blocking
// (localfile.ReadInput).
func readCappedFile(path string, max int64) ([]byte, error) {
	return localfile.ReadInput(path, max)
}
