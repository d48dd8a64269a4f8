package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// RecordedOptions is the demo's record in the store
// (tasks/demo/seed-<seed>.json, layout.DemoTasksPrefix): the options it
// was started with, written before anything else, and whether it
// finished, written last. A rerun resumes an unfinished demo with them.
type RecordedOptions struct {
	Seed         int64    `json:"seed"`
	Partitions   int      `json:"partitions"`
	Records      int      `json:"records"`
	Checkpoints  int      `json:"checkpoints"`
	Topics       []string `json:"topics"`
	BatchRecords int      `json:"batch_records"`
	Complete     bool     `json:"complete"`
}

// Validate checks the record's fields.
func (r *RecordedOptions) Validate() error {
	if r.Partitions < 1 || r.Records < 0 || r.Checkpoints < 0 || r.BatchRecords < 0 || r.Topics == nil {
		return errors.New("demo record: want partitions >= 1, records, checkpoints and batch_records >= 0, and a topics list")
	}
	return nil
}

func recordKey(seed int64) string {
	return fmt.Sprintf("%sseed-%d.json", layout.DemoTasksPrefix, seed)
}

// record is o's record (not complete).
func record(o Options) *RecordedOptions {
	topics := append([]string{}, o.Topics...)
	return &RecordedOptions{Seed: o.Seed, Partitions: o.Partitions, Records: o.Records, Checkpoints: o.Checkpoints, Topics: topics, BatchRecords: o.BatchRecords}
}

// apply is o with the recorded options (the rest of o, its progress
// callback and parallelism, kept).
func (r *RecordedOptions) apply(o Options) Options {
	o.Partitions, o.Records, o.Checkpoints, o.BatchRecords = r.Partitions, r.Records, r.Checkpoints, r.BatchRecords
	o.Topics = append([]string(nil), r.Topics...)
	return o
}

// loadRecord reads the demo's record of seed: nil when there is none.
func loadRecord(ctx context.Context, st store.Store, seed int64) (*RecordedOptions, string, error) {
	var r RecordedOptions
	etag, err := layout.Load(ctx, st, recordKey(seed), &r)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("demo: read its record %s: %w", recordKey(seed), err)
	}
	if r.Seed != seed {
		return nil, "", fmt.Errorf("demo: record %s names seed %d: %w", recordKey(seed), r.Seed, layout.ErrCorruptDocument)
	}
	return &r, etag, nil
}
