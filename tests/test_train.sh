# Train, checkpoint and exact resume: interrupted + resumed == continuous bit for bit
# (model and momentum, every rank), with dropout on, for W = 2 and W = 3; resumes that
# skip the RNG, momentum or sampler state must come out different (negative controls).
W=$(workdir); cd "$W"
cfg="$CONFIGS/tiny.yaml"
resume_case() {  # NP SETS...
  local np=$1; shift
  rm -rf outputs artifacts
  one prepare --config "$cfg" "$@" >/dev/null
  expect_rc "W=$np: train (interrupted at 6)" 0 ddp $np train --config "$cfg" "$@" || return
  [ -f artifacts/checkpoints/step-0006/rank-0000.h5 ] && [ ! -e artifacts/checkpoints/step-0006.tmp ] && ok "W=$np: step-0006 published, no temporary left" || bad "W=$np: checkpoint layout"
  expect_rc "W=$np: train --continuous" 0 ddp $np train --config "$cfg" "$@" --continuous || return
  expect_rc "W=$np: train --resume step-0006" 0 ddp $np train --config "$cfg" "$@" --resume artifacts/checkpoints/step-0006 || return
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" artifacts/checkpoints/step-0012 artifacts/continuous/step-0012) \
    && ok "W=$np: resumed step-12 model and momentum bit-identical to continuous (max |dtheta| = $d)" || bad "W=$np: resume differs" "— max |dtheta| = $d"
  # Logged losses of steps 7..12 equal too (the same windows, the same masks).
  if diff <(sed -E 's/, "seconds".*//' outputs/train/resumed.jsonl) <(sed -E 's/, "seconds".*//' outputs/train/continuous.jsonl | tail -n +7) >/dev/null; then
    ok "W=$np: resumed log lines equal the continuous run's steps 7..12"
  else bad "W=$np: resumed log differs"; fi
  for part in rng momentum sampler; do
    rm -rf artifacts/checkpoints/step-0012
    DDPTOK_TEST_RESUME_SKIP=$part ddp $np train --config "$cfg" "$@" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
    d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" artifacts/checkpoints/step-0012 artifacts/continuous/step-0012) \
      && bad "W=$np: a resume without the $part state still matched" || ok "W=$np: negative control — resume without the $part state differs (max |dtheta| = $d)"
  done
}
resume_case 2
resume_case 3 --set train.world_size=3 --set train.rank_bands=auto
# The JSONL lines carry the SPEC fields; the loss is the global token mean.
l=$(head -1 outputs/train/continuous.jsonl)
expect_grep "train JSONL line has step, loss, tokens, rank_tokens, sequences, seconds" '^\{"step": 1, "loss": [0-9.]+, "tokens": [0-9]+, "rank_tokens": \[[0-9]+, [0-9]+, [0-9]+\], "sequences": [0-9]+, "seconds": [0-9.]+, ' "$l"
n=$(wc -l < outputs/logs/continuous/rank-2.log)
[ "$n" -eq 12 ] && ok "per-rank log outputs/logs/continuous/rank-2.log ($n lines)" || bad "per-rank log"
# --resume latest picks the newest complete checkpoint.
rm -rf artifacts/checkpoints/step-0012
expect_rc "--resume latest" 0 ddp 3 train --config "$cfg" --set train.world_size=3 --set train.rank_bands=auto --resume latest
expect_grep "... resumed from step 6" 'steps 7\.\.12' "$OUT"

# A failure stops every rank with one line each: the failed rank names the file and what
# to do, the others name the failed rank; nothing else from ddptok.
lines() { grep -c '^ddptok: ' <<<"$OUT"; }
rm -rf outputs artifacts
expect_rc "train before prepare: every rank stops" 2 ddp 2 train --config "$cfg"
[ "$(lines)" -eq 1 ] && [ "$(grep -c "^ddptok: ranks 0-1: error: outputs/data/corpus.h5: cannot open: No such file or directory: run \`ddptok prepare --config .*tiny.yaml\` first" <<<"$OUT")" -eq 1 ] \
  && ok "... one line for both ranks, naming the file and the command to run" || { bad "missing corpus message"; echo "$OUT" | grep ddptok | head -4; }
one prepare --config "$cfg" >/dev/null
mkdir -p outputs/logs/interrupted/rank-1.log
expect_rc "rank 1 cannot write its log: every rank stops" 2 ddp 2 train --config "$cfg"
[ "$(lines)" -eq 2 ] && grep -q '^ddptok: rank 1: error: .*rank-1.log: cannot write: Is a directory$' <<<"$OUT" \
  && grep -q '^ddptok: rank 0: error: stopping: rank 1 failed opening its training log$' <<<"$OUT" \
  && ok "... rank 1 names the file, rank 0 names rank 1" || { bad "log failure messages"; echo "$OUT" | grep ddptok | head -4; }
rmdir outputs/logs/interrupted/rank-1.log
cd "$ROOT"; rm -rf "$W"
