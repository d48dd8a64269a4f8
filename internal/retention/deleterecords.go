package retention

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
)

// DeleteTarget is one entry of kafka-delete-records' offset JSON.
type DeleteTarget struct {
	TP     layout.TopicPartition
	Offset int64
}

// MaxOffsetJSONBytes caps the offset JSON file.
const MaxOffsetJSONBytes = 16 << 20

// ParseOffsetJSON parses kafka-delete-records.sh's input
// (tools/.../DeleteRecordsCommand.java): {"partitions": [{"topic": "t",
// "partition": 0, "offset": N}], "version": 1}. Keys are case-sensitive,
// as Kafka's JSON reader's are ("Offset" is not "offset"); every field of a
// partition entry is required and a key a partition entry does not have is
// refused (a typo would otherwise trim at another offset, or not at all);
// unknown top-level keys are ignored, as DeleteRecordsCommand does (DRC,
// T23 in docs/kafka-retention-rules.md). Unknown versions are refused, and
// duplicate partitions are an error.
func ParseOffsetJSON(data []byte) ([]DeleteTarget, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("offset JSON: %s", plainJSONError(err, ""))
	}
	if dec.More() {
		return nil, errors.New("offset JSON: trailing data after the document")
	}
	if top == nil {
		return nil, errors.New(`offset JSON: the document is null; want an object {"version": 1, "partitions": [...]}`)
	}
	// "version" is optional and defaults to 1; any other value is refused.
	if raw, ok := top["version"]; ok && !isNull(raw) {
		var v int
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("offset JSON: %s", plainJSONError(err, "version"))
		}
		if v != 1 {
			return nil, fmt.Errorf(`offset JSON: not supported version field value %d (want 1)`, v)
		}
	}
	rawParts, ok := top["partitions"]
	if !ok || isNull(rawParts) {
		return nil, errors.New(`offset JSON: missing partitions field`)
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(rawParts, &parts); err != nil {
		return nil, fmt.Errorf("offset JSON: %s", plainJSONError(err, "partitions"))
	}
	var out []DeleteTarget
	seen := map[layout.TopicPartition]int{}
	var dups []string
	for i, rawEntry := range parts {
		t, err := parseOffsetEntry(i, rawEntry)
		if err != nil {
			return nil, fmt.Errorf("offset JSON: %w", err)
		}
		if seen[t.TP]++; seen[t.TP] == 2 {
			dups = append(dups, t.TP.String())
		}
		out = append(out, t)
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		return nil, fmt.Errorf("offset JSON contains duplicate topic partitions: %s", errkind.List(dups, ","))
	}
	if len(out) == 0 {
		return nil, errors.New("offset JSON: no partitions")
	}
	return out, nil
}

// offsetEntryKeys are the keys of a partition entry, in the order messages
// name them.
var offsetEntryKeys = []string{"topic", "partition", "offset"}

// parseOffsetEntry reads partitions[i]: exactly the keys topic, partition
// and offset, each of its type.
func parseOffsetEntry(i int, raw json.RawMessage) (DeleteTarget, error) {
	at := fmt.Sprintf("partitions[%d]", i)
	var entry map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entry); err != nil {
		return DeleteTarget{}, errors.New(plainJSONError(err, at))
	}
	if entry == nil {
		return DeleteTarget{}, fmt.Errorf("%s is null; want an object {\"topic\": ..., \"partition\": ..., \"offset\": ...}", at)
	}
	keys := make([]string, 0, len(entry))
	for k := range entry {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(offsetEntryKeys, k) {
			return DeleteTarget{}, fmt.Errorf("%s: unknown key %q (the keys are topic, partition and offset, in lower case)", at, k)
		}
	}
	for _, k := range offsetEntryKeys {
		if v, ok := entry[k]; !ok || isNull(v) {
			return DeleteTarget{}, fmt.Errorf("%s: missing %q", at, k)
		}
	}
	var topic string
	var partition int32
	var offset int64
	if err := json.Unmarshal(entry["topic"], &topic); err != nil {
		return DeleteTarget{}, errors.New(plainJSONError(err, at+".topic"))
	}
	if err := json.Unmarshal(entry["partition"], &partition); err != nil {
		return DeleteTarget{}, errors.New(plainJSONError(err, at+".partition"))
	}
	if err := json.Unmarshal(entry["offset"], &offset); err != nil {
		return DeleteTarget{}, errors.New(plainJSONError(err, at+".offset"))
	}
	if err := kafka.ValidateTopic(topic); err != nil {
		return DeleteTarget{}, fmt.Errorf("%s: %w", at, err)
	}
	if partition < 0 {
		return DeleteTarget{}, fmt.Errorf("%s: partition %d is negative", at, partition)
	}
	return DeleteTarget{TP: layout.TopicPartition{Topic: topic, Partition: partition}, Offset: offset}, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// plainJSONError says what is wrong with an offset JSON file in the terms
// of the file (the path of the value, here at, and the JSON types), never
// Go's.
func plainJSONError(err error, at string) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && at == "":
		return fmt.Sprintf("the document is a JSON %s; want an object {\"version\": 1, \"partitions\": [...]}", te.Value)
	case errors.As(err, &te):
		return fmt.Sprintf("%s is a JSON %s; want %s", at, te.Value, jsonKind(te.Type.Kind()))
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: the document ends early"
	}
	return "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another type"
}

// kafkaErrors maps the Kafka error names a plan carries to what
// kafka-delete-records.sh prints for them: the DeleteRecords response has
// only an error code (DeleteRecordsResponse.json), so the admin client
// raises the code's exception with its default message (Errors.java), and
// DeleteRecordsCommand prints the ExecutionException's message, the cause's
// toString(): "<exception class>: <default message>" (R18, R21).
var kafkaErrors = map[string]string{
	ErrOffsetOutOfRange: "org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset is not within the range of offsets maintained by the server.",
	ErrPolicyViolation:  "org.apache.kafka.common.errors.PolicyViolationException: Request parameters do not satisfy the configured policy.",
	ErrInvalidTopic:     "org.apache.kafka.common.errors.InvalidTopicException: The request attempted to perform an operation on an invalid topic.",
	ErrUnknownPartition: "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition.",
}

// KafkaErrorText returns kafka-delete-records.sh's error text for a Kafka
// error name, and false for a failure that is nereusctl's own (a store or
// data error), which Kafka would not report as a partition's error.
func KafkaErrorText(name string) (string, bool) {
	t, ok := kafkaErrors[name]
	return t, ok
}
