package coord

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// __consumer_offsets record types: the key's int16 prefix
// (CoordinatorRecordSerde; group-coordinator/src/main/resources/common/message).
const (
	TypeOffsetCommitV0  int16 = 0 // OffsetCommitKey, key version 0
	TypeOffsetCommit    int16 = 1 // OffsetCommitKey, key version 1 (what brokers write)
	TypeGroupMetadata   int16 = 2 // GroupMetadataKey
	maxOffsetCommitVer  int16 = 4
	maxGroupMetadataVer int16 = 4
)

// groupRecordTypeNames names the newer group record types (3–15), which
// this package recognises but does not decode.
var groupRecordTypeNames = map[int16]string{
	3:  "ConsumerGroupMetadata",
	4:  "ConsumerGroupPartitionMetadata",
	5:  "ConsumerGroupMemberMetadata",
	6:  "ConsumerGroupTargetAssignmentMetadata",
	7:  "ConsumerGroupTargetAssignmentMember",
	8:  "ConsumerGroupCurrentMemberAssignment",
	9:  "ShareGroupPartitionMetadata",
	10: "ShareGroupMemberMetadata",
	11: "ShareGroupMetadata",
	12: "ShareGroupTargetAssignmentMetadata",
	13: "ShareGroupTargetAssignmentMember",
	14: "ShareGroupCurrentMemberAssignment",
	15: "ShareGroupStatePartitionMetadata",
}

// OffsetCommitKey is the key of a committed offset (types 0 and 1 share
// one layout): group, topic, partition.
type OffsetCommitKey struct {
	Version   int16 `json:"-"` // 0 or 1, the record type
	Group     string
	Topic     string
	Partition int32
}

// OffsetCommitValue is a committed offset, versions 0–4 (flexible from
// 4). LeaderEpoch exists from v3 (default -1), ExpireTimestamp only in v1
// (default -1).
type OffsetCommitValue struct {
	Version         int16
	Offset          int64
	LeaderEpoch     int32
	Metadata        string
	CommitTimestamp int64
	ExpireTimestamp int64
	UnknownTags     []TaggedField // v4+
}

// NewOffsetCommitValue returns a value of the given version with Kafka's
// defaults (LeaderEpoch and ExpireTimestamp -1).
func NewOffsetCommitValue(version int16) OffsetCommitValue {
	return OffsetCommitValue{Version: version, LeaderEpoch: -1, ExpireTimestamp: -1}
}

// GroupMetadataKey is the key of a classic group's metadata (type 2).
type GroupMetadataKey struct {
	Group string
}

// GroupMetadataValue is a classic group's metadata, versions 0–4 (flexible
// from 4).
type GroupMetadataValue struct {
	Version               int16
	ProtocolType          string
	Generation            int32
	Protocol              *string
	Leader                *string
	CurrentStateTimestamp int64 // v2+, default -1
	Members               []MemberMetadata
	UnknownTags           []TaggedField // v4+
}

// MemberMetadata is one member of a GroupMetadataValue.
type MemberMetadata struct {
	MemberID         string
	GroupInstanceID  *string // v3+
	ClientID         string
	ClientHost       string
	RebalanceTimeout int32 // v1+, default -1
	SessionTimeout   int32
	Subscription     []byte
	Assignment       []byte
	UnknownTags      []TaggedField // v4+
}

// Minimum encoded sizes, to bound array counts by the bytes present.
const (
	minMemberSizeClassic  = 2 + 2 + 2 + 4 + 4 + 4 // strings, session timeout, two byte arrays
	minMemberSizeFlexible = 1 + 1 + 1 + 4 + 1 + 1 + 1
)

// DecodeOffsetCommitKey decodes the key of types 0 and 1, the int16
// prefix included.
func DecodeOffsetCommitKey(b []byte) (OffsetCommitKey, error) {
	r := &reader{b: b}
	k := OffsetCommitKey{Version: r.int16("version")}
	if r.err == nil && k.Version != TypeOffsetCommitV0 && k.Version != TypeOffsetCommit {
		return OffsetCommitKey{}, fmt.Errorf("decode offset commit key: type %d: %w", k.Version, ErrUnsupportedVersion)
	}
	k.Group = r.string("group")
	k.Topic = r.string("topic")
	k.Partition = r.int32("partition")
	if err := r.done("offset commit key"); err != nil {
		return OffsetCommitKey{}, fmt.Errorf("decode offset commit key: %w", err)
	}
	return k, nil
}

// Encode returns the key bytes, the int16 type prefix included.
func (k OffsetCommitKey) Encode() ([]byte, error) {
	if k.Version != TypeOffsetCommitV0 && k.Version != TypeOffsetCommit {
		return nil, fmt.Errorf("encode offset commit key: type %d: %w", k.Version, ErrUnsupportedVersion)
	}
	w := &writer{}
	w.int16(k.Version)
	w.string("group", k.Group)
	w.string("topic", k.Topic)
	w.int32(k.Partition)
	if w.err != nil {
		return nil, fmt.Errorf("encode offset commit key: %w", w.err)
	}
	return w.b, nil
}

// DecodeOffsetCommitValue decodes a value, the int16 version prefix
// included.
func DecodeOffsetCommitValue(b []byte) (OffsetCommitValue, error) {
	r := &reader{b: b}
	v := NewOffsetCommitValue(r.int16("version"))
	if r.err == nil && (v.Version < 0 || v.Version > maxOffsetCommitVer) {
		return OffsetCommitValue{}, fmt.Errorf("decode offset commit value: version %d: %w", v.Version, ErrUnsupportedVersion)
	}
	r.flexible = v.Version >= 4
	v.Offset = r.int64("offset")
	if v.Version >= 3 {
		v.LeaderEpoch = r.int32("leaderEpoch")
	}
	v.Metadata = r.string("metadata")
	v.CommitTimestamp = r.int64("commitTimestamp")
	if v.Version == 1 {
		v.ExpireTimestamp = r.int64("expireTimestamp")
	}
	v.UnknownTags = r.tags("offset commit value", nil)
	if err := r.done("offset commit value"); err != nil {
		return OffsetCommitValue{}, fmt.Errorf("decode offset commit value v%d: %w", v.Version, err)
	}
	return v, nil
}

// Encode returns the value bytes, the int16 version prefix included.
func (v OffsetCommitValue) Encode() ([]byte, error) {
	if v.Version < 0 || v.Version > maxOffsetCommitVer {
		return nil, fmt.Errorf("encode offset commit value: version %d: %w", v.Version, ErrUnsupportedVersion)
	}
	w := &writer{}
	w.int16(v.Version)
	w.flexible = v.Version >= 4
	w.int64(v.Offset)
	if v.Version >= 3 {
		w.int32(v.LeaderEpoch)
	}
	w.string("metadata", v.Metadata)
	w.int64(v.CommitTimestamp)
	if v.Version == 1 {
		w.int64(v.ExpireTimestamp)
	}
	w.tags("offset commit value", nil, v.UnknownTags)
	if w.err != nil {
		return nil, fmt.Errorf("encode offset commit value v%d: %w", v.Version, w.err)
	}
	return w.b, nil
}

// DecodeGroupMetadataKey decodes the key of type 2, prefix included.
func DecodeGroupMetadataKey(b []byte) (GroupMetadataKey, error) {
	r := &reader{b: b}
	if t := r.int16("version"); r.err == nil && t != TypeGroupMetadata {
		return GroupMetadataKey{}, fmt.Errorf("decode group metadata key: type %d: %w", t, ErrUnsupportedVersion)
	}
	k := GroupMetadataKey{Group: r.string("group")}
	if err := r.done("group metadata key"); err != nil {
		return GroupMetadataKey{}, fmt.Errorf("decode group metadata key: %w", err)
	}
	return k, nil
}

// Encode returns the key bytes, the int16 type prefix (2) included.
func (k GroupMetadataKey) Encode() ([]byte, error) {
	w := &writer{}
	w.int16(TypeGroupMetadata)
	w.string("group", k.Group)
	if w.err != nil {
		return nil, fmt.Errorf("encode group metadata key: %w", w.err)
	}
	return w.b, nil
}

// DecodeGroupMetadataValue decodes a value, prefix included.
func DecodeGroupMetadataValue(b []byte) (GroupMetadataValue, error) {
	r := &reader{b: b}
	v := GroupMetadataValue{Version: r.int16("version"), CurrentStateTimestamp: -1}
	if r.err == nil && (v.Version < 0 || v.Version > maxGroupMetadataVer) {
		return GroupMetadataValue{}, fmt.Errorf("decode group metadata value: version %d: %w", v.Version, ErrUnsupportedVersion)
	}
	r.flexible = v.Version >= 4
	v.ProtocolType = r.string("protocolType")
	v.Generation = r.int32("generation")
	v.Protocol = r.nullableString("protocol")
	v.Leader = r.nullableString("leader")
	if v.Version >= 2 {
		v.CurrentStateTimestamp = r.int64("currentStateTimestamp")
	}
	minSize := minMemberSizeClassic
	if r.flexible {
		minSize = minMemberSizeFlexible
	}
	n := r.arrayLen("members", false, minSize)
	if n > 0 {
		v.Members = make([]MemberMetadata, n)
	} else if n == 0 && r.err == nil {
		v.Members = []MemberMetadata{}
	}
	for i := 0; i < n && r.err == nil; i++ {
		m := &v.Members[i]
		m.RebalanceTimeout = -1
		m.MemberID = r.string("memberId")
		if v.Version >= 3 {
			m.GroupInstanceID = r.nullableString("groupInstanceId")
		}
		m.ClientID = r.string("clientId")
		m.ClientHost = r.string("clientHost")
		if v.Version >= 1 {
			m.RebalanceTimeout = r.int32("rebalanceTimeout")
		}
		m.SessionTimeout = r.int32("sessionTimeout")
		m.Subscription = r.bytes("subscription")
		m.Assignment = r.bytes("assignment")
		m.UnknownTags = r.tags("member", nil)
	}
	v.UnknownTags = r.tags("group metadata value", nil)
	if err := r.done("group metadata value"); err != nil {
		return GroupMetadataValue{}, fmt.Errorf("decode group metadata value v%d: %w", v.Version, err)
	}
	return v, nil
}

// Encode returns the value bytes, prefix included.
func (v GroupMetadataValue) Encode() ([]byte, error) {
	if v.Version < 0 || v.Version > maxGroupMetadataVer {
		return nil, fmt.Errorf("encode group metadata value: version %d: %w", v.Version, ErrUnsupportedVersion)
	}
	w := &writer{}
	w.int16(v.Version)
	w.flexible = v.Version >= 4
	w.string("protocolType", v.ProtocolType)
	w.int32(v.Generation)
	w.nullableString("protocol", v.Protocol)
	w.nullableString("leader", v.Leader)
	if v.Version >= 2 {
		w.int64(v.CurrentStateTimestamp)
	}
	w.arrayLen(len(v.Members))
	for i := range v.Members {
		m := &v.Members[i]
		w.string("memberId", m.MemberID)
		if v.Version >= 3 {
			w.nullableString("groupInstanceId", m.GroupInstanceID)
		}
		w.string("clientId", m.ClientID)
		w.string("clientHost", m.ClientHost)
		if v.Version >= 1 {
			w.int32(m.RebalanceTimeout)
		}
		w.int32(m.SessionTimeout)
		w.bytes("subscription", m.Subscription)
		w.bytes("assignment", m.Assignment)
		w.tags("member", nil, m.UnknownTags)
	}
	w.tags("group metadata value", nil, v.UnknownTags)
	if w.err != nil {
		return nil, fmt.Errorf("encode group metadata value v%d: %w", v.Version, w.err)
	}
	return w.b, nil
}

// OffsetsRecord is one decoded __consumer_offsets record. Type is the
// key's int16 prefix. Exactly one of the key pointers is set for types 0–2;
// other types (3–15 are the newer group records) are Unknown and only
// their raw bytes are kept. A nil value is a tombstone.
type OffsetsRecord struct {
	Type      int16
	Unknown   bool
	Tombstone bool

	OffsetCommitKey    *OffsetCommitKey
	OffsetCommitValue  *OffsetCommitValue
	GroupMetadataKey   *GroupMetadataKey
	GroupMetadataValue *GroupMetadataValue

	RawKey   []byte `json:"-"`
	RawValue []byte `json:"-"`
}

// DecodeOffsetsRecord decodes a __consumer_offsets record. value == nil is
// a tombstone. An unknown type decodes without error (Unknown set, String
// "unknown type N"); a key too short for its type, a truncated or garbled
// key or value of a known type, or an unknown value version is an error.
func DecodeOffsetsRecord(key, value []byte) (*OffsetsRecord, error) {
	if len(key) < 2 {
		return nil, fmt.Errorf("decode __consumer_offsets record: %d-byte key has no type: %w", len(key), ErrCorrupt)
	}
	t := int16(uint16(key[0])<<8 | uint16(key[1]))
	rec := &OffsetsRecord{Type: t, Tombstone: value == nil, RawKey: key, RawValue: value}
	switch t {
	case TypeOffsetCommitV0, TypeOffsetCommit:
		k, err := DecodeOffsetCommitKey(key)
		if err != nil {
			return nil, fmt.Errorf("decode __consumer_offsets record: %w", err)
		}
		rec.OffsetCommitKey = &k
		if value != nil {
			v, err := DecodeOffsetCommitValue(value)
			if err != nil {
				return nil, fmt.Errorf("decode __consumer_offsets record (group %q, %s-%d): %w", k.Group, k.Topic, k.Partition, err)
			}
			rec.OffsetCommitValue = &v
		}
	case TypeGroupMetadata:
		k, err := DecodeGroupMetadataKey(key)
		if err != nil {
			return nil, fmt.Errorf("decode __consumer_offsets record: %w", err)
		}
		rec.GroupMetadataKey = &k
		if value != nil {
			v, err := DecodeGroupMetadataValue(value)
			if err != nil {
				return nil, fmt.Errorf("decode __consumer_offsets record (group %q): %w", k.Group, err)
			}
			rec.GroupMetadataValue = &v
		}
	default:
		rec.Unknown = true
	}
	return rec, nil
}

// Encode returns the record's key and value bytes (value nil for a
// tombstone). An Unknown record gives back its raw bytes.
func (r *OffsetsRecord) Encode() (key, value []byte, err error) {
	switch {
	case r.Unknown:
		return r.RawKey, r.RawValue, nil
	case r.OffsetCommitKey != nil:
		k := *r.OffsetCommitKey
		if key, err = k.Encode(); err != nil {
			return nil, nil, err
		}
		if r.Tombstone || r.OffsetCommitValue == nil {
			return key, nil, nil
		}
		value, err = r.OffsetCommitValue.Encode()
		return key, value, err
	case r.GroupMetadataKey != nil:
		if key, err = r.GroupMetadataKey.Encode(); err != nil {
			return nil, nil, err
		}
		if r.Tombstone || r.GroupMetadataValue == nil {
			return key, nil, nil
		}
		value, err = r.GroupMetadataValue.Encode()
		return key, value, err
	}
	return nil, nil, fmt.Errorf("encode __consumer_offsets record: no key set: %w", ErrCorrupt)
}

// Kind names the record: "offset_commit", "group_metadata", or the newer
// group record's name, or "unknown".
func (r *OffsetsRecord) Kind() string {
	switch {
	case r.OffsetCommitKey != nil:
		return "offset_commit"
	case r.GroupMetadataKey != nil:
		return "group_metadata"
	}
	if n, ok := groupRecordTypeNames[r.Type]; ok {
		return n
	}
	return "unknown"
}

// String is a one-line form in kafka-dump-log's style:
// "key: {…} payload: {…}" with Kafka's JSON, "payload: <DELETE>" for a
// tombstone, "unknown type N" for types this package does not decode.
func (r *OffsetsRecord) String() string {
	if r.Unknown {
		return fmt.Sprintf("unknown type %d", r.Type)
	}
	k, _ := json.Marshal(r.keyJSON())
	if r.Tombstone {
		return "key: " + string(k) + " payload: <DELETE>"
	}
	v, _ := json.Marshal(r.valueJSON())
	return "key: " + string(k) + " payload: " + string(v)
}

// MarshalJSON gives {"type":N,"kind":…,"key":{…},"value":{…}|null}, the key
// and value objects in kafka-dump-log's offsets-decoder shape
// ({"type":"1","data":{…}} and {"version":"3","data":{…}}).
func (r *OffsetsRecord) MarshalJSON() ([]byte, error) {
	out := struct {
		Type  int16  `json:"type"`
		Kind  string `json:"kind"`
		Key   any    `json:"key"`
		Value any    `json:"value"`
	}{Type: r.Type, Kind: r.Kind()}
	if r.Unknown {
		out.Key = map[string]string{"raw": base64.StdEncoding.EncodeToString(r.RawKey)}
		if r.RawValue != nil {
			out.Value = map[string]string{"raw": base64.StdEncoding.EncodeToString(r.RawValue)}
		}
		return json.Marshal(out)
	}
	out.Key = r.keyJSON()
	if !r.Tombstone {
		out.Value = r.valueJSON()
	}
	return json.Marshal(out)
}

type versioned struct {
	Type    string `json:"type,omitempty"`
	Version string `json:"version,omitempty"`
	Data    any    `json:"data"`
}

func (r *OffsetsRecord) keyJSON() any {
	switch {
	case r.OffsetCommitKey != nil:
		k := r.OffsetCommitKey
		return versioned{Type: fmt.Sprint(r.Type), Data: struct {
			Group     string `json:"group"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		}{k.Group, k.Topic, k.Partition}}
	case r.GroupMetadataKey != nil:
		return versioned{Type: fmt.Sprint(r.Type), Data: struct {
			Group string `json:"group"`
		}{r.GroupMetadataKey.Group}}
	}
	return nil
}

func (r *OffsetsRecord) valueJSON() any {
	switch {
	case r.OffsetCommitValue != nil:
		v := r.OffsetCommitValue
		d := struct {
			Offset          int64         `json:"offset"`
			LeaderEpoch     *int32        `json:"leaderEpoch,omitempty"`
			Metadata        string        `json:"metadata"`
			CommitTimestamp int64         `json:"commitTimestamp"`
			ExpireTimestamp *int64        `json:"expireTimestamp,omitempty"`
			UnknownTags     []TaggedField `json:"unknownTaggedFields,omitempty"`
		}{Offset: v.Offset, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, UnknownTags: v.UnknownTags}
		if v.Version >= 3 {
			d.LeaderEpoch = &v.LeaderEpoch
		}
		if v.Version == 1 {
			d.ExpireTimestamp = &v.ExpireTimestamp
		}
		return versioned{Version: fmt.Sprint(v.Version), Data: d}
	case r.GroupMetadataValue != nil:
		v := r.GroupMetadataValue
		type member struct {
			MemberID         string          `json:"memberId"`
			GroupInstanceID  json.RawMessage `json:"groupInstanceId,omitempty"`
			ClientID         string          `json:"clientId"`
			ClientHost       string          `json:"clientHost"`
			RebalanceTimeout *int32          `json:"rebalanceTimeout,omitempty"`
			SessionTimeout   int32           `json:"sessionTimeout"`
			Subscription     []byte          `json:"subscription"`
			Assignment       []byte          `json:"assignment"`
			UnknownTags      []TaggedField   `json:"unknownTaggedFields,omitempty"`
		}
		d := struct {
			ProtocolType          string        `json:"protocolType"`
			Generation            int32         `json:"generation"`
			Protocol              *string       `json:"protocol"`
			Leader                *string       `json:"leader"`
			CurrentStateTimestamp *int64        `json:"currentStateTimestamp,omitempty"`
			Members               []member      `json:"members"`
			UnknownTags           []TaggedField `json:"unknownTaggedFields,omitempty"`
		}{ProtocolType: v.ProtocolType, Generation: v.Generation, Protocol: v.Protocol, Leader: v.Leader,
			Members: make([]member, len(v.Members)), UnknownTags: v.UnknownTags}
		if v.Version >= 2 {
			d.CurrentStateTimestamp = &v.CurrentStateTimestamp
		}
		for i := range v.Members {
			m := &v.Members[i]
			d.Members[i] = member{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost,
				SessionTimeout: m.SessionTimeout, Subscription: m.Subscription, Assignment: m.Assignment, UnknownTags: m.UnknownTags}
			if v.Version >= 3 {
				d.Members[i].GroupInstanceID, _ = json.Marshal(m.GroupInstanceID) // null when absent
			}
			if v.Version >= 1 {
				d.Members[i].RebalanceTimeout = &m.RebalanceTimeout
			}
		}
		return versioned{Version: fmt.Sprint(v.Version), Data: d}
	}
	return nil
}
