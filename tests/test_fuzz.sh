# Fuzzing, short (`make fuzz` runs longer): every libFuzzer target of tests/fuzz/ — the
# config parser (its accepted inputs must round-trip), corpus.h5, plan.h5 and checkpoint
# readers — a few seconds each from the seed corpus in tests/fuzz/corpus/, under
# AddressSanitizer and UBSan. No finding in ddptok's code may appear (a crash, a sanitizer
# report, a leak in the parser, an exit such as die or exit 70 inside a reader); crashes
# inside libhdf5 itself are counted apart (tests/fuzz/run.sh; README "Failure model").
if [ ! -x "$ROOT/build/fuzz/fuzz_config" ]; then
  skip "fuzz targets" "build/fuzz/ is not built (make fuzz-bins: clang and libclang-rt-14-dev, run/install-deps.sh --tests)"
elif ! command -v llvm-symbolizer >/dev/null && ! command -v llvm-symbolizer-14 >/dev/null && [ ! -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then
  skip "fuzz targets" "no llvm-symbolizer (Debian: llvm-14): a crash inside libhdf5 could not be told from one in ddptok"
else
  F=$(workdir)
  OUT=$(FUZZ_OUT="$F" bash "$ROOT/tests/fuzz/run.sh" "${DDPTOK_FUZZ_SECONDS:-6}" 2>&1); rc=$?
  for t in config corpus plan checkpoint; do
    line=$(grep "^fuzz $t:" <<<"$OUT" | head -1)
    if grep -q "no finding in ddptok" <<<"$line"; then ok "${line#fuzz }"
    else bad "fuzz $t" "— ${line:-no result}"; sed -n "/^fuzz $t:/,/^fuzz /p" <<<"$OUT" | tail -n +2 | head -80; fi
  done
  [ $rc -eq 0 ] || bad "fuzz run" "— tests/fuzz/run.sh exited $rc"
  rm -rf "$F"
fi
