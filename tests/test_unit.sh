# Unit tests: Philox known answers; tanh_f32's accuracy (with a negative control); the CPU backward against finite differences, and the
# same test against a deliberately broken backward (negative control).
out=$(build/test_philox); rc=$?
[ $rc -eq 0 ] && ok "philox known answers and stream properties" || { bad philox; echo "$out"; }
out=$(build/test_tanh); rc=$?
[ $rc -eq 0 ] && ok "tanh_f32 within 2 ulp of tanh ($(grep -o 'max [0-9.]* ulp' <<<"$out" | head -1)), odd, NaN/inf; the cancelling formula is rejected" || { bad tanh_f32; echo "$out"; }
out=$(build/test_model); rc=$?
[ $rc -eq 0 ] && ok "backward = central finite differences for every tensor (dropout 0.3, prefix 2, A = 2)" || { bad backward; echo "$out"; }
out=$(build/test_model_broken); rc=$?
if [ $rc -ne 0 ] && grep -q "FAIL w1" <<<"$out"; then ok "negative control: a backward without tanh' is rejected by the same test"
else bad "broken-backward control" "— the finite-difference test accepted a broken backward"; echo "$out"; fi
