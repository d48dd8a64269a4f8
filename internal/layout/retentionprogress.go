package layout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/nereusctl/nereusctl/internal/store"
)

// RetentionProgress is a retention run's progress kept in the store
// (RetentionProgressKey), written with If-Match on the ETag the run last
// wrote, so that a second live run of the same selection loses its write
// instead of overwriting (docs/layout.md, "Retention progress"). It is a
// resume point, never an authority: a partition it counts done is redone
// as a no-op if it is lost.
//
// Its size follows the run's window (2 × --parallel), never the number of
// partitions: the partitions are taken in the selection's order and
// finish within a window of it, so the progress is a watermark (every
// partition before it finished), the few done partitions past it, the
// failed ones behind it (which a resume redoes) and the counts a resumed
// run reports. A document of the shape older nereusctl wrote (a record
// per partition) is still read: LoadRetentionProgress returns it with
// Legacy set.
type RetentionProgress struct {
	// Selection is how the partitions were chosen ("--all 1/4").
	Selection string `json:"selection"`
	// Targets is how many partitions the selection resolved to, and
	// TargetsSHA256 the SHA-256 of their names, one per line.
	Targets       int    `json:"targets"`
	TargetsSHA256 string `json:"targets_sha256"`
	// NowMs is the run's clock (retention.ms is measured against it).
	NowMs     int64 `json:"now_ms"`
	StartedMs int64 `json:"started_ms"`
	UpdatedMs int64 `json:"updated_ms"`
	// Holder names the process that wrote it last.
	Holder string `json:"holder"`
	// Watermark: every partition before it, in the selection's order,
	// finished: done, or failed and listed in Failed.
	Watermark int `json:"watermark"`
	// Failed are the positions (0-based, in the selection's order) below
	// the watermark whose partition failed: a resume redoes them. Strictly
	// ascending, at most MaxRetentionFailed.
	Failed []int `json:"failed"`
	// Ahead are the positions past the watermark whose trim sequence is
	// durable (strictly ascending; within the window of the run).
	Ahead []int `json:"ahead"`
	// Trimmed, Unchanged and GarbageBytes sum the done partitions (below
	// the watermark and not failed, and Ahead): what a resumed run
	// reports for the partitions it does not redo.
	Trimmed      int   `json:"trimmed"`
	Unchanged    int   `json:"unchanged"`
	GarbageBytes int64 `json:"garbage_bytes"`
	Complete     bool  `json:"complete"`

	// Legacy is non-nil when the document had the old shape: its records,
	// one per done partition (the fields above past Holder are then zero).
	// Never written: the next write is of the new shape.
	Legacy []RetentionDone `json:"-"`
}

// RetentionDone is one partition a retention run finished, as a progress
// document of the old shape (one record per partition) holds it.
type RetentionDone struct {
	Partition    string `json:"partition"`
	LogStart     int64  `json:"log_start"`
	NewLogStart  int64  `json:"new_log_start"`
	HW           int64  `json:"hw"`
	GarbageBytes int64  `json:"garbage_bytes"`
}

// MaxRetentionFailed caps the failed partitions a progress document lists
// behind its watermark; a run with more stops advancing the watermark at
// the next failure (a resume then redoes everything from there).
const MaxRetentionFailed = 1000

// MaxRetentionProgressBytes caps a retention progress document read: a
// document of the new shape is a few kilobytes at most, one of the old
// shape held about 100 bytes per partition, so 100,000 of them fit.
const MaxRetentionProgressBytes = 64 << 20

func (RetentionProgress) carriesDigest() {}

// DoneCount is how many partitions the progress counts done.
func (p *RetentionProgress) DoneCount() int { return p.Trimmed + p.Unchanged }

// IsDone reports whether the partition at position i (in the selection's
// order) is done: below the watermark and not failed, or ahead of it.
func (p *RetentionProgress) IsDone(i int) bool {
	if i < p.Watermark {
		_, failed := sort.Find(len(p.Failed), func(k int) int { return i - p.Failed[k] })
		return !failed
	}
	_, ahead := sort.Find(len(p.Ahead), func(k int) int { return i - p.Ahead[k] })
	return ahead
}

// Validate lets RetentionProgress be decoded with Decode.
func (p *RetentionProgress) Validate() error {
	if err := p.validateHeader(); err != nil {
		return err
	}
	if p.Watermark < 0 || p.Watermark > p.Targets {
		return fmt.Errorf("watermark %d of %d targets", p.Watermark, p.Targets)
	}
	if len(p.Failed) > MaxRetentionFailed {
		return fmt.Errorf("%d failed partitions listed, at most %d", len(p.Failed), MaxRetentionFailed)
	}
	for k, i := range p.Failed {
		if i < 0 || i >= p.Watermark || (k > 0 && i <= p.Failed[k-1]) {
			return fmt.Errorf("failed %v: want strictly ascending positions below the watermark %d", p.Failed, p.Watermark)
		}
	}
	for k, i := range p.Ahead {
		if i <= p.Watermark || i >= p.Targets || (k > 0 && i <= p.Ahead[k-1]) {
			return fmt.Errorf("ahead %v: want strictly ascending positions past the watermark %d and below %d targets", p.Ahead, p.Watermark, p.Targets)
		}
	}
	if p.Trimmed < 0 || p.Unchanged < 0 || p.GarbageBytes < 0 {
		return fmt.Errorf("trimmed %d, unchanged %d, garbage %d: want none negative", p.Trimmed, p.Unchanged, p.GarbageBytes)
	}
	if done := p.Watermark - len(p.Failed) + len(p.Ahead); p.DoneCount() != done {
		return fmt.Errorf("trimmed %d + unchanged %d is not the %d partitions done (watermark %d, %d failed, %d ahead)",
			p.Trimmed, p.Unchanged, done, p.Watermark, len(p.Failed), len(p.Ahead))
	}
	if p.Complete && (p.Watermark != p.Targets || len(p.Failed) > 0) {
		return fmt.Errorf("complete with watermark %d of %d targets and %d failed", p.Watermark, p.Targets, len(p.Failed))
	}
	return nil
}

func (p *RetentionProgress) validateHeader() error {
	if p.Selection == "" {
		return errors.New("selection is empty")
	}
	if err := validateSHA256(p.TargetsSHA256); err != nil {
		return fmt.Errorf("targets_sha256: %w", err)
	}
	if p.Targets < 0 {
		return fmt.Errorf("%d targets", p.Targets)
	}
	if p.StartedMs <= 0 || p.UpdatedMs < p.StartedMs || p.Holder == "" {
		return fmt.Errorf("started_ms %d, updated_ms %d, holder %q: want a start, an update not before it and a holder", p.StartedMs, p.UpdatedMs, p.Holder)
	}
	return nil
}

// retentionProgressV1 is the progress document older nereusctl wrote:
// one record per done partition, rewritten whole at every write.
type retentionProgressV1 struct {
	Selection     string          `json:"selection"`
	Targets       int             `json:"targets"`
	TargetsSHA256 string          `json:"targets_sha256"`
	NowMs         int64           `json:"now_ms"`
	StartedMs     int64           `json:"started_ms"`
	UpdatedMs     int64           `json:"updated_ms"`
	Holder        string          `json:"holder"`
	Done          []RetentionDone `json:"done"`
	Complete      bool            `json:"complete"`
}

func (retentionProgressV1) carriesDigest() {}

func (p *retentionProgressV1) header() RetentionProgress {
	return RetentionProgress{Selection: p.Selection, Targets: p.Targets, TargetsSHA256: p.TargetsSHA256,
		NowMs: p.NowMs, StartedMs: p.StartedMs, UpdatedMs: p.UpdatedMs, Holder: p.Holder, Complete: p.Complete}
}

// Validate lets retentionProgressV1 be decoded with Decode.
func (p *retentionProgressV1) Validate() error {
	h := p.header()
	if err := h.validateHeader(); err != nil {
		return err
	}
	if len(p.Done) > p.Targets {
		return fmt.Errorf("%d partitions done of %d targets", len(p.Done), p.Targets)
	}
	if p.Complete && len(p.Done) != p.Targets {
		return fmt.Errorf("complete with %d of %d partitions done", len(p.Done), p.Targets)
	}
	seen := make(map[string]bool, len(p.Done))
	for _, d := range p.Done {
		if _, err := ParseTopicPartition(d.Partition); err != nil {
			return fmt.Errorf("done %q: %w", d.Partition, err)
		}
		if seen[d.Partition] {
			return fmt.Errorf("done %q twice", d.Partition)
		}
		seen[d.Partition] = true
		if d.LogStart < 0 || d.NewLogStart < d.LogStart || d.HW < 0 || d.GarbageBytes < 0 {
			return fmt.Errorf("done %q: log start %d -> %d, hw %d, garbage %d: want 0 <= log start <= new log start, hw and garbage >= 0",
				d.Partition, d.LogStart, d.NewLogStart, d.HW, d.GarbageBytes)
		}
	}
	return nil
}

// DecodeRetentionProgress decodes a retention progress document strictly,
// digest included: the current shape (it has a watermark), or the old
// shape (a record per partition; returned with Legacy set, non-nil).
func DecodeRetentionProgress(key string, data []byte) (*RetentionProgress, error) {
	var p RetentionProgress
	if bytes.Contains(data, []byte(`"watermark"`)) || !bytes.Contains(data, []byte(`"done"`)) {
		if err := Decode(key, data, &p); err != nil {
			return nil, err
		}
		return &p, nil
	}
	var old retentionProgressV1
	if err := Decode(key, data, &old); err != nil {
		return nil, err
	}
	p = old.header()
	p.Legacy = old.Done
	if p.Legacy == nil {
		p.Legacy = []RetentionDone{}
	}
	return &p, nil
}

// LoadRetentionProgress reads a retention run's store progress (capped at
// MaxRetentionProgressBytes), returning its ETag for the next If-Match.
func LoadRetentionProgress(ctx context.Context, st store.Store, key string) (*RetentionProgress, string, error) {
	data, err := store.GetCapped(ctx, st, key, MaxRetentionProgressBytes)
	if err != nil {
		return nil, "", err
	}
	p, err := DecodeRetentionProgress(key, data)
	if err != nil {
		return nil, "", err
	}
	return p, store.ETagOf(data), nil
}
