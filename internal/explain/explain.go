// Package explain owns `explain`: for one offset of a partition, whether a
// consumer can read it and why (or why not), and where it lives — the
// stream object and byte position, the batch and its transaction, the
// virtual segment, the generation, the compacted coverage over it, the
// newest checkpoint at or below it, the leader epoch.
//
// It reads (the head, the listings, a replay of the partition, the object
// holding the offset, the compacted view when one covers it) and never
// writes. What it reads is checked as every reader checks it: a batch
// whose CRC fails, a missing object between the trim and the head, a
// health finding that concerns the offset's object, generation or
// coverage is damage (Explanation.Damage), reported with the explanation.
package explain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/health"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// The reasons, one word each (the JSON contract's reason values).
const (
	ReasonReadable        = "readable"
	ReasonBelowLogStart   = "below_log_start"
	ReasonNotYetWritten   = "at_or_above_hw"
	ReasonAboveLSO        = "above_lso"
	ReasonOpenTxn         = "open_transaction"
	ReasonAborted         = "aborted_transaction"
	ReasonControl         = "control_record"
	ReasonCompactedAway   = "compacted_away"
	ReasonNoRecord        = "no_record"
	ReasonQuarantined     = "quarantined"
	ReasonBlocked         = "partition_blocked"
	ReasonDataMissing     = "data_missing"
	ReasonCorrupt         = "corrupt"
	ReasonCoverageMissing = "mandatory_coverage_missing"
)

// Explanation is the answer for one offset (docs/json-output.md#explain).
type Explanation struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	StreamID  string `json:"stream_id"`
	Offset    int64  `json:"offset"`
	// Readable: a READ_COMMITTED fetch from this offset returns this
	// record. ReadUncommitted: a READ_UNCOMMITTED fetch would.
	Readable        bool   `json:"readable"`
	ReadUncommitted bool   `json:"read_uncommitted"`
	Reason          string `json:"reason"`
	Detail          string `json:"detail"`
	// Bounds are the partition's offsets as the replay derives them (nil
	// when it could not: a blocked or damaged partition).
	Bounds      *Bounds     `json:"bounds"`
	Object      *Object     `json:"object"`
	Batch       *Batch      `json:"batch"`
	Record      *Record     `json:"record"`
	Segment     *Segment    `json:"segment"`
	Generation  *Generation `json:"generation"`
	Coverage    *Coverage   `json:"coverage"`
	Checkpoint  *Checkpoint `json:"checkpoint"`
	LeaderEpoch *int32      `json:"leader_epoch"`
	// Findings are the partition's health findings that concern this
	// offset (its object, generation, coverage, the head, the binding):
	// any is damage. OtherFindings counts the rest.
	Findings      []health.Finding `json:"findings"`
	OtherFindings int              `json:"other_findings"`

	// Damage is set when the data the explanation needs is damaged
	// (missing or corrupt): the command exits 3 after printing.
	Damage error `json:"-"`

	key []byte // the record's key (never output)
}

// Bounds are the partition's offsets.
type Bounds struct {
	LogStart int64 `json:"log_start"`
	HW       int64 `json:"hw"`
	LSO      int64 `json:"lso"`
	// Trim is the head's durable trim; ObservedLogStart the binding's.
	Trim             int64 `json:"trim"`
	ObservedLogStart int64 `json:"observed_log_start"`
}

// Object is the stream object holding the offset.
type Object struct {
	Key  string `json:"key"`
	Base int64  `json:"base"`
	End  int64  `json:"end"`
	Size int64  `json:"size"`
	// Present is false when the listing does not hold it (collected by
	// gc below the trim, or lost above it).
	Present bool `json:"present"`
	// Position is the byte position of the batch holding the offset
	// within the object (-1 when not read).
	Position int64 `json:"position"`
}

// Batch is the record batch holding the offset.
type Batch struct {
	BaseOffset    int64 `json:"base_offset"`
	LastOffset    int64 `json:"last_offset"`
	Count         int32 `json:"count"`
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int16 `json:"producer_epoch"`
	BaseSequence  int32 `json:"base_sequence"`
	Transactional bool  `json:"transactional"`
	Control       bool  `json:"control"`
	// Transaction is "committed", "aborted", "open" for a transactional
	// batch, "none" otherwise.
	Transaction          string `json:"transaction"`
	PartitionLeaderEpoch int32  `json:"partition_leader_epoch"`
	Codec                string `json:"codec"`
	Size                 int    `json:"size"`
	MaxTimestamp         int64  `json:"max_timestamp"`
	TimestampType        string `json:"timestamp_type"`
	CRCValid             bool   `json:"crc_valid"`
}

// Record is the record at the offset: never its key or value, only their
// sizes and the key's digest (to match it elsewhere without showing it).
type Record struct {
	Offset    int64 `json:"offset"`
	Timestamp int64 `json:"timestamp"`
	Sequence  int32 `json:"sequence"`
	KeySize   int   `json:"key_size"`
	ValueSize int   `json:"value_size"`
	// KeySHA256 is the SHA-256 of the key, hex ("" for a null key).
	KeySHA256 string `json:"key_sha256"`
	// ControlType names a control record's type (COMMIT, ABORT, …).
	ControlType string `json:"control_type,omitempty"`
}

// Segment is the virtual segment (Kafka's .log file) holding the offset.
type Segment struct {
	Base int64 `json:"base"`
	// End is -1 for the open segment.
	End  int64 `json:"end"`
	Open bool  `json:"open"`
	Gen  int64 `json:"gen"`
	// File is the broker's .log file name.
	File string `json:"file"`
}

// Generation is the COMMITTED generation whose range holds the offset.
type Generation struct {
	Gen      int64  `json:"gen"`
	Kind     string `json:"kind"`
	Base     int64  `json:"base"`
	End      int64  `json:"end"`
	Manifest string `json:"manifest"`
}

// Coverage is the compacted coverage of the partition and what it means
// for the offset.
type Coverage struct {
	State string `json:"state"`
	SetID string `json:"set_id,omitempty"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	// Covers: the offset lies in [Start, End), where a READ_COMMITTED
	// fetch is served from the compacted view.
	Covers bool `json:"covers"`
	// InView: the view keeps this offset's record.
	InView bool `json:"in_view"`
	// KeyNow is where the record's key is served from now (the latest
	// record with the same key a READ_COMMITTED fetch returns), when the
	// offset was compacted away; nil otherwise.
	KeyNow *KeyNow `json:"key_now"`
}

// KeyNow is the record that serves a key now.
type KeyNow struct {
	Offset int64 `json:"offset"`
	// Source is "view" or "committed" (the tail after the view).
	Source    string `json:"source"`
	Tombstone bool   `json:"tombstone"`
}

// Checkpoint is the newest checkpoint anchored at or below the offset, and
// the one the replay chose.
type Checkpoint struct {
	Key    string `json:"key"`
	Anchor int64  `json:"anchor"`
	// ReplayChose is the checkpoint a restart replay hydrates now ("" for
	// a full replay).
	ReplayChose string `json:"replay_chose"`
}

// Explain answers for offset (>= 0) of b.
func Explain(ctx context.Context, st store.Store, b *layout.Binding, offset int64) (*Explanation, error) {
	e := &Explanation{Topic: b.Topic, Partition: b.Partition, StreamID: b.StreamID, Offset: offset, Findings: []health.Finding{}}
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return nil, fmt.Errorf("explain %s: read head: %w", b.Name(), err)
	}
	if err := layout.CheckInvariants(b, h); err != nil {
		return nil, fmt.Errorf("explain %s: %w", b.Name(), err)
	}
	objs, err := layout.ListObjects(ctx, st, b.StreamID)
	if err != nil {
		return nil, fmt.Errorf("explain %s: list objects: %w", b.Name(), err)
	}
	e.Object = objectFor(objs, offset)
	cov := &Coverage{State: b.Coverage.State, SetID: b.Coverage.SetID, Start: b.Coverage.Start, End: b.Coverage.End}
	cov.Covers = b.Coverage.State != layout.CoverageNone && offset >= b.Coverage.Start && offset < b.Coverage.End
	e.Coverage = cov
	if err := e.checkpoint(ctx, st, b, offset); err != nil {
		return nil, err
	}
	if err := e.generation(ctx, st, b, offset); err != nil {
		return nil, err
	}

	// A quarantined partition is never replayed (no read path serves it):
	// explain from the documents alone.
	if b.Coverage.State == layout.CoverageQuarantined {
		if cov.Covers {
			e.Reason = ReasonQuarantined
			e.Detail = fmt.Sprintf("offset %d lies in the QUARANTINED compacted range [%d, %d) of set %s: a member failed verification, and nothing is served from COMMITTED data compaction superseded; see docs/runbooks/coordinator-blocked.md", offset, cov.Start, cov.End, short(cov.SetID))
			e.Damage = errkind.MarkHint(fmt.Errorf("explain %s: offset %d: %w", b.Name(), offset, layout.ErrBlocked), errkind.Corrupt, "repair the compacted set (docs/runbooks/coordinator-blocked.md)")
		} else {
			e.Reason = ReasonBlocked
			e.Detail = fmt.Sprintf("the partition's compacted coverage [%d, %d) is QUARANTINED: every read of the partition is refused until repair (docs/runbooks/coordinator-blocked.md); offset %d itself lies outside it", cov.Start, cov.End, offset)
		}
		if err := e.locate(ctx, st, h, objs, offset, nil); err != nil {
			e.damaged(b, err)
		}
		return e, nil
	}

	res, err := recovery.Replay(ctx, st, b, recovery.Options{})
	if err != nil {
		kind := errkind.Of(err)
		if kind != errkind.Missing && kind != errkind.Corrupt && !errors.Is(err, stream.ErrMissing) && !errors.Is(err, kafka.ErrCorrupt) {
			return nil, fmt.Errorf("explain %s: %w", b.Name(), err)
		}
		// The replay met damage: explain what can be said without it.
		e.Reason, e.Detail = ReasonCorrupt, err.Error()
		if kind == errkind.Missing || errors.Is(err, stream.ErrMissing) {
			e.Reason = ReasonDataMissing
		}
		e.Damage = err
		if lerr := e.locate(ctx, st, h, objs, offset, nil); lerr != nil && e.Object != nil {
			e.Object.Position = -1
		}
		return e, nil
	}
	p := res.State
	e.Bounds = &Bounds{LogStart: p.LogStart, HW: p.HW(), LSO: p.LSO(), Trim: h.Trim, ObservedLogStart: b.ObservedLogStart}
	if res.Chosen != nil && e.Checkpoint != nil {
		e.Checkpoint.ReplayChose = res.Chosen.Key
	}
	e.segment(b, p, offset)
	e.epoch(p, offset)
	e.findings(res.Health, offset)
	if res.Health.Blocked && cov.State != layout.CoverageActive {
		e.Reason = ReasonCoverageMissing
		e.Detail = fmt.Sprintf("the partition is blocked: %s; nothing is served from COMMITTED data compaction superseded", res.Health.BlockedReason)
		if len(e.Findings) > 0 {
			e.Damage = errkind.Mark(fmt.Errorf("explain %s: %s", b.Name(), res.Health.BlockedReason), errkind.Missing)
		}
		return e, nil
	}

	switch {
	case offset < p.LogStart:
		e.Reason = ReasonBelowLogStart
		e.Detail = belowLogStart(b, h, p, e.Object, offset)
		// Where it lived, if the object is still there (gc not yet run).
		if e.Object != nil && e.Object.Present {
			_ = e.locate(ctx, st, h, objs, offset, p)
		}
		return e, e.finish(b)
	case offset >= p.HW():
		e.Reason = ReasonNotYetWritten
		e.Detail = fmt.Sprintf("offset %d is at or above the HW %d: no record was written there yet (the last offset is %d)", offset, p.HW(), p.HW()-1)
		return e, e.finish(b)
	}
	if err := e.locate(ctx, st, h, objs, offset, p); err != nil {
		e.damaged(b, err)
		return e, nil
	}
	if e.Record == nil {
		e.Reason = ReasonNoRecord
		e.Detail = fmt.Sprintf("no record has offset %d: the log cleaner removed it before the data came here (an offset gap); a fetch from %d returns the next record", offset, offset)
		if e.Batch != nil {
			e.Detail = fmt.Sprintf("batch [%d, %d] holds no record at offset %d (the log cleaner removed it); a fetch from %d returns the next record", e.Batch.BaseOffset, e.Batch.LastOffset, offset, offset)
		}
		return e, e.finish(b)
	}
	bt := e.Batch
	switch {
	case bt.Control:
		e.Reason = ReasonControl
		e.Detail = fmt.Sprintf("offset %d is a %s control record (a transaction marker of producer %d): brokers never return control records to consumers", offset, e.Record.ControlType, bt.ProducerID)
		return e, e.finish(b)
	case bt.Transaction == "aborted":
		e.Reason, e.ReadUncommitted = ReasonAborted, true
		e.Detail = fmt.Sprintf("offset %d belongs to an aborted transaction of producer %d (epoch %d): READ_COMMITTED consumers skip it (the aborted index), READ_UNCOMMITTED ones see it", offset, bt.ProducerID, bt.ProducerEpoch)
		return e, e.finish(b)
	case bt.Transaction == "open":
		e.Reason, e.ReadUncommitted = ReasonOpenTxn, true
		e.Detail = fmt.Sprintf("offset %d belongs to producer %d's open transaction: READ_COMMITTED consumers wait at the LSO %d until it commits or aborts", offset, bt.ProducerID, p.LSO())
		return e, e.finish(b)
	case offset >= p.LSO():
		e.Reason, e.ReadUncommitted = ReasonAboveLSO, true
		e.Detail = fmt.Sprintf("offset %d is at or above the LSO %d (an open transaction starts there): READ_COMMITTED consumers read up to the LSO only", offset, p.LSO())
		return e, e.finish(b)
	}
	e.ReadUncommitted = true
	if cov.State == layout.CoverageActive && cov.Covers {
		if err := e.view(ctx, st, b, offset); err != nil {
			e.damaged(b, err)
			return e, nil
		}
		if !cov.InView {
			e.Reason, e.ReadUncommitted = ReasonCompactedAway, false
			e.Detail = compactedAway(cov, e.Record, offset)
			return e, e.finish(b)
		}
		e.Readable, e.Reason = true, ReasonReadable
		e.Detail = fmt.Sprintf("offset %d is readable: served from the compacted view of set %s ([%d, %d))", offset, short(cov.SetID), cov.Start, cov.End)
		return e, e.finish(b)
	}
	e.Readable, e.Reason = true, ReasonReadable
	e.Detail = fmt.Sprintf("offset %d is readable: in [log start %d, LSO %d), served from COMMITTED object %s", offset, p.LogStart, p.LSO(), e.Object.Key)
	return e, e.finish(b)
}

// finish marks the explanation damaged when a finding concerns it.
func (e *Explanation) finish(b *layout.Binding) error {
	if len(e.Findings) > 0 && e.Damage == nil {
		f := e.Findings[0]
		e.Damage = errkind.Mark(fmt.Errorf("explain %s: offset %d: the data it needs is damaged: %s %s: %s", b.Name(), e.Offset, f.Scope, f.Object, f.Detail), f.Kind())
	}
	return nil
}

// damaged records damage met while reading the offset's own data.
func (e *Explanation) damaged(b *layout.Binding, err error) {
	e.Readable, e.ReadUncommitted = false, false
	e.Reason, e.Detail = ReasonCorrupt, err.Error()
	if errkind.Of(err) == errkind.Missing || errors.Is(err, stream.ErrMissing) || errors.Is(err, store.ErrNotFound) {
		e.Reason = ReasonDataMissing
	}
	e.Damage = fmt.Errorf("explain %s: offset %d: %w", b.Name(), e.Offset, err)
	if errkind.Of(err) == errkind.None {
		k := errkind.Corrupt
		if e.Reason == ReasonDataMissing {
			k = errkind.Missing
		}
		e.Damage = errkind.Mark(e.Damage, k)
	}
}

func objectFor(objs []layout.StreamObject, offset int64) *Object {
	// The listing is in key order, that is base order.
	i := sort.Search(len(objs), func(i int) bool { return objs[i].End > offset })
	for ; i < len(objs); i++ {
		o := objs[i]
		if o.Base <= offset && offset < o.End {
			return &Object{Key: o.Key, Base: o.Base, End: o.End, Size: o.Size, Present: true, Position: -1}
		}
		if o.Base > offset {
			break
		}
	}
	return nil
}

// locate reads the object holding the offset and fills the batch and the
// record (p, when known, decides the batch's transaction).
func (e *Explanation) locate(ctx context.Context, st store.Store, h *layout.Head, objs []layout.StreamObject, offset int64, p *state.Partition) error {
	if e.Object == nil {
		if offset >= h.Trim && offset < h.Head {
			return errkind.Mark(fmt.Errorf("no object of stream %s holds offset %d, between the durable trim %d and the head %d: %w", e.StreamID, offset, h.Trim, h.Head, stream.ErrMissing), errkind.Missing)
		}
		return nil
	}
	o := layout.StreamObject{Key: e.Object.Key, Base: e.Object.Base, End: e.Object.End, Size: e.Object.Size}
	data, err := stream.ReadObject(ctx, st, o)
	if err != nil {
		return err
	}
	var found bool
	err = stream.ScanObjectWith(o, data, stream.ScanOptions{Epochs: h.LeaderEpochs}, func(sb stream.Batch) error {
		hd := sb.Header
		if found || hd.LastOffset() < offset || hd.BaseOffset > offset {
			return nil
		}
		found = true
		e.Object.Position = sb.Pos
		e.Batch = &Batch{BaseOffset: hd.BaseOffset, LastOffset: hd.LastOffset(), Count: hd.RecordsCount, ProducerID: hd.ProducerID, ProducerEpoch: hd.ProducerEpoch,
			BaseSequence: hd.BaseSequence, Transactional: hd.IsTransactional(), Control: hd.IsControl(), Transaction: "none",
			PartitionLeaderEpoch: hd.PartitionLeaderEpoch, Codec: hd.Codec().String(), Size: hd.Size(), MaxTimestamp: hd.MaxTimestamp, TimestampType: hd.TimestampType().String()}
		if err := kafka.VerifyCRC(sb.Raw); err != nil {
			return fmt.Errorf("object %s: batch at offset %d (byte %d): %w", o.Key, hd.BaseOffset, sb.Pos, err)
		}
		e.Batch.CRCValid = true
		if hd.IsTransactional() && p != nil {
			e.Batch.Transaction = txnState(p, hd.ProducerID, offset)
		}
		dec, err := kafka.DecodeBatch(sb.Raw, kafka.DefaultLimits())
		if err != nil {
			return fmt.Errorf("object %s: batch at offset %d: %w", o.Key, hd.BaseOffset, err)
		}
		for i := range dec.Records {
			r := &dec.Records[i]
			if r.Offset != offset {
				continue
			}
			e.Record = &Record{Offset: r.Offset, Timestamp: r.Timestamp, Sequence: hd.RecordSequence(r.OffsetDelta), KeySize: nullableLen(r.Key), ValueSize: nullableLen(r.Value)}
			if r.Key != nil {
				sum := sha256.Sum256(r.Key)
				e.Record.KeySHA256 = hex.EncodeToString(sum[:])
			}
			if hd.IsControl() {
				if _, t, err := kafka.ParseControlKey(r.Key); err == nil {
					e.Record.ControlType = t.String()
				} else {
					e.Record.ControlType = "INVALID"
				}
			}
			e.key = r.Key
		}
		return nil
	})
	return err
}

// txnState is a transactional record's transaction: aborted when an
// aborted range of its producer holds it, open when its producer's ongoing
// transaction started at or before it, else committed.
func txnState(p *state.Partition, pid, offset int64) string {
	for _, a := range p.Aborted {
		if a.ProducerID == pid && a.FirstOffset <= offset && offset <= a.LastOffset {
			return "aborted"
		}
	}
	for first, t := range p.Ongoing {
		if t.ProducerID == pid && first <= offset {
			return "open"
		}
	}
	return "committed"
}

func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

func short(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}

// checkpoint finds the newest checkpoint anchored at or below offset.
func (e *Explanation) checkpoint(ctx context.Context, st store.Store, b *layout.Binding, offset int64) error {
	infos, err := st.List(ctx, layout.CheckpointsPrefix(b.StreamID))
	if err != nil {
		return fmt.Errorf("explain %s: list checkpoints: %w", b.Name(), err)
	}
	for _, in := range infos {
		a, _, err := layout.ParseCheckpointKey(in.Key)
		if err != nil || a > offset {
			continue
		}
		if e.Checkpoint == nil || a >= e.Checkpoint.Anchor {
			e.Checkpoint = &Checkpoint{Key: in.Key, Anchor: a}
		}
	}
	return nil
}

// generation finds the COMMITTED generation whose range holds offset
// (newest first: the recent data is what incidents are about).
func (e *Explanation) generation(ctx context.Context, st store.Store, b *layout.Binding, offset int64) error {
	gens, err := layout.ListGenerations(ctx, st, b.StreamID)
	if err != nil {
		return fmt.Errorf("explain %s: list generations: %w", b.Name(), err)
	}
	for i := len(gens) - 1; i >= 0; i-- {
		g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, gens[i])
		if err != nil {
			// A manifest that does not load is the health check's
			// finding; the explanation goes on without it.
			continue
		}
		if g.Kind == layout.KindCommitted && g.Base <= offset && offset < g.End {
			e.Generation = &Generation{Gen: g.Gen, Kind: g.Kind, Base: g.Base, End: g.End, Manifest: layout.GenerationKey(b.StreamID, g.Gen)}
			return nil
		}
		if g.Kind == layout.KindCommitted && g.End <= offset {
			return nil // generations are in offset order: none holds it
		}
	}
	return nil
}

// segment finds the virtual segment holding offset in the replayed state.
func (e *Explanation) segment(b *layout.Binding, p *state.Partition, offset int64) {
	if offset >= p.HW() {
		return
	}
	for _, s := range p.Segments {
		if offset >= s.Base && (s.Open() || offset < s.End) {
			e.Segment = &Segment{Base: s.Base, End: s.End, Open: s.Open(), Gen: s.Gen, File: fmt.Sprintf("%s/%020d.log", b.Name(), s.Base)}
			return
		}
	}
}

// epoch is the leader epoch in force at offset (the last entry starting
// at or below it).
func (e *Explanation) epoch(p *state.Partition, offset int64) {
	for _, ep := range p.Epochs {
		if ep.StartOffset <= offset {
			v := ep.Epoch
			e.LeaderEpoch = &v
		}
	}
}

// findings keeps the health findings that concern this offset.
func (e *Explanation) findings(rep *health.Report, offset int64) {
	if rep == nil {
		return
	}
	for _, f := range rep.Findings {
		if e.concerns(f, offset) {
			e.Findings = append(e.Findings, f)
		} else {
			e.OtherFindings++
		}
	}
}

func (e *Explanation) concerns(f health.Finding, offset int64) bool {
	switch f.Scope {
	case health.ScopeBinding:
		return true
	case health.ScopeStream:
		return f.Gen < 0 || e.Generation != nil && f.Gen == e.Generation.Gen || e.Object != nil && f.Object == e.Object.Key
	case health.ScopeCommitted, health.ScopeOpenSegment:
		return e.Generation != nil && f.Gen == e.Generation.Gen || e.Object != nil && f.Object == e.Object.Key
	case health.ScopeCoverage:
		return e.Coverage != nil && e.Coverage.Covers
	}
	return false
}

// errFound stops a view read.
var errFound = errors.New("found")

// view reads the READ_COMMITTED view over the offset: whether it keeps
// the record, and if not, which record serves its key now.
func (e *Explanation) view(ctx context.Context, st store.Store, b *layout.Binding, offset int64) error {
	cov := e.Coverage
	_, err := compaction.Read(ctx, st, b, offset, func(r compaction.Record) error {
		cov.InView = r.Offset == offset && r.FromView
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return err
	}
	if cov.InView || e.key == nil {
		return nil
	}
	// The latest record with the same key a READ_COMMITTED fetch returns.
	_, err = compaction.Read(ctx, st, b, cov.Start, func(r compaction.Record) error {
		if r.Key != nil && bytes.Equal(r.Key, e.key) {
			src := "committed"
			if r.FromView {
				src = "view"
			}
			cov.KeyNow = &KeyNow{Offset: r.Offset, Source: src, Tombstone: r.Value == nil}
		}
		return nil
	})
	return err
}

func compactedAway(cov *Coverage, r *Record, offset int64) string {
	switch {
	case r.KeySize < 0:
		return fmt.Sprintf("offset %d was compacted away: a keyless record is dropped by compaction (view of set %s, [%d, %d))", offset, short(cov.SetID), cov.Start, cov.End)
	case cov.KeyNow != nil && cov.KeyNow.Tombstone:
		return fmt.Sprintf("offset %d was compacted away: a newer record with the same key, a tombstone at offset %d (%s), deleted the key", offset, cov.KeyNow.Offset, cov.KeyNow.Source)
	case cov.KeyNow != nil:
		return fmt.Sprintf("offset %d was compacted away: a newer record with the same key at offset %d (%s) superseded it; a fetch of the key returns that one", offset, cov.KeyNow.Offset, cov.KeyNow.Source)
	}
	return fmt.Sprintf("offset %d was compacted away: its key is no longer served (a tombstone past delete.retention.ms removed it) (view of set %s, [%d, %d))", offset, short(cov.SetID), cov.Start, cov.End)
}

func belowLogStart(b *layout.Binding, h *layout.Head, p *state.Partition, o *Object, offset int64) string {
	s := fmt.Sprintf("offset %d is below the log start %d: the partition was trimmed there (the head's durable trim %d: DeleteRecords, trim or retention); consumers get OFFSET_OUT_OF_RANGE and reset by auto.offset.reset", offset, p.LogStart, h.Trim)
	switch {
	case o == nil:
		s += "; its object is gone (collected by gc)"
	case o.Present:
		s += "; its object is still stored (garbage until gc collects it)"
	}
	return s
}
