#!/usr/bin/env bash
# Fails (exit 1, with a diff) when the committed CLI reference (docs/cli) or
# man pages (docs/man) differ from what the command tree generates now.
# Fix: go run . gen-docs --dir docs
# (go test ./cmd/ runs the same check: TestDocsUpToDate.)
set -euo pipefail
cd "$(dirname "$0")/.."

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

go run . gen-docs --dir "$tmp" >/dev/null

status=0
for sub in cli man; do
	if ! diff -ru "docs/$sub" "$tmp/$sub" >"$tmp/$sub.diff"; then
		echo "docs/$sub is stale (- committed, + generated):"
		cat "$tmp/$sub.diff"
		status=1
	fi
done
if [ "$status" -ne 0 ]; then
	echo
	echo "run: go run . gen-docs --dir docs"
	exit 1
fi
echo "docs/cli and docs/man are up to date"
