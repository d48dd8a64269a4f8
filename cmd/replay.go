package cmd

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/stream"
)

type replayOptions struct {
	full, compare, verifyCRC, plan bool
	clock                          clockFlags
}

func newReplayCmd(g *globals) *cobra.Command {
	o := &replayOptions{}
	c := &cobra.Command{
		Use:   "replay TOPIC-PARTITION",
		Short: "Restart replay: checkpoint plus tail, or a full replay; compare the two",
		Long: `Run the restart replay a broker runs (docs/design.md §6): read the head, choose the
newest checkpoint that does not lead the head and whose anchor object digest
matches the stream, verify it (object, CRCs, root, binding reference),
hydrate it, replay the COMMITTED tail to the head, apply the durable trim,
and report the partition state with its state digest.

The report says which checkpoint was chosen and why every other one was
skipped. --full ignores checkpoints and replays from the first offset (from
the stream's genesis checkpoint when import wrote one, or, when gc removed
the objects below the durable trim, from the oldest valid checkpoint: the
retention floor). --compare runs both and fails with exit 3
unless the state digests match; a checkpoint whose only difference is the
bases of segments after offset gaps, derived before segments started at
their first batch or Kafka's file name, is named as such, with the action
(checkpoint create --full). Nothing is written.

Every path checks that the objects between the durable trim and the head
are all there: a missing one is data loss (exit 3, naming the missing
offsets), never taken for gc. Every batch CRC-32C is verified before the
batch is applied, and every sealed object's size and CRC-32C against its
COMMITTED manifest; --verify-crc is accepted for compatibility and changes
nothing.

Producer expiration (Kafka's producer.id.expiration.ms) is decided at an
explicit clock, --now (default: the wall clock): a producer with no open
transaction whose last timestamp is --producer-id-expiration-ms or more
before it is dropped when a checkpoint is hydrated and from the state at
the head (docs/kafka-retention-rules.md, "Producer expiration"). The same
clock gives the same state digest. --compare runs the full replay at the
same clock and also expires at the chosen checkpoint's anchor with the
clock that checkpoint was made with, so both sides apply the same clocks
at the same offsets.

--plan says what the replay would do without reading the tail: the
checkpoint it would start from (chosen and verified as the replay chooses
it), the checkpoints it would skip and why, the tail's range, objects and
bytes from the listing, the generation manifests sealed after the
checkpoint, and the requests the replay would send (the plan's own, plus
one GET per tail object). It runs the same data-loss check and health
check as the replay.` + exitStatusHelp("3 missing objects between the trim and the head, a corrupt object or batch (CRC), or with --compare: the checkpoint path and the full replay disagree"),
		Example: `  nereusctl replay payments-0
  nereusctl replay payments-0 --compare -o json
  # what a restart would read, before reading it
  nereusctl replay payments-0 --plan`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.full && o.compare {
				return exitcode.UsageErr(fmt.Errorf("--full and --compare: --compare already runs the full replay"))
			}
			if o.plan && (o.full || o.compare) {
				return exitcode.UsageErr(fmt.Errorf("--plan is the checkpoint path's plan: not with --full or --compare"))
			}
			if o.plan {
				return runReplayPlan(cmd, g, args[0])
			}
			return runReplay(cmd, g, o, args[0])
		},
	}
	c.Flags().BoolVar(&o.full, "full", false, "ignore checkpoints: replay from the first offset")
	c.Flags().BoolVar(&o.compare, "compare", false, "run the checkpoint path and a full replay; exit 3 unless the digests match")
	c.Flags().BoolVar(&o.plan, "plan", false, "print what the replay would read (checkpoint, tail objects, bytes, requests) without reading the tail")
	c.Flags().BoolVar(&o.verifyCRC, "verify-crc", false, "no-op, kept for compatibility: every batch CRC is always verified")
	o.clock.add(c, true)
	return c
}

func runReplay(cmd *cobra.Command, g *globals, o *replayOptions, arg string) error {
	ctx := cmd.Context()
	st, err := g.store(ctx)
	if err != nil {
		return err
	}
	clock, err := o.clock.clock()
	if err != nil {
		return err
	}
	b, _, err := loadBinding(ctx, st, arg)
	if err != nil {
		return err
	}
	res, err := recovery.Replay(ctx, st, b, recovery.Options{Full: o.full, Log: g.log, Clock: clock})
	if err != nil {
		return replayDataLoss(g, b, err)
	}
	var full *recovery.Result
	if o.compare {
		fo := recovery.Options{Full: true, Log: g.log, Clock: clock}
		if res.Chosen != nil {
			fo.AsOfCheckpoint = &recovery.CheckpointClock{Anchor: res.Chosen.Anchor, Clock: res.CheckpointClock}
		}
		if full, err = recovery.Replay(ctx, st, b, fo); err != nil {
			return replayDataLoss(g, b, fmt.Errorf("full replay: %w", err))
		}
	}
	if g.json() {
		err = writeJSON(g.stdout, replayJSON(res, full))
	} else {
		err = renderReplay(g.stdout, res, full)
		if err == nil {
			renderFindings(g.stdout, b.Name(), res.Health)
		}
	}
	if err != nil {
		return err
	}
	if full != nil && full.Digest() != res.Digest() {
		err := fmt.Errorf("replay %s: checkpoint path digest %s differs from full replay digest %s", b.Name(), res.Digest(), full.Digest())
		if why := oldRuleMismatch(res, full); why != "" {
			return exitcode.Wrap(exitcode.Verify, fmt.Errorf("%w: %s", err, why),
				fmt.Sprintf("nothing is lost; publish a checkpoint from a full replay (nereusctl checkpoint create --full %s), then replay --compare matches", b.Name()))
		}
		return exitcode.VerifyErr(err)
	}
	// The state is shown; the partition's health decides the exit code,
	// as verify's would (a damaged newest checkpoint replay fell back
	// from, a rolled-back head, a manifest that does not decode, …).
	return healthErr("replay", res.Health)
}

// renderFindings prints a partition's health findings under a reader's
// output, one line each with its hint.
func renderFindings(w io.Writer, name string, rep *health.Report) {
	if rep == nil || rep.OK() {
		return
	}
	fmt.Fprintf(w, "\nhealth: %d finding(s)", len(rep.Findings))
	if rep.Blocked {
		fmt.Fprintf(w, ", blocked: %s", rep.BlockedReason)
	}
	fmt.Fprintln(w)
	for _, f := range rep.Findings {
		fmt.Fprintln(w, "  "+findingNote(name, f))
	}
}

// healthErr is a reader's failure for an unhealthy partition: every
// finding on stderr (the error names the first, with its runbook), exit 3
// for missing or corrupt data, 4 when only blocked; nil when healthy.
func healthErr(op string, rep *health.Report) error {
	err := rep.Err()
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}

// oldRuleMismatch explains a checkpoint path that differs from the full
// replay only in the bases of segments after offset gaps, each at the
// previous segment's end: the checkpoint's state was derived before the
// segment base rule (state.OldRuleSegmentBases). "" for any other
// difference.
func oldRuleMismatch(res, full *recovery.Result) string {
	moved, ok := state.OldRuleSegmentBases(res.State, full.State)
	if !ok || res.Chosen == nil {
		return ""
	}
	what := fmt.Sprintf("the bases of %d segments after offset gaps differ (today at %v)", len(moved), moved)
	if len(moved) == 1 {
		what = fmt.Sprintf("the base of the segment after an offset gap at %d differs", moved[0])
	}
	return fmt.Sprintf("only %s: checkpoint %s holds segment bases derived before they followed Kafka's (an older build made it, or the checkpoint it was built from; docs/kafka-retention-rules.md R4), each at the previous segment's end, below Kafka's",
		what, res.Chosen.Key)
}

// dataLossJSON is the data_loss field of replay's JSON: the half-open
// offset ranges between the durable trim and the head no object holds.
type dataLossJSON struct {
	Missing [][2]int64 `json:"missing"`
}

// replayDataLoss writes, with -o json, the document of a replay that found
// data loss (the partition, the head's bounds and data_loss; no state), and
// returns err.
func replayDataLoss(g *globals, b *layout.Binding, err error) error {
	var me *stream.MissingError
	if !g.json() || !errors.As(err, &me) {
		return err
	}
	if werr := writeJSON(g.stdout, replayDataLossJSON{
		SchemaVersion: SchemaVersion,
		Topic:         b.Topic,
		Partition:     b.Partition,
		StreamID:      b.StreamID,
		Trim:          me.Trim,
		Head:          me.Head,
		DataLoss:      dataLossJSON{Missing: me.Ranges},
	}); werr != nil {
		return werr
	}
	return err
}

// replayDataLossJSON is replay's -o json document on data loss: the
// partition, the head's bounds and data_loss; no state.
type replayDataLossJSON struct {
	SchemaVersion int          `json:"schema_version"`
	Topic         string       `json:"topic"`
	Partition     int32        `json:"partition"`
	StreamID      string       `json:"stream_id"`
	Trim          int64        `json:"trim"`
	Head          int64        `json:"head"`
	DataLoss      dataLossJSON `json:"data_loss"`
}

// replayDoc is replay's -o json document (docs/json-output.md#replay).
type replayDoc struct {
	SchemaVersion    int                  `json:"schema_version"`
	Topic            string               `json:"topic"`
	Partition        int32                `json:"partition"`
	StreamID         string               `json:"stream_id"`
	Full             bool                 `json:"full"`
	RetentionFloor   bool                 `json:"retention_floor"`
	DataLoss         *dataLossJSON        `json:"data_loss"` // always null: data loss writes replayDataLossJSON
	CheckpointAnchor *int64               `json:"checkpoint_anchor"`
	Checkpoints      []recovery.Candidate `json:"checkpoints"`
	Tail             recovery.TailStats   `json:"tail"`
	LogStart         int64                `json:"log_start"`
	Head             int64                `json:"head"`
	HW               int64                `json:"hw"`
	LSO              int64                `json:"lso"`
	Trim             int64                `json:"trim"`
	StateDigest      string               `json:"state_digest"`
	Clock            clockJSON            `json:"clock"`
	Producers        []producerJSON       `json:"producers"`
	OpenTransactions []state.Txn          `json:"open_transactions"`
	Aborted          []state.AbortedTxn   `json:"aborted"`
	LeaderEpochs     []state.EpochEntry   `json:"leader_epochs"`
	Segments         []segmentJSON        `json:"segments"`
	// Findings are the partition's health findings (the state is still
	// shown; replay exits 3, or 4 when only blocked, as verify would).
	Findings []health.Finding `json:"findings"`
	// With --compare only.
	FullStateDigest    *string             `json:"full_state_digest,omitempty"`
	FullTail           *recovery.TailStats `json:"full_tail,omitempty"`
	DigestsMatch       *bool               `json:"digests_match,omitempty"`
	FullRetentionFloor *bool               `json:"full_retention_floor,omitempty"`
}

// segmentJSON is one entry of replay's segments[].
type segmentJSON struct {
	Base               int64 `json:"base"`
	End                int64 `json:"end"`
	Bytes              int64 `json:"bytes"`
	MaxTimestamp       int64 `json:"max_timestamp"`
	Gen                int64 `json:"gen"`
	Open               bool  `json:"open"`
	OffsetIndexEntries int   `json:"offset_index_entries"`
	TimeIndexEntries   int   `json:"time_index_entries"`
}

type producerJSON struct {
	ProducerID       int64             `json:"producer_id"`
	Epoch            int16             `json:"epoch"`
	LastSequence     int32             `json:"last_sequence"`
	LastOffset       int64             `json:"last_offset"`
	OffsetDelta      int32             `json:"offset_delta"`
	LastTimestamp    int64             `json:"last_timestamp"`
	CoordinatorEpoch int32             `json:"coordinator_epoch"`
	TxnFirstOffset   int64             `json:"txn_first_offset"` // -1: no ongoing transaction, as in Kafka's snapshot
	Batches          []state.BatchMeta `json:"batches"`
}

func replayJSON(res, full *recovery.Result) replayDoc {
	p := res.State
	prods := make([]producerJSON, 0, len(p.Producers))
	for _, pr := range p.SortedProducers() {
		j := producerJSON{ProducerID: pr.ID, Epoch: pr.Epoch, LastSequence: pr.LastSeq(), LastOffset: pr.LastOffset(), OffsetDelta: pr.LastOffsetDelta(), LastTimestamp: pr.LastTimestamp, CoordinatorEpoch: pr.CoordinatorEpoch, TxnFirstOffset: pr.TxnFirstOffset, Batches: pr.Batches}
		if j.Batches == nil {
			j.Batches = []state.BatchMeta{}
		}
		prods = append(prods, j)
	}
	segs := make([]segmentJSON, 0, len(p.Segments))
	for _, s := range p.Segments {
		segs = append(segs, segmentJSON{Base: s.Base, End: s.End, Bytes: s.Bytes, MaxTimestamp: s.MaxTimestamp, Gen: s.Gen, Open: s.Open(), OffsetIndexEntries: len(s.OffsetIndex), TimeIndexEntries: len(s.TimeIndex)})
	}
	var anchor *int64
	if res.Chosen != nil {
		a := res.Chosen.Anchor
		anchor = &a
	}
	cands := res.Candidates
	if cands == nil {
		cands = []recovery.Candidate{}
	}
	out := replayDoc{
		SchemaVersion:    SchemaVersion,
		Topic:            res.Binding.Topic,
		Partition:        res.Binding.Partition,
		StreamID:         res.Binding.StreamID,
		Full:             res.Full,
		RetentionFloor:   res.Floor,
		CheckpointAnchor: anchor,
		Checkpoints:      cands,
		Tail:             res.Tail,
		LogStart:         p.LogStart,
		Head:             res.Head.Head,
		HW:               p.HW(),
		LSO:              p.LSO(),
		Trim:             res.Head.Trim,
		StateDigest:      res.Digest(),
		Findings:         res.Health.Findings,
		Clock:            clockOf(res),
		Producers:        prods,
		OpenTransactions: nonNil(p.SortedOngoing()),
		Aborted:          nonNil(p.Aborted),
		LeaderEpochs:     nonNil(p.Epochs),
		Segments:         segs,
	}
	if full != nil {
		d, tail, match, floor := full.Digest(), full.Tail, full.Digest() == res.Digest(), full.Floor
		out.FullStateDigest, out.FullTail, out.DigestsMatch, out.FullRetentionFloor = &d, &tail, &match, &floor
	}
	return out
}

// clockJSON is replay's clock: the producer-expiration clock the state is
// at, the producers it dropped, and the clock of the chosen checkpoint.
type clockJSON struct {
	Now                    *string `json:"now"` // RFC3339; null: no expiration applied
	ProducerIDExpirationMs int64   `json:"producer_id_expiration_ms"`
	ExpiredProducers       []int64 `json:"expired_producers"`
	CheckpointClock        *string `json:"checkpoint_clock"` // null: none chosen, or it records none
}

func clockOf(res *recovery.Result) clockJSON {
	out := clockJSON{ProducerIDExpirationMs: res.Clock.ExpirationMs, ExpiredProducers: nonNil(res.Expired)}
	if res.Clock.Set() {
		v := res.Clock.Time().Format(time.RFC3339Nano)
		out.Now = &v
	}
	if res.CheckpointClock.Set() {
		v := res.CheckpointClock.Time().Format(time.RFC3339Nano)
		out.CheckpointClock = &v
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func renderReplay(w io.Writer, res, full *recovery.Result) error {
	p := res.State
	fmt.Fprintf(w, "Partition %s (stream %s)\n", res.Binding.Name(), res.Binding.StreamID)
	if res.Full && res.Floor {
		fmt.Fprintf(w, "Checkpoint: %s (anchor %d): the retention floor; the objects below the first retained one (all under the durable trim %d) were removed by gc, so a full replay starts here\n", res.Chosen.Key, res.Chosen.Anchor, res.Head.Trim)
	} else if res.Full && res.Genesis {
		fmt.Fprintf(w, "Checkpoint: %s (anchor %d): the stream's genesis; it holds the state from before it (written at import: what Kafka's log loader rebuilds from a broker snapshot, leader epochs whose batches are gone), so a full replay starts here\n", res.Chosen.Key, res.Chosen.Anchor)
	} else if res.Full {
		fmt.Fprintf(w, "Checkpoint: none (full replay requested)\n")
	} else if res.Chosen == nil {
		fmt.Fprintf(w, "Checkpoint: none usable; full replay\n")
	} else {
		fmt.Fprintf(w, "Checkpoint: %s (anchor %d)\n", res.Chosen.Key, res.Chosen.Anchor)
	}
	for _, c := range res.Candidates {
		if c.Status == "skipped" {
			fmt.Fprintf(w, "  skipped %s (anchor %d): %s: %s\n", c.Key, c.Anchor, c.Reason, c.Detail)
		}
	}
	t := res.Tail
	fmt.Fprintf(w, "Tail: offsets [%d, %d): %d objects, %d batches, %d bytes\n", t.From, t.To, t.Objects, t.Batches, t.Bytes)
	fmt.Fprintf(w, "State: log start %d, HW %d, LSO %d, trim %d\n", p.LogStart, p.HW(), p.LSO(), res.Head.Trim)
	fmt.Fprintf(w, "       %d producers, %d open transactions, %d aborted ranges, %d leader epochs, %d segments\n",
		len(p.Producers), len(p.Ongoing), len(p.Aborted), len(p.Epochs), len(p.Segments))
	if res.Clock.Set() {
		cp := ""
		if res.CheckpointClock.Set() {
			cp = fmt.Sprintf("; checkpoint made at %s", res.CheckpointClock.Time().Format(time.RFC3339Nano))
		}
		fmt.Fprintf(w, "Clock: %s, producer.id.expiration.ms %d: %d producers expired%s\n", res.Clock.Time().Format(time.RFC3339Nano), res.Clock.ExpirationMs, len(res.Expired), cp)
	}
	fmt.Fprintf(w, "State digest: %s\n", res.Digest())
	if full != nil {
		verdict := "MATCH"
		if full.Digest() != res.Digest() {
			verdict = "MISMATCH"
			if oldRuleMismatch(res, full) != "" {
				verdict = "MISMATCH: only segment bases the checkpoint derived before the segment base rule"
			}
		}
		from := ""
		if full.Floor {
			// Not from the stream's start: say so next to the verdict.
			from = fmt.Sprintf(" from the retention floor at anchor %d", full.Chosen.Anchor)
		}
		fmt.Fprintf(w, "Full replay digest: %s (%s; full replay read %d objects, %d bytes%s)\n", full.Digest(), verdict, full.Tail.Objects, full.Tail.Bytes, from)
	}
	if len(p.Producers) > 0 {
		fmt.Fprintln(w, "\nProducers:")
		rows := [][]string{}
		for _, pr := range p.SortedProducers() {
			rows = append(rows, []string{fmt.Sprint(pr.ID), fmt.Sprint(pr.Epoch), fmt.Sprint(pr.LastSeq()), fmt.Sprint(pr.LastOffset()), fmt.Sprint(pr.CoordinatorEpoch), dash(pr.TxnFirstOffset, -1), fmt.Sprint(pr.LastTimestamp)})
		}
		if err := writeTable(w, []string{"PRODUCER", "EPOCH", "LAST SEQ", "LAST OFFSET", "COORD EPOCH", "TXN FIRST", "LAST TIMESTAMP"}, rows); err != nil {
			return err
		}
	}
	if len(p.Aborted) > 0 {
		fmt.Fprintln(w, "\nAborted transactions:")
		rows := [][]string{}
		for _, a := range p.Aborted {
			rows = append(rows, []string{fmt.Sprint(a.ProducerID), fmt.Sprint(a.FirstOffset), fmt.Sprint(a.LastOffset), fmt.Sprint(a.LastStableOffset)})
		}
		if err := writeTable(w, []string{"PRODUCER", "FIRST", "LAST (MARKER)", "LAST STABLE"}, rows); err != nil {
			return err
		}
	}
	if len(p.Epochs) > 0 {
		fmt.Fprintln(w, "\nLeader epochs:")
		rows := [][]string{}
		for _, e := range p.Epochs {
			rows = append(rows, []string{fmt.Sprint(e.Epoch), fmt.Sprint(e.StartOffset)})
		}
		if err := writeTable(w, []string{"EPOCH", "START OFFSET"}, rows); err != nil {
			return err
		}
	}
	return nil
}
