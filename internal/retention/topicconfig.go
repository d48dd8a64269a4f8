package retention

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nereusctl/nereusctl/internal/layout"
)

// ErrBadTopicConfig reports a topic config key nereusctl does not know or
// a value outside Kafka's type and range for it (a usage error).
var ErrBadTopicConfig = errors.New("bad topic config")

// ErrNoTopicSection: a kafka-configs --describe file has sections for
// other topics only (with ErrBadTopicConfig).
var ErrNoTopicSection = errors.New("no section for the topic")

// Where a binding's config snapshot came from (layout.Binding.ConfigSource).
const (
	// SourceImportDefault: import was given no topic config; retention is
	// off (retention.ms = retention.bytes = -1).
	SourceImportDefault = "import-default-retention-off"
	// SourceFlags: import's --topic-config (or --cleanup-policy,
	// --segment-bytes) flags.
	SourceFlags = "topic-config-flags"
	// SourceFilePrefix + the file's base name: import's --topic-config-file.
	SourceFilePrefix = "kafka-configs-file:"
	// SourceConfigSet: changed by 'nereusctl config set'.
	SourceConfigSet = "config-set"
)

// topicConfigKeys are the Kafka topic configs a binding snapshots, with
// Kafka's type and lower bound (TopicConfig / LogConfig definitions).
var topicConfigKeys = map[string]struct {
	int32 bool  // Kafka's INT type (else LONG)
	min   int64 // the smallest accepted value
}{
	"retention.ms":          {min: -1},
	"retention.bytes":       {min: math.MinInt64}, // any long; negative = no limit (R23)
	"segment.bytes":         {int32: true, min: 14},
	"segment.ms":            {min: 1},
	"delete.retention.ms":   {min: 0},
	"min.compaction.lag.ms": {min: 0},
	"max.compaction.lag.ms": {min: 1},
}

// KeyMinCleanableDirtyRatio is Kafka's min.cleanable.dirty.ratio, a DOUBLE
// (the only one nereusctl models; the other keys are cleanup.policy and
// the integers of topicConfigKeys).
const KeyMinCleanableDirtyRatio = "min.cleanable.dirty.ratio"

// decimalFraction is what nereusctl accepts for a DOUBLE config: decimal
// digits with an optional fraction. Kafka's parser (Double.valueOf) also
// takes exponents, hexadecimal and a type suffix; operator input here is
// decimal only.
var decimalFraction = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// TopicConfigKeys lists the keys SetTopicConfig accepts, sorted.
func TopicConfigKeys() []string {
	out := []string{"cleanup.policy", KeyMinCleanableDirtyRatio}
	for k := range topicConfigKeys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsTopicConfigKey reports a key SetTopicConfig accepts.
func IsTopicConfigKey(key string) bool {
	_, ok := topicConfigKeys[key]
	return ok || key == "cleanup.policy" || key == KeyMinCleanableDirtyRatio
}

// SetTopicConfig sets one Kafka topic config in c, validated with Kafka's
// name, type and range (docs/kafka-retention-rules.md R23): cleanup.policy
// is a non-empty list of delete and compact (case-sensitive, as Kafka's
// validator); segment.bytes an INT of at least 14; retention.ms a LONG of
// at least -1 (-1: no limit); retention.bytes any LONG (a negative one is
// no limit, stored as -1); segment.ms and max.compaction.lag.ms at least 1;
// delete.retention.ms and min.compaction.lag.ms at least 0;
// min.cleanable.dirty.ratio a DOUBLE in [0, 1] (LogConfig:
// between(0, 1)). Numbers are decimal.
func SetTopicConfig(c *layout.TopicConfig, key, value string) error {
	if key == KeyMinCleanableDirtyRatio {
		if !decimalFraction.MatchString(value) {
			return fmt.Errorf("%w: %s=%s: not a decimal number", ErrBadTopicConfig, key, value)
		}
		r, err := strconv.ParseFloat(value, 64)
		if err != nil || r < 0 || r > 1 {
			return fmt.Errorf("%w: %s=%s: want 0..1", ErrBadTopicConfig, key, value)
		}
		c.MinCleanableDirtyRatio = &r
		return nil
	}
	if key == "cleanup.policy" {
		var ps []string
		seen := map[string]bool{}
		for _, p := range strings.Split(value, ",") {
			// Kafka's validator (ValidList.in) is case-sensitive.
			p = strings.TrimSpace(p)
			if p != "delete" && p != "compact" {
				return fmt.Errorf("%w: cleanup.policy=%s: want delete, compact or compact,delete", ErrBadTopicConfig, value)
			}
			if !seen[p] {
				seen[p] = true
				ps = append(ps, p)
			}
		}
		c.CleanupPolicy = strings.Join(ps, ",")
		return nil
	}
	k, ok := topicConfigKeys[key]
	if !ok {
		return fmt.Errorf("%w: unknown key %q (known: %s)", ErrBadTopicConfig, key, strings.Join(TopicConfigKeys(), ", "))
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s=%s: not a decimal integer", ErrBadTopicConfig, key, value)
	}
	maxV := int64(math.MaxInt64)
	if k.int32 {
		maxV = math.MaxInt32
	}
	if n < k.min || n > maxV {
		return fmt.Errorf("%w: %s=%d: want %d..%d", ErrBadTopicConfig, key, n, k.min, maxV)
	}
	switch key {
	case "retention.ms":
		c.RetentionMs = n
	case "retention.bytes":
		// Kafka takes any negative as "no size limit"; the binding
		// stores it as -1.
		c.RetentionBytes = max(n, -1)
	case "segment.bytes":
		c.SegmentBytes = n
	case "segment.ms":
		c.SegmentMs = n
	case "delete.retention.ms":
		c.DeleteRetentionMs = n
	case "min.compaction.lag.ms":
		c.MinCompactionLagMs = n
	case "max.compaction.lag.ms":
		c.MaxCompactionLagMs = n
	}
	return nil
}

// TopicConfigValue returns one key of c as Kafka prints it.
func TopicConfigValue(c layout.TopicConfig, key string) (string, bool) {
	switch key {
	case "cleanup.policy":
		return c.CleanupPolicy, true
	case "retention.ms":
		return strconv.FormatInt(c.RetentionMs, 10), true
	case "retention.bytes":
		return strconv.FormatInt(c.RetentionBytes, 10), true
	case "segment.bytes":
		return strconv.FormatInt(c.SegmentBytes, 10), true
	case "segment.ms":
		return strconv.FormatInt(c.SegmentMs, 10), true
	case "delete.retention.ms":
		return strconv.FormatInt(c.DeleteRetentionMs, 10), true
	case "min.compaction.lag.ms":
		return strconv.FormatInt(c.MinCompactionLagMs, 10), true
	case "max.compaction.lag.ms":
		return strconv.FormatInt(c.MaxCompactionLagMs, 10), true
	case KeyMinCleanableDirtyRatio:
		return strconv.FormatFloat(c.CleanableRatio(), 'f', -1, 64), true
	}
	return "", false
}

// KV is one KEY=VALUE topic config setting.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ParseKV parses KEY=VALUE settings (flags, arguments), checking each key
// and value against Kafka's rules and refusing a key given twice.
func ParseKV(args []string) ([]KV, error) {
	var out []KV
	seen := map[string]bool{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: %q: want KEY=VALUE", ErrBadTopicConfig, a)
		}
		if seen[k] {
			return nil, fmt.Errorf("%w: %s given twice", ErrBadTopicConfig, k)
		}
		seen[k] = true
		var scratch layout.TopicConfig
		if err := SetTopicConfig(&scratch, k, v); err != nil {
			return nil, err
		}
		out = append(out, KV{Key: k, Value: v})
	}
	return out, nil
}

// KafkaConfigs is what a kafka-configs --describe output gave for a topic.
type KafkaConfigs struct {
	// Settings are the keys nereusctl models, in file order.
	Settings []KV
	// Ignored are the other keys the file lists (Kafka has many more
	// topic configs than retention and compaction use).
	Ignored []string
	// Topic is the topic the file's section named ("" for plain lines).
	Topic string
}

var describeHeader = regexp.MustCompile(`^(?:Dynamic|All|Static|Default) configs for topic (\S+) are:$`)

// ParseKafkaConfigs reads the output of `kafka-configs.sh --describe
// --entity-type topics [--entity-name T] [--all]` for topic, or plain
// KEY=VALUE lines:
//
//	Dynamic configs for topic orders are:
//	  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}
//
// A line is KEY=VALUE, optionally followed by Kafka's " sensitive=…" and
// " synonyms={…}"; blank lines and lines starting with # are skipped. With
// section headers, only the section of topic is read (a file whose sections
// name other topics only is refused). Keys nereusctl models are validated
// as SetTopicConfig does; other keys are listed in Ignored; any other line
// is an error naming its number.
func ParseKafkaConfigs(data []byte, topic string) (*KafkaConfigs, error) {
	out := &KafkaConfigs{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sections, inTopic := 0, true
	seen := map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := describeHeader.FindStringSubmatch(line); m != nil {
			sections++
			inTopic = m[1] == topic
			if inTopic {
				out.Topic = m[1]
			}
			continue
		}
		kv := line
		if i := strings.Index(kv, " sensitive="); i >= 0 {
			kv = kv[:i]
		} else if i := strings.Index(kv, " synonyms="); i >= 0 {
			kv = kv[:i]
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") || strings.ContainsAny(v, " \t") {
			return nil, fmt.Errorf("%w: line %d: %q is neither a kafka-configs header nor KEY=VALUE", ErrBadTopicConfig, n, line)
		}
		if !inTopic {
			continue
		}
		if !IsTopicConfigKey(k) {
			out.Ignored = append(out.Ignored, k)
			continue
		}
		if seen[k] {
			return nil, fmt.Errorf("%w: line %d: %s given twice", ErrBadTopicConfig, n, k)
		}
		seen[k] = true
		var scratch layout.TopicConfig
		if err := SetTopicConfig(&scratch, k, v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out.Settings = append(out.Settings, KV{Key: k, Value: v})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTopicConfig, err)
	}
	if sections > 0 && out.Topic == "" {
		return nil, fmt.Errorf("%w: %w: no section for topic %s (the file describes other topics)", ErrBadTopicConfig, ErrNoTopicSection, topic)
	}
	return out, nil
}
