# check-loss, exercise, evaluate, plot, check-env and clean, on the tiny config.
cfg="$CONFIGS/tiny.yaml"
# The whole protocol on the tiny config, before the report.
fixture_protocol() {
  prep_ref "$cfg" && ddp 2 parity --config "$cfg" >/dev/null 2>&1 && ddp 2 check-empty --config "$cfg" >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" >/dev/null 2>&1 && ddp 2 train --config "$cfg" --continuous >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
}
case_check_loss() {
  expect_rc "check-loss" 0 one check-loss --config "$cfg"
  local r; r=$(json outputs/check_loss.json "j['counter_example']['mean_of_means'], j['counter_example']['global_mean'], j['counter_example']['local_scalars'], j['one_parameter']['mean_of_means']['gradient'], j['one_parameter']['global_token']['gradient']")
  [ "$r" = "2 2.5 [0.5, 4.5] 0 1" ] && ok "check-loss: 2, 2.5, scalars 0.5 and 4.5, gradients 0 and 1 at loss 1" || bad "check-loss: 2, 2.5, scalars 0.5 and 4.5, gradients 0 and 1 at loss 1" "— $r"
}
case_exercise() {
  expect_rc "exercise (12/12 coincide, 12/36 differ)" 0 one exercise --config "$CONFIGS/exercise.yaml"
  local r; r=$(json outputs/exercise.json "[c['counts'] for c in j['cases']], j['cases'][1]['hand']['global'], j['cases'][0]['model']['grad_max_abs_diff'] < 1e-9 < j['cases'][1]['model']['grad_max_abs_diff']")
  [ "$r" = "[[12, 12], [12, 36]] 2.5 True" ] && ok "exercise: counts, 2.5 by hand, gradients equal then different" || bad "exercise: counts, 2.5 by hand, gradients equal then different" "— $r"
}
case_evaluate_report() {
  fixture protocol || return
  expect_rc "evaluate" 0 one evaluate --config "$cfg"
  local r; r=$(json outputs/report.json "j['resume']['max_abs_diff'], j['parity']['ok'], j['empty']['ok'], j['test']['sequences'], j['test']['loss'] < j['test']['unigram_loss'], j['test']['best_loss'] < j['test']['loss']")
  [ "$r" = "0 True True 32 True True" ] && ok "report.json: resume 0, parity and empty ok, test loss between best and unigram" || bad "report.json: resume 0, parity and empty ok, test loss between best and unigram" "— $r"
}
# A resumed model that differs from the continuous one makes evaluate fail.
case_evaluate_resume_differs() {
  fixture protocol || return
  rm -rf artifacts/checkpoints/step-0012
  DDPTOK_TEST_RESUME_SKIP=rng ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
  expect_rc "evaluate fails when the resumed model differs (negative control)" 1 one evaluate --config "$cfg"
}
# A parity.json nested 1001 levels deep: report.json, which carries it and indents every
# level, grew quadratically (this 64 KiB file: 32 MB; 4 MiB: 6.3 GB). Refused in one line.
case_evaluate_deep_parity_json() {
  fixture protocol || return
  /usr/bin/python3 -c "import sys; sys.stdout.write('[' + ','.join(['[' * 1000 + ']' * 1000] * 32) + ']')" >outputs/parity.json
  OUT=$(one evaluate --config "$cfg" 2>&1 >/dev/null); local rc=$?
  [ $rc -eq 1 ] && [ "$OUT" = "ddptok: error: outputs/parity.json: nested 1001 levels deep, at most 8 expected (ddptok's reports nest 3): not read" ] \
    && [ "$(stat -c %s outputs/report.json)" -lt 100000 ] \
    && ok "evaluate: a parity.json nested 1001 deep is refused in one line, report.json stays small" "($(stat -c %s outputs/report.json) bytes)" \
    || bad "evaluate: a parity.json nested 1001 deep is refused in one line, report.json stays small" "— exit $rc, report.json $(stat -c %s outputs/report.json 2>/dev/null) bytes: $OUT"
}
# A negative-control cell whose directory name is not UTF-8 (no JSON key can name it) was
# counted ok but left out of report.json; now it is named and not ok. A good name: carried.
case_evaluate_matrix_cell() {
  fixture protocol || return
  mkdir -p outputs/matrix/W2-A2 && cp outputs/parity.json outputs/matrix/W2-A2/
  expect_rc "evaluate with a matrix cell W2-A2 (control)" 0 one evaluate --config "$cfg"
  [ "$(json outputs/report.json "j['matrix']['W2-A2']['ok']")" = True ] && ok "evaluate: the matrix cell W2-A2 is carried into report.json" || bad "evaluate: the matrix cell W2-A2 is carried into report.json"
}
case_evaluate_matrix_non_utf8() {
  fixture protocol || return
  local bad_cell; bad_cell="outputs/matrix/$(printf 'W2-\377')" && mkdir -p "$bad_cell" && cp outputs/parity.json "$bad_cell/"
  OUT=$(one evaluate --config "$cfg" 2>&1 >/dev/null); local rc=$?
  [ $rc -eq 1 ] && LC_ALL=C grep -aq "^ddptok: error: outputs/matrix/W2-.: a cell name that is not UTF-8 cannot be a key of report.json: not ok$" <<<"$OUT" \
    && [ "$(grep -c . <<<"$OUT")" -eq 1 ] && ok "evaluate: a matrix cell whose name is not UTF-8: named in one line, not ok (exit 1)" \
    || bad "evaluate: a matrix cell whose name is not UTF-8: named in one line, not ok (exit 1)" "— exit $rc: $OUT"
}
# evaluate with the factored first layer (its tables from the loaded θ): the dense test loss
# within float rounding, on the same tokens.
case_evaluate_factored() {
  fixture protocol || return
  one evaluate --config "$cfg" --checkpoint artifacts/checkpoints/step-0012 >/dev/null 2>&1 && cp outputs/evaluate.json dense.json
  expect_rc "evaluate --checkpoint with train.first_layer factored" 0 one evaluate --config "$cfg" --checkpoint artifacts/checkpoints/step-0012 --set train.first_layer=factored
  local r; r=$(/usr/bin/python3 -c "import json; d, f = (json.load(open(p))['test'] for p in ('dense.json', 'outputs/evaluate.json')); print(d['tokens'] == f['tokens'] > 0, abs(d['loss'] - f['loss']) <= 1e-5 * d['loss'], d['loss'] != 0)")
  [ "$r" = "True True True" ] && ok "evaluate with the factored first layer: the dense test loss within 1e-5 relative, the same tokens" \
    || bad "evaluate with the factored first layer: the dense test loss within 1e-5 relative, the same tokens" "— $r"
}
has_gnuplot() { command -v gnuplot >/dev/null && return 0; bad "$CASE: gnuplot is installed" "— it is not (run/install-deps.sh installs gnuplot-nox)"; return 1; }
case_plot() {
  has_gnuplot || return
  fixture protocol || return
  expect_rc "plot" 0 one plot --config "$cfg"
  local sig; sig=$(head -c 8 outputs/figure.png | od -An -tx1 | tr -d ' \n')
  [ "$sig" = 89504e470d0a1a0a ] && [ "$(stat -c %s outputs/figure.png)" -gt 10000 ] && ok "plot: figure.png is a PNG of more than 10 kB" "($(stat -c %s outputs/figure.png) bytes)" \
    || bad "plot: figure.png is a PNG of more than 10 kB"
  # The bars are the per-tensor worst ratio to the parity bound (<= 1: passes): below 1 for
  # every tensor of the product, above 1 for some tensor of each rejected control, exactly
  # as parity.json decided; the key sits outside the plotting area.
  /usr/bin/python3 - outputs/plot/parity.dat outputs/parity.json <<'PY' && ok "plot: figure data: worst ratio to atol + rtol|g_ref| per tensor agrees with parity.json's verdicts" || bad "plot: figure data: worst ratio to atol + rtol|g_ref| per tensor agrees with parity.json's verdicts"
import json, sys
rows = [l.split() for l in open(sys.argv[1])][1:]
modes = {r[0]: [float(x) for x in r[1:]] for r in rows}
rep = json.load(open(sys.argv[2]))
verdicts = {m["mode"] if "mode" in m else k: m for k, m in (rep["modes"].items() if isinstance(rep.get("modes"), dict) else [(m["mode"], m) for m in rep["modes"]])}
for name, ratios in modes.items():
    v = verdicts[name]
    passes = v.get("passes", v.get("pass"))
    assert passes == (max(ratios) <= 1), (name, ratios, v)
assert max(modes["global-token"]) <= 1 and max(modes["mean-of-means"]) > 1
PY
  grep -q "set key below" outputs/plot/figure.gp && grep -q "^1 with lines\|, 1 with lines" outputs/plot/figure.gp && ok "plot: figure.gp has the key outside the data, the bound drawn at ratio 1" \
    || bad "plot: figure.gp has the key outside the data, the bound drawn at ratio 1"
}
# A run's JSONL with a NUL byte and a blank line (found by tests/fuzz/fuzz_json.c) and a
# step beyond 32 bits: every record after them is a point, the step whole; the damaged and
# the cut lines are skipped (were: the curve ended at the NUL, step 4294967297 drawn at 1).
case_plot_damaged_jsonl() {
  has_gnuplot || return
  fixture protocol || return
  cp outputs/train/continuous.jsonl jsonl.keep
  { head -2 jsonl.keep; printf '{"step": 3,\0 "loss": 1}\n\n'; sed -n 4,12p jsonl.keep
    printf '{"step": 4294967297, "loss": 2.5}\n{"step": 13, "lo'; } >outputs/train/continuous.jsonl
  one plot --config "$cfg" >/dev/null 2>&1
  local r; r=$(cut -d' ' -f1 outputs/plot/loss-continuous.dat | tr '\n' ' ')
  [ "$r" = "1 2 4 5 6 7 8 9 10 11 12 4294967297 " ] && ok "plot: a JSONL with a NUL byte and a blank line loses no later point, a 64-bit step kept" \
    || bad "plot: a JSONL with a NUL byte and a blank line loses no later point, a 64-bit step kept" "— steps drawn: $r"
}
case_check_env() {
  expect_rc "check-env W=2" 0 ddp 2 check-env --config "$cfg"
  expect_grep "check-env: exact test all-reduce" 'int64 sum 3 \(expected 3\), float average 1.5 \(expected 1.5\): ok' "$OUT"
  expect_grep "check-env: the build line" '^ddptok ([0-9a-f]{7,}(-dirty)?|unknown) \(CUDA backend: .*\); Open MPI v[0-9.]+, HDF5 [0-9.]+, libyaml [0-9.]+, jansson [0-9.]+, OpenBLAS [0-9.]+' "$OUT"
}
case_version() {
  expect_rc "ddptok --version" 0 one --version
  expect_grep "ddptok --version names the commit, the backends and the libraries" '^ddptok ([0-9a-f]{7,}(-dirty)?|unknown) \(CUDA backend: (built in, NCCL [0-9.]+|not built in)\); Open MPI' "$OUT"
  expect_grep "ddptok --version names the BLAS kernel OpenBLAS runs" '; BLAS kernel [A-Za-z0-9]+' "$OUT"
}
case_check_env_dual() { expect_rc "check-env --dual refuses a CPU run" 1 ddp 2 check-env --config "$cfg" --dual; }
# clean: the dry run changes nothing; the real one removes only what ddptok generated.
case_clean() {
  fixture protocol || return
  echo keep > outputs/mine.txt
  local before left; before=$(find outputs artifacts | sort | sha256sum)
  expect_rc "clean --dry-run" 0 one clean --scope generated --dry-run --config "$cfg"
  [ "$(find outputs artifacts | sort | sha256sum)" = "$before" ] && ok "clean --dry-run changed nothing" || bad "clean --dry-run changed nothing"
  expect_rc "clean --scope generated" 0 one clean --scope generated --config "$cfg"
  left=$(find outputs artifacts | sort | tr '\n' ' ')
  [ "$left" = "artifacts outputs outputs/mine.txt " ] && ok "clean removed only generated files (kept outputs/mine.txt)" || bad "clean removed only generated files (kept outputs/mine.txt)" "— left: $left"
  expect_rc "clean without --scope is refused" 2 one clean --config "$cfg"
}
