#!/usr/bin/env bash
# Fleet-scale benchmark: nereusctl over many partitions on versitygw
# (127.0.0.1) behind a proxy that adds a fixed delay to every request, as
# remote S3 does. Reports partitions/s, requests/partition, peak RSS and the
# concurrency the proxy saw, per command, at --parallel 1 and the default
# (when the binary has --parallel), and 4 shard processes against 1.
#
#   bash bench/scale.sh                          # 2,001 partitions, 20 ms per request
#   SCALE_PARTITIONS=300 SCALE_DELAY=20ms bash bench/scale.sh
#   SCALE_ONLY=status,shards bash bench/scale.sh
#   SCALE_ONLY=shards SCALE_SHARD_PARALLEL=1,8 bash bench/scale.sh   # shards at --parallel 1 and 8 (default: default,4)
#   SCALE_KEEP=/tmp/scale SCALE_ONLY=status,shards bash bench/scale.sh   # the store kept for the next run
#   SCALE_KEEP=/tmp/scale SCALE_SERVE=1 bash bench/scale.sh   # gateway + proxy up, for profiling by hand
#
# Needs versitygw: $VERSITYGW, or on PATH, or in Go's bin directory; on a
# fresh machine the script installs the version CI uses (about 75 s).
# Loopback only; every loop is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
bindir="$(go env GOBIN)"
[ -n "$bindir" ] || bindir="$(go env GOPATH | cut -d: -f1)/bin"
if [ -z "${VERSITYGW:-}" ] && ! command -v versitygw >/dev/null && [ ! -x "$bindir/versitygw" ]; then
	version=$(sed -n 's/^VERSITYGW_VERSION=\(v[0-9.]*\).*/\1/p' .ci/run)
	echo "scale: installing versitygw ${version:?no VERSITYGW_VERSION in .ci/run} (go install)" >&2
	go install "github.com/versity/versitygw/cmd/versitygw@$version"
	export VERSITYGW="$bindir/versitygw"
fi
work=$(mktemp -d /tmp/nereus-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/nereusctl" .
go run ./bench/scale -bin "$work/nereusctl" \
	-partitions "${SCALE_PARTITIONS:-2001}" \
	-records "${SCALE_RECORDS:-0}" \
	-delay "${SCALE_DELAY:-20ms}" \
	-only "${SCALE_ONLY:-}" \
	-shard-parallel "${SCALE_SHARD_PARALLEL:-default,4}" \
	-keep "${SCALE_KEEP:-}" \
	-serve="${SCALE_SERVE:-false}" \
	-restart-records "${SCALE_RESTART_RECORDS:-200000}" \
	-restart-trace="${SCALE_RESTART_TRACE:-false}" \
	-restart-full="${SCALE_RESTART_FULL:-true}"
