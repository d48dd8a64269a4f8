// Package e2e holds nereusctl's end-to-end tests: the testscripts of every
// operator workflow (testdata/script at the repository root, run against
// the real command), the damage × command matrix of the health gate, the
// crash and kill campaigns of every mutating command, the bit-flip sweep,
// lease fencing with real processes, request economy on file:// and on the
// S3 servers. It has no code of its own outside its tests. Run it alone
// with `go test ./e2e/` (the S3 tests need versitygw and SeaweedFS:
// VERSITYGW and SEAWEEDFS, or on PATH).
package e2e
