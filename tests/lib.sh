# tests/lib.sh — helpers shared by the test groups (sourced by tests/run.sh, once per group,
# each group in its own bash process). Every check prints "ok", "FAIL" with what was
# expected, or "SKIP" with the reason; lib_report hands the counts back to run.sh.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DDPTOK="$ROOT/ddptok"
CONFIGS="$ROOT/configs"
PASSED=0
FAILED=0
SKIPPED=0
FAILED_NAMES=()
SKIPPED_NAMES=()

# Open MPI refuses root without these; tests oversubscribe the 2 cores for W = 3, 4.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Open MPI's session directories under one base per group process, not the shared
# /tmp/ompi.HOST.UID: on a busy machine a finishing job removed that directory under a
# starting one ("orte_session_dir failed", exit 1 or 2 before ddptok ran).
if [ -z "${DDPTOK_TEST_OMPI_BASE:-}" ]; then
  export DDPTOK_TEST_OMPI_BASE=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-ompi.XXXXXX")
  export OMPI_MCA_orte_tmpdir_base=$DDPTOK_TEST_OMPI_BASE
  OMPI_BASE_OWNED=1  # removed by lib_report, at this group's end
fi

ok() { PASSED=$((PASSED + 1)); echo "ok   $*"; }
bad() { FAILED=$((FAILED + 1)); FAILED_NAMES+=("$1"); echo "FAIL $*"; }
# skip NAME REASON: a check (or a whole group) that this machine cannot run, and why.
skip() { SKIPPED=$((SKIPPED + 1)); SKIPPED_NAMES+=("$1 ($2)"); echo "SKIP $1: $2"; }

# lib_report: writes the counts and names to $TEST_REPORT/ for run.sh (its EXIT trap).
lib_report() {
  [ -n "${TEST_REPORT:-}" ] || return 0
  mkdir -p "$TEST_REPORT"
  printf '%s\n' "${FAILED_NAMES[@]}" | grep . > "$TEST_REPORT/failed"
  printf '%s\n' "${SKIPPED_NAMES[@]}" | grep . > "$TEST_REPORT/skipped"
  echo "$PASSED $FAILED $SKIPPED" > "$TEST_REPORT/counts"
  [ -n "${OMPI_BASE_OWNED:-}" ] && rm -rf "$DDPTOK_TEST_OMPI_BASE"
  return 0
}

# A fresh working directory for one test group.
workdir() { local d; d=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-test.XXXXXX"); echo "$d"; }

# ddp NP ARGS...: the binary under mpirun with NP ranks, time-bounded so no hang survives.
ddp() {
  local np=$1; shift
  timeout -k 5 "${DDPTOK_TEST_TIMEOUT:-120}" mpirun -np "$np" "$DDPTOK" "$@"
}
# one ARGS...: the binary as a single process.
one() { timeout -k 5 "${DDPTOK_TEST_TIMEOUT:-120}" "$DDPTOK" "$@"; }

# expect_rc NAME CODE CMD...: runs CMD (output in $OUT), checks its exit code.
expect_rc() {
  local name=$1 want=$2; shift 2
  OUT=$("$@" 2>&1); local rc=$?
  if [ "$rc" -eq "$want" ]; then ok "$name (exit $rc)"; return 0; fi
  bad "$name" "— exit $rc, expected $want; last output:"; echo "$OUT" | tail -8 | sed 's/^/       /'
  return 1
}

# expect_grep NAME PATTERN TEXT: TEXT contains PATTERN (extended regex).
expect_grep() {
  if grep -qE -- "$2" <<<"$3"; then ok "$1"; else bad "$1" "— no match for /$2/ in:"; echo "$3" | tail -6 | sed 's/^/       /'; fi
}

# prep_ref CONFIG SETS...: prepare and reference (quiet); fails if either does.
prep_ref() { local c=$1; shift; one prepare --config "$c" "$@" >/dev/null && one reference --config "$c" "$@" >/dev/null; }

# gone PATTERN SECONDS: waits (bounded) until no process's command line matches PATTERN: a
# rank that mpirun has just killed (after SIGSTOP and SIGCONT) takes a moment to be reaped.
gone() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do pgrep -f -- "$1" >/dev/null || return 0; sleep 0.1; done
  return 1
}

# wait_lines FILE N SECONDS: waits (bounded) until FILE has at least N lines.
wait_lines() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0; sleep 0.1; done
  return 1
}

# json FILE EXPR: evaluates a Python expression over the parsed JSON `j`.
json() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ranks_up PATTERN N: waits (bounded, 30 s) until N processes whose command line matches
# PATTERN exist (mpirun has started the ranks), then until each catches SIGUSR1
# (/proc/PID/status SigCgt, bit 10), at most 0.3 s more: a ddptok rank installs its
# handler within milliseconds of exec, long before MPI_Init ends.
ranks_up() {
  local i p n m
  for ((i = 0; i < 3000; i++)); do [ "$(pgrep -fc -- "$1")" -ge "$2" ] && break; sleep 0.01; done
  for ((i = 0; i < 30; i++)); do
    n=0
    for p in $(pgrep -f -- "$1"); do
      m=$(awk '/^SigCgt:/ {print $2}' /proc/"$p"/status 2>/dev/null)
      [ -n "$m" ] && (( 0x$m & 0x200 )) && n=$((n + 1))
    done
    [ "$n" -ge "$2" ] && return 0
    sleep 0.01
  done
}

# trap_up PID: waits (bounded, 5 s) until process PID catches SIGUSR1 (/proc/PID/status
# SigCgt, bit 10): a launcher script (run/ddprun, a batch script) traps it on its first line.
trap_up() {
  local i m
  for ((i = 0; i < 500; i++)); do
    m=$(awk '/^SigCgt:/ {print $2}' /proc/"$1"/status 2>/dev/null)
    [ -n "$m" ] && (( 0x$m & 0x200 )) && return 0
    sleep 0.01
  done
  return 1
}
# sleep_ms N: sleeps N milliseconds.
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
# Signal sweeps (test_preempt, test_slurm): DDPTOK_TEST_SIGNAL_TRIALS trials (default 8),
# SIGUSR1 at delays spread evenly over 0..DDPTOK_TEST_SIGNAL_SPREAD_MS (default 300) after
# the launcher's trap is up. A longer sweep: DDPTOK_TEST_SIGNAL_TRIALS=64
# DDPTOK_TEST_SIGNAL_SPREAD_MS=3000 bash tests/run.sh preempt slurm.
SIGNAL_TRIALS=${DDPTOK_TEST_SIGNAL_TRIALS:-8}
SIGNAL_SPREAD_MS=${DDPTOK_TEST_SIGNAL_SPREAD_MS:-300}
signal_delay() { [ "$2" -gt 1 ] && echo $(($1 * SIGNAL_SPREAD_MS / ($2 - 1))) || echo 0; }  # signal_delay I N
