#!/usr/bin/env bash
# tests/run.sh — every test of ddptok; no GPU needed. Ends with "N passed, N failed, N skipped"
# alone on the last line, after the names of the failures and the skips with their reasons.
#   bash tests/run.sh [GROUP | GROUP:CASE ...]   the cases named, every case of a GROUP named
#                                                bare, every group when nothing is named
#   bash tests/run.sh --list [GROUP...]          every GROUP:CASE (of those groups), one a line
#   bash tests/run.sh --groups                   every group, in the order they run, one a line
# groups: layers runner unit config data import parity invariance lossunits empty train gpt hf preempt
#   checkpoints faults hostile fuzz sanitize commands evaluation progress messages everyday comm torch slurm hosts docker cuda
# Each group runs in its own bash process (tests/lib.sh and tests/test_<group>.sh sourced
# fresh), each case of it in its own subshell and scratch directory (tests/lib.sh says how);
# results come back through a file, so a group that exits early or crashes still counts (a
# crash with no report is a failure). An unknown group or case is a failure naming it, with
# the nearest name when one is close. Two checks of one run sharing a name, or a check name
# starting with "...", fail the run. DDPTOK_TESTS_DIR=DIR takes the group files from DIR
# instead (the runner's own tests, tests/test_runner.sh, use it).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
TESTS_DIR=${DDPTOK_TESTS_DIR:-$ROOT/tests}
if [ -n "${DDPTOK_TESTS_DIR:-}" ]; then
  ALL=($(cd "$TESTS_DIR" && ls test_*.sh 2>/dev/null | sed 's/^test_//; s/\.sh$//'))
else
  ALL=(layers runner unit config data import parity invariance lossunits empty train gpt hf preempt checkpoints faults hostile fuzz
       sanitize commands evaluation progress messages everyday comm torch slurm hosts docker cuda)
fi
source tests/lib.sh
[ -n "${DDPTOK_TESTS_DIR:-}" ] && export DDPTOK_TESTS_DIR=$TESTS_DIR  # for the group processes

[ "${1:-}" = --groups ] && { printf '%s\n' "${ALL[@]}"; exit 0; }
list=0
[ "${1:-}" = --list ] && { list=1; shift; }
[ $# -eq 0 ] && set -- "${ALL[@]}"
# The groups in the order first named, each with the cases asked for ("" = all of them).
declare -A want=() whole=()
order=() bad_args=()
for a in "$@"; do
  g=${a%%:*}
  if [[ ! $g =~ ^[a-z0-9_]+$ ]] || [ ! -f "$TESTS_DIR/test_$g.sh" ]; then
    near=$(lib_closest "$g" "${ALL[@]}")
    bad_args+=("$g	no such test group: $g${near:+ (did you mean $near?)}"); continue
  fi
  [ -n "${want[$g]+x}" ] || { order+=("$g"); want[$g]=; }
  if [[ $a != *:* ]]; then whole[$g]=1
  elif [[ " ${want[$g]} " != *" ${a#*:} "* ]]; then want[$g]+=" ${a#*:}"; fi
done

if [ $list -eq 1 ]; then
  for g in "${order[@]}"; do
    lib_list "$g"
  done
  for m in "${bad_args[@]}"; do echo "${m#*	}" >&2; done
  [ ${#bad_args[@]} -eq 0 ]; exit
fi

start=$(date +%s)
REPORTS=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-report.XXXXXX")
trap 'rm -rf "$REPORTS"; [ -z "${OMPI_BASE_OWNED:-}" ] || rm -rf "$DDPTOK_TEST_OMPI_BASE"' EXIT
passed=0 failed=0 skipped=0 failed_names=() skipped_names=() kept=()
for m in "${bad_args[@]}"; do
  echo "== ${m%%	*}"; echo "FAIL ${m#*	}"; failed=$((failed + 1)); failed_names+=("${m#*	}")
done
for g in "${order[@]}"; do
  echo "== $g"
  rep="$REPORTS/$g"
  cases=()
  [ -n "${whole[$g]:-}" ] || read -ra cases <<<"${want[$g]}"  # a bare GROUP: all its cases
  g0=$(date +%s)
  TEST_REPORT="$rep" bash -c 'set -u; source tests/lib.sh; lib_group "$@"' bash "$g" "${cases[@]}"
  rc=$?
  echo "   ($g: $(( $(date +%s) - g0 )) s)"
  if [ ! -f "$rep/results" ]; then
    echo "FAIL group $g ended (exit $rc) without reporting"
    failed=$((failed + 1)); failed_names+=("$g: ended without a report (exit $rc)"); continue
  fi
  if [ ! -f "$rep/finished" ]; then
    echo "FAIL group $g stopped before its end (exit $rc)"
    failed=$((failed + 1)); failed_names+=("$g: stopped before its end (exit $rc)")
  fi
  while IFS=$'\t' read -r kind where name detail; do
    case $kind in
      ok) passed=$((passed + 1)) ;;
      FAIL) failed=$((failed + 1)); [[ $name == "$where: "* ]] && failed_names+=("$name") || failed_names+=("$where: $name") ;;
      SKIP) skipped=$((skipped + 1)); skipped_names+=("$where: $name ($detail)") ;;
    esac
  done < "$rep/results"
  while IFS=$'\t' read -r where dir; do kept+=("$where: $dir"); done < "$rep/kept"
done

# Check names: unique across the run, none starting with "..." (each must make sense alone).
if [ ${#order[@]} -gt 0 ]; then
  all_results=$(cat "$REPORTS"/*/results 2>/dev/null)
  while IFS= read -r n; do
    [ -n "$n" ] || continue
    where=$(n=$n awk -F'\t' '$3 == ENVIRON["n"] {print $2}' <<<"$all_results" | sort | uniq -c | awk '{print $2 ($1 > 1 ? " x" $1 : "")}' | tr '\n' ' ')
    echo "FAIL two checks share the name '$n': ${where% }"
    failed=$((failed + 1)); failed_names+=("check names: '$n' is used by more than one check (${where% })")
  done < <(cut -f3 <<<"$all_results" | sort | uniq -d)
  while IFS=$'\t' read -r _ where n _; do
    echo "FAIL a check name starts with '...': '$n' ($where)"
    failed=$((failed + 1)); failed_names+=("check names: '$n' ($where) starts with '...': name the case and what it checks")
  done < <(awk -F'\t' 'index($3, "...") == 1' <<<"$all_results")
fi

echo
echo "tests took $(( $(date +%s) - start )) s"
[ "$skipped" -gt 0 ] && { echo "skipped:"; printf '  %s\n' "${skipped_names[@]}"; }
[ "$failed" -gt 0 ] && { echo "failed:"; printf '  %s\n' "${failed_names[@]}"; }
[ ${#kept[@]} -gt 0 ] && { echo "kept (the directories of the cases that failed):"; printf '  %s\n' "${kept[@]}"; }
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
