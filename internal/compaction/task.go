package compaction

import (
	"context"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Task is a compaction's workflow state (tasks/compact-<sid>/task.json).
// It is never authority: a reader only follows the binding's coverage.
type Task struct {
	StreamID string             `json:"stream_id"`
	Plan     *Plan              `json:"plan"`
	Step     string             `json:"step"`
	Objects  []layout.ObjectRef `json:"objects,omitempty"`
	Gen      int64              `json:"gen,omitempty"`
}

// Validate lets a task be decoded with layout.Decode.
func (t *Task) Validate() error {
	if t.StreamID == "" || t.Plan == nil {
		return errors.New("task needs a stream and a plan")
	}
	return nil
}

func taskKey(sid string) string { return TaskPrefix(sid) + "task.json" }

// TaskPrefix is where the compaction task of stream sid lives
// (tasks/compact-<sid>/): gc collects it with the stream's partition,
// under its lease, never from under a running compaction.
func TaskPrefix(sid string) string { return layout.TaskPrefix("compact-" + sid) }

func loadTask(ctx context.Context, st store.Store, sid string) (*Task, string, error) {
	var t Task
	etag, err := layout.Load(ctx, st, taskKey(sid), &t)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read compaction task: %w", err)
	}
	return &t, etag, nil
}

func saveTask(ctx context.Context, st store.Store, t *Task, etag string) (string, error) {
	info, err := layout.Replace(ctx, st, taskKey(t.StreamID), t, etag)
	if err != nil {
		return "", fmt.Errorf("update compaction task: %w", err)
	}
	return info.ETag, nil
}

// sameInputs reports whether a recorded task froze the same inputs as a
// fresh freeze made with the task's clock. The encoder is not an input: a
// task another build froze resumes, and what is published records the
// identity of the build that writes the objects (the fresh plan's).
func sameInputs(a, b *Plan) bool {
	if a.Base != b.Base || a.End != b.End || a.PrevEnd != b.PrevEnd {
		return false
	}
	pa, pb := a.Params, b.Params
	pa.Encoder, pb.Encoder = "", ""
	return string(layout.Encode(pa)) == string(layout.Encode(pb)) && string(layout.Encode(a.Sources)) == string(layout.Encode(b.Sources))
}
