#!/usr/bin/env bash
# Checks .goreleaser.yaml. With goreleaser on PATH (or in GOPATH/bin) it runs
# 'goreleaser check'; otherwise the Go test that parses the config strictly
# (TestGoreleaserConfig in cmd/docs_test.go), which CI runs anyway.
#
# goreleaser is not installed by CI: 'go install
# github.com/goreleaser/goreleaser/v2@v2.15.1' took about 17 minutes here.
# A full local dry run of the release, into dist/:
#   goreleaser release --snapshot --clean --skip=publish
set -euo pipefail
cd "$(dirname "$0")/.."

gr="$(command -v goreleaser || true)"
if [ -z "$gr" ]; then
	bindir="$(go env GOBIN)"
	[ -n "$bindir" ] || bindir="$(go env GOPATH | cut -d: -f1)/bin"
	[ -x "$bindir/goreleaser" ] && gr="$bindir/goreleaser"
fi
if [ -n "$gr" ]; then
	"$gr" check
else
	echo "goreleaser not installed; running the config test instead"
	go test -count=1 -run 'TestGoreleaserConfig' ./cmd/
fi

# The test-only crash harness (NEREUSCTL_TEST_CRASH_AFTER, e2e/crash_test.go)
# must not be in the released binary: build it as .goreleaser.yaml does
# and look for the variable's name.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$tmp/nereusctl" .
if grep -q NEREUSCTL_TEST_CRASH_AFTER "$tmp/nereusctl"; then
	echo "the release binary contains the test-only crash hook NEREUSCTL_TEST_CRASH_AFTER" >&2
	exit 1
fi
echo "release binary: no test-only crash hook"
