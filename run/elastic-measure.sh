#!/usr/bin/env bash
# run/elastic-measure.sh [SEEDS...] — measures what elastic resume changes: for each seed,
# the global sampler's tiny run is interrupted at step 6 on W ranks and resumed on W' ranks
# (W, W' in 1..4); prints max |dtheta| (model and momentum, rank 0's file) of the step-12
# result against the uninterrupted W run, and the maximum over everything. The bound of the
# `invariance` test group is derived from this measurement (docs/sampling.md "Elastic resume").
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
seeds=("${@:-99 7 1234}")
[ $# -eq 0 ] && seeds=(99 7 1234)
work=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-elastic.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
run() { timeout -k 5 300 mpirun -np "$1" "$ROOT/ddptok" "${@:2}" >/dev/null 2>&1; }
max=0
printf '%6s %3s %3s %14s\n' seed W "W'" "max|dtheta|"
for seed in "${seeds[@]}"; do
  mkdir -p "$work/$seed" && cd "$work/$seed" || exit 2  # one lineage per seed (a second seed's run in a1/ was refused)
  base=(--config "$ROOT/configs/tiny.yaml" --set seed="$seed" --set train.sampler=global --set train.rank_bands=auto
        --set train.global_batch=12 --set train.partition=balanced)
  "$ROOT/ddptok" prepare "${base[@]}" >/dev/null || exit 2
  for w in 1 2 3 4; do
    run "$w" train "${base[@]}" --set train.world_size="$w" --set paths.artifacts="a$w" --continuous || exit 2
    run "$w" train "${base[@]}" --set train.world_size="$w" --set paths.artifacts="a$w" || exit 2
    for w2 in 1 2 3 4; do
      rm -rf "r$w$w2" && mkdir -p "r$w$w2/checkpoints" && cp -r "a$w/checkpoints/step-0006" "r$w$w2/checkpoints/"
      run "$w2" train "${base[@]}" --set train.world_size="$w2" --set paths.artifacts="r$w$w2" --resume latest || exit 2
      d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" --rank0 "r$w$w2/checkpoints/step-0012" "a$w/continuous/step-0012")
      printf '%6s %3s %3s %14s\n' "$seed" "$w" "$w2" "$d"
      max=$(/usr/bin/python3 -c "print(max($max, $d))")
    done
  done
done
echo "max |dtheta| over all: $max"
