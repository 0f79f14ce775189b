#!/usr/bin/env bash
# tests/run.sh — every test of ddptok; no GPU needed. Ends with "N passed, N failed, N skipped"
# alone on the last line, after the names of the failures and the skips with their reasons.
#   bash tests/run.sh [GROUP...]     groups: layers unit config data import parity invariance units empty train preempt
#     checkpoints faults hostile fuzz sanitize commands progress messages comm torch slurm hosts docker cuda (all by default)
# Each group runs in its own bash process (tests/lib.sh sourced fresh, its own variables,
# traps and working directory); it reports its counts and names back through a file, so a
# group that exits early or crashes still counts (a crash with no report is a failure).
set -u
cd "$(dirname "$0")/.."
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(layers unit config data import parity invariance units empty train preempt checkpoints faults hostile fuzz sanitize commands progress messages comm torch slurm hosts docker cuda)
start=$(date +%s)
REPORTS=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-report.XXXXXX")
trap 'rm -rf "$REPORTS"' EXIT
passed=0 failed=0 skipped=0 failed_names=() skipped_names=()
for g in "${groups[@]}"; do
  echo "== $g"
  rep="$REPORTS/$g"
  if [ ! -f "tests/test_$g.sh" ]; then
    echo "FAIL no such test group: tests/test_$g.sh"
    failed=$((failed + 1)); failed_names+=("$g: no such group"); continue
  fi
  TEST_REPORT="$rep" bash -c 'set -u; source tests/lib.sh; trap lib_report EXIT
    source "tests/test_$1.sh"; lib_report; touch "$TEST_REPORT/finished"' bash "$g"
  rc=$?
  if [ ! -f "$rep/counts" ]; then
    echo "FAIL group $g ended (exit $rc) without reporting its counts"
    failed=$((failed + 1)); failed_names+=("$g: ended without a report (exit $rc)"); continue
  fi
  if [ ! -f "$rep/finished" ]; then
    echo "FAIL group $g stopped before its end (exit $rc)"
    failed=$((failed + 1)); failed_names+=("$g: stopped before its end (exit $rc)")
  fi
  read -r p f s < "$rep/counts"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  while IFS= read -r n; do failed_names+=("$g: $n"); done < "$rep/failed"
  while IFS= read -r n; do skipped_names+=("$g: $n"); done < "$rep/skipped"
done
echo
echo "tests took $(( $(date +%s) - start )) s"
[ "$skipped" -gt 0 ] && { echo "skipped:"; printf '  %s\n' "${skipped_names[@]}"; }
[ "$failed" -gt 0 ] && { echo "failed:"; printf '  %s\n' "${failed_names[@]}"; }
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
