package importer

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/state"
)

// Outcomes of the leader-epoch comparison.
const (
	// EpochsMatch: the checkpoint and the replay agree entry for entry.
	EpochsMatch = "match"
	// EpochsExplained: they differ only where the data no longer holds the
	// batches that opened an epoch (compaction, deleted records) or where an
	// epoch starts at the log end with no batch yet.
	EpochsExplained = "explained"
	// EpochsDiffer: the data contradicts the checkpoint.
	EpochsDiffer = "differ"
	// EpochsNoCheckpoint: the partition has no leader-epoch-checkpoint.
	EpochsNoCheckpoint = "no-checkpoint"
	// EpochsUnreadable: the leader-epoch-checkpoint could not be parsed.
	EpochsUnreadable = "unreadable"
)

// EpochCheck compares the partition's leader-epoch-checkpoint with the
// leader epochs the batches' partitionLeaderEpoch give (the recovery rule
// of LogSegment.recover), and says what the imported state holds.
type EpochCheck struct {
	Status     string             `json:"status"`
	Checkpoint []state.EpochEntry `json:"checkpoint"`
	Derived    []state.EpochEntry `json:"derived"`
	// Source says where Derived came from: the batches'
	// partitionLeaderEpoch, read with LogSegment.recover's rule.
	Source string   `json:"source"`
	Notes  []string `json:"notes"`
	// Imported is the leader-epoch cache of the imported state (the
	// replay of the written stream): the file where the batches are gone,
	// the batches for the rest (docs/kafka-retention-rules.md §14.1).
	// FromFile counts its entries that came from the file and not from
	// the batches.
	Imported []state.EpochEntry `json:"imported"`
	FromFile int                `json:"from_file"`
	// Disagreements lists every epoch the file and the batches start
	// differently (or only one of them has), with what was imported.
	Disagreements []EpochDisagreement `json:"disagreements"`
	// GenesisCheckpoint is the checkpoint at the stream's first offset
	// that holds the file's entries, so that every replay sees them (""
	// when the file gave none, or on a dry run).
	GenesisCheckpoint string `json:"genesis_checkpoint"`
}

// compareEpochs checks derived against the checkpoint entries. Kafka
// truncates its cache from the log start when it loads a log, so the
// checkpoint is first truncated the same way. Where the two differ, a
// difference is explained when no batch holds an offset between the
// checkpoint's start of an epoch and the first batch that carries it.
func compareEpochs(ckpt []kafka.EpochEntry, derived []state.EpochEntry, logStart, head int64, covered []offRange) EpochCheck {
	c := EpochCheck{Checkpoint: []state.EpochEntry{}, Derived: append([]state.EpochEntry{}, derived...), Notes: []string{}}
	norm := &state.Partition{}
	for _, e := range ckpt {
		c.Checkpoint = append(c.Checkpoint, state.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
		norm.Epochs = append(norm.Epochs, state.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	norm.TruncateEpochsFromStart(logStart)
	if !slices.Equal(norm.Epochs, c.Checkpoint) {
		c.Notes = append(c.Notes, fmt.Sprintf("checkpoint truncated from the log start %d, as Kafka does when it loads the log: %s", logStart, epochsText(norm.Epochs)))
	}
	if slices.Equal(norm.Epochs, derived) {
		c.Status = EpochsMatch
		return c
	}
	differ := false
	seen := map[int32]bool{}
	for i, e := range norm.Epochs {
		seen[e.Epoch] = true
		next := int64(math.MaxInt64)
		if i+1 < len(norm.Epochs) {
			next = norm.Epochs[i+1].StartOffset
		}
		var d *state.EpochEntry
		for j := range derived {
			if derived[j].Epoch == e.Epoch {
				d = &derived[j]
				break
			}
		}
		switch {
		case d == nil && e.StartOffset >= head:
			c.Notes = append(c.Notes, fmt.Sprintf("epoch %d starts at %d, at or after the end of the data (%d): no batch carries it yet", e.Epoch, e.StartOffset, head))
		case d == nil && !coveredIn(covered, max(e.StartOffset, logStart), min(next, head)):
			c.Notes = append(c.Notes, fmt.Sprintf("epoch %d (from %d): no batch of it survives in [%d, %s): compacted away or deleted", e.Epoch, e.StartOffset, e.StartOffset, offText(next)))
		case d == nil:
			differ = true
			c.Notes = append(c.Notes, fmt.Sprintf("DIFFER: the checkpoint starts epoch %d at %d, but the batches in [%d, %s) carry other epochs", e.Epoch, e.StartOffset, e.StartOffset, offText(next)))
		case d.StartOffset == e.StartOffset:
		case d.StartOffset > e.StartOffset && d.StartOffset < next && !coveredIn(covered, e.StartOffset, d.StartOffset):
			c.Notes = append(c.Notes, fmt.Sprintf("epoch %d: the checkpoint starts it at %d, the first surviving batch is at %d; offsets [%d, %d) hold no batches (compacted away)",
				e.Epoch, e.StartOffset, d.StartOffset, e.StartOffset, d.StartOffset))
		default:
			differ = true
			c.Notes = append(c.Notes, fmt.Sprintf("DIFFER: the checkpoint starts epoch %d at %d, the data at %d", e.Epoch, e.StartOffset, d.StartOffset))
		}
	}
	for _, d := range derived {
		if !seen[d.Epoch] {
			differ = true
			c.Notes = append(c.Notes, fmt.Sprintf("DIFFER: the data carries epoch %d from offset %d; the checkpoint has no such epoch", d.Epoch, d.StartOffset))
		}
	}
	c.Status = EpochsExplained
	if differ {
		c.Status = EpochsDiffer
	}
	return c
}

func offText(o int64) string {
	if o == math.MaxInt64 {
		return "end"
	}
	return fmt.Sprint(o)
}

func epochsText(es []state.EpochEntry) string {
	if len(es) == 0 {
		return "none"
	}
	s := ""
	for i, e := range es {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset)
	}
	return s
}

// EpochsText renders epoch entries as "epoch@start, …".
func EpochsText(es []state.EpochEntry) string { return epochsText(es) }

// EpochDisagreement is one epoch where the leader-epoch-checkpoint and the
// batches' partitionLeaderEpoch disagree. A nil start: that side has no
// such epoch.
type EpochDisagreement struct {
	Epoch int32 `json:"epoch"`
	// FileStartOffset is the epoch's start in the leader-epoch-checkpoint
	// (loaded and truncated as Kafka's log loader does), BatchStartOffset
	// the base offset of the first batch that carries it.
	FileStartOffset  *int64 `json:"file_start_offset"`
	BatchStartOffset *int64 `json:"batch_start_offset"`
	// ImportedStartOffset is where the imported state's cache starts it.
	ImportedStartOffset *int64 `json:"imported_start_offset"`
	Reason              string `json:"reason"`
}

// epochMerge is the leader-epoch cache of the imported state and how it
// was made.
type epochMerge struct {
	// cache is the imported cache; seed its prefix up to the last entry
	// that came from the file: the genesis checkpoint holds it, and a
	// replay of the batches on top of it (LogSegment.recover's rule: only
	// an epoch above the latest is assigned) gives cache again.
	cache, seed   []state.EpochEntry
	fromFile      int
	disagreements []EpochDisagreement
}

// loadEpochFile is the cache Kafka's log loader holds before it recovers
// any segment: the leader-epoch-checkpoint's entries assigned one by one
// (the LeaderEpochFileCache constructor: checkpoint.read().forEach(assign)),
// then truncateFromEnd at the log end and truncateFromStart at the log
// start (LogLoader.load). end is the end of the data: the stream head
// cannot pass it, so an epoch starting there has no batch yet and Kafka's
// leader assigns it again with its next append.
func loadEpochFile(file []kafka.EpochEntry, start, end int64) []state.EpochEntry {
	c := &state.Partition{}
	for _, e := range file {
		c.AssignEpoch(e.Epoch, e.StartOffset)
	}
	c.TruncateEpochsFromEnd(end)
	c.TruncateEpochsFromStart(start)
	return c.Epochs
}

// mergeEpochs makes the imported leader-epoch cache with the
// leader-epoch-checkpoint as the authority where the batches are gone
// (docs/kafka-retention-rules.md §14.1). A file entry is used when it
// covers offsets below the first retained batch, when no batch carries
// its epoch, or when the batches that opened its epoch are gone (the first
// batch carrying it starts later and no batch lies in between); the
// batches give the rest. The two are merged in offset order with
// LogSegment.recover's rule: an entry is added only when its epoch is
// above the latest one (LeaderEpochFileCache.assign drops the entries it
// makes non-monotonic). batches is what the batches alone give, carried
// every epoch a batch carries, firstBatch the first batch's base offset.
func mergeEpochs(file []kafka.EpochEntry, batches []state.EpochEntry, carried map[int32]bool, start, firstBatch, end int64, covered []offRange) epochMerge {
	f := loadEpochFile(file, start, end)
	fileAt := map[int32]int64{}
	for _, e := range f {
		fileAt[e.Epoch] = e.StartOffset
	}
	batchAt := map[int32]int64{}
	for _, e := range batches {
		batchAt[e.Epoch] = e.StartOffset
	}
	type cand struct {
		e        state.EpochEntry
		fromFile bool
	}
	var cands []cand
	for _, e := range batches {
		cands = append(cands, cand{e, false})
	}
	for _, e := range f {
		bs, ok := batchAt[e.Epoch]
		switch {
		case ok && bs == e.StartOffset:
			// The batches give the same entry.
		case e.StartOffset < firstBatch, !carried[e.Epoch],
			ok && bs > e.StartOffset && !coveredIn(covered, e.StartOffset, bs):
			cands = append(cands, cand{e, true})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.e.StartOffset != b.e.StartOffset {
			return cmp.Compare(a.e.StartOffset, b.e.StartOffset)
		}
		return cmp.Compare(a.e.Epoch, b.e.Epoch)
	})
	var out []cand
	for _, c := range cands {
		if n := len(out); n > 0 && c.e.Epoch <= out[n-1].e.Epoch {
			continue // LogSegment.recover: not above the latest epoch
		}
		// LeaderEpochFileCache.maybeTruncateNonMonotonicEntries.
		for n := len(out); n > 0 && out[n-1].e.StartOffset >= c.e.StartOffset; n-- {
			out = out[:n-1]
		}
		out = append(out, c)
	}
	var m epochMerge
	last := -1
	for i, c := range out {
		m.cache = append(m.cache, c.e)
		if c.fromFile {
			m.fromFile++
			last = i
		}
	}
	m.seed = m.cache[:last+1]
	imported := map[int32]int64{}
	for _, e := range m.cache {
		imported[e.Epoch] = e.StartOffset
	}
	epochs := map[int32]bool{}
	for k := range fileAt {
		epochs[k] = true
	}
	for k := range batchAt {
		epochs[k] = true
	}
	keys := make([]int32, 0, len(epochs))
	for k := range epochs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ptr := func(m map[int32]int64, k int32) *int64 {
		if v, ok := m[k]; ok {
			return &v
		}
		return nil
	}
	for _, k := range keys {
		fs, bs, is := ptr(fileAt, k), ptr(batchAt, k), ptr(imported, k)
		if fs != nil && bs != nil && *fs == *bs {
			continue
		}
		d := EpochDisagreement{Epoch: k, FileStartOffset: fs, BatchStartOffset: bs, ImportedStartOffset: is}
		used := "not in the imported cache (a later entry supersedes it)"
		switch {
		case is != nil && fs != nil && *is == *fs:
			used = "the file's start is used"
		case is != nil && bs != nil && *is == *bs:
			used = "the batches' start is used"
		}
		switch {
		case bs == nil && carried[k]:
			d.Reason = fmt.Sprintf("the file starts epoch %d at %d; batches carry it only after a later epoch, so the batches open no entry for it; %s", k, *fs, used)
		case bs == nil:
			d.Reason = fmt.Sprintf("the file starts epoch %d at %d; no batch carries it (its batches are gone: compacted away or deleted); %s", k, *fs, used)
		case fs == nil:
			d.Reason = fmt.Sprintf("the batches carry epoch %d from %d; the file has no such epoch; %s", k, *bs, used)
		case *fs < firstBatch || (*bs > *fs && !coveredIn(covered, *fs, *bs)):
			d.Reason = fmt.Sprintf("the file starts epoch %d at %d, its first surviving batch is at %d; offsets [%d, %d) hold no batch (the batches that opened it are gone); %s", k, *fs, *bs, *fs, *bs, used)
		default:
			d.Reason = fmt.Sprintf("the file starts epoch %d at %d, the batches at %d, and offsets between the two hold batches: the data contradicts the file; %s", k, *fs, *bs, used)
		}
		m.disagreements = append(m.disagreements, d)
	}
	return m
}
