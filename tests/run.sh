#!/usr/bin/env bash
# tests/run.sh — every test of ddptok; no GPU needed. Ends with "N passed, N failed".
#   bash tests/run.sh [GROUP...]     groups: unit config data parity units empty train preempt
#     checkpoints faults sanitize commands torch slurm hosts docker cuda (all by default)
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(unit config data parity units empty train preempt checkpoints faults sanitize commands torch slurm hosts docker cuda)
start=$(date +%s)
for g in "${groups[@]}"; do
  echo "== $g"
  source "tests/test_$g.sh"
done
echo
echo "tests took $(( $(date +%s) - start )) s"
[ "$FAILED" -gt 0 ] && printf 'failed: %s\n' "${FAILED_NAMES[@]}"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
