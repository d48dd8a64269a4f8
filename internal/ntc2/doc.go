// Package ntc2 owns the NTC2 compacted-view format (docs/design.md §3 and §8,
// docs/formats/ntc2.md): the byte layout of one immutable object of a
// TOPIC_COMPACTED generation, holding the rows offline key compaction kept
// for an offset range [Base, End) of one partition, sparse (offsets keep
// their original values, gaps allowed), in blocks of about 64 KiB with
// CRC-32C, optional zstd compression, a block index, a footer naming the
// exact source generations, and a SHA-256 content digest.
//
// Writer streams rows in strictly ascending offset order into blocks; the
// same rows and Meta always give the same bytes. Open parses the header,
// footer and block index and checks their structure, checksums and bounds
// without decompressing any block; OpenTail does the same from a ranged read
// of the object's tail, so a reader can fetch only the blocks it needs
// (SeekBlock, DecodeBlock). Block checks one block (CRC-32C, decompression
// capped at the index's raw length, row decoding against the index entry);
// Rows walks every row; Verify checks everything and reports findings.
//
// The package never touches a store, never decides which rows a view keeps
// (that is compaction) or which view a fetch may use (that is coverage), and
// never trusts its input: every length, count and decompressed size is
// bounded by the bytes in hand and by the caps in format.go, and no input
// makes it panic. Every corruption error wraps ErrCorrupt (and is a
// *CorruptError naming the part, the block and the check); an unknown format
// version wraps ErrVersion.
package ntc2
