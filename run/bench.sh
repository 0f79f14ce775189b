#!/usr/bin/env bash
# run/bench.sh — ddptok against a PyTorch DDP peer doing the same work. Not part of `make test`.
#
#   bash run/bench.sh [--repeats N] [--load] [--long] [--cases LIST] [--coretype NAME] [--first-layer WHICH] [--no-torch] [BINARY...]
#
#   --repeats N     interleaved pairs per case (default 5)
#   --load          measure every case twice: quiet, then with one busy process per core
#   --long          5x the updates of every case (steadier numbers, ~5x the time)
#   --cases LIST    comma-separated subset of: minimum,equal,wide,w1 (default: all)
#   --coretype NAME also run ddptok with OPENBLAS_CORETYPE=NAME (set for that command only)
#   --first-layer WHICH  dense (default), factored or both: ddptok's train.first_layer and
#                   the peer's --first-layer (the same algorithm on both sides); `both` runs
#                   each side both ways and also prints ddptok factored over PyTorch dense (a
#                   different algorithm: fewer FLOPs) and ddptok factored over ddptok dense
#   --no-torch      ddptok only (also automatic when python3-torch or h5py is missing)
#   BINARY...       ddptok binaries to compare (default ./ddptok); the first is the one
#                   compared with PyTorch
#
# Per case: `prepare` and `reference` (untimed); a loss check (ddptok and the peer
# run/bench_torch.py, dropout 0, two updates: the step-1 and step-2 losses must agree
# within 1e-5 relative); then REPEATS rounds in which every binary and the peer train
# the same run in turn (interleaved pairs, so load hits them alike). Throughput = tokens of
# windows 2..U over rank 0's summed window seconds (both sides time the same window:
# count all-reduce, every microbatch's forward + backward, gradient all-reduce, SGD step;
# window 1 carries one-time setup). Printed: tokens/s medians and min-max, the ratio per
# pair (median, min-max), ddptok's window breakdown (JSONL `window_split`), the GEMM ceiling (the
# six sgemm calls at each rank's mean microbatch size, build/bench_kernels) and ddptok's
# share of it, the gradient all-reduce against a blocking MPI_Allreduce of the size, and
# train.overlap in isolation (build/bench_kernels overlap: the share of the gradient sum's
# time that the output layer's bucket hides behind the first layer's backward).
# The ceiling counts the sgemm calls of the algorithm that ran: with the factored first
# layer its tables and once-per-window gradients plus the output layer (bench_kernels
# factored), not the dense FLOPs.
# Extra `--set` overrides for every run: BENCH_SETS. Default runtime: a few minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
repeats=5 load=0 long=1 only="minimum,equal,wide,w1" coretype="" torch=1 bins=() layers=(dense)
while [ $# -gt 0 ]; do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    --load) load=1; shift ;;
    --long) long=5; shift ;;
    --cases) only=$2; shift 2 ;;
    --coretype) coretype=$2; shift 2 ;;
    --no-torch) torch=0; shift ;;
    --first-layer) case $2 in dense|factored) layers=("$2") ;; both) layers=(dense factored) ;;
                     *) echo "bench: --first-layer $2: expected dense, factored or both" >&2; exit 2 ;; esac; shift 2 ;;
    -h|--help) sed -n 2,34p "$0"; exit 0 ;;
    *) bins+=("$(realpath "$1")"); shift ;;
  esac
done
make -C "$ROOT" --no-print-directory -s build/bench_kernels >/dev/null
[ ${#bins[@]} -eq 0 ] && { make -C "$ROOT" --no-print-directory -s ddptok >/dev/null; bins=("$ROOT/ddptok"); }
KERN=$ROOT/build/bench_kernels
PY=/usr/bin/python3
if [ $torch = 1 ] && ! $PY -c "import torch, h5py" 2>/dev/null; then
  echo "bench: python3-torch or h5py missing: PyTorch peer skipped (run/install-deps.sh --tests installs them)"; torch=0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
W=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-bench.XXXXXX")
busy=()
stop_load() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${busy[@]}"; do wait "$p" 2>/dev/null || true; done; busy=(); }
trap 'stop_load; rm -rf "$W"' EXIT
cd "$W"
read -r -a extra <<<"${BENCH_SETS:-}"

# name | ranks | overrides of configs/minimum.yaml
cases=(
  "minimum|2|--set train.updates=$((100 * long))"
  "equal|2|--set data.min_length=64 --set data.max_length=65 --set train.rank_bands=auto --set train.updates=$((100 * long))"
  "wide|2|--set model.hidden=2048 --set train.batch_size_per_rank=16 --set train.updates=$((10 * long))"
  "w1|1|--set train.world_size=1 --set train.rank_bands=auto --set train.updates=$((100 * long))"
)
declare -A title=([minimum]="tutorial's minimum, W=2 (bands 16-64 | 65-128)" [equal]="equal lengths (64 | 65), W=2"
                  [wide]="GEMM-heavy H=2048 B=16, W=2" [w1]="minimum, W=1")

core=$($KERN sgemm 8 8 8 8 1 | $PY -c 'import json,sys; print(json.load(sys.stdin)["kernel"])')
echo "ddptok bench: $(nproc) cores, $repeats interleaved pairs per case; host $(hostname); $(date -u +%FT%TZ)"
echo "  BLAS kernel: $core (OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE:-not set}; unset, OpenBLAS picks $(env -u OPENBLAS_CORETYPE "$KERN" sgemm 8 8 8 8 1 | $PY -c 'import json,sys; print(json.load(sys.stdin)["kernel"])'))"
echo "  ddptok: $("${bins[0]}" --version 2>/dev/null | head -1)"
[ $torch = 0 ] || echo "  peer: PyTorch $($PY -c 'import torch; print(torch.__version__)') DDP, gloo, 1 thread per rank (run/bench_torch.py)"

tps() {  # tokens/s of windows 2..U from a train JSONL
  $PY -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][1:]; print(sum(x["tokens"] for x in r)/sum(x["seconds"] for x in r))' "$1"
}
ddptok_run() {  # BIN TAG LAYER [env...]: one continuous run; echoes its tokens/s; keeps its JSONL as last-TAG.jsonl
  local bin=$1 tag=$2 layer=$3; shift 3
  rm -rf artifacts outputs/train
  local how=(); [ "$layer" = dense ] || how=(--set train.first_layer="$layer")  # dense: also binaries older than the key
  env "$@" mpirun -np "$np" "$bin" train "${args[@]}" "${how[@]}" --continuous >/dev/null 2>run.err \
    || { cat run.err >&2; return 1; }
  cp outputs/train/continuous.jsonl "last-$tag.jsonl"
  tps "last-$tag.jsonl"
}
torch_run() {  # LAYER [ARGS...]
  local layer=$1; shift
  $PY "$ROOT/run/bench_torch.py" cfg.yaml outputs --first-layer "$layer" "$@" 2>torch.err | tail -1 || { cat torch.err >&2; return 1; }
}

# res[] keys: "BINARY_INDEX-LAYER" for ddptok, "c-LAYER" for the coretype run, "t-LAYER" for the peer.
measure() {  # one pass over the repeats of the current case: fills res[] (one line per binary and layer + torch)
  for ((r = 0; r < repeats; r++)); do
    for l in "${layers[@]}"; do
      for i in "${!bins[@]}"; do res[$i-$l]+="$(ddptok_run "${bins[$i]}" "$i-$l" "$l") "; done
      if [ -n "$coretype" ]; then res[c-$l]+="$(ddptok_run "${bins[0]}" "c-$l" "$l" OPENBLAS_CORETYPE="$coretype") "; fi
      if [ $torch = 1 ]; then res[t-$l]+="$(torch_run "$l" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["tokens"]/d["seconds"])') "; fi
    done
  done
}

report() {  # LABEL: the table of one pass
  echo "  -- $1 (tokens/s over all ranks; $repeats repeats)"
  # rows of four: name, its tokens/s, the base's (pairwise), the ratio's label ("": none; no name: the ratio alone)
  local rows=() first=${layers[0]} last=${layers[${#layers[@]} - 1]}
  for l in "${layers[@]}"; do
    for i in "${!bins[@]}"; do rows+=("${bins[$i]/#$ROOT\//}, $l first layer" "${res[$i-$l]}" "" ""); done
    if [ -n "$coretype" ]; then rows+=("ddptok $l, OPENBLAS_CORETYPE=$coretype" "${res[c-$l]}" "${res[0-$l]}" "ddptok/this"); fi
    if [ $torch = 1 ]; then rows+=("PyTorch DDP (gloo), $l first layer" "${res[t-$l]}" "${res[0-$l]}" "ddptok $l/this"); fi
  done
  if [ "$first" != "$last" ]; then  # both: across the algorithms
    if [ $torch = 1 ]; then
      rows+=("" "${res[t-$first]}" "${res[0-$last]}" "ddptok $last / PyTorch $first (a different algorithm: fewer FLOPs)")
    fi
    rows+=("" "${res[0-$first]}" "${res[0-$last]}" "ddptok $last / ddptok $first")
  fi
  $PY - "${rows[@]}" <<'PY'
import statistics as st, sys
a = sys.argv[1:]
for name, vals, basev, label in zip(a[0::4], a[1::4], a[2::4], a[3::4]):
    v = [float(x) for x in vals.split()]
    line = f"     {name[:52]:52s} median {st.median(v):9.0f}  (min {min(v):9.0f}, max {max(v):9.0f})" if name else "    "
    if label:
        ratio = [b / x for b, x in zip((float(x) for x in basev.split()), v)]  # pairwise: the base over this one
        line += f"   {label}: median {st.median(ratio):.2f}x (min {min(ratio):.2f}, max {max(ratio):.2f})"
    print(line)
PY
  # ddptok's window breakdown (rank 0, each binary's last run per first layer; the output
  # layer's gradient bucket in flight behind the backward, train.overlap, when there was one)
  # and the GEMM ceiling of each first layer
  for l in "${layers[@]}"; do
    for i in "${!bins[@]}"; do
      $PY - "last-$i-$l.jsonl" "$([ ${#bins[@]} -gt 1 ] && echo " ${bins[$i]/#$ROOT\//}" || true) ($l)" <<'PY'
import json, sys
all_rows = [json.loads(l) for l in open(sys.argv[1])]
rows = all_rows[1:]
sec = sum(r["seconds"] for r in rows)
parts = [("draw+count", "draw"), ("count all-reduce", "count_allreduce"), ("compute", "compute"),
         ("gradient all-reduce (incl. wait)", "grad_allreduce"), ("optimizer", "optimizer")]
tot = {k: sum(r["window_split"][k] for r in rows) for _, k in parts}
hidden = sum(r["window_split"].get("overlap", 0) for r in rows)
other = rows[-1]["elapsed"] - sum(r["seconds"] for r in all_rows)
n = len(rows)
print(f"     ddptok window{sys.argv[2]}, rank 0 (ms per window): "
      + ", ".join(f"{lab} {1e3 * tot[k] / n:.3f} ({100 * tot[k] / sec:.0f}%)" for lab, k in parts)
      + f"; logging+checkpoint {1e3 * max(other, 0) / (n + 1):.3f} per window"
      + (f"; of compute, output-layer bucket in flight {1e3 * hidden / n:.3f}" if hidden else ""))
PY
    done
    ceiling "$l"
  done
}

ceiling() {  # LAYER: the GEMM ceiling of the sgemm calls this first layer issues, and ddptok's (the first binary's) share
  $PY - "last-0-$1.jsonl" "$np" "$A" "$H" "$kD" "$V" "$KERN" "$(nproc)" "$1" "$slots" "$D" <<'PY'
import json, subprocess, sys
rows = [json.loads(l) for l in open(sys.argv[1])][1:]
np_, A, H, kD, V, kern, cores, layer, slots, D = (int(x) if x.isdigit() else x for x in sys.argv[2:])
sec = sum(r["seconds"] for r in rows)
n = len(rows)
# The GEMM ceiling: each rank's six sgemm calls at its mean microbatch size (factored: the
# output layer's three per microbatch and the first layer's 3k per window, the FLOPs it issues).
# Measured in the quiet pass and kept (gemm.json) for the loaded one: under load the
# share says how far below the quiet machine's ceiling ddptok falls.
import os
cache = json.load(open("gemm.json")) if os.path.exists("gemm.json") else {}
F, gemm = None, [0.0] * np_
rates = []
for r in range(np_):
    T = max(1, round(sum(x["rank_tokens"][r] for x in rows) / (A * n)))
    key = f"{layer} {r}"
    if key not in cache:
        cmd = [kern, "sgemm", T, H, kD, V] if layer == "dense" else [kern, "factored", T, A, H, D, slots, V]
        cache[key] = json.loads(subprocess.run([str(x) for x in cmd + [30]], capture_output=True, text=True).stdout)
    out = cache[key]
    F, rate, T = out["flops_per_position"], out["gflops"] * 1e9, out["T"]
    rates.append(f"rank {r}: T={T} {out['gflops']:.0f} GFLOP/s")
    gemm[r] = sum(x["rank_tokens"][r] for x in rows) * F / rate
bound = sum(x["tokens"] for x in rows) / max(gemm)  # every rank on its own core, nothing but GEMMs
got = sum(x["tokens"] for x in rows) / sec
json.dump(cache, open("gemm.json", "w"))
print(f"     GEMM ceiling ({out['kernel']}, {layer}: {F / 1e6:.2f} MFLOP per position; {'; '.join(rates)}): "
      f"{bound:.0f} tokens/s; ddptok at {100 * got / bound:.0f}% of it (sgemm share of the window)")
PY
}

for c in "${cases[@]}"; do
  IFS='|' read -r name np sets <<<"$c"
  [[ ",$only," == *",$name,"* ]] || continue
  read -r -a s <<<"$sets"
  rm -rf outputs artifacts gemm.json
  # the case's config as one file (minimum.yaml with the overrides), read by both sides
  read -r V kD H A P1 slots D <<<"$($PY - "$ROOT/configs/minimum.yaml" "${s[@]}" "${extra[@]}" --set train.interrupt_at=0 <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
a = sys.argv[2:]
for i, x in enumerate(a):
    if x == "--set":
        k, v = a[i + 1].split("=", 1); *p, last = k.split("."); d = c
        for q in p: d = d[q]
        d[last] = yaml.safe_load(v)
yaml.safe_dump(c, open("cfg.yaml", "w"))
m, V = c["model"], c["data"]["vocab_size"]
kD, H = m["context"] * m["embed_dim"], m["hidden"]
print(V, kD, H, c["train"]["accumulation"], V * m["embed_dim"] + H * kD + H + V * H + V + 1,  # P + 1 floats
      m["context"], m["embed_dim"])
PY
)"
  args=(--config cfg.yaml)
  "${bins[0]}" prepare "${args[@]}" >/dev/null
  "${bins[0]}" reference "${args[@]}" >/dev/null
  echo
  echo "== $name: ${title[$name]}"
  if [ $torch = 1 ]; then  # the loss check, per first layer: dropout 0, two updates
    for l in "${layers[@]}"; do
      rm -rf artifacts outputs/train
      mpirun -np "$np" "${bins[0]}" train "${args[@]}" --set train.first_layer="$l" --set model.dropout=0 --set train.interrupt_at=2 \
        >/dev/null 2>run.err || { cat run.err; exit 1; }
      torch_run "$l" --dropout 0 --updates 2 >peer.json
      $PY - outputs/train/interrupted.jsonl peer.json "$l" <<'PY' || { echo "bench: the PyTorch peer does not do ddptok's work (loss check failed)"; exit 1; }
import json, sys
mine = [json.loads(l)["loss"] for l in open(sys.argv[1])]
theirs = json.load(open(sys.argv[2]))["losses"]
ok = all(abs(a - b) <= 1e-5 * abs(a) for a, b in zip(mine, theirs)) and len(mine) == len(theirs) == 2
print(f"  loss check ({sys.argv[3]} first layer, dropout 0): step 1 {mine[0]:.7f} vs PyTorch {theirs[0]:.7f}, step 2 {mine[1]:.7f} vs {theirs[1]:.7f}: "
      + ("agree within 1e-5 relative" if ok else "DISAGREE"))
sys.exit(0 if ok else 1)
PY
    done
  fi
  passes=(quiet); if [ $load = 1 ]; then passes+=(loaded); fi
  for pass in "${passes[@]}"; do
    declare -A res=()
    if [ "$pass" = loaded ]; then
      for ((k = 0; k < $(nproc); k++)); do sh -c 'while :; do :; done' & busy+=($!); done
    fi
    measure
    if [ "$np" -gt 1 ]; then
      ar=$(mpirun -np "$np" "$KERN" allreduce "$P1" 100)
      T=$($PY -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][1:]; print(max(1, round(sum(x["tokens"] for x in r) / (len(r) * int(sys.argv[2]) * int(sys.argv[3])))))' "last-0-${layers[0]}.jsonl" "$A" "$np")
      ov=$(mpirun -np "$np" "$KERN" overlap "$T" "$H" "$kD" "$V" "$P1" 60)
    fi
    report "$pass$([ "$pass" = loaded ] && echo ": one busy process per core")"
    if [ "$np" -gt 1 ]; then
      $PY - "$ar" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
print(f"     gradient all-reduce of {d['floats']} floats: ddptok {d['ddptok_us']:.0f} us, blocking MPI_Allreduce "
      f"{d['mpi_allreduce_us']:.0f} us ({d['ddptok_us'] / d['mpi_allreduce_us']:.2f}x); former Iallreduce+spin+divide "
      f"{d['former_iallreduce_spin_divide_us']:.0f} us")
PY
      $PY - "$ov" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
work, none, ovl, test = d["work_us"], d["none_us"], d["output_layer_us"], d["output_layer_test_us"]
print(f"     train.overlap in isolation (every rank T={d['T']}: the first layer's backward GEMMs, then or around the gradient sum; "
      f"tail {d['tail_floats']} of {d['floats']} floats): work alone {work:.0f} us; none {none:.0f}, output-layer {ovl:.0f}, "
      f"output-layer + MPI_Test between the GEMMs {test:.0f} us; communication hidden: {100 * (none - ovl) / (none - work):.0f}%, "
      f"{100 * (none - test) / (none - work):.0f}% (negative: slower)")
PY
    fi
    stop_load
    unset res
  done
done
