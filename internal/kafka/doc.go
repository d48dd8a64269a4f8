// Package kafka owns Kafka's on-disk byte formats as nereusctl meets them:
// RecordBatch v2 (header, records, the five compression codecs, control
// records and end-transaction markers), the header-only scanning of a log
// byte stream (a segment file or a stored object), producer-state
// .snapshot files, leader-epoch-checkpoint files, and Kafka's topic-name and
// log-directory-name rules.
//
// The facts it matches come from the Apache Kafka source (see
// docs/design.md §4); the code is nereusctl's own.
//
// Everything it reads is untrusted. The package must never panic on input,
// never allocate more than the bytes in hand can justify (record counts,
// lengths and decompressed sizes are bounded by [Limits] and by what the
// input can hold), never touch a file, the network or the store (callers
// hand it bytes and get bytes back), and never hold state between calls
// beyond pooled codec buffers. Encoding is deterministic: the same input
// gives the same bytes.
//
// Errors are lowercase, name the position or offset at fault and wrap one of
// the exported sentinels ([ErrTruncated], [ErrZeroTail], [ErrCorrupt],
// [ErrCRC], [ErrTooLarge], [ErrInvalidName]) so callers can decide with errors.Is.
package kafka
