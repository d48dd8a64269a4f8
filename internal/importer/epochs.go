package importer

import (
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
// leader epochs a replay of the imported stream derives from the batches'
// partitionLeaderEpoch (the recovery rule of LogSegment.recover).
type EpochCheck struct {
	Status     string             `json:"status"`
	Checkpoint []state.EpochEntry `json:"checkpoint"`
	Derived    []state.EpochEntry `json:"derived"`
	// Source says which replay derived the epochs.
	Source string   `json:"source"`
	Notes  []string `json:"notes"`
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
