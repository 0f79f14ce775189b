#!/usr/bin/env bash
# run/bench_gpt.sh — ddptok's GPT side by side with PyTorch DDP and llm.c, and where its step's
# time goes (docs/performance.md "The GPT"). Part of `make bench`; not part of `make test`.
#
#   bash run/bench_gpt.sh [--repeats N] [--shapes LIST] [--scale F] [--no-torch] [--no-llmc] [--no-profile]
#
#   --repeats N    interleaved rounds per shape (default 3): in each round every contender trains
#                  the same run once, in turn, so load hits them alike; medians and min-max
#   --shapes LIST  comma-separated subset of tiny,tiny-bands,gemm,gpt2s,small,mid,wide (default: tiny,equal,
#                  the README's table)
#                    tiny   configs/gpt-tiny.yaml as it is (the tutorial's run with a 2-block GPT; the
#                           global sampler, partition balanced)
#                    tiny-bands  the same on the bands sampler it shipped before (rank 0 lengths 16-64,
#                           rank 1 65-128: rank 0 waits for rank 1)
#                    gemm   GEMM-heavy: n_embd 256, 4 heads, 4 blocks, context 256 (lengths 255-256), V 1024
#                    gpt2s  GPT-2 small's width: n_embd 768, 12 heads, 4 of its 12 blocks, context 512
#                           (lengths 511-512), V 50304 (GPT-2's 50257 padded to 128, as llm.c pads it)
#                    small, mid, wide (or `equal`, the three): issue 40's shapes at equal lengths T-1..T,
#                           A 1, dropout 0: L2 C64 4 heads T128 B8 V257; L4 C256 8 heads T256 B4 V257;
#                           L2 C768 12 heads T256 B2 V50257
#   --scale F      F times the updates of every shape (default 1: 40, 10, 5)
#   --no-torch     no PyTorch peers;  --no-llmc: no llm.c;  --no-profile: no per-kernel profile
#
# Contenders, per shape (the same config, corpus, plan, θ0 and AdamW):
#   ddptok train at W = 2 and W = 1 (CPU backend, mpirun; W = 1 with train.rank_bands: auto);
#   PyTorch DDP at W = 2 (run/bench_gpt_torch.py: nanoGPT's GPT class, gloo, one thread per
#     rank) under two torches: Debian's python3-torch (/usr/bin/python3) and a current one,
#     TORCH_PYTHON=path/to/python (default build/torch-venv/bin/python: `/usr/bin/python3 -m venv
#     build/torch-venv && build/torch-venv/bin/pip install torch h5py numpy pyyaml`, or
#     build/hf-venv's where its torch is not Debian's); each skipped with the reason when absent;
#   llm.c's CPU reference train_gpt2.c (run/bench_llmc.c: its layers, AdamW and DataLoader
#     unchanged) with OMP_NUM_THREADS = 2 and 1, fed a checkpoint and a token file in llm.c's
#     formats written from the same outputs: LLMC_DIR=path to a checkout of
#     github.com/karpathy/llm.c (default build/llm.c; skipped with the reason when absent).
#     llm.c trains contiguous B x T chunks of the train split's token stream, not documents:
#     B = the window's sequences (W·A·B of ddptok's), T = data.max_length; compare tokens/s.
# Checks first (each must pass or the bench stops): ddptok's and each torch's losses at steps 1
# and 2 with dropout 0 agree within 1e-5 relative; llm.c's step-1 loss equals the torch model's
# loss of llm.c's first chunk within 1e-5 relative (the same θ0 read from llm.c's files).
# Printed per shape: tokens/s (tokens of windows 2..U over their seconds) of every contender,
# median (min, max), the ratio ddptok W=2 / this per round (median, min-max), ms per window split
# (forward / backward / optimizer / communication), peak RSS per rank (GNU time for ddptok and
# llm.c, getrusage in each torch rank); the budget's activation bytes against what the backend
# allocates and touches; then the profile of one rank's step (build/bench_kernels step at the
# busiest rank's lengths: every sgemm call timed where it runs and alone, the share of the sgemm
# ceiling the step reaches, and perf's samples of the rest, by function and source line).
# Last, one summary table: per shape ddptok W=2's tokens/s, its per-round ratio to every other
# contender (W=1 among them: one rank with W=2's per-rank microbatches), and the share of the
# GEMM-only ceiling: the microbatch's sgemm calls alone (one thread, operands hot) over its
# forward + backward, and A times that over ddptok W=2's window (optimizer, all-reduce, wait).
# Shapes derive from configs/gpt-tiny.yaml; under its global sampler a shape's G is W x A x B.
# BENCH_GPT_JSON=FILE keeps every figure as JSON (per shape "summary": the table's row).
# The machine's load average is sampled throughout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
repeats=3 shapes="tiny,equal" scale=1 torch=1 llmc=1 profile=1
while [ $# -gt 0 ]; do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --no-torch) torch=0; shift ;;
    --no-llmc) llmc=0; shift ;;
    --no-profile) profile=0; shift ;;
    -h|--help) sed -n 2,53p "$0"; exit 0 ;;
    *) echo "bench_gpt: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
$PY -c "import yaml" 2>/dev/null || { echo "bench_gpt: needs python3-yaml (run/install-deps.sh --tests)" >&2; exit 2; }
make -C "$ROOT" --no-print-directory -s ddptok build/bench_kernels >/dev/null
# The profile's GPT backend is compiled again with -g (the Makefile): the same instructions as ddptok's.
for b in "$ROOT"/build/*/prof/model/gpt_cpu.o; do
  [ -f "$b" ] || continue
  o=${b/\/prof\//\/}
  [ "$o" -nt "$b" ] && continue  # a stale pair from another build
  if ! cmp -s <(objdump -d "$o" | tail -n +3) <(objdump -d "$b" | tail -n +3); then
    echo "bench_gpt: $b (with -g) has other instructions than $o: the profile would not be ddptok's code" >&2; exit 1
  fi
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
W=$(mkdir -p "$ROOT/build" && mktemp -d "$ROOT/build/bench-gpt.XXXXXX")  # its files (llm.c's shards among them) under the checkout
trap 'rm -rf "$W"' EXIT

# The peers: each one a path, or "" and the reason it is skipped.
torch_old="" torch_new="" skip_old="" skip_new="" llmc_bin="" skip_llmc="" llmc_commit="" llmc_flags=""
if [ $torch = 1 ]; then
  if $PY -c "import torch, h5py, numpy" 2>/dev/null; then torch_old=$PY
  else skip_old="Debian's python3-torch or python3-h5py missing (run/install-deps.sh --tests installs them)"; fi
  cand=${TORCH_PYTHON:-}
  if [ -z "$cand" ]; then for c in "$ROOT/build/torch-venv/bin/python" "$ROOT/build/hf-venv/bin/python"; do [ -x "$c" ] && { cand=$c; break; }; done; fi
  if [ -n "$cand" ] && "$cand" -c "import torch, h5py, numpy, yaml" 2>/dev/null; then torch_new=$cand
  else skip_new="no current torch: TORCH_PYTHON=path/to/python of a venv with torch, h5py, numpy, pyyaml (/usr/bin/python3 -m venv build/torch-venv && build/torch-venv/bin/pip install torch h5py numpy pyyaml)"; fi
  if [ -n "$torch_new" ] && [ -n "$torch_old" ] && [ "$("$torch_new" -c 'import torch; print(torch.__version__)')" = "$("$PY" -c 'import torch; print(torch.__version__)')" ]; then
    skip_new="TORCH_PYTHON's torch is Debian's"; torch_new=""; fi
else skip_old="--no-torch" skip_new="--no-torch"; fi
if [ $llmc = 1 ]; then
  L=${LLMC_DIR:-$ROOT/build/llm.c}
  if [ ! -f "$L/train_gpt2.c" ] || [ ! -f "$L/Makefile" ]; then
    skip_llmc="no llm.c at $L: git clone https://github.com/karpathy/llm.c $ROOT/build/llm.c, or LLMC_DIR=path"
  elif [ -z "$torch_old$torch_new" ]; then
    skip_llmc="writing and checking llm.c's files needs a torch with h5py (the PyTorch peer's model)"
  else
    # llm.c's own flags for train_gpt2, as its Makefile gives them; our driver in its place.
    line=$(cd "$L" && make -n train_gpt2 2>/dev/null | grep -E '(^| )train_gpt2\.c( |$)' | tail -1 || true)
    if [ -z "$line" ]; then skip_llmc="llm.c's Makefile gave no train_gpt2 command (make -n train_gpt2 in $L)"
    else
      llmc_flags=$line
      cmd=$(printf '%s' "$line" | sed "s# train_gpt2\.c # -I$L $ROOT/run/bench_llmc.c #; s#-o train_gpt2\$#-o $W/bench_llmc#")
      if (cd "$L" && eval "$cmd") >"$W/llmc-build.log" 2>&1; then llmc_bin=$W/bench_llmc
      else skip_llmc="building run/bench_llmc.c with llm.c's flags failed: $(tail -3 "$W/llmc-build.log" | tr '\n' ' ')"; fi
      llmc_commit=$(git -C "$L" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout)")
    fi
  fi
else skip_llmc="--no-llmc"; fi
perf_ok=0
if [ $profile = 1 ] && command -v perf >/dev/null && perf record -q -o "$W/probe.perf" -- true >/dev/null 2>&1; then perf_ok=1; fi

export ROOT WORK=$W REPEATS=$repeats SHAPES=$shapes SCALE=$scale PROFILE=$profile PERF_OK=$perf_ok
export TORCH_OLD=$torch_old TORCH_NEW=$torch_new SKIP_OLD=$skip_old SKIP_NEW=$skip_new
export LLMC_BIN=$llmc_bin SKIP_LLMC=$skip_llmc LLMC_COMMIT=$llmc_commit LLMC_FLAGS=$llmc_flags
cd "$W"
$PY "$ROOT/run/bench_gpt.py"
