# Fuzzing, short (`make fuzz` runs longer): every libFuzzer target of tests/fuzz/ — the
# config parser (its accepted inputs must round-trip), corpus.h5, plan.h5 and checkpoint
# readers, a checkpoint's SHA256SUMS, the JSON files evaluate and plot read back (and evaluate's --ids files), the
# readers of `ddptok import` (bytes, llm.c, nanoGPT, Megatron, JSON Lines) — 6000
# inputs each, from a fixed seed and the seed corpus in tests/fuzz/corpus/, under
# AddressSanitizer and UBSan. No finding in ddptok's code may appear (a crash, a sanitizer
# report, a leak in the parser, an exit such as die or exit 70 inside a reader); crashes
# inside libhdf5 itself are counted apart (tests/fuzz/run.sh; docs/failure-model.md).
# fuzz_ready: the targets are built and can be judged; else the case is skipped, visibly.
fuzz_ready() {
  if [ ! -x "$ROOT/build/fuzz/fuzz_config" ]; then
    skip "$CASE" "build/fuzz/ is not built (make fuzz-bins: clang and libclang-rt-14-dev, run/install-deps.sh --tests)"; return 1
  elif ! command -v llvm-symbolizer >/dev/null && ! command -v llvm-symbolizer-14 >/dev/null && [ ! -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then
    skip "$CASE" "no llvm-symbolizer (Debian: llvm-14): a crash inside libhdf5 could not be told from one in ddptok"; return 1
  fi
}
# Whose finding a report is: a memory error that the sanitizer's strdup interceptor reports
# (linked into the target, no source line) for HDF5's H5MM_strdup is HDF5's — the judge
# once named the interceptor and failed CI on it; the same report with the libhdf5 frames
# renamed into ddptok's source must be ddptok's (the negative control), and so must the
# report with only its allocation stack renamed (HDF5 past a buffer that ddptok sized).
# overread_log: overread.log here (the target's scratch directory too, TMPDIR), the checkpoint target's report on the known over-read;
# false (the case skipped) where this libhdf5 no longer over-reads on it.
overread_log() {
  fuzz_ready || return
  TMPDIR=$PWD ASAN_OPTIONS=detect_leaks=0 "$ROOT/build/fuzz/fuzz_checkpoint" "$ROOT/tests/hostile/checkpoint-hdf5-attr-name-overread.h5" >overread.log 2>&1
  grep -q "ERROR: AddressSanitizer: heap-buffer-overflow" overread.log && return 0
  skip "$CASE" "this libhdf5 ($(grep -o 'HDF5 [0-9.]*' <<<"$("$DDPTOK" --version)")) no longer over-reads on tests/hostile/checkpoint-hdf5-attr-name-overread.h5"
  return 1
}
judge() { bash "$ROOT/tests/fuzz/run.sh" --judge "$PWD/$1"; }  # run.sh changes to the checkout: an absolute path
case_judge_hdf5() {
  overread_log || return
  local v; v=$(judge overread.log)
  [[ $v == "hdf5 "*H5MM_strdup* ]] && ok "the fuzz judge: HDF5's over-read reported in the strdup interceptor is HDF5's" "(${v%% *}: H5MM_strdup)" \
    || bad "the fuzz judge: HDF5's over-read reported in the strdup interceptor is HDF5's" "— $v"
}
case_judge_renamed() {
  overread_log || return
  sed -E 's#\(/[^ ]*libhdf5[^)]*\)#/src/h5io.c:1:1#' overread.log >renamed.log
  local v; v=$(judge renamed.log)
  [[ $v == "ddptok "*src/h5io.c* ]] && ok "negative control: the fuzz judge calls the same report with those frames in ddptok's source ddptok's" \
    || bad "negative control: the fuzz judge calls the same report with those frames in ddptok's source ddptok's" "— $v"
}
# HDF5 reading through a stale pointer into a block ddptok's code allocated and has since
# freed (seen on a fresh chroot: H5Aexists read 400 bytes inside a FILE that
# memory_available_from had closed) is HDF5's: the same report as case_judge_allocation's,
# with its block freed ("previously allocated"). case_judge_allocation, the live block, is
# the negative control.
case_judge_freed_block() {
  overread_log || return
  awk '/allocated by thread/ { a = 1; sub(/^allocated by thread/, "previously allocated by thread") }
       a && /libhdf5/ && !done { sub(/\(\/[^ ]*libhdf5[^)]*\)/, "/src/h5io.c:1:1"); done = 1 } { print }' overread.log >freed.log
  local v; v=$(judge freed.log)
  [[ $v == "hdf5 "* ]] && ok "the fuzz judge: HDF5 reading into a block that ddptok allocated and freed is HDF5's" "(${v%% *})" \
    || bad "the fuzz judge: HDF5 reading into a block that ddptok allocated and freed is HDF5's" "— $v"
}
case_judge_allocation() {
  overread_log || return
  awk '/allocated by thread/ { a = 1 } a && /libhdf5/ && !done { sub(/\(\/[^ ]*libhdf5[^)]*\)/, "/src/h5io.c:1:1"); done = 1 } { print }' \
    overread.log >ours.log
  local v; v=$(judge ours.log)
  [[ $v == "ddptok "*"allocated in ddptok"* ]] && ok "negative control: the fuzz judge calls HDF5 reading past a block that ddptok's code allocated ddptok's" \
    || bad "negative control: the fuzz judge calls HDF5 reading past a block that ddptok's code allocated ddptok's" "— $v"
}
# A fixed seed and number of inputs: every machine tries the inputs tried here (as near as
# libFuzzer is deterministic), whatever its speed; exploring is `make fuzz`'s job (random
# seeds, 300 s per target). The time is only a cap.
fuzz_target() {  # TARGET
  local t=$1 line rc
  fuzz_ready || return
  OUT=$(FUZZ_OUT="$PWD" FUZZ_SEED=${DDPTOK_FUZZ_SEED:-20261130} FUZZ_RUNS=${DDPTOK_FUZZ_RUNS:-6000} \
        bash "$ROOT/tests/fuzz/run.sh" "${DDPTOK_FUZZ_SECONDS:-120}" "$t" 2>&1); rc=$?
  line=$(grep "^fuzz $t:" <<<"$OUT" | head -1)
  if grep -q "no finding in ddptok" <<<"$line"; then ok "fuzz $t: no finding in ddptok's code" "(${line#fuzz $t: })"
  else bad "fuzz $t: no finding in ddptok's code" "— ${line:-no result}"; sed -n "/^fuzz $t:/,/^fuzz /p" <<<"$OUT" | tail -n +2 | head -80; fi
  # One failure, one message: the exit status counts only when no finding said why.
  [ $rc -eq 0 ] || grep -q "FINDING" <<<"$line" || bad "fuzz $t: tests/fuzz/run.sh ends 0" "— exited $rc: $(tail -1 <<<"$OUT")"
}
case_config() { fuzz_target config; }
case_corpus() { fuzz_target corpus; }
case_plan() { fuzz_target plan; }
case_checkpoint() { fuzz_target checkpoint; }
case_manifest() { fuzz_target manifest; }
# The manifest property's refusing side can fail: one input holding a line that is no entry
# ("notes  hello") passes through the target as it is (refused: no finding), and aborts with
# the finding under DDPTOK_FUZZ_MANIFEST_LENIENT=1, the harness dropping such lines as the
# verifier once ignored them (tests/fuzz/fuzz_manifest.c).
case_manifest_property_control() {
  fuzz_ready || return
  printf 'notes  hello\n' > stray.txt
  local rc
  TMPDIR=$PWD ASAN_OPTIONS=detect_leaks=0 "$ROOT/build/fuzz/fuzz_manifest" stray.txt >plain.log 2>&1; rc=$?
  [ $rc -eq 0 ] && ! grep -q 'was accepted' plain.log && ok "fuzz_manifest on a stray line: refused, no finding" \
    || { bad "fuzz_manifest on a stray line: refused, no finding" "— exit $rc"; tail -3 plain.log; }
  TMPDIR=$PWD ASAN_OPTIONS=detect_leaks=0 DDPTOK_FUZZ_MANIFEST_LENIENT=1 "$ROOT/build/fuzz/fuzz_manifest" stray.txt >lenient.log 2>&1; rc=$?
  [ $rc -ne 0 ] && grep -q 'a line that is no entry for a rank file that is there was accepted' lenient.log \
    && ok "negative control: a verifier that ignores the stray line is a finding" "(exit $rc)" \
    || { bad "negative control: a verifier that ignores the stray line is a finding" "— exit $rc"; tail -3 lenient.log; }
  printf '\n\n' > blank.txt
  TMPDIR=$PWD ASAN_OPTIONS=detect_leaks=0 DDPTOK_FUZZ_MANIFEST_LENIENT=1 "$ROOT/build/fuzz/fuzz_manifest" blank.txt >blank.log 2>&1; rc=$?
  [ $rc -eq 0 ] && ok "control of the control: blank lines under the lenient harness are no finding" \
    || { bad "control of the control: blank lines under the lenient harness are no finding" "— exit $rc"; tail -3 blank.log; }
}
case_json() { fuzz_target json; }
case_import_bytes() { fuzz_target import_bytes; }
case_import_llmc() { fuzz_target import_llmc; }
case_import_nanogpt() { fuzz_target import_nanogpt; }
case_import_megatron() { fuzz_target import_megatron; }
case_import_jsonl() { fuzz_target import_jsonl; }
