#!/usr/bin/env bash
# A short -fuzz run of every fuzz target in the repository (Go fuzzes one
# target per `go test` invocation), FUZZTIME each (default 10000x: a count,
# not a duration; Go 1.26's coordinator can report "context deadline
# exceeded" as a failure when a duration -fuzztime expires while a worker is
# mid-call, golang/go#75804, fixed in Go 1.27; a count has no deadline to
# race). The targets
# are found, not listed, so a new Fuzz function is smoked without editing
# this file. Any failure (a crash or a broken property) fails the script;
# the failing input is left under the package's testdata/fuzz/ to commit as
# a regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-10000x}"
n=0
while IFS=: read -r file name; do
	pkg="./$(dirname "$file")"
	echo "-- $pkg $name"
	go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -count=1
	n=$((n + 1))
done < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . |
	sed 's/func //' | sort)
if [ "$n" -eq 0 ]; then
	echo "fuzz-smoke: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz-smoke: $n targets, $fuzztime each"
