package kafka

// SpecOf returns the spec that re-encodes a decoded batch: with the same
// codec, EncodeBatch(SpecOf(b)) gives back the broker's bytes for an
// uncompressed batch, and the same header and records for a compressed
// one.
func SpecOf(b *Batch) BatchSpec {
	h := b.Header
	s := BatchSpec{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Codec:                h.Codec(),
		TimestampType:        h.TimestampType(),
		Transactional:        h.IsTransactional(),
		Control:              h.IsControl(),
		DeleteHorizonMs:      h.DeleteHorizonMs(),
		BaseTimestamp:        h.BaseTimestamp,
		MaxTimestamp:         h.MaxTimestamp,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		Records:              b.Records,
		LastOffsetDelta:      h.LastOffsetDelta,
	}
	return s
}

// DecodeRecords parses the uncompressed records section of a batch with
// header h: exactly h.RecordsCount records that use up all of data. Offsets
// and timestamps are made absolute from h (LogAppendTime rule applied);
// offset deltas must be strictly increasing and within
// [0, h.LastOffsetDelta]. Key, Value and header values of the result alias
// data. Zero fields of lim take their DefaultLimits value.
func DecodeRecords(h BatchHeader, data []byte, lim Limits) ([]Record, error) {
	recs, _, err := decodeRecordsInto(h, data, lim.withDefaults(), nil, nil, nil)
	return recs, err
}

// Reset makes s scan data from the start, keeping its verify mode, so one
// Scanner can serve many segments without allocating.
func (s *Scanner) Reset(data []byte) {
	*s = Scanner{data: data, verify: s.verify}
}

// EntrySize is the current entry's size in data.
func (s *LogScanner) EntrySize() int { return s.next - s.pos }
