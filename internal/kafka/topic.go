package kafka

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxTopicLength is the longest legal topic name (Topic.java).
const MaxTopicLength = 249

// ValidateTopic applies Kafka's topic-name rules (Topic.validate): not
// empty, not "." or "..", at most 249 characters, only ASCII letters,
// digits, '.', '_' and '-'.
func ValidateTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("validate topic name: the empty string is not allowed: %w", ErrInvalidName)
	case name == ".":
		return fmt.Errorf("validate topic name: '.' is not allowed: %w", ErrInvalidName)
	case name == "..":
		return fmt.Errorf("validate topic name: '..' is not allowed: %w", ErrInvalidName)
	case len(name) > MaxTopicLength:
		return fmt.Errorf("validate topic name: %d characters, longer than the max allowed %d: %w", len(name), MaxTopicLength, ErrInvalidName)
	}
	for i := 0; i < len(name); i++ {
		if !legalTopicChar(name[i]) {
			return fmt.Errorf("validate topic name %q: byte %d (%q) is not an ASCII alphanumeric, '.', '_' or '-': %w", clip(name), i, name[i], ErrInvalidName)
		}
	}
	return nil
}

func legalTopicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// IsInternalTopic reports Kafka's internal topics.
func IsInternalTopic(name string) bool {
	switch name {
	case "__consumer_offsets", "__transaction_state", "__share_group_state":
		return true
	}
	return false
}

// ParseTopicPartition splits a log directory name "topic-partition" at the
// last '-', as Kafka names partition directories. The topic must pass
// ValidateTopic and the partition must be a non-negative int32 written in
// canonical decimal (no sign, no leading zeros), so that name and
// (topic, partition) map one to one. Deleted, future and stray directories
// ("….<id>-delete", "-future", "-stray") are rejected.
func ParseTopicPartition(s string) (topic string, partition int32, err error) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return "", 0, fmt.Errorf("parse topic-partition %q: no '-' before a partition number: %w", clip(s), ErrInvalidName)
	}
	topic, p := s[:i], s[i+1:]
	if err := ValidateTopic(topic); err != nil {
		return "", 0, fmt.Errorf("parse topic-partition %q: %w", clip(s), err)
	}
	if p == "" || (len(p) > 1 && p[0] == '0') || strings.TrimLeft(p, "0123456789") != "" {
		return "", 0, fmt.Errorf("parse topic-partition %q: partition %q is not a canonical non-negative number: %w", clip(s), clip(p), ErrInvalidName)
	}
	n, perr := strconv.ParseInt(p, 10, 32)
	if perr != nil {
		return "", 0, fmt.Errorf("parse topic-partition %q: partition %q out of range: %w", clip(s), clip(p), ErrInvalidName)
	}
	return topic, int32(n), nil
}

// TopicPartitionDir is the directory name of a partition: topic + "-" +
// partition.
func TopicPartitionDir(topic string, partition int32) string {
	return topic + "-" + strconv.FormatInt(int64(partition), 10)
}
