# Unit tests: Philox known answers; tanh_f32's and exp_f32's accuracy (with negative controls); every SIMD variant
# of the CPU row kernels against its scalar definition (with negative controls); every model's CPU backward (build/test_fd:
# the MLP's dense and factored first layer, the GPT's) against finite differences, and the same test against a deliberately broken backward and a broken factored one
# (negative controls).
case_philox() {
  local out; out=$("$ROOT/build/test_philox"); local rc=$?
  [ $rc -eq 0 ] && ok "philox: known answers and stream properties" || { bad "philox: known answers and stream properties"; echo "$out"; }
}
case_tanh_exp() {
  local out; out=$("$ROOT/build/test_tanh"); local rc=$?
  [ $rc -eq 0 ] && ok "tanh_f32 within 2 ulp of tanh, odd, NaN/inf; the cancelling formula is rejected; exp_f32 within 2 ulp of exp on [-87, 0], 0 below, NaN kept; a degree-5 polynomial is rejected" \
    "($(grep -o 'max [0-9.]* ulp' <<<"$out" | head -1); exp: $(grep -oE 'exp_f32: max [0-9.]+ ulp' <<<"$out" | cut -d' ' -f2-))" \
    || { bad "tanh_f32 within 2 ulp of tanh, odd, NaN/inf; the cancelling formula is rejected; exp_f32 within 2 ulp of exp on [-87, 0], 0 below, NaN kept; a degree-5 polynomial is rejected"; echo "$out"; }
}
case_kernels() {
  local n="CPU row kernels: every variant this CPU runs = the scalar mask, tanh, log-softmax, tanh backward and AdamW pass bit for bit; a wrong counter, threshold, summation order or product order is rejected"
  local out; out=$("$ROOT/build/test_kernels"); local rc=$?
  [ $rc -eq 0 ] && ok "$n" "($(grep -o 'selected [a-z0-9]*; [0-9]* of [0-9]*' <<<"$out"))" || { bad "$n"; echo "$out"; }
}
# The same kernels as clang compiles them (OMPI_CC=clang builds ddptok with clang): the same
# bits, thanks to -ffp-contract=off; with clang's default contraction (a*b+c into one FMA) the
# AVX-512 variant differs, and the same test must say so (the negative control).
case_clang_kernels() {
  if [ ! -x "$ROOT/build/clang/test_kernels" ]; then
    skip "CPU row kernels built by clang" "build/clang/ is not built (make clang-bins: clang, run/install-deps.sh --tests)"
    return
  fi
  local out rc
  out=$("$ROOT/build/clang/test_kernels"); rc=$?
  [ $rc -eq 0 ] && ok "CPU row kernels built by clang: the same bits as the scalar definition" "($(grep -o 'selected [a-z0-9]*; [0-9]* of [0-9]*' <<<"$out"))" \
    || { bad "CPU row kernels built by clang: the same bits as the scalar definition"; echo "$out" | head -5; }
  out=$("$ROOT/build/clang/test_kernels_contract"); rc=$?
  if ! grep -q "selected avx512" <<<"$out"; then skip "negative control: clang with -ffp-contract=on is rejected" "this CPU runs no AVX-512 variant (the FMA variant clang would contract)"
  elif [ $rc -ne 0 ] && grep -q "^FAIL avx512" <<<"$out"; then ok "negative control: clang with -ffp-contract=on is rejected" "($(grep -c '^FAIL' <<<"$out") mismatches)"
  else bad "negative control: clang with -ffp-contract=on is rejected" "— the kernel test accepted FMA-contracted kernels"; echo "$out" | tail -3; fi
}
case_backward() {
  local n="CPU backward = central finite differences for every tensor, dense and factored first layer (dropout 0.3, prefix 2, A = 2); factored = dense after a step; last_logits = the row's logits"
  local out; out=$("$ROOT/build/test_fd" mlp); local rc=$?
  [ $rc -eq 0 ] && ok "$n" || { bad "$n"; echo "$out"; }
}
case_backward_broken() {
  local n="negative control: a backward without tanh' is rejected by the finite-difference test"
  local out; out=$("$ROOT/build/test_model_broken" mlp); local rc=$?
  if [ $rc -ne 0 ] && grep -qE "FAIL dense +w1" <<<"$out"; then ok "$n"
  else bad "$n" "— the finite-difference test accepted a broken backward"; echo "$out"; fi
}
case_gpt_backward() {
  local n="GPT backward = central finite differences for every tensor (dropout 0.3 at every site, per-microbatch and keyed; prefix 2, A = 2, sequence weights); no attention across sequences"
  local out; out=$("$ROOT/build/test_fd" gpt); local rc=$?
  [ $rc -eq 0 ] && ok "$n" "($(grep -c '^ok' <<<"$out") checks)" || { bad "$n"; echo "$out" | grep -v '^ok'; }
}
case_gpt_backward_broken() {
  local n="negative control: a GPT backward without GELU's derivative is rejected by the same finite-difference test (fcw rejected; ln_f, before any GELU in the backward, unaffected)"
  local out; out=$("$ROOT/build/test_gpt_broken" gpt); local rc=$?
  if [ $rc -ne 0 ] && grep -qE "FAIL per-microbatch dropout fcw " <<<"$out" && grep -qE "^ok   per-microbatch dropout lnfw" <<<"$out" \
     && grep -qE "^ok   per-microbatch dropout lnfb" <<<"$out"; then ok "$n"
  else bad "$n" "— the finite-difference test accepted a broken GPT backward"; echo "$out" | head -20; fi
}
# Every model of DDPTOK_MODELS (include/config/config.h, read as the Makefile reads it) has its
# row in the finite-difference test (tests/fd_<name>.c) and passes it; control: a model name
# not in the list is refused (exit 2), so the run is driven by the list, not by a copy of it.
case_fd_every_model() {
  local n="every model of DDPTOK_MODELS runs the finite-difference test of its row's tensors (build/test_fd)"
  local models got out rc
  models=$(sed -n 's/^#define DDPTOK_MODELS(X) //p' "$ROOT/include/config/config.h" | grep -o 'X([A-Z0-9_]*, *[a-z0-9_]*)' \
           | cut -d, -f2 | tr -d ' )' | tr '\n' ' ')
  out=$("$ROOT/build/test_fd"); rc=$?
  got=$(sed -n 's/^-- \([a-z0-9_]*\) .*/\1/p' <<<"$out" | tr '\n' ' ')
  [ $rc -eq 0 ] && [ -n "$models" ] && [ "$got" = "$models" ] && ok "$n" "(models: $got$(grep -c '^ok' <<<"$out") checks)" \
    || { bad "$n" "— exit $rc, models listed: '$models', run: '$got'"; echo "$out" | grep -v '^ok' | head; }
  out=$("$ROOT/build/test_fd" no_such_model); rc=$?
  [ $rc -eq 2 ] && grep -q '^FAIL no model no_such_model' <<<"$out" && ok "control: a model not in DDPTOK_MODELS is refused (exit 2)" \
    || bad "control: a model not in DDPTOK_MODELS is refused (exit 2)" "— exit $rc: $out"
}
# build/bench_kernels step (what run/bench_gpt.sh profiles the GPT's step with) runs on the
# tests' GPT and reports what the bench reads, its GEMM calls counted right: the linear layers'
# FLOPs (forward, dX and dW of qkv, attproj, fc, fcproj and the tied lm head) are
# 6·N·NL·12C² + 6·S·V·C, from the shape alone; control: the same check on the report with
# one call of one site taken away rejects it.
BENCHK_CHECK='
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
drop = sys.argv[2] == "1"
for k in ("kernel", "P", "rows", "supervised", "shape", "lens", "reps", "forward_loss_ms", "forward_backward_ms", "optimizer_ms",
          "forward_loss_best_ms", "forward_backward_best_ms", "optimizer_best_ms", "bytes", "budget_instance", "budget_workload", "gemm"):
    assert k in d, "key " + k + " missing"
sh = d["shape"]; C, NL, V, hs = sh["C"], sh["n_layer"], sh["V"], sh["C"] // sh["n_head"]
N, S = d["rows"], d["supervised"]
assert N == sum(d["lens"]) and d["forward_backward_ms"] > 0 and d["forward_backward_best_ms"] <= d["forward_backward_ms"]
if drop: d["gemm"][0]["calls"] -= 1
lin = sum(2 * g["M"] * g["N"] * g["K"] * g["calls"] for g in d["gemm"] if hs not in (g["M"], g["N"], g["K"]))
want = 6 * N * NL * 12 * C * C + 6 * S * V * C
assert abs(lin - want) < 0.5, "linear layers: %d FLOP counted, %d from the shape" % (lin, want)
print("%d FLOP in the linear layers, as the shape gives; %d GEMM sites" % (lin, len(d["gemm"])))
'
case_bench_kernels_step() {
  local n="build/bench_kernels step runs the tests' GPT and reports what run/bench_gpt.sh reads; its GEMM calls give the linear layers' FLOPs of the shape (6·N·NL·12C² + 6·S·V·C)"
  local out rc prc
  "$ROOT/build/bench_kernels" step "$ROOT/configs/gpt-tests.yaml" 23,21,19 2 > benchk.out 2>&1; rc=$?
  out=$(/usr/bin/python3 -c "$BENCHK_CHECK" benchk.out 0 2>&1); prc=$?
  [ $rc -eq 0 ] && [ $prc -eq 0 ] && grep -q "as the shape gives" <<<"$out" && ok "$n" "($out)" || { bad "$n" "— exit $rc: $out"; tail -3 benchk.out; }
  out=$(/usr/bin/python3 -c "$BENCHK_CHECK" benchk.out 1 2>&1)
  grep -q "FLOP counted" <<<"$out" && ok "control: the report with one GEMM call taken away is rejected by the same check" \
    || bad "control: the report with one GEMM call taken away is rejected by the same check" "— $out"
}
case_backward_factored_broken() {
  local n="negative control: a factored backward that sums slot j under slot j+1's id is rejected by the finite-difference test (w1, embedding; dense unaffected)"
  local out; out=$("$ROOT/build/test_mlp_factored_broken" mlp); local rc=$?
  if [ $rc -ne 0 ] && grep -qE "FAIL factored +w1" <<<"$out" && grep -qE "FAIL factored +embedding" <<<"$out" && ! grep -q "FAIL dense" <<<"$out"; then ok "$n"
  else bad "$n" "— the finite-difference test accepted a broken factored backward"; echo "$out"; fi
}
