package retention

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// GarbageDeleted is the gc category of a deleted topic's stream: every key
// under streams/<sid>/ of a stream whose deletion record (deleted/<sid>.json)
// is older than the grace and that no binding references, then the record.
const GarbageDeleted = "deleted-stream"

// DeleteBindingResult is the outcome of DeleteBinding for one partition.
type DeleteBindingResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	StreamID  string `json:"stream_id"`
	DryRun    bool   `json:"dry_run"`
	// Recorded: the deletion record is in the store (written by this call
	// or an earlier one); Deleted: the binding is gone.
	Recorded bool `json:"recorded"`
	Deleted  bool `json:"deleted"`
	// AlreadyDeleted: an earlier run deleted the binding (a rerun).
	AlreadyDeleted bool   `json:"already_deleted"`
	DeletionKey    string `json:"deletion_key"`
}

// DeleteBinding deletes a partition's binding on purpose (its topic was
// deleted in Kafka), recording it first: deleted/<sid>.json (IfAbsent,
// layout.Deletion), then the binding's delete with If-Match on the ETag
// it was read with. The stream stays until gc collects it after its grace,
// and from the record verify tells this deletion from a lost binding. A
// rerun after a crash between the two steps finishes the delete; a rerun
// after both finds the record and no binding and reports AlreadyDeleted.
// A dry run reads only.
func DeleteBinding(ctx context.Context, st store.Store, tp layout.TopicPartition, reason, build string, now time.Time, dryRun bool) (*DeleteBindingResult, error) {
	out := &DeleteBindingResult{Topic: tp.Topic, Partition: tp.Partition, DryRun: dryRun}
	b, etag, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if errors.Is(err, store.ErrNotFound) {
		// Already deleted? A record naming this partition says so.
		d, ok, lerr := findDeletion(ctx, st, tp)
		if lerr != nil {
			return nil, fmt.Errorf("delete-binding %s: %w", tp, lerr)
		}
		if ok {
			out.StreamID, out.DeletionKey, out.Recorded, out.Deleted, out.AlreadyDeleted = d.StreamID, layout.DeletionKey(d.StreamID), true, true, true
			return out, nil
		}
		return nil, errkind.Mark(fmt.Errorf("delete-binding %s: no binding %s in this store: %w", tp, layout.BindingKey(tp.Topic, tp.Partition), err), errkind.Usage)
	}
	if err != nil {
		return nil, fmt.Errorf("delete-binding %s: %w", tp, err)
	}
	out.StreamID, out.DeletionKey = b.StreamID, layout.DeletionKey(b.StreamID)
	if dryRun {
		return out, nil
	}
	d := &layout.Deletion{StreamID: b.StreamID, Topic: b.Topic, Partition: b.Partition, BindingSHA256: layout.DocSHA256(b), Reason: reason, DeletedMs: now.UnixMilli(), Build: build}
	if _, err := layout.Create(ctx, st, out.DeletionKey, d); err != nil {
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("delete-binding %s: write %s: %w", tp, out.DeletionKey, err)
		}
		// An earlier run recorded it (a crash before the binding's
		// delete): it must be this stream's record.
		prev, lerr := layout.LoadDeletion(ctx, st, b.StreamID)
		if lerr != nil {
			return nil, fmt.Errorf("delete-binding %s: read %s: %w", tp, out.DeletionKey, lerr)
		}
		if prev.Topic != b.Topic || prev.Partition != b.Partition {
			return nil, errkind.Markf(errkind.Corrupt, "delete-binding %s: %s names %s-%d, not this binding's partition", tp, out.DeletionKey, prev.Topic, prev.Partition)
		}
	}
	out.Recorded = true
	if err := st.Delete(ctx, layout.BindingKey(tp.Topic, tp.Partition), store.IfMatch(etag)); err != nil {
		return nil, fmt.Errorf("delete-binding %s: delete %s (If-Match): %w", tp, layout.BindingKey(tp.Topic, tp.Partition), err)
	}
	out.Deleted = true
	return out, nil
}

// RecordOrphan records a deletion for an orphan stream, sid, whose binding
// is already gone (deleted by hand, or an import that never made it): the
// deletion record names the partition the operator says it was, and gc
// collects the stream after its grace. Refused when a binding references
// the stream, or when the stream has no head (nothing to record).
func RecordOrphan(ctx context.Context, st store.Store, sid string, tp layout.TopicPartition, reason, build string, now time.Time, dryRun bool) (*DeleteBindingResult, error) {
	out := &DeleteBindingResult{Topic: tp.Topic, Partition: tp.Partition, StreamID: sid, DryRun: dryRun, DeletionKey: layout.DeletionKey(sid), Deleted: true}
	if _, err := layout.ParseDeletionKey(out.DeletionKey); err != nil {
		return nil, errkind.Markf(errkind.Usage, "delete-binding --orphan %q: not a stream id", sid)
	}
	if _, _, err := layout.LoadHead(ctx, st, sid); err != nil && !layout.IsCorrupt(err) {
		return nil, errkind.Mark(fmt.Errorf("delete-binding --orphan %s: %w", sid, err), errkind.Usage)
	}
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	switch {
	case err == nil && b.StreamID == sid:
		return nil, errkind.Markf(errkind.Usage, "delete-binding --orphan %s: binding %s references it: it is no orphan (delete the binding itself: delete-binding %s --yes)", sid, tp, tp)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("delete-binding --orphan %s: %w", sid, err)
	}
	if prev, err := layout.LoadDeletion(ctx, st, sid); err == nil {
		out.Topic, out.Partition, out.Recorded, out.AlreadyDeleted = prev.Topic, prev.Partition, true, true
		return out, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("delete-binding --orphan %s: %w", sid, err)
	}
	if dryRun {
		return out, nil
	}
	d := &layout.Deletion{StreamID: sid, Topic: tp.Topic, Partition: tp.Partition, Reason: reason, DeletedMs: now.UnixMilli(), Build: build}
	if _, err := layout.Create(ctx, st, out.DeletionKey, d); err != nil {
		return nil, fmt.Errorf("delete-binding --orphan %s: write %s: %w", sid, out.DeletionKey, err)
	}
	out.Recorded = true
	return out, nil
}

// findDeletion finds a deletion record naming tp (a rerun after both
// steps; the record's key is the stream id, which the gone binding held).
func findDeletion(ctx context.Context, st store.Store, tp layout.TopicPartition) (*layout.Deletion, bool, error) {
	infos, err := st.List(ctx, layout.DeletedPrefix)
	if err != nil {
		return nil, false, err
	}
	for _, in := range infos {
		sid, err := layout.ParseDeletionKey(in.Key)
		if err != nil {
			continue
		}
		d, err := layout.LoadDeletion(ctx, st, sid)
		if err != nil {
			continue
		}
		if d.Topic == tp.Topic && d.Partition == tp.Partition {
			return d, true, nil
		}
	}
	return nil, false, nil
}

// gcDeleted finds the streams recorded as deleted whose record is older
// than the grace and whose partition no binding references any more (a
// binding made since for the same partition names another stream): every
// key of the stream, in deletion order (data objects and views, then
// manifests, checkpoints, the head), and the record last, so a killed gc
// leaves the record for the next run.
func gcDeleted(ctx context.Context, st store.Store, o GCOptions) ([][]GCItem, []string, error) {
	infos, err := st.List(ctx, layout.DeletedPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("gc: list %s: %w", layout.DeletedPrefix, err)
	}
	var out [][]GCItem
	var errs []string
	for _, in := range infos {
		sid, err := layout.ParseDeletionKey(in.Key)
		if err != nil || !old(in, o) {
			continue // a stray key is verify's finding
		}
		d, err := layout.LoadDeletion(ctx, st, sid)
		if err != nil {
			errs = append(errs, fmt.Sprintf("gc: deletion record %s: %v", in.Key, err))
			continue
		}
		b, _, err := layout.LoadBinding(ctx, st, d.Topic, d.Partition)
		switch {
		case err == nil && b.StreamID == sid:
			errs = append(errs, fmt.Sprintf("gc: stream %s is recorded as deleted but binding %s still references it: deleting nothing of it (finish 'nereusctl delete-binding %s-%d', or remove %s)", sid, layout.BindingKey(d.Topic, d.Partition), d.Topic, d.Partition, in.Key))
			continue
		case err != nil && !errors.Is(err, store.ErrNotFound):
			errs = append(errs, fmt.Sprintf("gc: deleted stream %s: binding %s: %v", sid, layout.BindingKey(d.Topic, d.Partition), err))
			continue
		}
		keys, err := st.List(ctx, layout.StreamPrefix(sid))
		if err != nil {
			return nil, nil, fmt.Errorf("gc: list %s: %w", layout.StreamPrefix(sid), err)
		}
		name := fmt.Sprintf("%s-%d", d.Topic, d.Partition)
		rank := func(key string) int {
			switch {
			case strings.HasPrefix(key, layout.ObjectsPrefix(sid)), strings.HasPrefix(key, layout.CompactedPrefix(sid)):
				return 0
			case strings.HasPrefix(key, layout.GenerationsPrefix(sid)):
				return 1
			case strings.HasPrefix(key, layout.CheckpointsPrefix(sid)):
				return 2
			case key == layout.HeadKey(sid):
				return 4
			}
			return 3
		}
		sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i].Key) < rank(keys[j].Key) })
		items := make([]GCItem, 0, len(keys)+1)
		for _, k := range keys {
			items = append(items, GCItem{Key: k.Key, Size: k.Size, Category: GarbageDeleted, Partition: name})
		}
		items = append(items, GCItem{Key: in.Key, Size: in.Size, Category: GarbageDeleted, Partition: name})
		out = append(out, items)
	}
	return out, errs, nil
}
