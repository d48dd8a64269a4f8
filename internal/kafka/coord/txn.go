package coord

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// __transaction_state records (transaction-coordinator/src/main/resources/
// common/message/TransactionLog{Key,Value}.json, core's TransactionLog and
// TransactionMetadata).

const (
	txnKeyVersion      int16 = 0
	maxTxnValueVersion int16 = 1
)

// TxnStatus is a transaction's state as stored (TransactionState ids).
type TxnStatus int8

// Transaction states.
const (
	TxnEmpty             TxnStatus = 0
	TxnOngoing           TxnStatus = 1
	TxnPrepareCommit     TxnStatus = 2
	TxnPrepareAbort      TxnStatus = 3
	TxnCompleteCommit    TxnStatus = 4
	TxnCompleteAbort     TxnStatus = 5
	TxnDead              TxnStatus = 6
	TxnPrepareEpochFence TxnStatus = 7
)

var txnStatusNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name for the state, or "Unknown(n)".
func (s TxnStatus) String() string {
	if s >= 0 && int(s) < len(txnStatusNames) {
		return txnStatusNames[s]
	}
	return fmt.Sprintf("Unknown(%d)", int8(s))
}

// Valid reports whether s is a state Kafka defines.
func (s TxnStatus) Valid() bool { return s >= 0 && int(s) < len(txnStatusNames) }

// TransactionLogKey is the key of a transactional id's record (version 0).
type TransactionLogKey struct {
	Version         int16
	TransactionalID string
}

// TransactionLogValue is a transactional id's state, versions 0–1
// (flexible from 1). PreviousProducerID (tag 0), NextProducerID (tag 1)
// and ClientTransactionVersion (tag 2) exist only in v1, as tagged fields
// written when they differ from their defaults (-1, -1, 0).
type TransactionLogValue struct {
	Version                  int16
	ProducerID               int64
	PreviousProducerID       int64
	NextProducerID           int64
	ProducerEpoch            int16
	TransactionTimeoutMs     int32
	TransactionStatus        TxnStatus
	TransactionPartitions    []TxnPartitions // nil = null (Kafka writes null for Empty)
	LastUpdateTimestampMs    int64
	StartTimestampMs         int64
	ClientTransactionVersion int16
	UnknownTags              []TaggedField // v1+
}

// TxnPartitions is one topic of a transaction's partition set.
type TxnPartitions struct {
	Topic        string
	PartitionIDs []int32
	UnknownTags  []TaggedField // v1+
}

// NewTransactionLogValue returns a value of the given version with Kafka's
// defaults for the tagged fields.
func NewTransactionLogValue(version int16) TransactionLogValue {
	return TransactionLogValue{Version: version, PreviousProducerID: -1, NextProducerID: -1}
}

// DecodeTransactionLogKey decodes a key of version 0, prefix included.
func DecodeTransactionLogKey(b []byte) (TransactionLogKey, error) {
	r := &reader{b: b}
	k := TransactionLogKey{Version: r.int16("version")}
	if r.err == nil && k.Version != txnKeyVersion {
		return TransactionLogKey{}, fmt.Errorf("decode transaction log key: version %d: %w", k.Version, ErrUnsupportedVersion)
	}
	k.TransactionalID = r.string("transactionalId")
	if err := r.done("transaction log key"); err != nil {
		return TransactionLogKey{}, fmt.Errorf("decode transaction log key: %w", err)
	}
	return k, nil
}

// Encode returns the key bytes, prefix included.
func (k TransactionLogKey) Encode() ([]byte, error) {
	if k.Version != txnKeyVersion {
		return nil, fmt.Errorf("encode transaction log key: version %d: %w", k.Version, ErrUnsupportedVersion)
	}
	w := &writer{}
	w.int16(k.Version)
	w.string("transactionalId", k.TransactionalID)
	if w.err != nil {
		return nil, fmt.Errorf("encode transaction log key: %w", w.err)
	}
	return w.b, nil
}

// DecodeTransactionLogValue decodes a value, prefix included. An unknown
// status is an error, as in Kafka (TransactionState.fromId).
func DecodeTransactionLogValue(b []byte) (TransactionLogValue, error) {
	r := &reader{b: b}
	v := NewTransactionLogValue(r.int16("version"))
	if r.err == nil && (v.Version < 0 || v.Version > maxTxnValueVersion) {
		return TransactionLogValue{}, fmt.Errorf("decode transaction log value: version %d: %w", v.Version, ErrUnsupportedVersion)
	}
	r.flexible = v.Version >= 1
	v.ProducerID = r.int64("producerId")
	v.ProducerEpoch = r.int16("producerEpoch")
	v.TransactionTimeoutMs = r.int32("transactionTimeoutMs")
	v.TransactionStatus = TxnStatus(r.int8("transactionStatus"))
	if r.err == nil && !v.TransactionStatus.Valid() {
		r.fail("transactionStatus", "unknown transaction state id %d", int8(v.TransactionStatus))
	}
	minTopic := 2 + 4 // string length + array length
	if r.flexible {
		minTopic = 1 + 1 + 1
	}
	n := r.arrayLen("transactionPartitions", true, minTopic)
	if n >= 0 && r.err == nil {
		v.TransactionPartitions = make([]TxnPartitions, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		p := &v.TransactionPartitions[i]
		p.Topic = r.string("topic")
		m := r.arrayLen("partitionIds", false, 4)
		if r.err == nil {
			p.PartitionIDs = make([]int32, m)
			for j := range p.PartitionIDs {
				p.PartitionIDs[j] = r.int32("partitionIds")
			}
		}
		p.UnknownTags = r.tags("transactionPartitions", nil)
	}
	v.LastUpdateTimestampMs = r.int64("transactionLastUpdateTimestampMs")
	v.StartTimestampMs = r.int64("transactionStartTimestampMs")
	v.UnknownTags = r.tags("transaction log value", func(tag uint32, size int) bool {
		switch tag {
		case 0, 1:
			if size != 8 {
				r.fail("transaction log value", "tag %d: %d bytes, want 8", tag, size)
				return true
			}
			if tag == 0 {
				v.PreviousProducerID = r.int64("previousProducerId")
			} else {
				v.NextProducerID = r.int64("nextProducerId")
			}
			return true
		case 2:
			if size != 2 {
				r.fail("transaction log value", "tag 2: %d bytes, want 2", size)
				return true
			}
			v.ClientTransactionVersion = r.int16("clientTransactionVersion")
			return true
		}
		return false
	})
	if err := r.done("transaction log value"); err != nil {
		return TransactionLogValue{}, fmt.Errorf("decode transaction log value v%d: %w", v.Version, err)
	}
	return v, nil
}

// Encode returns the value bytes, prefix included.
func (v TransactionLogValue) Encode() ([]byte, error) {
	if v.Version < 0 || v.Version > maxTxnValueVersion {
		return nil, fmt.Errorf("encode transaction log value: version %d: %w", v.Version, ErrUnsupportedVersion)
	}
	w := &writer{}
	w.int16(v.Version)
	w.flexible = v.Version >= 1
	w.int64(v.ProducerID)
	w.int16(v.ProducerEpoch)
	w.int32(v.TransactionTimeoutMs)
	w.int8(int8(v.TransactionStatus))
	if v.TransactionPartitions == nil {
		w.arrayLen(-1)
	} else {
		w.arrayLen(len(v.TransactionPartitions))
	}
	for i := range v.TransactionPartitions {
		p := &v.TransactionPartitions[i]
		w.string("topic", p.Topic)
		w.arrayLen(len(p.PartitionIDs))
		for _, id := range p.PartitionIDs {
			w.int32(id)
		}
		w.tags("transactionPartitions", nil, p.UnknownTags)
	}
	w.int64(v.LastUpdateTimestampMs)
	w.int64(v.StartTimestampMs)
	var known []knownTag
	if v.PreviousProducerID != -1 {
		known = append(known, knownTag{0, be64(v.PreviousProducerID)})
	}
	if v.NextProducerID != -1 {
		known = append(known, knownTag{1, be64(v.NextProducerID)})
	}
	if v.ClientTransactionVersion != 0 {
		known = append(known, knownTag{2, be16(v.ClientTransactionVersion)})
	}
	w.tags("transaction log value", known, v.UnknownTags)
	if w.err != nil {
		return nil, fmt.Errorf("encode transaction log value v%d: %w", v.Version, w.err)
	}
	return w.b, nil
}

// TxnRecord is one decoded __transaction_state record. A key version other
// than 0 is Unknown (Kafka's "unknown::version=N"), with only raw bytes
// kept. A nil value is a tombstone.
type TxnRecord struct {
	KeyVersion int16
	Unknown    bool
	Tombstone  bool
	Key        *TransactionLogKey
	Value      *TransactionLogValue
	RawKey     []byte `json:"-"`
	RawValue   []byte `json:"-"`
}

// DecodeTxnRecord decodes a __transaction_state record. value == nil is a
// tombstone. An unknown key version decodes without error (Unknown set);
// a truncated or garbled key or value, an unknown value version or an
// unknown status is an error.
func DecodeTxnRecord(key, value []byte) (*TxnRecord, error) {
	if len(key) < 2 {
		return nil, fmt.Errorf("decode __transaction_state record: %d-byte key has no version: %w", len(key), ErrCorrupt)
	}
	ver := int16(uint16(key[0])<<8 | uint16(key[1]))
	rec := &TxnRecord{KeyVersion: ver, Tombstone: value == nil, RawKey: key, RawValue: value}
	if ver != txnKeyVersion {
		rec.Unknown = true
		return rec, nil
	}
	k, err := DecodeTransactionLogKey(key)
	if err != nil {
		return nil, fmt.Errorf("decode __transaction_state record: %w", err)
	}
	rec.Key = &k
	if value != nil {
		v, err := DecodeTransactionLogValue(value)
		if err != nil {
			return nil, fmt.Errorf("decode __transaction_state record (transactional id %q): %w", k.TransactionalID, err)
		}
		rec.Value = &v
	}
	return rec, nil
}

// Encode returns the record's key and value bytes (value nil for a
// tombstone). An Unknown record gives back its raw bytes.
func (r *TxnRecord) Encode() (key, value []byte, err error) {
	if r.Unknown {
		return r.RawKey, r.RawValue, nil
	}
	if r.Key == nil {
		return nil, nil, fmt.Errorf("encode __transaction_state record: no key set: %w", ErrCorrupt)
	}
	if key, err = r.Key.Encode(); err != nil {
		return nil, nil, err
	}
	if r.Tombstone || r.Value == nil {
		return key, nil, nil
	}
	value, err = r.Value.Encode()
	return key, value, err
}

// String is kafka-dump-log's transaction-log-decoder form:
// "transaction_metadata::transactionalId=ID" then
// "producerId:…,producerEpoch:…,state=…,partitions=[t-0,…],txnLastUpdateTimestamp=…,txnTimeoutMs=…"
// or "<DELETE>"; "unknown::version=N" for an unknown key version.
func (r *TxnRecord) String() string {
	if r.Unknown {
		return fmt.Sprintf("unknown::version=%d", r.KeyVersion)
	}
	var sb strings.Builder
	sb.WriteString("key: transaction_metadata::transactionalId=")
	sb.WriteString(r.Key.TransactionalID)
	sb.WriteString(" payload: ")
	if r.Tombstone || r.Value == nil {
		sb.WriteString("<DELETE>")
		return sb.String()
	}
	v := r.Value
	fmt.Fprintf(&sb, "producerId:%d,producerEpoch:%d,state=%s,partitions=[", v.ProducerID, v.ProducerEpoch, v.TransactionStatus)
	first := true
	if v.TransactionStatus != TxnEmpty {
		for _, p := range v.TransactionPartitions {
			for _, id := range p.PartitionIDs {
				if !first {
					sb.WriteByte(',')
				}
				first = false
				sb.WriteString(p.Topic)
				sb.WriteByte('-')
				sb.WriteString(strconv.FormatInt(int64(id), 10))
			}
		}
	}
	fmt.Fprintf(&sb, "],txnLastUpdateTimestamp=%d,txnTimeoutMs=%d", v.LastUpdateTimestampMs, v.TransactionTimeoutMs)
	return sb.String()
}

// MarshalJSON gives {"keyVersion":N,"key":{…},"value":{…}|null} with
// Kafka's JSON field names, plus "state" (the status name).
func (r *TxnRecord) MarshalJSON() ([]byte, error) {
	out := struct {
		KeyVersion int16 `json:"keyVersion"`
		Unknown    bool  `json:"unknown,omitempty"`
		Key        any   `json:"key"`
		Value      any   `json:"value"`
	}{KeyVersion: r.KeyVersion, Unknown: r.Unknown}
	if r.Unknown {
		out.Key = map[string]string{"raw": base64.StdEncoding.EncodeToString(r.RawKey)}
		if r.RawValue != nil {
			out.Value = map[string]string{"raw": base64.StdEncoding.EncodeToString(r.RawValue)}
		}
		return json.Marshal(out)
	}
	if r.Key != nil {
		out.Key = versioned{Version: fmt.Sprint(r.Key.Version), Data: struct {
			TransactionalID string `json:"transactionalId"`
		}{r.Key.TransactionalID}}
	}
	if v := r.Value; v != nil && !r.Tombstone {
		type parts struct {
			Topic        string        `json:"topic"`
			PartitionIDs []int32       `json:"partitionIds"`
			UnknownTags  []TaggedField `json:"unknownTaggedFields,omitempty"`
		}
		d := struct {
			ProducerID               int64         `json:"producerId"`
			PreviousProducerID       *int64        `json:"previousProducerId,omitempty"`
			NextProducerID           *int64        `json:"nextProducerId,omitempty"`
			ProducerEpoch            int16         `json:"producerEpoch"`
			TransactionTimeoutMs     int32         `json:"transactionTimeoutMs"`
			TransactionStatus        int8          `json:"transactionStatus"`
			State                    string        `json:"state"`
			TransactionPartitions    []parts       `json:"transactionPartitions"`
			LastUpdateTimestampMs    int64         `json:"transactionLastUpdateTimestampMs"`
			StartTimestampMs         int64         `json:"transactionStartTimestampMs"`
			ClientTransactionVersion *int16        `json:"clientTransactionVersion,omitempty"`
			UnknownTags              []TaggedField `json:"unknownTaggedFields,omitempty"`
		}{
			ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch, TransactionTimeoutMs: v.TransactionTimeoutMs,
			TransactionStatus: int8(v.TransactionStatus), State: v.TransactionStatus.String(),
			LastUpdateTimestampMs: v.LastUpdateTimestampMs, StartTimestampMs: v.StartTimestampMs, UnknownTags: v.UnknownTags,
		}
		if v.TransactionPartitions != nil {
			d.TransactionPartitions = make([]parts, len(v.TransactionPartitions))
			for i, p := range v.TransactionPartitions {
				d.TransactionPartitions[i] = parts(p)
			}
		}
		if v.Version >= 1 {
			if v.PreviousProducerID != -1 {
				d.PreviousProducerID = &v.PreviousProducerID
			}
			if v.NextProducerID != -1 {
				d.NextProducerID = &v.NextProducerID
			}
			if v.ClientTransactionVersion != 0 {
				d.ClientTransactionVersion = &v.ClientTransactionVersion
			}
		}
		out.Value = versioned{Version: fmt.Sprint(v.Version), Data: d}
	}
	return json.Marshal(out)
}
