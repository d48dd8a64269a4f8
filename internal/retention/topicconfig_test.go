package retention

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

func TestSetTopicConfigKafkaRules(t *testing.T) {
	ok := []struct{ k, v string }{
		{"cleanup.policy", "delete"}, {"cleanup.policy", "compact"}, {"cleanup.policy", "compact,delete"}, {"cleanup.policy", "delete, compact"},
		{"retention.ms", "-1"}, {"retention.ms", "0"}, {"retention.ms", "9223372036854775807"},
		{"retention.bytes", "-1"}, {"retention.bytes", "1073741824"},
		{"segment.bytes", "14"}, {"segment.bytes", "2147483647"},
		{"segment.ms", "1"}, {"delete.retention.ms", "0"}, {"min.compaction.lag.ms", "0"}, {"max.compaction.lag.ms", "1"},
	}
	for _, c := range ok {
		cfg := layout.DefaultTopicConfig()
		if err := SetTopicConfig(&cfg, c.k, c.v); err != nil {
			t.Errorf("%s=%s: %v", c.k, c.v, err)
			continue
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s=%s: the config no longer validates: %v", c.k, c.v, err)
		}
		if got, _ := TopicConfigValue(cfg, c.k); c.k != "cleanup.policy" && got != c.v {
			t.Errorf("%s=%s: reads back %s", c.k, c.v, got)
		}
	}
	bad := []struct{ k, v, want string }{
		{"retention.hours", "1", "unknown key"}, {"log.retention.ms", "1", "unknown key"},
		{"cleanup.policy", "forever", "want delete"}, {"cleanup.policy", "", "want delete"}, {"cleanup.policy", "delete,", "want delete"},
		{"retention.ms", "-2", "want -1.."}, {"retention.ms", "7d", "not a decimal"}, {"retention.ms", "+5", ""}, {"retention.ms", "9223372036854775808", "not a decimal"},
		{"cleanup.policy", "Delete", "want delete"}, {"segment.bytes", "13", "want 14.."}, {"segment.bytes", "2147483648", "want 14..2147483647"},
		{"segment.ms", "0", "want 1.."}, {"delete.retention.ms", "-1", "want 0.."}, {"min.compaction.lag.ms", "-1", "want 0.."},
		{"max.compaction.lag.ms", "0", "want 1.."}, {"retention.ms", " 1", "not a decimal"},
	}
	for _, c := range bad {
		cfg := layout.DefaultTopicConfig()
		err := SetTopicConfig(&cfg, c.k, c.v)
		if c.k == "retention.ms" && c.v == "+5" {
			// strconv accepts a leading +; Kafka's Long parser does too.
			if err != nil {
				t.Errorf("+5: %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrBadTopicConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%q: err %v, want %q", c.k, c.v, err, c.want)
		}
	}
	// Kafka takes any negative retention.bytes as no limit.
	cfg := layout.DefaultTopicConfig()
	if err := SetTopicConfig(&cfg, "retention.bytes", "-5"); err != nil || cfg.RetentionBytes != -1 {
		t.Errorf("retention.bytes=-5: %v, stored %d", err, cfg.RetentionBytes)
	}
	if _, err := ParseKV([]string{"retention.ms=1", "retention.ms=2"}); err == nil {
		t.Error("a key given twice: want an error")
	}
	if _, err := ParseKV([]string{"retention.ms"}); err == nil {
		t.Error("no '=': want an error")
	}
}

func TestParseKafkaConfigs(t *testing.T) {
	describe := `Dynamic configs for topic payments are:
  retention.ms=1 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1}
All configs for topic orders are:
  compression.type=producer sensitive=false synonyms={DEFAULT_CONFIG:compression.type=producer}
  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}
  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000, DEFAULT_CONFIG:log.retention.hours=168}
  retention.bytes=-1 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.bytes=-1}
  segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}
`
	kc, err := ParseKafkaConfigs([]byte(describe), "orders")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, kv := range kc.Settings {
		got = append(got, kv.Key+"="+kv.Value)
	}
	if strings.Join(got, " ") != "cleanup.policy=delete retention.ms=86400000 retention.bytes=-1 segment.bytes=1073741824" {
		t.Fatalf("settings %v", got)
	}
	if strings.Join(kc.Ignored, ",") != "compression.type" || kc.Topic != "orders" {
		t.Fatalf("ignored %v, topic %q", kc.Ignored, kc.Topic)
	}
	if _, err := ParseKafkaConfigs([]byte(describe), "customers"); !errors.Is(err, ErrBadTopicConfig) {
		t.Fatalf("no section for the topic: %v", err)
	}
	plain, err := ParseKafkaConfigs([]byte("# a comment\n\nretention.ms=5\n"), "any")
	if err != nil || len(plain.Settings) != 1 {
		t.Fatalf("plain lines: %v %v", plain, err)
	}
	for _, bad := range []string{"retention.ms=-7\n", "hello world\n", "retention.ms=1\nretention.ms=2\n", "retention.ms=1 2\n"} {
		if _, err := ParseKafkaConfigs([]byte(bad), "t"); !errors.Is(err, ErrBadTopicConfig) {
			t.Errorf("%q: err %v, want bad topic config", bad, err)
		}
	}
}

// racingStore changes the binding behind the caller's back before the
// first `races` binding PUTs, so they lose their precondition.
type racingStore struct {
	store.Store
	key   string
	races int
}

func (r *racingStore) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	if key == r.key && r.races > 0 {
		r.races--
		var b layout.Binding
		etag, err := layout.Load(ctx, r.Store, key, &b)
		if err != nil {
			return store.ObjectInfo{}, err
		}
		b.ObservedLogStart++ // a trim landed meanwhile
		b.Version++
		if _, err := layout.Replace(ctx, r.Store, key, &b, etag); err != nil {
			return store.ObjectInfo{}, err
		}
	}
	return r.Store.Put(ctx, key, data, g)
}

func TestSetConfigCAS(t *testing.T) {
	ctx := context.Background()
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	kvs := []KV{{Key: "retention.ms", Value: "1000"}}

	// One lost precondition: re-read, re-applied on the new binding; the
	// concurrent change survives.
	st := &racingStore{Store: demoStore(t), key: layout.BindingKey("orders", 0), races: 1}
	before := mustBinding(t, st, tp)
	c, err := SetConfig(ctx, st, tp, kvs, false)
	if err != nil {
		t.Fatal(err)
	}
	after := mustBinding(t, st, tp)
	if !c.Written || after.Config.RetentionMs != 1000 || after.ConfigSource != SourceConfigSet || after.ObservedLogStart != before.ObservedLogStart+1 {
		t.Fatalf("after one race: written %v, retention.ms %d, source %q, observed %d", c.Written, after.Config.RetentionMs, after.ConfigSource, after.ObservedLogStart)
	}
	// Again: no change, no write.
	if c, err = SetConfig(ctx, st, tp, kvs, false); err != nil || c.Written || len(c.Changes) != 0 {
		t.Fatalf("rerun: %+v, %v", c, err)
	}

	// Two lost preconditions: refused with the precondition error (exit 4).
	st2 := &racingStore{Store: demoStore(t), key: layout.BindingKey("orders", 0), races: 2}
	if _, err := SetConfig(ctx, st2, tp, kvs, false); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("two races: err %v, want precondition failed", err)
	}
	if b := mustBinding(t, st2, tp); b.Config.RetentionMs == 1000 {
		t.Fatal("two races: the config was written anyway")
	}

	// A dry run writes nothing; a bad value is refused.
	st3 := demoStore(t)
	b3 := mustBinding(t, st3, tp)
	if c, err := SetConfig(ctx, st3, tp, kvs, true); err != nil || c.Written || len(c.Changes) != 1 {
		t.Fatalf("dry run: %+v, %v", c, err)
	}
	if b := mustBinding(t, st3, tp); b.Version != b3.Version {
		t.Fatal("dry run wrote the binding")
	}
	if _, err := SetConfig(ctx, st3, tp, []KV{{Key: "segment.ms", Value: "0"}}, false); !errors.Is(err, ErrBadTopicConfig) {
		t.Fatalf("bad value: %v", err)
	}

	// Targets: a bound partition, or every partition of a topic.
	if tps, err := ResolveConfigTarget(ctx, st3, "orders-0"); err != nil || len(tps) != 1 {
		t.Fatalf("orders-0: %v %v", tps, err)
	}
	if tps, err := ResolveConfigTarget(ctx, st3, "orders"); err != nil || len(tps) != 1 || tps[0] != tp {
		t.Fatalf("orders: %v %v", tps, err)
	}
	if _, err := ResolveConfigTarget(ctx, st3, "orders-9"); !errors.Is(err, ErrNoSuchBinding) {
		t.Fatalf("orders-9: %v", err)
	}
}

// TestMinCleanableDirtyRatioConfig: min.cleanable.dirty.ratio is a topic
// config of its own, a DOUBLE in [0, 1] (Kafka's LogConfig defines it
// with ConfigDef.Range.between(0, 1), default 0.5): accepted by config
// set, import's flags and its kafka-configs file; a binding without it
// reads as Kafka's default, and its bytes stay as they were until a
// value other than the default is set.
func TestMinCleanableDirtyRatioConfig(t *testing.T) {
	for _, v := range []string{"0", "1", "0.5", "0.125", "1.0", "0.0"} {
		cfg := layout.DefaultTopicConfig()
		if err := SetTopicConfig(&cfg, "min.cleanable.dirty.ratio", v); err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
		want, _ := strconv.ParseFloat(v, 64)
		if cfg.CleanableRatio() != want {
			t.Errorf("%s: reads back %v", v, cfg.CleanableRatio())
		}
	}
	for _, v := range []string{"1.5", "-0.1", "1.0000001", "5e-1", ".5", "0.5 ", "NaN", "Inf", "0x1p-1", "", "half"} {
		cfg := layout.DefaultTopicConfig()
		if err := SetTopicConfig(&cfg, "min.cleanable.dirty.ratio", v); !errors.Is(err, ErrBadTopicConfig) {
			t.Errorf("%q: err %v, want a bad topic config", v, err)
		}
		if cfg.MinCleanableDirtyRatio != nil {
			t.Errorf("%q: refused, yet stored", v)
		}
	}
	if got, _ := TopicConfigValue(layout.DefaultTopicConfig(), "min.cleanable.dirty.ratio"); got != "0.5" {
		t.Errorf("default reads %q, want Kafka's 0.5", got)
	}
	if !IsTopicConfigKey("min.cleanable.dirty.ratio") || !strings.Contains(strings.Join(TopicConfigKeys(), ","), "min.cleanable.dirty.ratio") {
		t.Error("min.cleanable.dirty.ratio is not a known key")
	}
	// kafka-configs --describe lists it; it is a setting, not ignored.
	kc, err := ParseKafkaConfigs([]byte("All configs for topic orders are:\n  min.cleanable.dirty.ratio=0.2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.cleanable.dirty.ratio=0.2, DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5}\n"), "orders")
	if err != nil || len(kc.Settings) != 1 || kc.Settings[0] != (KV{Key: "min.cleanable.dirty.ratio", Value: "0.2"}) || len(kc.Ignored) != 0 {
		t.Fatalf("kafka-configs file: %+v, %v", kc, err)
	}

	ctx := context.Background()
	tp := layout.TopicPartition{Topic: "orders", Partition: 0}
	st := demoStore(t)
	key := layout.BindingKey("orders", 0)
	before, err := st.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(before), "min.cleanable.dirty.ratio") {
		t.Fatalf("a binding written without the key holds it: %s", before)
	}
	if c, err := GetConfig(ctx, st, tp); err != nil || c.Config.CleanableRatio() != 0.5 {
		t.Fatalf("get: %+v, %v", c, err)
	}
	// Setting Kafka's default on a binding without the key changes nothing.
	if c, err := SetConfig(ctx, st, tp, []KV{{Key: "min.cleanable.dirty.ratio", Value: "0.50"}}, false); err != nil || c.Written || len(c.Changes) != 0 {
		t.Fatalf("set to the default: %+v, %v", c, err)
	}
	if now, _ := st.Get(ctx, key, nil); string(now) != string(before) {
		t.Fatal("setting the default rewrote the binding")
	}
	c, err := SetConfig(ctx, st, tp, []KV{{Key: "min.cleanable.dirty.ratio", Value: "0.25"}}, false)
	if err != nil || !c.Written || len(c.Changes) != 1 || c.Changes[0] != (ConfigDiff{Key: "min.cleanable.dirty.ratio", Old: "0.5", New: "0.25"}) {
		t.Fatalf("set 0.25: %+v, %v", c, err)
	}
	raw, _ := st.Get(ctx, key, nil)
	if !regexp.MustCompile(`"min.cleanable.dirty.ratio": ?0.25\b`).Match(raw) {
		t.Fatalf("stored binding: %s", raw)
	}
	if b := mustBinding(t, st, tp); b.Config.CleanableRatio() != 0.25 {
		t.Fatalf("reads back %v", b.Config.CleanableRatio())
	}
	if _, err := SetConfig(ctx, st, tp, []KV{{Key: "min.cleanable.dirty.ratio", Value: "2"}}, false); !errors.Is(err, ErrBadTopicConfig) {
		t.Fatalf("ratio 2: %v", err)
	}
}
