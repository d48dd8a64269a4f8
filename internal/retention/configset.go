package retention

import (
	"context"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrNoSuchBinding reports a config target that names no bound partition.
var ErrNoSuchBinding = errors.New("no such binding")

// ConfigDiff is one changed key.
type ConfigDiff struct {
	Key string `json:"key"`
	Old string `json:"old"`
	New string `json:"new"`
}

// ConfigChange is the outcome of SetConfig for one partition (also what
// `config get` shows, with no changes).
type ConfigChange struct {
	Topic     string             `json:"topic"`
	Partition int32              `json:"partition"`
	Changes   []ConfigDiff       `json:"changes"`
	Config    layout.TopicConfig `json:"config"`
	// ConfigSource is the binding's config_source after the change.
	ConfigSource string `json:"config_source"`
	// Written: the binding was replaced by this call (false on a dry run
	// and when nothing changes).
	Written bool  `json:"written"`
	DryRun  bool  `json:"dry_run"`
	Version int64 `json:"version"`
}

// ResolveConfigTarget turns TOPIC-PARTITION or TOPIC into the bound
// partitions it names: a bound TOPIC-PARTITION first, else every partition
// of the topic TOPIC.
func ResolveConfigTarget(ctx context.Context, st store.Store, arg string) ([]layout.TopicPartition, error) {
	all, err := layout.ListBindings(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("config %s: list bindings: %w", arg, err)
	}
	if tp, err := layout.ParseTopicPartition(arg); err == nil {
		for _, b := range all {
			if b == tp {
				return []layout.TopicPartition{tp}, nil
			}
		}
	}
	var out []layout.TopicPartition
	for _, b := range all {
		if b.Topic == arg {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("config %s: %w: neither a bound partition nor a topic with bound partitions", arg, ErrNoSuchBinding)
	}
	return out, nil
}

// GetConfig reads a binding's config snapshot.
func GetConfig(ctx context.Context, st store.Store, tp layout.TopicPartition) (*ConfigChange, error) {
	b, _, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
	if err != nil {
		return nil, fmt.Errorf("config get %s: %w", tp, err)
	}
	return &ConfigChange{Topic: tp.Topic, Partition: tp.Partition, Changes: []ConfigDiff{}, Config: b.Config, ConfigSource: b.ConfigSource, Version: b.Version}, nil
}

// SetConfig applies kvs to a binding's config snapshot with a CAS
// (If-Match on the binding's ETag) and sets its config_source to
// "config-set". A lost precondition (the binding changed meanwhile: a trim,
// a checkpoint, a compaction) is re-read and re-applied once; a second one
// is returned (store.ErrPreconditionFailed, exit 4). Rerunning after a lost
// response finds the values in place and writes nothing. A dry run reads
// and reports the change only.
func SetConfig(ctx context.Context, st store.Store, tp layout.TopicPartition, kvs []KV, dryRun bool) (*ConfigChange, error) {
	key := layout.BindingKey(tp.Topic, tp.Partition)
	for attempt := 0; ; attempt++ {
		b, etag, err := layout.LoadBinding(ctx, st, tp.Topic, tp.Partition)
		if err != nil {
			return nil, fmt.Errorf("config set %s: %w", tp, err)
		}
		nc := b.Config
		for _, kv := range kvs {
			if err := SetTopicConfig(&nc, kv.Key, kv.Value); err != nil {
				return nil, fmt.Errorf("config set %s: %w", tp, err)
			}
		}
		if err := nc.Validate(); err != nil {
			return nil, fmt.Errorf("config set %s: %w: %v", tp, ErrBadTopicConfig, err)
		}
		if b.MandatoryCoverage() && !nc.HasPolicy("compact") {
			// Without compact the coordinator (or any reader of the
			// compacted view) would fall back to COMMITTED data, and
			// retention could delete every committed offset.
			return nil, fmt.Errorf("config set %s: %w: cleanup.policy %q drops compact, but the binding's compacted coverage is mandatory (%s); keep compact in it",
				tp, ErrBadTopicConfig, nc.CleanupPolicy, mandatoryWhy(b))
		}
		out := &ConfigChange{Topic: tp.Topic, Partition: tp.Partition, Changes: []ConfigDiff{}, Config: nc, ConfigSource: b.ConfigSource, DryRun: dryRun, Version: b.Version}
		for _, k := range TopicConfigKeys() {
			o, _ := TopicConfigValue(b.Config, k)
			n, _ := TopicConfigValue(nc, k)
			if o != n {
				out.Changes = append(out.Changes, ConfigDiff{Key: k, Old: o, New: n})
			}
		}
		if len(out.Changes) == 0 || dryRun {
			if len(out.Changes) > 0 {
				out.ConfigSource = SourceConfigSet
			}
			return out, nil
		}
		nb := *b
		nb.Config = nc
		nb.ConfigSource = SourceConfigSet
		nb.Version++
		_, err = layout.Replace(ctx, st, key, &nb, etag)
		if err == nil {
			out.Written, out.ConfigSource, out.Version = true, nb.ConfigSource, nb.Version
			return out, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) || attempt >= 1 {
			return nil, fmt.Errorf("config set %s: replace %s: %w", tp, key, err)
		}
	}
}

// mandatoryWhy says why a binding's coverage is mandatory.
func mandatoryWhy(b *layout.Binding) string {
	if layout.IsCoordinatorTopic(b.Topic) {
		return b.Topic + " is a coordinator topic"
	}
	return "its coverage is " + b.Coverage.State
}
