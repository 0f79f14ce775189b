#!/usr/bin/env bash
# run/bench_partition.sh — throughput from balance (docs/performance.md "Throughput from balance"): the global
# sampler on the tutorial's data (configs/minimum.yaml, W = 2, G = 16), the same global
# windows laid out by `train.partition: bands` (the tutorial's length bands) and by
# `balanced` (LPT on labels). Run by `make bench` after run/bench.sh; not part of `make test`.
#
#   bash run/bench_partition.sh [--repeats N] [--updates U] [BINARY]
#
# Interleaved pairs (bands, balanced, bands, ...), so load from other jobs hits both alike;
# medians over the repeats. Throughput = tokens of windows 2..U over rank 0's summed window
# seconds (a window ends with the gradient all-reduce, so it lasts as long as its slowest
# rank). Printed: tokens/s per partition, the balanced/bands ratio per pair (median,
# min-max), the per-rank token spread (mean of max_r N_r / mean_r N_r over the windows) and
# the ideal ratio if the window time followed the busiest rank's tokens exactly
# (mean max_r N_r under bands over that under balanced), and where rank 0's window went
# (its compute; the gradient all-reduce, in which it waits for the slower rank). Checks that both partitions saw
# the same windows (the same N every step) and end at the same loss (1e-4 relative).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
repeats=5 updates=100 bin=$ROOT/ddptok
while [ $# -gt 0 ]; do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    --updates) updates=$2; shift 2 ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) bin=$(realpath "$1"); shift ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
W=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-bench-partition.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
args=(--config "$ROOT/configs/minimum.yaml" --set train.sampler=global --set train.global_batch=16
      --set train.updates="$updates" --set train.interrupt_at=0)
"$bin" prepare "${args[@]}" >/dev/null
echo
echo "== partition: bands vs balanced, global sampler, minimum.yaml (W = 2, G = 16, $updates updates), $repeats interleaved pairs, $(nproc) cores"
for ((r = 0; r < repeats; r++)); do
  for p in bands balanced; do
    rm -rf artifacts outputs/train
    mpirun -np 2 "$bin" train "${args[@]}" --set train.partition=$p --continuous >/dev/null 2>run.err || { cat run.err; exit 1; }
    cp outputs/train/continuous.jsonl "$p-$r.jsonl"
  done
done
/usr/bin/python3 - "$repeats" <<'PY'
import json, statistics as st, sys
R = int(sys.argv[1])
load = lambda f: [json.loads(l) for l in open(f)]
def tps(rows): rows = rows[1:]; return sum(x["tokens"] for x in rows) / sum(x["seconds"] for x in rows)
runs = {p: [load(f"{p}-{r}.jsonl") for r in range(R)] for p in ("bands", "balanced")}
a, b = runs["bands"][0], runs["balanced"][0]
same = [x["tokens"] for x in a] == [x["tokens"] for x in b]
dloss = abs(a[-1]["loss"] - b[-1]["loss"]) / abs(a[-1]["loss"])
t = {p: [tps(x) for x in runs[p]] for p in runs}
ratio = [y / x for x, y in zip(t["bands"], t["balanced"])]
busiest = {p: st.mean(max(x["rank_tokens"]) for x in runs[p][0]) for p in runs}
spread = {p: st.mean(max(x["rank_tokens"]) / (sum(x["rank_tokens"]) / len(x["rank_tokens"])) for x in runs[p][0]) for p in runs}
share = {p: [st.mean(x["rank_tokens"][r] for x in runs[p][0]) for r in range(2)] for p in runs}
# rank 0's window: its own compute, and the gradient all-reduce it waits in for the slower rank
ms = lambda rows, k: 1e3 * st.mean(x["window_split"][k] for x in rows[1:])
for p in runs:
    print(f"  {p:9s} median {st.median(t[p]):8.0f} tokens/s (min {min(t[p]):.0f}, max {max(t[p]):.0f}); per-rank tokens per "
          f"window {share[p][0]:.0f} | {share[p][1]:.0f}, busiest rank / mean {spread[p]:.3f}; rank 0 per window: compute "
          f"{st.median(ms(x, 'compute') for x in runs[p]):.2f} ms, gradient all-reduce incl. wait "
          f"{st.median(ms(x, 'grad_allreduce') for x in runs[p]):.2f} ms")
print(f"  balanced / bands: median {st.median(ratio):.2f}x (min {min(ratio):.2f}, max {max(ratio):.2f}); ideal (busiest rank's "
      f"tokens, bands over balanced) {busiest['bands'] / busiest['balanced']:.2f}x")
print(f"  same windows under both partitions (N every step): {'yes' if same else 'NO'}; final loss {a[-1]['loss']:.6f} vs "
      f"{b[-1]['loss']:.6f} (relative difference {dloss:.1e})")
sys.exit(0 if same and dloss <= 1e-4 else 1)
PY
