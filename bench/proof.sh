#!/usr/bin/env bash
# Proof-ledger benchmark: nightly budgeted runs of
#   nereusctl verify --all --deep --incremental --max-bytes BUDGET
# over a synthetic file:// store of many small partitions reach full
# coverage in ceil(total/budget) runs (± 1), every object hashed exactly
# once across the runs; and the ledger bytes per partition.
#
#   bash bench/proof.sh                              # 5,000 partitions x 8 objects, a seventh a night
#   PROOF_PARTITIONS=20000 bash bench/proof.sh
#   PROOF_BUDGET=5000000 bash bench/proof.sh         # bytes a night
#   PROOF_KEEP=/tmp/proof bash bench/proof.sh        # the store kept for the next run (ledgers included:
#                                                   # remove streams/*/proof.json to start over)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/nereus-proof.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/nereusctl" .
dir="${PROOF_KEEP:-$work/store}"
go run ./bench/proof -bin "$work/nereusctl" -dir "$dir" \
	-partitions "${PROOF_PARTITIONS:-5000}" \
	-objects "${PROOF_OBJECTS:-8}" \
	-max-bytes "${PROOF_BUDGET:-}"
