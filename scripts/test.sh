#!/usr/bin/env bash
# The test suite, as CI (.ci/run) runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

# 1. The S3 tests, verbose, so the log shows they ran against versitygw
#    (TestS3Conformance logs "ran against versitygw v1.8.0 (...)" and the
#    request counts). Without the versitygw binary they skip loudly, or fail
#    when CI is set.
go test -count=1 -timeout 10m -v -run 'S3' ./internal/store/...

# 2. Everything.
# NOTE: the README quotes this exact command; change both together.
go test ./... -count=1 -timeout 20m
