# tests/lib.sh — the helpers of the test groups and the part of the runner that runs inside a
# group's process (tests/run.sh starts one bash process per group: this file and the group's
# tests/test_<group>.sh sourced fresh, so a group's variables and traps stay its own).
#
# A group file declares its cases as functions `case_NAME` (run in the order they are
# defined; NAME is what `tests/run.sh GROUP:NAME` and `--list` use), beside its helpers and
# its fixture builders `fixture_NAME`; nothing else runs at its top level (constants only).
# Each case runs in a subshell of its own, in a fresh scratch directory made for it and
# removed after it (kept, and its path printed, when one of its checks failed). What a case
# needs from earlier work (a prepared corpus, a reference, a trained checkpoint) it gets only
# through `fixture NAME`: built once per group run by fixture_NAME in a directory of its own,
# then copied into the case's directory, so a case cannot damage another's input and runs
# alone exactly as in the whole group.
#
# Every check prints "ok", "FAIL" with what was expected, or "SKIP" with the reason, and
# records its name (the first argument) for run.sh. A check's name says alone which case
# and what it checks: it is unique across the suite and never starts with "..." (run.sh
# fails a run in which two checks share a name or a name starts with "...").

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DDPTOK="$ROOT/ddptok"
CONFIGS="$ROOT/configs"
TESTS_DIR=${DDPTOK_TESTS_DIR:-$ROOT/tests}

# Open MPI refuses root without these; tests oversubscribe the 2 cores for W = 3, 4.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Open MPI's session directories under one base per test run, not the shared
# /tmp/ompi.HOST.UID: on a busy machine a finishing job removed that directory under a
# starting one ("orte_session_dir failed", exit 1 or 2 before ddptok ran).
if [ -z "${DDPTOK_TEST_OMPI_BASE:-}" ]; then
  export DDPTOK_TEST_OMPI_BASE=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-ompi.XXXXXX")
  export OMPI_MCA_orte_tmpdir_base=$DDPTOK_TEST_OMPI_BASE
  OMPI_BASE_OWNED=1  # removed by whoever made it (run.sh's EXIT trap)
fi

# lib_record KIND NAME [DETAIL]: one result line for run.sh (KIND ok, FAIL or SKIP; tabs and
# newlines in the text become spaces).
lib_record() {
  local k=$1 n=${2:-} d=${3:-}
  n=${n//$'\t'/ } n=${n//$'\n'/ } d=${d//$'\t'/ } d=${d//$'\n'/ }
  printf '%s\t%s\t%s\t%s\n' "$k" "${CASE:-?}" "$n" "$d" >> "${CASE_RESULTS:-/dev/null}"
}
# ok NAME [DETAIL...], bad NAME [DETAIL...]: a check that passed or failed; DETAIL (what was
# measured, what was expected) is printed, not part of the name. A group that runs another
# group's checks again (test_gpt.sh: the MLP's proofs on the GPT) sets CHECK_PREFIX, which
# every name it records starts with, so names stay unique across the suite.
ok() { lib_record ok "${CHECK_PREFIX:-}$1"; echo "ok   ${CHECK_PREFIX:-}$*"; }
bad() { lib_record FAIL "${CHECK_PREFIX:-}$1"; echo "FAIL ${CHECK_PREFIX:-}$*"; }
# skip NAME REASON: a check (or a whole case) that this machine cannot run, and why.
skip() { lib_record SKIP "${CHECK_PREFIX:-}$1" "$2"; echo "SKIP ${CHECK_PREFIX:-}$1: $2"; }

# shm_semaphores: torch.multiprocessing's DDP workers need POSIX semaphores, i.e. a writable
# tmpfs on /dev/shm. A chroot or container without one skips the DDP witnesses, visibly.
shm_semaphores() {
  /usr/bin/python3 -c "import multiprocessing; multiprocessing.Lock()" 2>/dev/null && return 0
  skip "$CASE" "POSIX semaphores are unavailable (/dev/shm is not a writable tmpfs): torch DDP cannot start its workers"; return 1
}
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
  if [ "$rc" -eq "$want" ]; then ok "$name" "(exit $rc)"; return 0; fi
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

# fixture NAME [DIR]: copies the fixture NAME into DIR (default: the current directory). It is
# built the first time a case of this group run asks for it, by fixture_NAME run in a fresh
# directory of its own (a builder may start from another fixture; it checks nothing, its
# exit status says whether it worked), and cached under $FIXTURES until the group ends. A
# builder that fails is not retried: every case that asks for it fails, naming it.
fixture() {
  local name=$1 dest=${2:-.} f="$FIXTURES/$1" b
  if [ ! -d "$f" ] && [ ! -e "$f.failed" ]; then
    if ! declare -F "fixture_$name" >/dev/null; then
      echo "no builder fixture_$name in $GROUP's file" > "$f.failed"
    else
      b=$(mktemp -d "$FIXTURES/$name.build.XXXXXX")
      if (cd "$b" && "fixture_$name") > "$b.log" 2>&1; then mv "$b" "$f"; rm -f "$b.log"
      else mv "$b.log" "$f.failed"; rm -rf "$b"; fi
    fi
  fi
  if [ -e "$f.failed" ]; then
    bad "$CASE: fixture $name" "— could not be built; its last output:"; tail -8 "$f.failed" | sed 's/^/       /'
    return 1
  fi
  mkdir -p "$dest" && cp -a "$f/." "$dest/"
}

# lib_cases GROUP: the group's case names, in the order their functions are defined (read
# from the file, not run: a case is a line `case_NAME() {` at the start of a line).
lib_cases() { sed -nE 's/^case_([A-Za-z0-9_]+)\(\) *\{.*/\1/p' "$TESTS_DIR/test_$1.sh"; }

# The edit (Levenshtein) distance as an awk function lev(a, b), for lib_distance and lib_closest.
LIB_LEV_AWK='
    function lev(a, b,   la, lb, i, j, x, y, z, m, p, c) {
      la = length(a); lb = length(b)
      for (j = 0; j <= lb; j++) p[j] = j
      for (i = 1; i <= la; i++) {
        c[0] = i
        for (j = 1; j <= lb; j++) {
          x = p[j] + 1; y = c[j - 1] + 1; z = p[j - 1] + (substr(a, i, 1) != substr(b, j, 1))
          m = x < y ? x : y; c[j] = m < z ? m : z
        }
        for (j = 0; j <= lb; j++) p[j] = c[j]
      }
      return p[lb]
    }'
# lib_distance A B: the edit distance between two words.
lib_distance() { awk -v a="$1" -v b="$2" "$LIB_LEV_AWK"' BEGIN { print lev(a, b) }'; }
# lib_closest WORD CANDIDATE...: the candidate nearest WORD when one is close (edit distance
# at most a third of its length, at least 2; or WORD a part of it), else nothing.
lib_closest() {
  local w=$1; shift
  printf '%s\n' "$@" | awk -v w="$w" '
    '"$LIB_LEV_AWK"'
    NF { d = lev(w, $0); if (best == "" || d < bd) { best = $0; bd = d }
         if (part == "" && length(w) >= 3 && index($0, w)) part = $0 }
    END { lim = int(length(w) / 3); if (lim < 2) lim = 2
          if (best != "" && bd <= lim) print best; else if (part != "") print part }'
}

# lib_group GROUP [CASE...]: sources the group's file and runs its cases (all by default),
# each in its own subshell and scratch directory; results go to $TEST_REPORT/results (one
# line per check: KIND, GROUP:CASE, name, detail), the directories kept to $TEST_REPORT/kept.
lib_group() {
  GROUP=$1; shift
  mkdir -p "$TEST_REPORT"; : > "$TEST_REPORT/results"; : > "$TEST_REPORT/kept"
  CASE="$GROUP:(file)" CASE_RESULTS="$TEST_REPORT/results"
  local all c near
  # shellcheck disable=SC1090
  source "$TESTS_DIR/test_$GROUP.sh" || { echo "FAIL $GROUP: its file does not load"; lib_record FAIL "$GROUP: $TESTS_DIR/test_$GROUP.sh does not load (exit $?)"; }
  all=($(lib_cases "$GROUP"))
  FIXTURES=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-fixtures-$GROUP.XXXXXX")
  trap 'cd /; rm -rf "$FIXTURES"' EXIT
  [ ${#all[@]} -gt 0 ] || lib_record FAIL "$GROUP: declares no case (no case_NAME function in $TESTS_DIR/test_$GROUP.sh)"
  [ $# -gt 0 ] || set -- "${all[@]}"
  for c in "$@"; do
    if ! declare -F "case_$c" >/dev/null; then
      near=$(lib_closest "$c" "${all[@]}"); [ "$near" = "$c" ] && near=  # in the file, but not loaded
      echo "FAIL no such case: $GROUP:$c${near:+ (did you mean $GROUP:$near?)}"
      CASE=$GROUP lib_record FAIL "no such case: $GROUP:$c${near:+ (did you mean $GROUP:$near?)}"
    else
      lib_case "$c"
    fi
  done
  touch "$TEST_REPORT/finished"
}

# lib_case NAME: runs case_NAME in a subshell in a fresh directory; a case that stops before
# its end (exit, a crash) or runs no check is a failure.
lib_case() {
  local c=$1 dir rc res="$TEST_REPORT/case-$1"
  echo "-- $GROUP:$c"
  dir=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-$GROUP-$c.XXXXXX")
  : > "$res"; rm -f "$res.done"
  ( CASE="$GROUP:$c" CASE_DIR=$dir CASE_RESULTS=$res
    cd "$dir" || exit 1
    "case_$c"
    touch "$res.done" )
  rc=$?
  cd "$ROOT" || return
  CASE="$GROUP:$c" CASE_RESULTS=$res
  if [ ! -f "$res.done" ]; then
    echo "FAIL $GROUP:$c stopped before its end (exit $rc)"; lib_record FAIL "$GROUP:$c: stopped before its end (exit $rc)"
  elif [ ! -s "$res" ]; then
    echo "FAIL $GROUP:$c ran no check"; lib_record FAIL "$GROUP:$c: ran no check"
  fi
  cat "$res" >> "$TEST_REPORT/results"
  if grep -q '^FAIL' "$res"; then
    echo "     $GROUP:$c failed: its directory is kept: $dir"
    printf '%s\t%s\n' "$GROUP:$c" "$dir" >> "$TEST_REPORT/kept"
  else
    rm -rf "$dir"
  fi
  rm -f "$res" "$res.done"
  CASE="$GROUP:(file)" CASE_RESULTS="$TEST_REPORT/results"
}

# lib_list GROUP: prints GROUP:CASE for every case of the group's file (without running it).
lib_list() { lib_cases "$1" | sed "s/^/$1:/"; }

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
