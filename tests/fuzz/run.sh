#!/usr/bin/env bash
# Runs every libFuzzer target (build/fuzz/, `make fuzz-bins`) for SECONDS each (default
# 300) from its seed corpus tests/fuzz/corpus/TARGET/, in a scratch corpus directory (the
# seeds in the repo are not modified). Usage: bash tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# A finding in ddptok's code — a crash or sanitizer report whose first frame outside libc
# and the sanitizer runtime is ddptok's, a leak in a parser without HDF5, a timeout, or an exit
# (die, ASSERT, exit 70 inside a reader) — fails the run; its reproducer is kept under
# $FUZZ_OUT (default build/fuzz/findings/) and named. A crash or memory error inside
# libhdf5 itself (HDF5 1.10 is not hardened against crafted files; ddptok's crash guard
# turns a crash into one line and exit 2) is counted and kept apart, and fuzzing goes on
# from the corpus reached.
#
# The seed: FUZZ_SEED if set, else libFuzzer's random one; either is printed. FUZZ_RUNS=N
# ends each target after N inputs (SECONDS is then only a cap): the test suite sets both, so
# that every machine tries the same inputs, as near as libFuzzer is deterministic.
# `bash tests/fuzz/run.sh --judge LOG` prints the verdict on one target's output: "hdf5
# FRAME" or "ddptok FRAME" (tests/test_fuzz.sh checks it on a known report of each kind).
set -uo pipefail
cd "$(dirname "$0")/../.."

# judge LOG: whose finding the report in LOG is. The frame judged is the first one after
# the report that is neither libc's, the sanitizer runtime's (its interceptors — strdup,
# memcpy, strlen… — are linked into the target without a source line: "(fuzz_T+0x…)"),
# nor libFuzzer's. A memory error (or a deadly signal) there in libhdf5 is HDF5's — unless
# the block it touched was allocated by ddptok's code and is still live (HDF5 then wrote
# or read past a buffer ddptok sized; a stale pointer of HDF5's that lands in a block
# ddptok has freed, e.g. a closed FILE, is HDF5's) — as is an allocation over -malloc_limit_mb whose stack goes through
# libhdf5; anything else — a frame in ddptok's code, a timeout, an exit, a leak in the
# parser — is ddptok's.
first_frame() {
  grep -E '^ +#[0-9]+ ' \
    | grep -vE 'libc\.so|sysdeps/|nptl/|stdlib/abort|__interceptor_|compiler-rt|libclang_rt|fuzzer::|__sanitizer|__asan|in (malloc|calloc|realloc) |\(/[^ )]*/fuzz_[a-z]+\+0x[0-9a-f]+\)' \
    | head -1
}
judge() {
  local frame oom alloc ours=0
  frame=$(sed -n '/ERROR: AddressSanitizer\|runtime error\|ERROR: libFuzzer: deadly signal\|ERROR: libFuzzer: out-of-memory (malloc/,$p' "$1" | first_frame)
  alloc=$(sed -n '/^allocated by thread/,/^$/p' "$1" | first_frame)  # a live block (not "previously allocated": freed)
  grep -qE '/(src|tests/fuzz)/[^ ]+\.c:[0-9]+' <<<"$alloc" && ours=1
  oom=$(sed -n '/ERROR: libFuzzer: out-of-memory (malloc/,$p' "$1" | grep -E '^ +#[0-9]+ ' | head -12)
  if grep -q 'ERROR: AddressSanitizer: \|ERROR: libFuzzer: deadly signal\|ERROR: libFuzzer: out-of-memory (malloc' "$1" \
     && { grep -q 'libhdf5' <<<"$frame" || grep -q 'libhdf5' <<<"$oom"; } && [ $ours -eq 0 ]; then
    echo "hdf5 $frame"
  elif [ $ours -eq 1 ]; then
    echo "ddptok $frame — on a block allocated in ddptok:$alloc"
  else
    echo "ddptok ${frame:-?}"
  fi
}
if [ "${1:-}" = --judge ]; then judge "$2"; exit 0; fi

secs=${1:-300}; shift || true
targets=("$@"); [ ${#targets[@]} -eq 0 ] && targets=(config corpus plan checkpoint manifest json import_bytes import_llmc import_nanogpt import_megatron import_jsonl)
out=${FUZZ_OUT:-build/fuzz/findings}
# The sanitizer looks for `llvm-symbolizer` on PATH only; Debian's llvm-14 puts it beside
# its version. Without one the stack has no names, and a crash inside libhdf5 cannot be
# told from one in ddptok's code: refuse to judge rather than guess.
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || echo /usr/lib/llvm-14/bin/llvm-symbolizer)}
[ -x "$ASAN_SYMBOLIZER_PATH" ] || { echo "fuzz: no llvm-symbolizer (Debian: llvm-14); cannot tell libhdf5's crashes from ddptok's"; exit 3; }
mkdir -p "$out"
failed=0
for t in "${targets[@]}"; do
  bin=build/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz $t: $bin missing (make fuzz-bins)"; failed=1; continue; }
  work=$(mktemp -d); mkdir -p "$work/corpus" "$work/tmp"
  log="$out/$t.log"; : > "$log"
  # HDF5 leaks on some error paths of a damaged file (its allocations, not ddptok's) and
  # tries allocations of any size a file declares (malloc returns NULL, as without the
  # sanitizer): leak checks for the targets without HDF5 (config, manifest, json, import_*:
  # a leak there is ddptok's, a json_decref missing); huge allocations return NULL.
  hdf=1; case $t in config|manifest|json|import_*) hdf=0 ;; esac
  leaks=$((1 - hdf))
  # The RSS limit: the sanitizer's allocator keeps the pages of freed large blocks, so files
  # that declare large sizes (HDF5 allocates up to -malloc_limit_mb for each) drove the RSS
  # past 2 GiB with 29 MB of live heap (measured 2.2-2.4 GiB peaks, a false out-of-memory
  # in ~1 of 3 six-second runs of the corpus target): 6 GiB for the HDF5 readers.
  rss=2048; [ $hdf -eq 1 ] && rss=6144
  start=$(date +%s); end=$((start + secs)) runs=0 hdf5=0 rc=0 found=0 seed=
  want=${FUZZ_RUNS:-0}
  dict=tests/fuzz/$t.dict; [ -f "$dict" ] || dict=
  while [ "$(date +%s)" -lt "$end" ] && { [ "$want" -eq 0 ] || [ $runs -lt "$want" ]; }; do
    left=$(( end - $(date +%s) )); [ $left -lt 1 ] && left=1
    # A reader may allocate what the budget allows (MemAvailable): 256 MiB here. One malloc
    # over 512 MiB is reported with its stack (HDF5 allocates what a file declares), before
    # several of them reach the RSS limit, which has no stack to tell whose they are.
    TMPDIR="$work/tmp" DDPTOK_MEMORY_LIMIT=256M ASAN_OPTIONS=detect_leaks=$leaks:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$bin" ${FUZZ_SEED:+-seed=$FUZZ_SEED} ${dict:+-dict="$dict"} -max_total_time=$left $([ "$want" -gt 0 ] && echo "-runs=$((want - runs))") -timeout=10 -rss_limit_mb=$rss -malloc_limit_mb=512 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$work/" "$work/corpus" "tests/fuzz/corpus/$t" > "$work/log" 2>&1
    rc=$?
    cat "$work/log" >> "$log"
    [ -n "$seed" ] || seed=$(grep -o 'INFO: Seed: [0-9]*' "$work/log" | head -1 | grep -o '[0-9]*$')
    n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$'); runs=$((runs + ${n:-0}))
    [ $rc -eq 0 ] && break
    art=$(ls -t "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | head -1)
    verdict=$(judge "$work/log")
    frame=${verdict#* }
    if [ "${verdict%% *}" = hdf5 ] && [ -n "$art" ]; then
      hdf5=$((hdf5 + 1)); mv "$art" "$out/$t-hdf5-$(basename "$art")"
      continue  # inside HDF5: kept apart, fuzzing goes on
    fi
    failed=1 found=1
    [ -n "$art" ] && mv "$art" "$out/$t-$(basename "$art")" && art="$out/$t-$(basename "$art")"
    echo "fuzz $t: FINDING (exit $rc) after $runs inputs (seed ${seed:-?}); reproducer: ${art:-none}; first frame: ${frame:-?}"
    # What the target said before it ended (a round-trip difference, an MPI_Abort or a
    # die() line, an assertion) and the input itself, so that a log from a machine whose
    # scratch directory is gone (CI) is enough to reproduce it.
    grep -E "^fuzz_|^ddptok|Assertion|MPI_Abort" "$work/log" | tail -3 | sed 's/^/    /'
    grep -E "ERROR|runtime error|SUMMARY|exited|deadly|READ of|WRITE of" "$work/log" | head -6 | sed 's/^/    /'
    grep -E '^ +#[0-9]+ ' "$work/log" | head -12 | sed 's/^/    /'
    [ -n "$art" ] && { echo "    reproducer ($(stat -c %s "$art") bytes, base64; first 4 KiB):"; head -c 4096 "$art" | base64 -w 100 | sed 's/^/      /'; }
    break
  done
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  [ $rc -eq 0 ] || [ $hdf5 -gt 0 -a $found -eq 0 ] && \
    echo "fuzz $t: $runs inputs in $(( $(date +%s) - start )) s (seed ${seed:-?}), $cov, no finding in ddptok$([ $hdf5 -gt 0 ] && echo "; $hdf5 crash(es) or memory error(s) inside libhdf5 kept as $out/$t-hdf5-* (docs/failure-model.md)")"
  rm -rf "$work"
done
exit $failed
