package cmd

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/explain"
)

func newExplainCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "explain TOPIC-PARTITION OFFSET",
		Short: "Say whether a consumer can read an offset, why, and where it lives",
		Long: `Answer the question an incident starts with: can a consumer read offset
OFFSET of this partition, and why (or why not)? And where does it live?

The verdict (readable: a READ_COMMITTED fetch from OFFSET returns its
record) and the reason, one of: readable; below_log_start (trimmed by
DeleteRecords, trim or retention: the head's durable trim, and whether the
object is still stored or gc collected it); at_or_above_hw (not written
yet); above_lso and open_transaction (READ_COMMITTED consumers wait at the
LSO); aborted_transaction (skipped by READ_COMMITTED consumers);
control_record (a transaction marker: never returned); compacted_away
(superseded in the compacted view, with the offset and source that serve
its key now); no_record (an offset gap the log cleaner left); quarantined
and partition_blocked (QUARANTINED coverage); mandatory_coverage_missing;
data_missing and corrupt (damage).

Where it lives: the stream object and the batch's byte position in it; the
batch (base and last offset, producer id and epoch, base sequence,
transactional or control, its transaction committed, aborted or open, the
partition leader epoch, the CRC checked); the record (timestamp, sequence,
key and value sizes and the key's SHA-256, never the key or value); the
virtual segment (the broker's .log file); the COMMITTED generation and its
manifest; the compacted coverage over it; the newest checkpoint anchored at
or below it and the one a restart replay hydrates; the leader epoch in
force.

It replays the partition (as 'replay' does) and reads the object holding
the offset; nothing is written. The health findings that concern the
offset (its object, generation, coverage, the head, the binding) are
listed; any of them, a batch that fails its CRC or a missing object is
damage: the explanation is printed, then explain exits 3.` + exitStatusHelp("0 the offset was explained, readable or not", "2 OFFSET is not a decimal offset >= 0", "3 the data the explanation needs is damaged (missing or corrupt; the explanation is printed first)"),
		Example: `  nereusctl explain orders-0 1200
  nereusctl explain payments-1 57 -o json
  # the group's committed offset, then the record it points at
  nereusctl dump __consumer_offsets --group billing --count 5
  nereusctl explain orders-3 884211`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			offset, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || offset < 0 {
				return exitcode.UsageErr(fmt.Errorf("offset %q: want a decimal offset >= 0", args[1]))
			}
			ctx := cmd.Context()
			st, err := g.store(ctx)
			if err != nil {
				return err
			}
			b, _, err := loadBinding(ctx, st, args[0])
			if err != nil {
				return err
			}
			e, err := explain.Explain(ctx, st, b, offset)
			if err != nil {
				return replayDataLoss(g, b, err)
			}
			if g.json() {
				err = writeJSON(g.stdout, explainJSON{SchemaVersion: SchemaVersion, Explanation: e})
			} else {
				err = renderExplain(g.stdout, e)
			}
			if err != nil {
				return err
			}
			if e.Damage != nil {
				return e.Damage
			}
			return nil
		},
	}
}

// explainJSON is explain -o json (docs/json-output.md#explain).
type explainJSON struct {
	SchemaVersion int `json:"schema_version"`
	*explain.Explanation
}

func renderExplain(w io.Writer, e *explain.Explanation) error {
	verdict := "NOT READABLE"
	if e.Readable {
		verdict = "READABLE"
	}
	fmt.Fprintf(w, "%s-%d offset %d: %s (%s)\n", e.Topic, e.Partition, e.Offset, verdict, e.Reason)
	fmt.Fprintf(w, "  why:         %s\n", e.Detail)
	fmt.Fprintf(w, "  read_uncommitted: %v\n", e.ReadUncommitted)
	if b := e.Bounds; b != nil {
		fmt.Fprintf(w, "  partition:   log start %d, LSO %d, HW %d (head trim %d, binding log start %d)\n", b.LogStart, b.LSO, b.HW, b.Trim, b.ObservedLogStart)
	}
	switch o := e.Object; {
	case o == nil:
		fmt.Fprintf(w, "  object:      none holds it\n")
	case o.Position >= 0:
		fmt.Fprintf(w, "  object:      %s [%d, %d), %d bytes; the batch at byte %d\n", o.Key, o.Base, o.End, o.Size, o.Position)
	default:
		fmt.Fprintf(w, "  object:      %s [%d, %d), %d bytes (not read)\n", o.Key, o.Base, o.End, o.Size)
	}
	if b := e.Batch; b != nil {
		fmt.Fprintf(w, "  batch:       [%d, %d] %d records, producer %d epoch %d base sequence %d, transactional %v (%s), control %v, leader epoch %d, %s, %d bytes, CRC valid %v\n",
			b.BaseOffset, b.LastOffset, b.Count, b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional, b.Transaction, b.Control, b.PartitionLeaderEpoch, b.Codec, b.Size, b.CRCValid)
	}
	if r := e.Record; r != nil {
		ctl := ""
		if r.ControlType != "" {
			ctl = ", control type " + r.ControlType
		}
		fmt.Fprintf(w, "  record:      timestamp %s (%d), sequence %d, key %d bytes, value %d bytes%s\n", msTime(r.Timestamp), r.Timestamp, r.Sequence, r.KeySize, r.ValueSize, ctl)
	}
	if s := e.Segment; s != nil {
		end := "open"
		if !s.Open {
			end = fmt.Sprintf("[%d, %d), generation %d", s.Base, s.End, s.Gen)
		}
		fmt.Fprintf(w, "  segment:     %s (%s)\n", s.File, end)
	}
	if g := e.Generation; g != nil {
		fmt.Fprintf(w, "  generation:  %d %s [%d, %d) %s\n", g.Gen, g.Kind, g.Base, g.End, g.Manifest)
	} else {
		fmt.Fprintf(w, "  generation:  none (the open segment, or below the oldest manifest)\n")
	}
	if c := e.Coverage; c != nil {
		switch {
		case c.State == "NONE":
			fmt.Fprintf(w, "  coverage:    NONE (no compacted view)\n")
		default:
			fmt.Fprintf(w, "  coverage:    %s [%d, %d) set %s: covers the offset %v, in the view %v\n", c.State, c.Start, c.End, c.SetID, c.Covers, c.InView)
		}
		if k := c.KeyNow; k != nil {
			fmt.Fprintf(w, "  key now:     offset %d (%s), tombstone %v\n", k.Offset, k.Source, k.Tombstone)
		}
	}
	if c := e.Checkpoint; c != nil {
		fmt.Fprintf(w, "  checkpoint:  %s (anchor %d, the newest at or below the offset); replay hydrates %s\n", c.Key, c.Anchor, orDash(c.ReplayChose))
	} else {
		fmt.Fprintf(w, "  checkpoint:  none at or below the offset\n")
	}
	if e.LeaderEpoch != nil {
		fmt.Fprintf(w, "  leader epoch: %d\n", *e.LeaderEpoch)
	}
	for _, f := range e.Findings {
		fmt.Fprintf(w, "  finding:     %s %s %s: %s\n", f.Scope, f.Check, f.Object, f.Detail)
	}
	if e.OtherFindings > 0 {
		fmt.Fprintf(w, "  (%d other health findings of the partition do not concern this offset: nereusctl verify %s-%d)\n", e.OtherFindings, e.Topic, e.Partition)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
