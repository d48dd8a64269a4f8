#!/usr/bin/env bash
# Module hygiene and static analysis: go.mod/go.sum are tidy (go mod tidy
# would change nothing) and staticcheck reports nothing. staticcheck must be
# on PATH (.ci/run installs the pinned version).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "-- go mod tidy -diff"
if ! go mod tidy -diff; then
	echo "go.mod/go.sum are not tidy: run go mod tidy and commit the result" >&2
	exit 1
fi

echo "-- staticcheck ./..."
staticcheck -version
staticcheck ./...
