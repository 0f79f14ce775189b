#!/usr/bin/env bash
# run/bench.sh — training throughput, side by side. Not part of `make test`.
#
#   bash run/bench.sh [--repeats N] [--np W] [BINARY...]      (default: ./ddptok, 5 repeats, W = 2)
#
# For each case and each repeat, every BINARY trains the same run in turn (interleaved,
# so a noisy machine hits them alike) with `train --continuous`; throughput is the
# supervised tokens of all ranks divided by the summed window seconds (from
# outputs/train/continuous.jsonl). Prints the median, min and max per binary and the ratio
# of medians to the first BINARY. Extra `--set` overrides for every run: BENCH_SETS.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
repeats=5 np=2 bins=()
while [ $# -gt 0 ]; do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) bins+=("$(realpath "$1")"); shift ;;
  esac
done
[ ${#bins[@]} -eq 0 ] && { make -C "$ROOT" --no-print-directory -s; bins=("$ROOT/ddptok"); }
mpi=(mpirun -np "$np")
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
[ "$(nproc)" -lt "$np" ] && mpi+=(--oversubscribe)
W=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-bench.XXXXXX"); trap 'rm -rf "$W"' EXIT
cd "$W"
read -r -a extra <<<"${BENCH_SETS:-}"

# name | config | overrides
cases=(
  "minimum|configs/minimum.yaml|"
  "wide H=2048 B=16|configs/minimum.yaml|--set model.hidden=2048 --set train.batch_size_per_rank=16 --set train.updates=20"
)
bands=()
[ "$np" -ne 2 ] && bands=(--set train.world_size="$np" --set train.rank_bands=auto)

echo "ddptok bench: $(nproc) cores, $np ranks, $repeats repeats; host $(hostname)"
for c in "${cases[@]}"; do
  IFS='|' read -r name cfg sets <<<"$c"
  read -r -a s <<<"$sets"
  args=(--config "$ROOT/$cfg" "${s[@]}" "${bands[@]}" "${extra[@]}" --set train.interrupt_at=0)
  "${bins[0]}" prepare "${args[@]}" >/dev/null
  declare -A res=()
  for ((r = 0; r < repeats; r++)); do
    for i in "${!bins[@]}"; do
      rm -rf artifacts outputs/train
      "${mpi[@]}" "${bins[$i]}" train "${args[@]}" --continuous >/dev/null
      res[$i]+="$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open("outputs/train/continuous.jsonl")]
print(sum(r["tokens"] for r in rows) / sum(r["seconds"] for r in rows))') "
    done
  done
  echo
  echo "== $name (tokens/s over all ranks)"
  base=""
  for i in "${!bins[@]}"; do
    read -r med lo hi <<<"$(python3 -c 'import sys, statistics as st; v = [float(x) for x in sys.argv[1:]]; print(st.median(v), min(v), max(v))' ${res[$i]})"
    [ -z "$base" ] && base=$med
    printf '  %-40s median %10.0f  (min %10.0f, max %10.0f)  x%.2f\n' "${bins[$i]}" "$med" "$lo" "$hi" "$(python3 -c "print($med / $base)")"
  done
  unset res
done
