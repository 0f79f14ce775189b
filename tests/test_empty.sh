# Empty windows: a globally empty window stops every rank together, quickly, with exit 3
# and nothing written for that step; a locally empty rank still matches its reference.
cfg="$CONFIGS/minimum.yaml"
case_check_empty_w2() {
  one prepare --config "$cfg" >/dev/null
  expect_rc "check-empty W=2" 0 ddp 2 check-empty --config "$cfg"
  local r n
  r=$(json outputs/empty.json "j['global_empty']['rejected_by_all_ranks'], j['global_empty']['exit_code'], j['local_empty']['pass'], j['local_empty']['rank_count']")
  [ "$r" = "True 3 True 0" ] && ok "check-empty W=2: empty.json says rejected by all ranks, exit code 3, local empty (N_0 = 0) matches" \
    || bad "check-empty W=2: empty.json says rejected by all ranks, exit code 3, local empty (N_0 = 0) matches" "— $r"
  n=$(grep -c 'step 1: no supervised position' <<<"$OUT")
  [ "$n" -eq 2 ] && ok "check-empty W=2: both ranks print the same rejection naming the step" || bad "check-empty W=2: both ranks print the same rejection naming the step" "— $n"
}
# The real training path: every rank stops at step 1 with exit 3 within seconds.
case_train_global_empty() {
  one prepare --config "$cfg" --set data.unsupervised_prefix=200 >/dev/null
  local t0 dt n
  t0=$(date +%s%N)
  DDPTOK_TEST_TIMEOUT=30 expect_rc "train with a globally empty window exits 3 on every rank" 3 ddp 2 train --config "$cfg" --set data.unsupervised_prefix=200
  dt=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$dt" -lt 10000 ] && ok "train with a globally empty window: stops within 10 s (no rank hangs)" "($dt ms)" \
    || bad "train with a globally empty window: stops within 10 s (no rank hangs)" "— $dt ms"
  n=$(grep -c '^ddptok: ranks 0-1: error: step 1: no supervised position in the window on any rank' <<<"$OUT")
  [ "$n" -eq 1 ] && [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && ok "train with a globally empty window: one line naming step 1 and both ranks" \
    || bad "train with a globally empty window: one line naming step 1 and both ranks" "— $n lines"
  [ ! -s outputs/train/interrupted.jsonl ] && [ -z "$(ls artifacts/checkpoints 2>/dev/null)" ] \
    && ok "train with a globally empty window: nothing was logged or checkpointed for it (no step-*)" \
    || bad "train with a globally empty window: nothing was logged or checkpointed for it (no step-*)"
}
# W = 3: the same.
case_check_empty_w3() {
  one prepare --config "$cfg" --set train.world_size=3 --set train.rank_bands=auto >/dev/null
  expect_rc "check-empty W=3" 0 ddp 3 check-empty --config "$cfg" --set train.world_size=3 --set train.rank_bands=auto
}
