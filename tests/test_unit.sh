# Unit tests: Philox known answers; tanh_f32's and exp_f32's accuracy (with negative controls); every SIMD variant
# of the CPU row kernels against its scalar definition (with negative controls); the CPU backward (dense and factored first
# layer) against finite differences, and the same test against a deliberately broken backward and a broken factored one
# (negative controls).
out=$(build/test_philox); rc=$?
[ $rc -eq 0 ] && ok "philox known answers and stream properties" || { bad philox; echo "$out"; }
out=$(build/test_tanh); rc=$?
[ $rc -eq 0 ] && ok "tanh_f32 within 2 ulp of tanh ($(grep -o 'max [0-9.]* ulp' <<<"$out" | head -1)), odd, NaN/inf; the cancelling formula is rejected; exp_f32 within 2 ulp of exp on [-87, 0] ($(grep -oE 'exp_f32: max [0-9.]+ ulp' <<<"$out" | cut -d' ' -f2-)), 0 below, NaN kept; a degree-5 polynomial is rejected" || { bad "tanh_f32, exp_f32"; echo "$out"; }
out=$(build/test_kernels); rc=$?
[ $rc -eq 0 ] && ok "CPU row kernels: every variant this CPU runs ($(grep -o 'selected [a-z0-9]*; [0-9]* of [0-9]*' <<<"$out")) = the scalar mask, tanh, log-softmax and tanh backward bit for bit; a wrong counter, threshold, summation order or product order is rejected" || { bad "CPU row kernel variants"; echo "$out"; }
# The same kernels as clang compiles them (OMPI_CC=clang builds ddptok with clang): the same
# bits, thanks to -ffp-contract=off; with clang's default contraction (a*b+c into one FMA) the
# AVX-512 variant differs, and the same test must say so (the negative control).
if [ ! -x build/clang/test_kernels ]; then
  skip "clang kernels" "build/clang/ is not built (make clang-bins: clang, run/install-deps.sh --tests)"
else
  out=$(build/clang/test_kernels); rc=$?
  [ $rc -eq 0 ] && ok "... built by clang: the same bits ($(grep -o 'selected [a-z0-9]*; [0-9]* of [0-9]*' <<<"$out"))" || { bad "clang-built row kernels"; echo "$out" | head -5; }
  out=$(build/clang/test_kernels_contract); rc=$?
  if ! grep -q "selected avx512" <<<"$out"; then skip "clang contraction control" "this CPU runs no AVX-512 variant (the FMA variant clang would contract)"
  elif [ $rc -ne 0 ] && grep -q "^FAIL avx512" <<<"$out"; then ok "negative control: clang with its default -ffp-contract=on is rejected ($(grep -c '^FAIL' <<<"$out") mismatches)"
  else bad "clang contraction control" "— the kernel test accepted FMA-contracted kernels"; echo "$out" | tail -3; fi
fi
out=$(build/test_model); rc=$?
[ $rc -eq 0 ] && ok "backward = central finite differences for every tensor, dense and factored first layer (dropout 0.3, prefix 2, A = 2); factored = dense after a step" || { bad backward; echo "$out"; }
out=$(build/test_model_broken); rc=$?
if [ $rc -ne 0 ] && grep -qE "FAIL dense +w1" <<<"$out"; then ok "negative control: a backward without tanh' is rejected by the same test"
else bad "broken-backward control" "— the finite-difference test accepted a broken backward"; echo "$out"; fi
out=$(build/test_model_factored_broken); rc=$?
if [ $rc -ne 0 ] && grep -qE "FAIL factored +w1" <<<"$out" && grep -qE "FAIL factored +embedding" <<<"$out" && ! grep -q "FAIL dense" <<<"$out"; then
  ok "negative control: a factored backward that sums slot j under slot j+1's id is rejected (w1, embedding; dense unaffected)"
else bad "broken-factored control" "— the finite-difference test accepted a broken factored backward"; echo "$out"; fi
