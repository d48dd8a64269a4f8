package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

// Producer snapshots at import, as Kafka's log loader uses them
// (docs/kafka-retention-rules.md §16.1; Apache Kafka, storage/.../log/
// LogLoader.java, ProducerStateManager.java, UnifiedLog.java):
//
//  1. the log start is max(log-start-offset-checkpoint, first segment
//     base) (LogLoader.load);
//  2. a snapshot not at a segment base is deleted, except the largest such
//     one when it is at or above the largest segment base, the snapshot a
//     clean shutdown writes at the log end
//     (ProducerStateManager.removeStraySnapshots);
//  3. a snapshot at or below the log start, or above the log end, is
//     deleted (ProducerStateManager.truncateAndReload);
//  4. the newest remaining snapshot is read; a corrupt one is deleted and
//     the next newest tried (loadFromSnapshot, readSnapshot); the
//     producers expired at the load clock are not loaded
//     (isProducerExpired); without a snapshot the producer state starts
//     empty at the log start;
//  5. only the segments from there to the log end are replayed
//     (UnifiedLog.rebuildProducerState: from max(segment base, map end,
//     log start), LogSegment.read starting at the batch holding it);
//  6. an open transaction of the snapshot keeps its first offset, below
//     the log start too (loadProducerEntry); the first unstable offset is
//     clamped to the log start (state.FirstUnstableOffset).
//
// The import does the same at its clock (import --now): the state the
// loader rebuilds is written as the stream's genesis checkpoint, anchored
// where the replay starts, and the binding names it (import.genesis): a
// full replay starts from it as the broker does from the snapshot, the
// checkpoint path as from any checkpoint, so every replay agrees.

// maxSnapshotBytes caps one .snapshot file (46 bytes a producer: over 23
// million producers).
const maxSnapshotBytes = 1 << 30

// maxDisagreementsListed bounds the snapshot disagreements a report lists;
// all are counted.
const maxDisagreementsListed = 100

// SnapshotReport says what the partition's producer snapshots gave the
// import (nil in the report when the directory has none).
type SnapshotReport struct {
	// File is the snapshot Kafka's loader uses ("" when none survives its
	// rules), Offset the offset it was taken at.
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	// ReplayFrom is where the loader starts replaying the segments: the
	// snapshot's offset, or the log start without a snapshot; the segments
	// below it give no producer state (the snapshot is their authority).
	ReplayFrom int64 `json:"replay_from"`
	// Entries is the number of producers in the file; Expired those
	// dropped at the import clock; Producers those loaded (Entries −
	// Expired).
	Entries   int `json:"entries"`
	Expired   int `json:"expired"`
	Producers int `json:"producers"`
	// Clock is the import clock (RFC3339) and ExpirationMs
	// producer.id.expiration.ms.
	Clock        string `json:"clock"`
	ExpirationMs int64  `json:"producer_id_expiration_ms"`
	// Checkpoint is the genesis checkpoint that holds the loaded state (""
	// on a dry run, or when the segments alone give the same producers).
	Checkpoint string `json:"checkpoint"`
	// Ignored lists every other snapshot file and the rule of Kafka's
	// loader that discards it; Skipped is the same as "file: reason" lines.
	Ignored []IgnoredSnapshot `json:"ignored"`
	Skipped []string          `json:"skipped"`
	// Disagreements lists where the snapshot and the segments below its
	// offset (which it covers) say different things of a producer: the
	// snapshot is imported, as Kafka's loader does (first 100;
	// DisagreementsTotal counts all).
	Disagreements      []SnapshotDisagreement `json:"disagreements"`
	DisagreementsTotal int                    `json:"disagreements_total"`
}

// IgnoredSnapshot is a snapshot file Kafka's loader would not use.
type IgnoredSnapshot struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
}

// ProducerView is a producer as a snapshot entry holds it: the epoch, the
// last batch, the coordinator epoch and the open transaction's first
// offset (-1 none).
type ProducerView struct {
	Epoch                 int16 `json:"epoch"`
	LastSequence          int32 `json:"last_sequence"`
	LastOffset            int64 `json:"last_offset"`
	OffsetDelta           int32 `json:"offset_delta"`
	Timestamp             int64 `json:"timestamp"`
	CoordinatorEpoch      int32 `json:"coordinator_epoch"`
	CurrentTxnFirstOffset int64 `json:"current_txn_first_offset"`
}

// SnapshotDisagreement is one producer the snapshot and the segments it
// covers describe differently; a nil side has no such producer.
type SnapshotDisagreement struct {
	ProducerID int64         `json:"producer_id"`
	Snapshot   *ProducerView `json:"snapshot"`
	Segments   *ProducerView `json:"segments"`
	Reason     string        `json:"reason"`
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

// snapshotCuts are the offsets where the loader may start replaying: every
// snapshot's offset and the log start (the log-start-offset-checkpoint's
// entry, when above the first segment). The stream's objects are cut
// there, so that the genesis checkpoint can be anchored at an object
// boundary (analyze's points).
func snapshotCuts(dir, topic string, partition int32, opt Options) ([]int64, error) {
	var cuts []int64
	if !opt.IgnoreSnapshots {
		snaps, err := listSnapshots(dir)
		if err != nil {
			return nil, err
		}
		for _, s := range snaps {
			cuts = append(cuts, s.offset)
		}
	}
	b, err := readOptional(filepath.Join(filepath.Dir(dir), "log-start-offset-checkpoint"))
	if err != nil || b == nil {
		return cuts, err
	}
	if m, err := parseOffsetCheckpoint(b); err == nil {
		if v, ok := m[tpKey{topic, partition}]; ok && v > 0 {
			cuts = append(cuts, v)
		}
	}
	return cuts, nil
}

// loaderChoice is what Kafka's loader does with the partition's
// snapshots: the one it loads (none: the producer state starts empty at
// the log start), the producers it loads at the clock, and where it starts
// replaying the segments.
type loaderChoice struct {
	rep     *SnapshotReport // nil: the directory has no snapshot file
	used    bool
	from    int64                 // the snapshot's offset, or the log start
	entries []kafka.SnapshotEntry // as read (used only)
	loaded  []kafka.SnapshotEntry // not expired at the clock, by producer id
	clock   state.Clock
	// The latest lastTimestamp of an expired entry: the genesis checkpoint
	// records state.Horizon of it, not the import clock, so that its bytes
	// depend on its state only.
	latestExpired int64
	anyExpired    bool
}

// chooseSnapshot applies steps 2 to 4 of Kafka's loader to the
// partition's snapshot files, with logStart and logEnd (Kafka's log end
// offset: the data's end or an empty last segment's base) and the segment
// bases of the files kept. A snapshot that fails its checks is reported
// and the next newest tried, as loadFromSnapshot does after a
// CorruptSnapshotException; so is one that describes offsets it cannot
// cover (an open transaction or a last offset at or above its own
// offset) or a producer twice, which Kafka would load as it comes.
func chooseSnapshot(dir string, bases []int64, logStart, logEnd int64, opt Options) (*loaderChoice, error) {
	ch := &loaderChoice{from: logStart}
	snaps, err := listSnapshots(dir)
	if err != nil || len(snaps) == 0 {
		return ch, err
	}
	exp := opt.ProducerIDExpirationMs
	if exp <= 0 {
		exp = state.DefaultProducerIDExpirationMs
	}
	// The import clock; a library caller with none (zero Now) expires
	// nothing (cmd always passes one: import --now, default the wall
	// clock).
	if !opt.Now.IsZero() {
		ch.clock = state.Clock{NowMs: opt.Now.UnixMilli(), ExpirationMs: exp}
	}
	rep := &SnapshotReport{ReplayFrom: logStart, Clock: clockText(ch.clock), ExpirationMs: exp,
		Ignored: []IgnoredSnapshot{}, Skipped: []string{}, Disagreements: []SnapshotDisagreement{}}
	ch.rep = rep
	ignore := func(s snapshotFile, reason string) {
		rep.Ignored = append(rep.Ignored, IgnoredSnapshot{File: s.name, Offset: s.offset, Reason: reason})
		rep.Skipped = append(rep.Skipped, s.name+": "+reason)
	}
	if opt.IgnoreSnapshots {
		for _, s := range snaps {
			ignore(s, "--ignore-snapshots: the producer state is rebuilt from the log start, as Kafka's loader does without a snapshot")
		}
		return ch, nil
	}
	isBase := map[int64]bool{}
	maxBase := int64(-1)
	for _, b := range bases {
		isBase[b] = true
		maxBase = max(maxBase, b)
	}
	// removeStraySnapshots: of the snapshots not at a segment base, only
	// the largest survives, and only at or above the largest base.
	stray := -1
	for i, s := range snaps {
		if !isBase[s.offset] {
			stray = i
		}
	}
	var cands []snapshotFile
	for i, s := range snaps {
		switch {
		case !isBase[s.offset] && (i != stray || (maxBase >= 0 && s.offset < maxBase)):
			ignore(s, fmt.Sprintf("not at a segment base, and not the largest such snapshot at or above the last segment base %d (ProducerStateManager.removeStraySnapshots deletes it)", maxBase))
		case s.offset <= logStart:
			ignore(s, fmt.Sprintf("at or below the log start %d (ProducerStateManager.truncateAndReload deletes it)", logStart))
		case s.offset > logEnd:
			ignore(s, fmt.Sprintf("above the log end offset %d (ProducerStateManager.truncateAndReload deletes it)", logEnd))
		default:
			cands = append(cands, s)
		}
	}
	// loadFromSnapshot: newest first; a corrupt one is deleted and the
	// next tried.
	for i := len(cands) - 1; i >= 0; i-- {
		s := cands[i]
		if ch.used {
			ignore(s, fmt.Sprintf("older than %s, the newest snapshot, which the loader uses (loadFromSnapshot)", rep.File))
			continue
		}
		data, err := readRegular(s.path, maxSnapshotBytes)
		if err != nil {
			return nil, err
		}
		entries, err := readSnapshot(data, s.offset)
		if err != nil {
			ignore(s, fmt.Sprintf("corrupt (%v): the loader deletes it and tries the next newest (loadFromSnapshot, CorruptSnapshotException)", err))
			continue
		}
		ch.used, ch.from, ch.entries = true, s.offset, entries
		rep.File, rep.Offset, rep.ReplayFrom, rep.Entries = s.name, s.offset, s.offset, len(entries)
		for _, e := range entries {
			if ch.clock.IsProducerExpired(producerOf(e)) {
				rep.Expired++
				if !ch.anyExpired || e.Timestamp > ch.latestExpired {
					ch.latestExpired, ch.anyExpired = e.Timestamp, true
				}
				continue
			}
			ch.loaded = append(ch.loaded, e)
		}
		kafka.SortSnapshotEntries(ch.loaded)
		rep.Producers = len(ch.loaded)
	}
	return ch, nil
}

// readSnapshot is kafka.ReadSnapshot plus what a snapshot at offset
// cannot say: a producer twice, an open transaction or a last offset at
// or above its own offset.
func readSnapshot(data []byte, offset int64) ([]kafka.SnapshotEntry, error) {
	entries, err := kafka.ReadSnapshot(data)
	if err != nil {
		return nil, err
	}
	seen := map[int64]bool{}
	for _, e := range entries {
		if seen[e.ProducerID] {
			return nil, fmt.Errorf("producer %d appears twice: %w", e.ProducerID, kafka.ErrCorrupt)
		}
		seen[e.ProducerID] = true
		if e.CurrentTxnFirstOffset >= offset || e.LastOffset >= offset {
			return nil, fmt.Errorf("producer %d's last offset %d or open transaction at %d is not below the snapshot's offset %d: %w", e.ProducerID, e.LastOffset, e.CurrentTxnFirstOffset, offset, kafka.ErrCorrupt)
		}
	}
	return entries, nil
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

// loadProducers is the producer state after loadFromSnapshot: the loaded
// entries (ProducerStateManager.loadProducerEntry: the producer, and its
// ongoing transaction at its first offset).
func loadProducers(entries []kafka.SnapshotEntry) (map[int64]*state.Producer, map[int64]state.Txn) {
	prs, ongoing := map[int64]*state.Producer{}, map[int64]state.Txn{}
	for _, e := range entries {
		pr := producerOf(e)
		prs[pr.ID] = pr
		if pr.TxnFirstOffset >= 0 {
			ongoing[pr.TxnFirstOffset] = state.Txn{ProducerID: pr.ID, FirstOffset: pr.TxnFirstOffset}
		}
	}
	return prs, ongoing
}

// sameProducers reports whether part holds exactly prs and ongoing.
func sameProducers(part *state.Partition, prs map[int64]*state.Producer, ongoing map[int64]state.Txn) bool {
	if len(part.Producers) != len(prs) || !maps.Equal(part.Ongoing, ongoing) {
		return false
	}
	for id, a := range part.Producers {
		b, ok := prs[id]
		if !ok || a.ID != b.ID || a.Epoch != b.Epoch || a.CoordinatorEpoch != b.CoordinatorEpoch || a.LastTimestamp != b.LastTimestamp ||
			a.TxnFirstOffset != b.TxnFirstOffset || !slices.Equal(a.Batches, b.Batches) {
			return false
		}
	}
	return true
}

func viewOfEntry(e kafka.SnapshotEntry) *ProducerView {
	return &ProducerView{Epoch: e.Epoch, LastSequence: e.LastSequence, LastOffset: e.LastOffset, OffsetDelta: e.OffsetDelta,
		Timestamp: e.Timestamp, CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnFirstOffset: e.CurrentTxnFirstOffset}
}

func viewOfProducer(pr *state.Producer) *ProducerView {
	return &ProducerView{Epoch: pr.Epoch, LastSequence: pr.LastSeq(), LastOffset: pr.LastOffset(), OffsetDelta: pr.LastOffsetDelta(),
		Timestamp: pr.LastTimestamp, CoordinatorEpoch: pr.CoordinatorEpoch, CurrentTxnFirstOffset: pr.TxnFirstOffset}
}

// disagreements compares the snapshot with plain, the state the segments
// below its offset give on their own: a producer both hold differently,
// one the snapshot lists whose last offset the segments hold but no batch
// of it, one the segments give from the log start on that the snapshot
// does not list (a broker that expired it before taking the snapshot, or
// a stale snapshot). Producers whose batches are gone (below the stream's
// first batch) are what the snapshot is for, not a disagreement.
func (p *plan) disagreements(ch *loaderChoice, plain *state.Partition, logStart int64) {
	if !ch.used {
		return
	}
	add := func(d SnapshotDisagreement) {
		ch.rep.DisagreementsTotal++
		if len(ch.rep.Disagreements) < maxDisagreementsListed {
			ch.rep.Disagreements = append(ch.rep.Disagreements, d)
		}
	}
	inSnap := map[int64]bool{}
	sorted := slices.Clone(ch.entries)
	kafka.SortSnapshotEntries(sorted)
	for _, e := range sorted {
		inSnap[e.ProducerID] = true
		sv := viewOfEntry(e)
		if pr := plain.Producers[e.ProducerID]; pr != nil {
			if pv := viewOfProducer(pr); *pv != *sv {
				add(SnapshotDisagreement{ProducerID: e.ProducerID, Snapshot: sv, Segments: pv,
					Reason: fmt.Sprintf("the segments below offset %d end producer %d otherwise than the snapshot taken there; the snapshot is imported, as Kafka's loader does", ch.from, e.ProducerID)})
			}
			continue
		}
		if e.LastOffset >= 0 && coveredIn(p.covered, e.LastOffset, e.LastOffset+1) {
			add(SnapshotDisagreement{ProducerID: e.ProducerID, Snapshot: sv,
				Reason: fmt.Sprintf("the snapshot puts producer %d's last batch at offset %d, which the segments hold, but no batch of that producer; the snapshot is imported", e.ProducerID, e.LastOffset)})
		}
	}
	for _, pr := range plain.SortedProducers() {
		if inSnap[pr.ID] || pr.LastOffset() < logStart {
			continue
		}
		add(SnapshotDisagreement{ProducerID: pr.ID, Segments: viewOfProducer(pr),
			Reason: fmt.Sprintf("the segments give producer %d (last offset %d) below offset %d, the snapshot taken there does not list it (the broker had expired it, or the snapshot is stale); not imported, as Kafka's loader does", pr.ID, pr.LastOffset(), ch.from)})
	}
}

// genesisState is the state the stream's genesis checkpoint holds, at
// its anchor (an object boundary, state.NextOffset).
type genesisState struct {
	anchor int64
	state  *state.Partition
	clock  *state.Clock
	// producers: it holds the loader's producers (not only leader epochs
	// or leading empty segments).
	producers bool
}

// seedState is the state the stream starts from before any batch: the
// leader epochs only the leader-epoch-checkpoint gives (seed), the
// segments without batches before the first batch and the roll to the
// first segment with batches, which no manifest records.
func (p *plan) seedState(seed []state.EpochEntry) (*state.Partition, error) {
	s := state.New(p.start)
	s.Epochs = slices.Clone(seed)
	for _, e := range p.leading {
		if err := s.AddEmptySegment(e.Base, e.End, e.LastModifiedMs); err != nil {
			return nil, err
		}
	}
	if p.leadingRoll >= 0 {
		if err := s.Roll(p.leadingRoll); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// loaderState makes p.part the state Kafka's log loader rebuilds from the
// segments and ch (steps 5 and 6): the batches' state below the replay
// point with the loaded producers in place of the ones they give, then
// the batches from the replay point on. It decides the genesis checkpoint
// (p.genesis): anchored at the replay point when the loaded producers
// differ from the batches', else at the first offset when the seed
// epochs or leading empty segments need one, else none. seed is the
// leader-epoch-checkpoint's share of the cache (mergeEpochFile).
func (p *plan) loaderState(ch *loaderChoice, seed []state.EpochEntry, logStart int64, opt Options) error {
	from, ok := p.points[ch.from]
	if !ok {
		from = p.dataEnd
		if ch.from <= p.start {
			from = p.start
		}
	}
	prs, ongoing := loadProducers(ch.loaded)
	var horizon *state.Clock
	if hz := state.Horizon(ch.latestExpired, ch.clock.ExpirationMs); ch.anyExpired && hz.Set() {
		horizon = &hz
	}
	swap := func(part *state.Partition) bool {
		p.disagreements(ch, part, logStart)
		if sameProducers(part, prs, ongoing) {
			return false
		}
		part.Producers, part.Ongoing = maps.Clone(prs), maps.Clone(ongoing)
		for id, pr := range part.Producers {
			c := *pr
			c.Batches = slices.Clone(pr.Batches)
			part.Producers[id] = &c
		}
		return true
	}
	needSeed := len(seed) > 0 || len(p.leading) > 0 || p.leadingRoll >= 0
	switch {
	case from >= p.dataEnd:
		// The replay point is the end of the data (the snapshot a clean
		// shutdown wrote at the log end): nothing is replayed after it.
		if swap(p.part) {
			p.genesis = &genesisState{anchor: p.dataEnd, state: p.part.Clone(), clock: horizon, producers: true}
			return nil
		}
	case len(prs) == 0 && (from <= p.start || len(p.part.Producers) == 0):
		// No producer is loaded, and none is given by the batches below
		// the replay point: the batches' own state is the loader's.
		p.disagreements(ch, state.New(p.start), logStart)
	default:
		var g *genesisState
		s, err := p.seedState(seed)
		if err != nil {
			return err
		}
		part, err := p.derive(s, from, opt, func(at *state.Partition) {
			if swap(at) {
				g = &genesisState{anchor: at.NextOffset, state: at.Clone(), clock: horizon, producers: true}
			}
		})
		if err != nil {
			return err
		}
		p.part = part
		if g != nil {
			p.genesis = g
			return nil
		}
	}
	if needSeed {
		s, err := p.seedState(seed)
		if err != nil {
			return err
		}
		p.genesis = &genesisState{anchor: p.start, state: s}
	}
	return nil
}

// derive re-reads the kept bytes of every segment and applies them to
// start as a replay of the imported stream does (the same objects, seals,
// empty segments and rolls in the same order), calling at with the state
// before the first object reaching past from (or at the end).
func (p *plan) derive(start *state.Partition, from int64, opt Options, at func(*state.Partition)) (*state.Partition, error) {
	part := start
	done := false
	for i := range p.segs {
		sp := &p.segs[i]
		if len(sp.objects) == 0 {
			continue
		}
		data, err := p.storedBytes(sp, opt)
		if err != nil {
			return nil, err
		}
		for _, po := range sp.objects {
			if !done && po.next > from {
				at(part)
				done = true
			}
			sc := kafka.NewScanner(data[po.start:po.end])
			for sc.Next() {
				bt := stream.Batch{Header: sc.Header(), Raw: sc.Batch(), Object: layout.StreamObject{Key: sp.file.name, Base: po.base}, Pos: sc.Pos()}
				if err := recovery.ApplyBatch(part, bt); err != nil {
					return nil, fmt.Errorf("%s: %w", sp.file.path, err)
				}
			}
			if err := sc.Err(); err != nil {
				return nil, fmt.Errorf("%s: %w", sp.file.path, err)
			}
		}
		if sp.gen >= 0 {
			if err := part.Seal(sp.gen, sp.objects[len(sp.objects)-1].next); err != nil {
				return nil, fmt.Errorf("%s: %w", sp.file.path, err)
			}
			for _, e := range sp.empties {
				if err := part.AddEmptySegment(e.Base, e.End, e.LastModifiedMs); err != nil {
					return nil, fmt.Errorf("%s: %w", sp.file.path, err)
				}
			}
			if sp.hasNext {
				if err := part.Roll(sp.nextBase); err != nil {
					return nil, fmt.Errorf("%s: %w", sp.file.path, err)
				}
			}
		}
	}
	if !done {
		at(part)
	}
	return part, nil
}

// storedBytes reads a segment's kept bytes again and checks that they are
// the bytes pass 1 read.
func (p *plan) storedBytes(sp *segPlan, opt Options) ([]byte, error) {
	data, err := readRegular(sp.file.path, opt.MaxSegmentBytes)
	if err != nil {
		return nil, err
	}
	if len(data) < sp.kept {
		return nil, fmt.Errorf("%s changed since it was read: %d bytes, %d expected", sp.file.path, len(data), sp.kept)
	}
	data = data[:sp.kept]
	if s := sha256.Sum256(data); string(s[:]) != string(sp.sum) {
		return nil, fmt.Errorf("%s changed since it was read; stop the broker and import again", sp.file.path)
	}
	if !sp.legacy {
		return data, nil
	}
	// Legacy message sets are stored up-converted: the same conversion
	// (deterministic) as pass 1's.
	out := make([]byte, 0, sp.stored)
	sc := kafka.NewLogScanner(data, kafka.DefaultLimits())
	for sc.Next() {
		out = append(out, sc.Batch()...)
	}
	if err := sc.Err(); err != nil || len(out) != sp.stored {
		return nil, fmt.Errorf("%s: up-converting its legacy message sets again gave %d bytes (%v), %d the first time", sp.file.path, len(out), err, sp.stored)
	}
	return out, nil
}

// emptyPlan is the plan of a partition directory with no segment file
// but a producer snapshot: an empty log at start (Kafka's LogLoader opens
// an empty active segment at the log start).
func emptyPlan(start int64) *plan {
	sum := sha256.Sum256(nil)
	return &plan{start: start, dataEnd: start, kafkaEnd: start, digest: hex.EncodeToString(sum[:]), part: state.New(start),
		carried: map[int32]bool{}, leadingRoll: -1, points: map[int64]int64{}}
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

// writeGenesis publishes the genesis checkpoint (p.genesis): anchored at
// its offset with the object ending there (none at the stream's first
// offset), the sealed generations its state holds as its sources, and the
// canonical clock of what the loader expired. IfAbsent: a resumed import
// finds the same bytes under the same key. It returns the reference the
// binding records (nil when there is no genesis).
func (p *plan) writeGenesis(ctx context.Context, st store.Store, b *layout.Binding) (*layout.CheckpointRef, error) {
	g := p.genesis
	if g == nil {
		return nil, nil
	}
	hd, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return nil, err
	}
	a := nkc1.Anchor{StreamID: b.StreamID, TopicID: b.TopicID, Topic: b.Topic, Partition: b.Partition,
		Offset: g.anchor, HeadEpoch: hd.Epoch, LogStart: g.state.LogStart}
	if g.anchor > p.start {
		for i := range p.segs {
			for _, po := range p.segs[i].objects {
				if po.next == g.anchor {
					a.ObjectKey = layout.ObjectKey(b.StreamID, po.base, po.next)
					a.ObjectSHA256 = p.objSHA[po.next]
				}
			}
		}
		if a.ObjectKey == "" || a.ObjectSHA256 == "" {
			return nil, fmt.Errorf("genesis checkpoint at %d: no object of the import ends there", g.anchor)
		}
	}
	srcs := []nkc1.SourceRef{}
	for _, sg := range g.state.Segments {
		if sg.Open() || sg.Empty() {
			continue
		}
		_, sum, err := layout.LoadGeneration(ctx, st, b.StreamID, sg.Gen)
		if err != nil {
			return nil, fmt.Errorf("genesis checkpoint: %w", err)
		}
		srcs = append(srcs, nkc1.SourceRef{Gen: sg.Gen, ManifestSHA256: sum})
	}
	cp := &nkc1.Checkpoint{
		Anchor:   a,
		State:    g.state,
		Coverage: nkc1.Coverage{LogStart: g.state.LogStart, Anchor: g.anchor, Sources: srcs},
		Binding:  nkc1.BindingRef{Key: layout.BindingKey(b.Topic, b.Partition), Version: b.Version},
		Clock:    g.clock,
	}
	data, root, err := nkc1.Encode(cp)
	if err != nil {
		return nil, fmt.Errorf("genesis checkpoint: %w", err)
	}
	key := layout.CheckpointKey(b.StreamID, g.anchor, root)
	if _, err := st.Put(ctx, key, data, store.IfAbsent()); err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
		return nil, fmt.Errorf("publish genesis checkpoint %s: %w", key, err)
	}
	return &layout.CheckpointRef{Key: key, SHA256: store.SHA256Of(data), Anchor: g.anchor}, nil
}
