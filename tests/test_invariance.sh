# Partition invariance and elastic resume (docs/sampling.md "Global sampling"): the global sampler's
# window 1 through the distributed path agrees with its one-batch reference for W = 1..4,
# A = 1, 2, every partition and both loss units, dropout on; the mean of means is rejected
# wherever per-rank counts differ. A W = 2 checkpoint resumes on W' = 1 and 3 within the
# stated bound of the uninterrupted run, bit-identical on W' = 2. Negative controls: a
# partition that loses a sequence, dropout keyed per rank, a resume that skips the global
# stream or drops a sequence, another global_batch, and the bands sampler on another W.
# The factored first layer: the W=2 table and a W=2 -> 1 resume within the bound.
W=$(workdir); cd "$W"
cfg="$CONFIGS/tiny.yaml"
G=(--set train.sampler=global --set train.rank_bands=auto --set train.global_batch=12 --set train.partition=balanced)
one prepare --config "$cfg" "${G[@]}" >/dev/null || bad "prepare (global sampler)"

# 1. The invariance table, one world size per mpirun.
for np in 1 2 3 4; do
  expect_rc "parity --invariance W=$np" 0 ddp $np parity --invariance --config "$cfg" "${G[@]}" --set train.world_size=$np
  echo "$OUT" | grep -E "^ +$np +[12] " | sed 's/^/       /'
  n=$(echo "$OUT" | grep -cE "^ +$np +[12] .* passes ")
  [ "$n" -eq 12 ] && ok "W=$np: 12 rows (A 1,2 x 3 partitions x 2 units), the product passes on each" || bad "W=$np rows" "— $n of 12 pass"
  [ "$np" -gt 1 ] && { echo "$OUT" | grep -E "^ +$np .* (NOT REJECTED|FAILS)" >/dev/null && bad "W=$np: a mean of means not rejected" \
    || ok "W=$np: the mean of means is rejected on every row with unequal counts ($(echo "$OUT" | grep -c ' rejected$') rows)"; }
done
json outputs/invariance-w4.json 'j["ok"] and len(j["rows"]) == 12' | grep -q True && ok "outputs/invariance-w4.json: ok, 12 rows" || bad "invariance JSON"
with_env() { local e=$1; shift; ( export "$e"; "$@" ); }  # with_env NAME=VALUE CMD...: CMD may be a function
expect_rc "negative control: a partition that loses a sequence fails the table" 1 \
  with_env DDPTOK_TEST_PARTITION_DROP=1 ddp 2 parity --invariance --config "$cfg" "${G[@]}"
expect_rc "negative control: dropout keyed per (rank, microbatch) fails the table" 1 \
  with_env DDPTOK_TEST_DROPOUT_PER_RANK=1 ddp 2 parity --invariance --config "$cfg" "${G[@]}"

expect_rc "check-empty under the global sampler (balanced): rank 0 emptied through the bands partition" 0 \
  ddp 2 check-empty --config "$cfg" "${G[@]}"

# 2. Elastic resume. Bound: eps·(U − s)·max|θ| with eps = 2^-23 and U − s = 6 updates after
# the resume: one float32 ulp of the largest parameter per update (docs/sampling.md "Elastic resume":
# run/elastic-measure.sh measured at most 2.4e-7, under one such ulp in all, over 3 seeds
# and every (W, W') in 1..4 — the bound is 6 ulps, ~9x the measurement).
expect_rc "W=2: train --continuous (global sampler)" 0 ddp 2 train --config "$cfg" "${G[@]}" --continuous
expect_rc "W=2: train (interrupted at 6)" 0 ddp 2 train --config "$cfg" "${G[@]}"
bound=$(/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File('artifacts/continuous/step-0012/rank-0000.h5') as f:
    m = max(float(np.max(np.abs(f['model'][p][()]))) for p in f['model'])
print(2**-23 * 6 * m)")
resume_on() {  # NP NAME ENV: resumes a copy of step-0006 on NP ranks into e-NAME with ENV (NAME=VALUE) set
  local np=$1 name=$2 e=$3
  rm -rf "e-$name" && mkdir -p "e-$name/checkpoints" && cp -r artifacts/checkpoints/step-0006 "e-$name/checkpoints/"
  expect_rc "resume W=2 -> W=$np ($name)" 0 with_env "$e" ddp $np train --config "$cfg" "${G[@]}" --set train.world_size=$np \
    --set paths.artifacts="e-$name" --resume latest
}
for np in 1 3; do
  resume_on $np w$np DDPTOK_NONE=1
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" --rank0 "e-w$np/checkpoints/step-0012" artifacts/continuous/step-0012)
  /usr/bin/python3 -c "import sys; sys.exit(not ($d <= $bound))" && ok "W=2 -> W=$np: step 12 within the bound (max |dtheta| = $d <= $bound)" \
    || bad "W=2 -> W=$np beyond the bound" "— max |dtheta| = $d > $bound"
  expect_rc "... check-checkpoints on W=$np accepts the W=2 and W=$np checkpoints" 0 \
    one check-checkpoints --config "$cfg" "${G[@]}" --set train.world_size=$np --set paths.artifacts="e-w$np"
done
resume_on 2 w2 DDPTOK_NONE=1
d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" e-w2/checkpoints/step-0012 artifacts/continuous/step-0012) \
  && ok "W=2 -> W=2: bit-identical to the uninterrupted run" || bad "W=2 -> W=2 not bit-identical" "— max |dtheta| = $d"
for ctl in DDPTOK_TEST_RESUME_SKIP=sampler DDPTOK_TEST_PARTITION_DROP=1; do
  resume_on 1 "ctl-${ctl%%=*}" "$ctl"
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" --rank0 "e-ctl-${ctl%%=*}/checkpoints/step-0012" artifacts/continuous/step-0012)
  /usr/bin/python3 -c "import sys; sys.exit(not ($d > $bound))" && ok "negative control $ctl on W=1 breaks the bound (max |dtheta| = $d)" \
    || bad "negative control $ctl within the bound" "— $d <= $bound"
done
# The factored first layer (train.first_layer): the invariance table against the same
# (dense) reference, and an elastic resume W=2 -> W=1 within the same bound of its own
# uninterrupted run.
F=(--set train.first_layer=factored --set paths.artifacts=fact)
expect_rc "factored: parity --invariance W=2" 0 ddp 2 parity --invariance --config "$cfg" "${G[@]}" "${F[@]}"
n=$(echo "$OUT" | grep -cE "^ +2 +[12] .* passes ")
[ "$n" -eq 12 ] && ok "factored W=2: the product passes on all 12 rows" || bad "factored W=2 rows" "— $n of 12 pass"
DDPTOK="$ROOT/build/ddptok-factored-broken" expect_rc "negative control: a broken factored backward fails the table" 1 \
  ddp 2 parity --invariance --config "$cfg" "${G[@]}" "${F[@]}"
ddp 2 train --config "$cfg" "${G[@]}" "${F[@]}" --continuous >/dev/null 2>&1 && ddp 2 train --config "$cfg" "${G[@]}" "${F[@]}" >/dev/null 2>&1 \
  || bad "factored: W=2 training (global sampler)"
rm -rf e-fact && mkdir -p e-fact/checkpoints && cp -r fact/checkpoints/step-0006 e-fact/checkpoints/
expect_rc "factored: resume W=2 -> W=1" 0 ddp 1 train --config "$cfg" "${G[@]}" "${F[@]}" --set train.world_size=1 --set paths.artifacts=e-fact --resume latest
d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" --rank0 e-fact/checkpoints/step-0012 fact/continuous/step-0012)
/usr/bin/python3 -c "import sys; sys.exit(not ($d <= $bound))" && ok "factored W=2 -> W=1: step 12 within the bound (max |dtheta| = $d <= $bound)" \
  || bad "factored W=2 -> W=1 beyond the bound" "— max |dtheta| = $d > $bound"
mkdir -p other && one prepare --config "$cfg" "${G[@]}" --set train.global_batch=10 --set paths.outputs=other >/dev/null
expect_rc "resume with another global_batch is refused" 2 ddp 1 train --config "$cfg" "${G[@]}" --set train.world_size=1 \
  --set train.global_batch=10 --set paths.outputs=other --resume artifacts/checkpoints/step-0006
expect_grep "... naming the data lock it changes" "data lock .* differs" "$OUT"

# 3. The bands sampler draws per rank: its checkpoints cannot change W.
one prepare --config "$cfg" --set paths.outputs=bands --set paths.artifacts=bands-a >/dev/null
ddp 2 train --config "$cfg" --set paths.outputs=bands --set paths.artifacts=bands-a >/dev/null 2>&1
one prepare --config "$cfg" --set paths.outputs=bands --set train.world_size=1 --set train.rank_bands=auto >/dev/null
expect_rc "bands sampler: a W=2 checkpoint on W=1 is refused" 2 ddp 1 train --config "$cfg" --set paths.outputs=bands \
  --set paths.artifacts=bands-a --set train.world_size=1 --set train.rank_bands=auto --resume latest
expect_grep "... in one line saying why" "written by 2 ranks, this run has 1: the bands sampler cannot re-partition" "$OUT"
