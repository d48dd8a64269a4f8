package health

import (
	"context"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Bound is what the fleet check knows of the bindings a command read: the
// stream each readable binding references (by stream id, the partitions
// naming it), and whether every binding could be read (Complete). A
// binding that does not decode names no stream: then no stream is called
// an orphan, since it may be that binding's.
type Bound struct {
	Streams  map[string][]string
	Complete bool
}

// Fleet is the store-wide part of the health check: every stream is
// accounted for (referenced by a binding, or recorded as deleted), no key
// under bindings/, quarantine/, deleted/ or leases/ is a stray, every
// quarantine record decodes, and no binding references a stream recorded
// as deleted. keys is the store's inventory (layout.ListStoreKeys); the
// quarantine records are read, a few at once.
func Fleet(ctx context.Context, st store.Store, keys *layout.StoreKeys, bound Bound) ([]Finding, error) {
	fs := []Finding{}
	add := func(f Finding) {
		f.Scope, f.Gen = ScopeStore, -1
		fs = append(fs, f)
	}
	for _, k := range keys.Stray {
		add(Finding{Object: k.Key, Check: CheckStrayKey, Detail: "not a document of its place: " + k.Reason})
	}
	for _, sid := range keys.Streams {
		names, isBound := bound.Streams[sid]
		_, deleted := keys.Deleted[sid]
		switch {
		case isBound && deleted:
			for _, n := range names {
				add(Finding{Partition: n, Object: layout.DeletionKey(sid), Check: CheckDeletedStream, Detail: fmt.Sprintf("binding %s references stream %s, which is recorded as deleted", n, sid)})
			}
		case !isBound && !deleted && bound.Complete:
			add(Finding{Object: layout.StreamPrefix(sid), Check: CheckOrphanStream, Expected: "a binding or a deletion record", Found: "missing",
				Detail: fmt.Sprintf("stream %s is referenced by no binding and not recorded as deleted (a lost binding?)", sid)})
		}
	}
	type read struct {
		key string
		err error
	}
	got, err := fleet.Map(ctx, manifestReads, keys.Quarantine, func(ctx context.Context, _ int, id string) (read, error) {
		key := layout.QuarantineKey(id)
		var q layout.Quarantine
		_, err := layout.Load(ctx, st, key, &q)
		switch {
		case err == nil && q.SetID != id:
			err = fmt.Errorf("%s: names set %s: %w", key, q.SetID, layout.ErrCorruptDocument)
		case err == nil, errors.Is(err, store.ErrNotFound):
			// (gone since the listing: archived by a repair)
			return read{key: key}, nil
		case !layout.IsCorrupt(err):
			return read{}, err
		}
		return read{key: key, err: err}, nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range got {
		if r.err != nil {
			add(Finding{Object: r.key, Check: CheckQuarantineRecord, Detail: r.err.Error(), document: true})
		}
	}
	return fs, nil
}

// Store is Fleet over the whole store: it lists the store's keys and
// reads every binding known does not already name (known: the stream id
// of each partition a command read; "" for one whose binding could not be
// read), a few at once, so that a command that saw only some partitions
// (a shard) still accounts for every stream.
func Store(ctx context.Context, st store.Store, known map[layout.TopicPartition]string, parallel int) ([]Finding, error) {
	keys, err := layout.ListStoreKeys(ctx, st)
	if err != nil {
		return nil, err
	}
	bound := Bound{Streams: map[string][]string{}, Complete: true}
	var rest []layout.TopicPartition
	for _, tp := range keys.Bindings {
		sid, ok := known[tp]
		switch {
		case !ok:
			rest = append(rest, tp)
		case sid == "":
			bound.Complete = false
		default:
			bound.Streams[sid] = append(bound.Streams[sid], tp.String())
		}
	}
	sids, err := fleet.Map(ctx, parallel, rest, func(ctx context.Context, _ int, tp layout.TopicPartition) (string, error) {
		b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		switch {
		case err == nil:
			return b.StreamID, nil
		case layout.IsCorrupt(err), errors.Is(err, store.ErrNotFound):
			return "", nil
		}
		return "", err
	})
	if err != nil {
		return nil, err
	}
	for i, sid := range sids {
		if sid == "" {
			bound.Complete = false
			continue
		}
		bound.Streams[sid] = append(bound.Streams[sid], rest[i].String())
	}
	return Fleet(ctx, st, keys, bound)
}
