package layout

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Deletion records that a stream's binding was deleted on purpose
// (deleted/<sid>.json, DeletionKey): the topic was deleted, or an import
// that never made its binding was abandoned. Written IfAbsent before the
// binding is deleted, so a stream no binding references is either
// recorded here — garbage, collected by gc after its grace — or lost
// (an orphan-stream finding of verify and status). It is never changed.
type Deletion struct {
	StreamID  string `json:"stream_id"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// BindingSHA256 is the SHA-256 of the binding document that was
	// deleted (empty when there was none: an abandoned import).
	BindingSHA256 string `json:"binding_sha256"`
	// Reason says why: "topic deleted", "import abandoned".
	Reason    string `json:"reason"`
	DeletedMs int64  `json:"deleted_ms"`
	// Build is the nereusctl version that wrote it.
	Build string `json:"build"`
}

func (Deletion) carriesDigest() {}

// Validate lets Deletion be decoded with Decode.
func (d *Deletion) Validate() error {
	if err := validateStreamID(d.StreamID); err != nil {
		return err
	}
	if err := kafka.ValidateTopic(d.Topic); err != nil {
		return err
	}
	if d.Partition < 0 {
		return fmt.Errorf("partition %d: want >= 0", d.Partition)
	}
	if d.BindingSHA256 != "" {
		if err := validateSHA256(d.BindingSHA256); err != nil {
			return fmt.Errorf("binding_sha256: %w", err)
		}
	}
	if d.Reason == "" || d.DeletedMs <= 0 || d.Build == "" {
		return errors.New("a deletion needs a reason, a time and a build")
	}
	return nil
}

// LoadDeletion reads deleted/<sid>.json.
func LoadDeletion(ctx context.Context, st store.Store, sid string) (*Deletion, error) {
	var d Deletion
	key := DeletionKey(sid)
	if _, err := Load(ctx, st, key, &d); err != nil {
		return nil, err
	}
	if d.StreamID != sid {
		return nil, corrupt(key, "names stream %s", d.StreamID)
	}
	return &d, nil
}

// StoreKeys is a store's top-level inventory: the bindings, the streams,
// the deletion records, the quarantine records and the leases, with every
// key that is no document of its place (a stray key) set apart, so that a
// README under bindings/ is a finding for that key, never the end of a
// listing.
type StoreKeys struct {
	Bindings   []TopicPartition
	Streams    []string
	Deleted    map[string]store.ObjectInfo // by stream id
	Quarantine []string                    // set ids
	Leases     []string                    // keys
	Stray      []StrayKey
}

// StrayKey is a key that is no document of the prefix it lies under.
type StrayKey struct {
	Key    string
	Reason string
}

// ListStoreKeys lists bindings/, streams/ (one level), deleted/,
// quarantine/ (not its archive) and leases/.
func ListStoreKeys(ctx context.Context, st store.Store) (*StoreKeys, error) {
	k := &StoreKeys{Deleted: map[string]store.ObjectInfo{}}
	infos, err := st.List(ctx, BindingsPrefix)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", BindingsPrefix, err)
	}
	k.Bindings, k.Stray = SplitBindings(infos)
	if k.Streams, err = store.ListDirs(ctx, st, StreamsPrefix); err != nil {
		return nil, fmt.Errorf("list %s: %w", StreamsPrefix, err)
	}
	if infos, err = st.List(ctx, DeletedPrefix); err != nil {
		return nil, fmt.Errorf("list %s: %w", DeletedPrefix, err)
	}
	for _, in := range infos {
		sid, err := ParseDeletionKey(in.Key)
		if err != nil {
			k.Stray = append(k.Stray, StrayKey{Key: in.Key, Reason: err.Error()})
			continue
		}
		k.Deleted[sid] = in
	}
	if infos, err = st.List(ctx, QuarantinePrefix); err != nil {
		return nil, fmt.Errorf("list %s: %w", QuarantinePrefix, err)
	}
	for _, in := range infos {
		if len(in.Key) > len(QuarantinePrefix+"archive/") && in.Key[:len(QuarantinePrefix+"archive/")] == QuarantinePrefix+"archive/" {
			continue
		}
		id, err := ParseQuarantineKey(in.Key)
		if err != nil {
			k.Stray = append(k.Stray, StrayKey{Key: in.Key, Reason: err.Error()})
			continue
		}
		k.Quarantine = append(k.Quarantine, id)
	}
	if infos, err = st.List(ctx, LeasesPrefix); err != nil {
		return nil, fmt.Errorf("list %s: %w", LeasesPrefix, err)
	}
	for _, in := range infos {
		if _, ok := cutLeaseKey(in.Key); !ok {
			k.Stray = append(k.Stray, StrayKey{Key: in.Key, Reason: "not leases/<name>.json"})
			continue
		}
		k.Leases = append(k.Leases, in.Key)
	}
	sort.Slice(k.Stray, func(i, j int) bool { return k.Stray[i].Key < k.Stray[j].Key })
	return k, nil
}

// SplitBindings parses a bindings/ listing into partitions, in order, and
// the keys that are no binding's.
func SplitBindings(infos []store.ObjectInfo) ([]TopicPartition, []StrayKey) {
	out := make([]TopicPartition, 0, len(infos))
	var stray []StrayKey
	for _, in := range infos {
		t, p, err := ParseBindingKey(in.Key)
		if err != nil {
			stray = append(stray, StrayKey{Key: in.Key, Reason: err.Error()})
			continue
		}
		out = append(out, TopicPartition{Topic: t, Partition: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out, stray
}

// cutLeaseKey returns the name of leases/<name>.json.
func cutLeaseKey(key string) (string, bool) {
	const suffix = ".json"
	if len(key) <= len(LeasesPrefix)+len(suffix) || key[:len(LeasesPrefix)] != LeasesPrefix || key[len(key)-len(suffix):] != suffix {
		return "", false
	}
	return key[len(LeasesPrefix) : len(key)-len(suffix)], true
}
