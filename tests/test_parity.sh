# parity: the product passes and every control that must differ is rejected, for
# W = 1..4, dropout on and off; "coincides" exactly where the counts make a control equal.
# The factored first layer passes against the same dense reference; a broken one fails.
cfg="$CONFIGS/minimum.yaml"
parity_case() {  # NAME NP SETS...  (expects exit 0 and the product passing)
  local name=$1 np=$2; shift 2
  local sets=("$@")
  prep_ref "$cfg" "${sets[@]}" || { bad "parity $name: prepare/reference"; return 1; }
  expect_rc "parity $name" 0 ddp "$np" parity --config "$cfg" "${sets[@]}" || return
  local v; v=$(json outputs/parity.json "j['modes']['global-token']['violations'], j['modes']['global-token']['max_abs_err'], j['compared']")
  echo "       global-token: violations, max abs err, compared = $v"
}
case_w2() {
  parity_case "W=2 dropout 0.1 (minimum.yaml)" 2
  local m e
  m=$(json outputs/parity.json "all(not j['modes'][m]['pass'] for m in ('global-sequence','mean-of-means','extra-accumulation-division','padding-in-denominator'))")
  [ "$m" = True ] && ok "parity W=2: every negative control rejected" || bad "parity W=2: every negative control rejected" "— $m"
  e=$(json outputs/parity.json "j['modes']['mean-of-means']['max_abs_err']")
  /usr/bin/python3 -c "import sys; sys.exit(not (1e-3 <= $e <= 1e-1))" && ok "parity W=2: mean of means off by order 1e-2" "($e)" || bad "parity W=2: mean of means off by order 1e-2" "— $e"
  /usr/bin/python3 -c "import h5py; f=h5py.File('outputs/grads.h5'); assert set(f) == {'global-token','global-sequence','mean-of-means','extra-accumulation-division','padding-in-denominator'}; assert f['global-token/w1'].shape == (512, 256)" \
    && ok "parity W=2: grads.h5 holds every mode's gradient with the SPEC shapes" || bad "parity W=2: grads.h5 holds every mode's gradient with the SPEC shapes"
}
case_w2_dropout0() { parity_case "W=2 dropout 0" 2 --set model.dropout=0; }
case_w1() {
  parity_case "W=1 auto band" 1 --set train.world_size=1 --set train.rank_bands=auto
  local m; m=$(json outputs/parity.json "j['modes']['mean-of-means']['expected']")
  [ "$m" = coincides ] && ok "parity W=1: mean of means reported as coinciding" || bad "parity W=1: mean of means reported as coinciding" "— $m"
}
case_w3() { parity_case "W=3 auto bands dropout 0.1" 3 --set train.world_size=3 --set train.rank_bands=auto --set model.dropout=0.1; }
case_w3_dropout0() { parity_case "W=3 auto bands dropout 0" 3 --set train.world_size=3 --set train.rank_bands=auto --set model.dropout=0; }
case_w4() { parity_case "W=4 auto bands dropout 0.1" 4 --set train.world_size=4 --set train.rank_bands=auto --set model.dropout=0.1; }
case_w4_dropout0() { parity_case "W=4 auto bands dropout 0" 4 --set train.world_size=4 --set train.rank_bands=auto --set model.dropout=0; }
case_w3_prefix() { parity_case "W=3 prefix 20 (unlabelled positions) dropout 0.1" 3 --set train.world_size=3 --set train.rank_bands=auto --set data.unsupervised_prefix=20; }
case_a1() {
  parity_case "A=1: extra division coincides" 2 --set train.accumulation=1
  local m; m=$(json outputs/parity.json "j['modes']['extra-accumulation-division']['expected'], j['modes']['mean-of-means']['expected']")
  [ "$m" = "coincides rejected" ] && ok "parity A=1: extra-accumulation-division coincides, mean of means still rejected" \
    || bad "parity A=1: extra-accumulation-division coincides, mean of means still rejected" "— $m"
}
# train.grad_clip > 0 adds parity's clip rows: the product clips the all-reduced gradient by
# its norm (global-norm, the trainer's), the control per-rank-clip clips each rank's own
# gradient before the all-reduce (a naive port). At 0.05 the clip is active (the window's
# norm ~0.5): the product passes against the reference clipped by its norm, the control is
# rejected by the same check; at 1000 nothing is clipped and the control must coincide.
case_clip_w3() {
  local w3=(--set train.world_size=3 --set train.rank_bands=auto) m
  parity_case "W=3 train.grad_clip 0.05" 3 "${w3[@]}" --set train.grad_clip=0.05 || return
  expect_grep "parity clip: the clip rows are printed" 'per-rank-clip +[0-9.e-]+ +[0-9]+ +rejected' "$OUT"
  m=$(json outputs/parity.json "' '.join(map(str, (j['clip']['reference_clipped'], j['clip']['rows']['global-norm']['violations'], j['clip']['rows']['per-rank-clip']['pass'], j['clip']['rows']['per-rank-clip']['expected'])))")
  [ "$m" = "True 0 False rejected" ] && ok "parity clip 0.05: active, global-norm passes (0 violations), per-rank-clip rejected (negative control)" \
    || bad "parity clip 0.05: active, global-norm passes (0 violations), per-rank-clip rejected (negative control)" "— $m"
  expect_rc "parity W=3 train.grad_clip 1000 (inactive)" 0 ddp 3 parity --config "$cfg" "${w3[@]}" --set train.grad_clip=1000
  m=$(json outputs/parity.json "' '.join(map(str, (j['clip']['reference_clipped'], j['clip']['rank_clipped'], j['clip']['rows']['per-rank-clip']['expected'], j['clip']['rows']['per-rank-clip']['pass'])))")
  [ "$m" = "False False coincides True" ] && ok "parity clip 1000: nothing clipped, per-rank-clip coincides" || bad "parity clip 1000: nothing clipped, per-rank-clip coincides" "— $m"
  expect_rc "parity W=3 without train.grad_clip" 0 ddp 3 parity --config "$cfg" "${w3[@]}"
  m=$(json outputs/parity.json "'clip' in j")
  [ "$m" = False ] && ok "parity without train.grad_clip: no clip rows (the protocol's table unchanged)" || bad "parity without train.grad_clip: no clip rows (the protocol's table unchanged)" "— $m"
}
# train.first_layer: factored (per-slot tables, gradients once per window) against the same
# dense reference, at the same tolerance; a factored backward that sums slot j under slot
# j+1's id (build/ddptok-factored-broken) must be rejected by the same check, while its
# dense path still passes (the break is the factored one's).
F=(--set train.first_layer=factored)
case_factored_w2() { parity_case "factored W=2 dropout 0.1" 2 "${F[@]}"; }
case_factored_w1_a3() { parity_case "factored W=1 A=3" 1 --set train.world_size=1 --set train.rank_bands=auto --set train.accumulation=3 "${F[@]}"; }
case_factored_overlap() { parity_case "factored W=2 with train.overlap output-layer (the tail bucket flies while G is pending)" 2 "${F[@]}" --set train.overlap=output-layer; }
case_factored_w3_prefix() { parity_case "factored W=3 prefix 20 dropout 0" 3 --set train.world_size=3 --set train.rank_bands=auto --set data.unsupervised_prefix=20 --set model.dropout=0 "${F[@]}"; }
case_factored_broken() {
  prep_ref "$cfg" || bad "parity factored broken: prepare/reference for the control"
  local broken="$ROOT/build/ddptok-factored-broken"
  DDPTOK=$broken expect_rc "negative control: a broken factored backward fails parity" 1 ddp 2 parity --config "$cfg" "${F[@]}"
  expect_grep "negative control: a broken factored backward is rejected on the product (global-token FAILS)" 'global-token +[0-9.e-]+ +[0-9]+ +FAILS' "$OUT"
  DDPTOK=$broken expect_rc "the broken factored binary's dense first layer passes parity" 0 ddp 2 parity --config "$cfg"
}
