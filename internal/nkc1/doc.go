// Package nkc1 owns the NKC1 checkpoint format (docs/design.md §5,
// docs/formats/nkc1.md): the byte layout of an immutable, deterministic
// checkpoint of one partition's derived state, its section table, per-section
// CRC-32C and SHA-256, optional zstd compression, and the root digest.
//
// Encode turns a Checkpoint (anchor, state.Partition, coverage, binding
// reference) into bytes; the same checkpoint always gives the same bytes.
// Open parses the header and footer and checks structure and bounds without
// decompressing anything; Section opens one section (CRC, bounded
// decompression, SHA-256) without touching the others; Verify checks every
// digest and reports findings; Decode does all of it and rebuilds the
// Checkpoint. OpenFooter parses a ranged read of the file's tail, so a reader
// can find the section table with one GET and fetch only the sections it
// needs.
//
// The payloads of the producer, transaction, aborted-range, leader-epoch,
// segment and index sections are exactly the canonical encodings of package
// state; this package only frames them. It never touches a store, never
// decides which checkpoint to use (that is replay), and never trusts its
// input: every length, count and decompressed size is bounded by the bytes
// in hand and by MaxRawBytes, and it never panics on any input.
//
// Every corruption error wraps ErrCorrupt (and is a *CorruptError naming the
// part, section and check); an unknown format version wraps ErrVersion.
package nkc1
