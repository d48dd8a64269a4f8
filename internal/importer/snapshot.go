package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Producer snapshots at import (docs/kafka-retention-rules.md §16). A producer whose batches were deleted below the log
// start is known to the broker only from its <offset>.snapshot file; Kafka
// loads the newest snapshot (ProducerStateManager.loadFromSnapshot, read by
// readSnapshot with its CRC-32C checked), drops the producers expired at
// the load time (isProducerExpired), and replays the segments after it.
// The import does the same at its clock (import --now): the producers are
// hydrated from the newest snapshot at or below the stream's first offset,
// the segments are replayed on top of them, and the state they give is
// written as the stream's genesis checkpoint (anchored at the first offset,
// recording the clock) before the binding is created; every replay, full
// or not, starts from it (recovery.Result.Genesis).

// maxSnapshotBytes caps one .snapshot file (46 bytes a producer: over 23
// million producers).
const maxSnapshotBytes = 1 << 30

// SnapshotReport says what the producer snapshot gave the import (nil in
// the report when no snapshot was used).
type SnapshotReport struct {
	// File is the snapshot used, Offset the offset it was taken at.
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	// Entries is the number of producers in the file; Expired those
	// dropped at the import clock; Producers those hydrated (Entries −
	// Expired).
	Entries   int `json:"entries"`
	Expired   int `json:"expired"`
	Producers int `json:"producers"`
	// Clock is the import clock (RFC3339) and ExpirationMs
	// producer.id.expiration.ms.
	Clock        string `json:"clock"`
	ExpirationMs int64  `json:"producer_id_expiration_ms"`
	// Checkpoint is the genesis checkpoint that holds them ("" on a dry
	// run).
	Checkpoint string `json:"checkpoint"`
	// Skipped lists the other snapshot files and why they were not used.
	Skipped []string `json:"skipped"`
}

// snapshotFile is one NNNNNNNNNNNNNNNNNNNN.snapshot file of the partition.
type snapshotFile struct {
	path, name string
	offset     int64
}

// listSnapshots returns the partition's snapshot files by offset.
// listSegments has already refused links and non-regular files.
func listSnapshots(dir string) ([]snapshotFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", dir, err)
	}
	var out []snapshotFile
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".snapshot") {
			continue
		}
		stem := strings.TrimSuffix(name, ".snapshot")
		off, err := strconv.ParseInt(stem, 10, 64)
		if len(stem) != 20 || err != nil || off < 0 || strings.TrimLeft(stem, "0123456789") != "" {
			return nil, refused("%s is not a producer snapshot: a snapshot is named by its 20-digit offset", filepath.Join(dir, name))
		}
		out = append(out, snapshotFile{path: filepath.Join(dir, name), name: name, offset: off})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].offset < out[j].offset })
	return out, nil
}

// hydration is the snapshot chosen for an import and the producers it
// gives at the import clock.
type hydration struct {
	rep     *SnapshotReport
	entries []kafka.SnapshotEntry // not expired, by producer id
	clock   state.Clock
	// The latest lastTimestamp of an expired entry: the genesis
	// checkpoint records state.Horizon of it, not the import clock, so
	// that its bytes depend on its state only.
	latestExpired int64
	anyExpired    bool
	// epochs are the leader-epoch-checkpoint's entries the batches do not
	// give, with the batch entries between them (epochMerge.seed): the
	// genesis checkpoint holds them too (docs/kafka-retention-rules.md
	// §14.1). rep is nil when only they, and no snapshot, need one.
	epochs []state.EpochEntry
}

// chooseSnapshot reads the newest snapshot at or below start, checks it
// (version 1, CRC-32C, exact length: kafka.ReadSnapshot) and drops the
// producers expired at clock. nil: no snapshot applies, or
// opt.IgnoreSnapshots. A corrupt snapshot is exit 3 naming the file.
func chooseSnapshot(dir string, start int64, opt Options) (*hydration, []string, error) {
	snaps, err := listSnapshots(dir)
	if err != nil || len(snaps) == 0 {
		return nil, nil, err
	}
	if opt.IgnoreSnapshots {
		return nil, []string{fmt.Sprintf("--ignore-snapshots: %d producer snapshot files ignored; producers whose batches are gone are not imported", len(snaps))}, nil
	}
	pick := -1
	var skipped []string
	for i, s := range snaps {
		if s.offset <= start {
			pick = i
		}
	}
	for i, s := range snaps {
		switch {
		case i == pick:
		case s.offset > start:
			skipped = append(skipped, fmt.Sprintf("%s: above the first offset %d (the segments hold that state)", s.name, start))
		default:
			skipped = append(skipped, fmt.Sprintf("%s: a newer snapshot at or below %d is used", s.name, start))
		}
	}
	if pick < 0 {
		return nil, nil, nil
	}
	if start == 0 {
		// Nothing was ever deleted below offset 0: the segments hold
		// every producer (a snapshot there is empty on a broker).
		return nil, nil, nil
	}
	s := snaps[pick]
	data, err := readRegular(s.path, maxSnapshotBytes)
	if err != nil {
		return nil, nil, err
	}
	entries, err := kafka.ReadSnapshot(data)
	if err != nil {
		return nil, nil, errkind.MarkHint(fmt.Errorf("producer snapshot %s: %w", s.path, err), errkind.Corrupt,
			"the broker would delete this snapshot and fall back to an older one; --ignore-snapshots imports without producer snapshots (producers whose batches are gone are then lost)")
	}
	// The import clock; a library caller with none (zero Now) expires
	// nothing (cmd always passes one: import --now, default the wall
	// clock).
	exp := opt.ProducerIDExpirationMs
	if exp <= 0 {
		exp = state.DefaultProducerIDExpirationMs
	}
	var clock state.Clock
	if !opt.Now.IsZero() {
		clock = state.Clock{NowMs: opt.Now.UnixMilli(), ExpirationMs: exp}
	}
	seen := map[int64]bool{}
	h := &hydration{clock: clock, rep: &SnapshotReport{File: s.name, Offset: s.offset, Entries: len(entries),
		Clock: clockText(clock), ExpirationMs: exp, Skipped: append([]string{}, skipped...)}}
	for _, e := range entries {
		if seen[e.ProducerID] {
			return nil, nil, errkind.Hint(fmt.Errorf("producer snapshot %s: producer %d appears twice: %w", s.path, e.ProducerID, kafka.ErrCorrupt),
				"--ignore-snapshots imports without producer snapshots")
		}
		seen[e.ProducerID] = true
		if e.CurrentTxnFirstOffset >= 0 && (e.CurrentTxnFirstOffset > s.offset || e.LastOffset >= s.offset) {
			return nil, nil, errkind.Hint(fmt.Errorf("producer snapshot %s: producer %d's transaction at %d (last offset %d) is not below the snapshot offset %d: %w", s.path, e.ProducerID, e.CurrentTxnFirstOffset, e.LastOffset, s.offset, kafka.ErrCorrupt),
				"--ignore-snapshots imports without producer snapshots")
		}
		if clock.IsProducerExpired(producerOf(e)) {
			h.rep.Expired++
			if !h.anyExpired || e.Timestamp > h.latestExpired {
				h.latestExpired, h.anyExpired = e.Timestamp, true
			}
			continue
		}
		h.entries = append(h.entries, e)
	}
	kafka.SortSnapshotEntries(h.entries)
	h.rep.Producers = len(h.entries)
	return h, nil, nil
}

// clockText is the clock as RFC3339 ("" when unset: no expiration).
func clockText(c state.Clock) string {
	if !c.Set() {
		return ""
	}
	return c.Time().Format(time.RFC3339Nano)
}

// producerOf is ProducerStateManager.readSnapshot's ProducerStateEntry: one
// batch when lastOffset >= 0, currentTxnFirstOffset when >= 0.
func producerOf(e kafka.SnapshotEntry) *state.Producer {
	pr := &state.Producer{ID: e.ProducerID, Epoch: e.Epoch, CoordinatorEpoch: e.CoordinatorEpoch, LastTimestamp: e.Timestamp, TxnFirstOffset: -1}
	if e.CurrentTxnFirstOffset >= 0 {
		pr.TxnFirstOffset = e.CurrentTxnFirstOffset
	}
	if e.LastOffset >= 0 {
		pr.Batches = []state.BatchMeta{{LastSeq: e.LastSequence, LastOffset: e.LastOffset, OffsetDelta: e.OffsetDelta, Timestamp: e.Timestamp}}
	}
	return pr
}

// seed is the state at start with the hydrated producers
// (ProducerStateManager.loadProducerEntry: the producer, and its ongoing
// transaction).
func (h *hydration) seed(start int64) *state.Partition {
	p := state.New(start)
	if h == nil {
		return p
	}
	p.Epochs = append([]state.EpochEntry(nil), h.epochs...)
	for _, e := range h.entries {
		pr := producerOf(e)
		p.Producers[pr.ID] = pr
		if pr.TxnFirstOffset >= 0 {
			p.Ongoing[pr.TxnFirstOffset] = state.Txn{ProducerID: pr.ID, FirstOffset: pr.TxnFirstOffset}
		}
	}
	return p
}

// emptyPlan is the plan of a partition directory with no segment file
// but a producer snapshot: an empty log at start (Kafka's LogLoader opens
// an empty active segment at the log start).
func emptyPlan(start int64) *plan {
	sum := sha256.Sum256(nil)
	return &plan{start: start, dataEnd: start, kafkaEnd: start, digest: hex.EncodeToString(sum[:]), part: state.New(start), carried: map[int32]bool{}}
}

// emptyStart is where an import with no segment file starts: the highest
// offset the broker recorded for the partition (log-start-offset-,
// recovery-point-offset- and replication-offset-checkpoint next to the
// directory) or named a producer snapshot by, so that no offset the broker
// handed out is handed out again. Kafka's LogLoader opens the empty active
// segment at the log start; when its segment file is gone too, these are
// the only witnesses of where the log ended.
func emptyStart(dir, topic string, partition int32) (int64, error) {
	start := int64(0)
	for _, name := range []string{"log-start-offset-checkpoint", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"} {
		path := filepath.Join(filepath.Dir(dir), name)
		b, err := readOptional(path)
		if err != nil {
			return 0, err
		}
		if b == nil {
			continue
		}
		m, err := parseOffsetCheckpoint(b)
		if err != nil {
			return 0, refused("%s: %v", path, err)
		}
		start = max(start, m[tpKey{topic, partition}])
	}
	snaps, err := listSnapshots(dir)
	if err != nil {
		return 0, err
	}
	for _, sn := range snaps {
		start = max(start, sn.offset)
	}
	return start, nil
}

// writeGenesis publishes the genesis checkpoint: the state at the stream's
// first offset with the hydrated producers and the leader epochs only the
// leader-epoch-checkpoint gives, anchored there with no anchor object,
// recording the import clock. IfAbsent: a resumed import finds the same
// bytes under the same key. It returns the key ("" when none is needed).
func (h *hydration) writeGenesis(ctx context.Context, st store.Store, b *layout.Binding, start int64) (string, error) {
	if h == nil || (len(h.entries) == 0 && len(h.epochs) == 0) {
		return "", nil
	}
	hd, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return "", err
	}
	var clock *state.Clock
	if hz := state.Horizon(h.latestExpired, h.clock.ExpirationMs); h.anyExpired && hz.Set() {
		clock = &hz
	}
	cp := &nkc1.Checkpoint{
		Anchor: nkc1.Anchor{StreamID: b.StreamID, TopicID: b.TopicID, Topic: b.Topic, Partition: b.Partition,
			Offset: start, HeadEpoch: hd.Epoch, LogStart: start},
		State:    h.seed(start),
		Coverage: nkc1.Coverage{LogStart: start, Anchor: start, Sources: []layout.SourceRef{}},
		Binding:  nkc1.BindingRef{Key: layout.BindingKey(b.Topic, b.Partition), Version: b.Version},
		Clock:    clock,
	}
	data, root, err := nkc1.Encode(cp)
	if err != nil {
		return "", fmt.Errorf("genesis checkpoint: %w", err)
	}
	key := layout.CheckpointKey(b.StreamID, start, root)
	if _, err := st.Put(ctx, key, data, store.IfAbsent()); err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
		return "", fmt.Errorf("publish genesis checkpoint %s: %w", key, err)
	}
	if h.rep != nil && len(h.entries) > 0 {
		h.rep.Checkpoint = key
	}
	return key, nil
}

// hydrateAndAnalyze chooses the producer snapshot at or below the stream's
// first offset and runs analyze on the state it seeds (or plans an empty
// log when there is no segment file).
func hydrateAndAnalyze(dir, topic string, partition int32, segs []segmentFile, res *Result, opt Options) (*plan, error) {
	start := int64(0)
	if len(segs) > 0 {
		start = segs[0].base
	} else {
		var err error
		if start, err = emptyStart(dir, topic, partition); err != nil {
			return nil, err
		}
	}
	hyd, notes, err := chooseSnapshot(dir, start, opt)
	if err != nil {
		return nil, err
	}
	res.Notes = append(res.Notes, notes...)
	opt.hyd = hyd
	var p *plan
	if len(segs) == 0 {
		p = emptyPlan(start)
		p.part = hyd.seed(start)
		res.Notes = append(res.Notes, fmt.Sprintf("no segment file: the log is empty at offset %d, the highest offset the broker's checkpoint files and snapshot names record", start))
	} else if p, err = analyze(segs, res, opt, res.RecoveryPoint); err != nil {
		return nil, err
	}
	p.hyd = hyd
	if hyd != nil {
		res.Snapshot = hyd.rep
	}
	return p, nil
}
