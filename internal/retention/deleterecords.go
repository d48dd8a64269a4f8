package retention

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
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
// "partition": 0, "offset": N}], "version": 1}. Every field is required,
// unknown versions are refused, and duplicate partitions are an error.
func ParseOffsetJSON(data []byte) ([]DeleteTarget, error) {
	var doc struct {
		Version    *int `json:"version"`
		Partitions *[]struct {
			Topic     *string `json:"topic"`
			Partition *int32  `json:"partition"`
			Offset    *int64  `json:"offset"`
		} `json:"partitions"`
	}
	// Unknown fields are ignored, as DeleteRecordsCommand does (DRC, T23 in
	// docs/kafka-retention-rules.md).
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("offset JSON: %s", plainJSONError(err))
	}
	if dec.More() {
		return nil, errors.New("offset JSON: trailing data after the document")
	}
	// "version" is optional and defaults to 1; any other value is refused.
	if doc.Version != nil && *doc.Version != 1 {
		return nil, fmt.Errorf(`offset JSON: not supported version field value %d (want 1)`, *doc.Version)
	}
	if doc.Partitions == nil {
		return nil, errors.New(`offset JSON: missing partitions field`)
	}
	var out []DeleteTarget
	seen := map[layout.TopicPartition]int{}
	var dups []string
	for i, p := range *doc.Partitions {
		switch {
		case p.Topic == nil:
			return nil, fmt.Errorf(`offset JSON: partitions[%d]: missing "topic"`, i)
		case p.Partition == nil:
			return nil, fmt.Errorf(`offset JSON: partitions[%d]: missing "partition"`, i)
		case p.Offset == nil:
			return nil, fmt.Errorf(`offset JSON: partitions[%d]: missing "offset"`, i)
		}
		if err := kafka.ValidateTopic(*p.Topic); err != nil {
			return nil, fmt.Errorf("offset JSON: partitions[%d]: %w", i, err)
		}
		if *p.Partition < 0 {
			return nil, fmt.Errorf("offset JSON: partitions[%d]: partition %d is negative", i, *p.Partition)
		}
		tp := layout.TopicPartition{Topic: *p.Topic, Partition: *p.Partition}
		if seen[tp]++; seen[tp] == 2 {
			dups = append(dups, tp.String())
		}
		out = append(out, DeleteTarget{TP: tp, Offset: *p.Offset})
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

// plainJSONError says what is wrong with an offset JSON file in the terms
// of the file (a field path and the JSON types), never Go's.
func plainJSONError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("the document is a JSON %s; want an object {\"version\": 1, \"partitions\": [...]}", te.Value)
	case errors.As(err, &te):
		return fmt.Sprintf("%s is a JSON %s; want %s", jsonPath(te.Field), te.Value, jsonKind(te.Type.Kind()))
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: the document ends early"
	}
	return "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

// jsonPath turns encoding/json's field path ("partitions.offset") into the
// file's ("partitions[].offset").
func jsonPath(field string) string {
	return strings.Replace(field, "partitions.", "partitions[].", 1)
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
