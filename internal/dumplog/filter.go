package dumplog

import (
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/kafka/coord"
)

// Filter keeps a dump to some records: one consumer group's
// __consumer_offsets records, one transactional id's __transaction_state
// records, and records whose timestamp is in [Since, Until). A zero Filter
// keeps everything. A batch is shown when it holds a record the filter
// keeps (the batch is decoded to know), and with deep iteration only
// those records are; a batch that fails its CRC or does not decode is
// always shown (the filter cannot look inside it, and damage is never
// hidden).
type Filter struct {
	// Group keeps the __consumer_offsets records of this group id
	// (coord.OffsetsRecord.GroupOf).
	Group string
	// TransactionalID keeps the __transaction_state records of this id.
	TransactionalID string
	// Since and Until bound the record timestamps (ms since the epoch):
	// Since <= timestamp < Until; nil is no bound. A LogAppendTime
	// batch's records carry its max timestamp, as Kafka reads them.
	Since, Until *int64
}

// Active reports whether the filter drops anything.
func (f Filter) Active() bool {
	return f.Group != "" || f.TransactionalID != "" || f.Since != nil || f.Until != nil
}

// keepTime reports whether ts is in [Since, Until).
func (f Filter) keepTime(ts int64) bool {
	if f.Since != nil && ts < *f.Since {
		return false
	}
	if f.Until != nil && ts >= *f.Until {
		return false
	}
	return true
}

// keepKey reports whether a record with this key and value belongs to the
// group or transactional id asked for. A record whose key does not decode
// names no id and is not kept (the dump without the filter shows it).
func (f Filter) keepKey(key, value []byte) bool {
	if f.Group != "" {
		r, err := coord.DecodeOffsetsRecord(key, value)
		if err != nil {
			return false
		}
		g, ok := r.GroupOf()
		if !ok || g != f.Group {
			return false
		}
	}
	if f.TransactionalID != "" {
		r, err := coord.DecodeTxnRecord(key, value)
		if err != nil {
			return false
		}
		id, ok := r.TransactionalIDOf()
		if !ok || id != f.TransactionalID {
			return false
		}
	}
	return true
}

// keeps reports whether the filter keeps record r of a batch with header
// h. Control records belong to no group or transactional id.
func (f Filter) keeps(h *kafka.BatchHeader, r *kafka.Record) bool {
	if !f.keepTime(r.Timestamp) { // a LogAppendTime batch's records carry its max timestamp
		return false
	}
	if f.Group == "" && f.TransactionalID == "" {
		return true
	}
	if h.IsControl() {
		return false
	}
	return f.keepKey(r.Key, r.Value)
}
