# Fuzzing, short (`make fuzz` runs longer): every libFuzzer target of tests/fuzz/ — the
# config parser (its accepted inputs must round-trip), corpus.h5, plan.h5 and checkpoint
# readers, a checkpoint's SHA256SUMS, the JSON files evaluate and plot read back, the
# readers of `ddptok import` (bytes, llm.c, nanoGPT, Megatron, JSON Lines) — 6000
# inputs each, from a fixed seed and the seed corpus in tests/fuzz/corpus/, under
# AddressSanitizer and UBSan. No finding in ddptok's code may appear (a crash, a sanitizer
# report, a leak in the parser, an exit such as die or exit 70 inside a reader); crashes
# inside libhdf5 itself are counted apart (tests/fuzz/run.sh; docs/failure-model.md).
if [ ! -x "$ROOT/build/fuzz/fuzz_config" ]; then
  skip "fuzz targets" "build/fuzz/ is not built (make fuzz-bins: clang and libclang-rt-14-dev, run/install-deps.sh --tests)"
elif ! command -v llvm-symbolizer >/dev/null && ! command -v llvm-symbolizer-14 >/dev/null && [ ! -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then
  skip "fuzz targets" "no llvm-symbolizer (Debian: llvm-14): a crash inside libhdf5 could not be told from one in ddptok"
else
  F=$(workdir)
  # Whose finding a report is: a memory error that the sanitizer's strdup interceptor reports
  # (linked into the target, no source line) for HDF5's H5MM_strdup is HDF5's — the judge
  # once named the interceptor and failed CI on it; the same report with the libhdf5 frames
  # renamed into ddptok's source must be ddptok's (the negative control), and so must the
  # report with only its allocation stack renamed (HDF5 past a buffer that ddptok sized).
  ASAN_OPTIONS=detect_leaks=0 "$ROOT/build/fuzz/fuzz_checkpoint" "$ROOT/tests/hostile/checkpoint-hdf5-attr-name-overread.h5" >"$F/overread.log" 2>&1
  v=$(bash "$ROOT/tests/fuzz/run.sh" --judge "$F/overread.log")
  if ! grep -q "ERROR: AddressSanitizer: heap-buffer-overflow" "$F/overread.log"; then
    skip "the fuzz judge" "this libhdf5 ($(grep -o 'HDF5 [0-9.]*' <<<"$("$DDPTOK" --version)")) no longer over-reads on tests/hostile/checkpoint-hdf5-attr-name-overread.h5"
  else
    [[ $v == "hdf5 "*H5MM_strdup* ]] && ok "the judge: HDF5's over-read reported in the strdup interceptor is HDF5's (${v%% *}: H5MM_strdup)" \
      || bad "the judge on HDF5's over-read" "— $v"
    sed -E 's#\(/[^ ]*libhdf5[^)]*\)#/src/h5io.c:1:1#' "$F/overread.log" >"$F/renamed.log"
    v=$(bash "$ROOT/tests/fuzz/run.sh" --judge "$F/renamed.log")
    [[ $v == "ddptok "*src/h5io.c* ]] && ok "negative control: the same report with those frames in ddptok's source is ddptok's" \
      || bad "the judge's negative control" "— $v"
    awk '/allocated by thread/ { a = 1 } a && /libhdf5/ && !done { sub(/\(\/[^ ]*libhdf5[^)]*\)/, "/src/h5io.c:1:1"); done = 1 } { print }' \
      "$F/overread.log" >"$F/ours.log"
    v=$(bash "$ROOT/tests/fuzz/run.sh" --judge "$F/ours.log")
    [[ $v == "ddptok "*"allocated in ddptok"* ]] && ok "negative control: HDF5 reading past a block that ddptok's code allocated is ddptok's" \
      || bad "the judge's allocation control" "— $v"
  fi
  # A fixed seed and number of inputs: every machine tries the inputs tried here (as near as
  # libFuzzer is deterministic), whatever its speed; exploring is `make fuzz`'s job (random
  # seeds, 300 s per target). The time is only a cap.
  OUT=$(FUZZ_OUT="$F" FUZZ_SEED=${DDPTOK_FUZZ_SEED:-20261130} FUZZ_RUNS=${DDPTOK_FUZZ_RUNS:-6000} \
        bash "$ROOT/tests/fuzz/run.sh" "${DDPTOK_FUZZ_SECONDS:-120}" 2>&1); rc=$?
  found=0
  for t in config corpus plan checkpoint manifest json import_bytes import_llmc import_nanogpt import_megatron import_jsonl; do
    line=$(grep "^fuzz $t:" <<<"$OUT" | head -1)
    if grep -q "no finding in ddptok" <<<"$line"; then ok "${line#fuzz }"
    else found=1; bad "fuzz $t" "— ${line:-no result}"; sed -n "/^fuzz $t:/,/^fuzz /p" <<<"$OUT" | tail -n +2 | head -80; fi
  done
  # One failure, one message: the exit status counts only when no target said why.
  [ $rc -eq 0 ] || [ $found -eq 1 ] || bad "fuzz run" "— tests/fuzz/run.sh exited $rc: $(tail -1 <<<"$OUT")"
  rm -rf "$F"
fi
