// Package coord owns the record formats of Kafka's two coordinator topics:
// __consumer_offsets (OffsetCommitKey/Value, GroupMetadataKey/Value) and
// __transaction_state (TransactionLogKey/Value), decoded and encoded byte
// for byte as Kafka's generated message classes do (int16 type/version
// prefix, int16-length strings in classic versions, compact
// unsigned-varint lengths and a tagged-field section in flexible versions).
//
// Field sets and versions follow Kafka's JSON schemas
// (group-coordinator/src/main/resources/common/message/*.json,
// transaction-coordinator/src/main/resources/common/message/TransactionLog*.json).
// Tagged fields this package does not name are kept raw and written back
// unchanged.
//
// Input is untrusted: decoding never panics, bounds every count by the
// bytes present, and refuses truncated, trailing or garbled bytes with an
// error wrapping ErrCorrupt (or ErrUnsupportedVersion). Record types this
// package does not decode (the newer group records, types 3–15) are
// reported as unknown, not as errors. The package never reads files or the
// store, and never interprets record batches (package kafka does that).
package coord
