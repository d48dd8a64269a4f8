#!/usr/bin/env bash
# The test suite, as CI (.ci/run) runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

# 1. The S3 tests, verbose, so the log shows they ran against each server
#    of the list, versitygw and SeaweedFS (a subtest per server:
#    TestS3Conformance/versitygw logs "ran against versitygw v1.8.0 (...)",
#    TestS3Conformance/seaweedfs "ran against seaweedfs v0.0.0-... (...)",
#    each with the request counts). Without a server's binary its subtests
#    skip loudly, or fail when CI is set.
go test -count=1 -timeout 10m -v -run 'S3' ./internal/store/...

# 2. Everything.
# NOTE: the README quotes this exact command; change both together.
go test ./... -count=1 -timeout 20m
