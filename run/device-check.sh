#!/usr/bin/env bash
# run/device-check.sh — the prepared checks for a machine with one GPU (well under 10
# minutes). It prints what it found, runs each check time-bounded, goes on after a
# failure, and prints a short table last:
#   CPU vs GPU forward/gradient (tiny and minimum configs, per-tensor max error against
#   atol 1e-6 / rtol 1e-4, repeat bit-identical); parity with 2 ranks on one GPU over
#   --comm mpi (the CPU's verdicts); NCCL with 1 rank; NCCL with 2 ranks on one GPU (needs
#   NCCL >= 2.30, else refused as designed and reported skipped); GPU resume bit-exactness
#   (mpi and nccl), with SGD and with AdamW; AdamW GPU vs CPU after 100 updates; GPU
#   run-to-run determinism; tokens/s CPU vs GPU; the GPT's twin (cuda/gpt_cuda.cu): its
#   parity at W=2 (cuda+mpi) and W=1 (nccl) against the CPU's verdicts and its resume. test_cuda_model (section 1) also checks
#   both optimizers' GPU twins (θ and every state tensor after two steps) against the CPU.
# A GPU machine may lack Open MPI, HDF5, libyaml and OpenBLAS: `bash run/device-bundle.sh`
# (on the build machine) packs them into .deps/, which this script unpacks and uses.
# Exit 0 when every check that ran passed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RES=${OUT:-$ROOT/device-out}
mkdir -p "$RES"
exec > >(tee "$RES/device-check.log") 2>&1
T0=$(date +%s)
ROWS=()
row() { ROWS+=("$(printf '%-44s %-8s %s' "$1" "$2" "$3")"); echo ">> $1: $2 $3"; }

echo "== what this machine has"
uname -a; nvidia-smi -L 2>&1 | head -4
if [ -f .deps/runtime.tar.xz ]; then
  RT=/tmp/ddptok-runtime; rm -rf "$RT"; mkdir -p "$RT"; tar -C "$RT" -xJf .deps/runtime.tar.xz
  B=$RT/bundle
  export OPAL_PREFIX=$B/usr PMIX_PREFIX=$B/usr PMIX_MCA_mca_base_component_path=$B/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
  export PATH=$B/usr/bin:$PATH LD_LIBRARY_PATH=$B/lib:$B/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
  DDPTOK=$ROOT/.deps/ddptok; TCM=$ROOT/.deps/test_cuda_model; MOD=$ROOT/.deps/ddptok-cuda.so
  echo "runtime: carried bundle (Open MPI, HDF5, libyaml, OpenBLAS) unpacked in $RT"
else
  DDPTOK=$ROOT/ddptok; TCM=$ROOT/build/test_cuda_model; MOD=$ROOT/build/cuda/ddptok-cuda.so
  echo "runtime: the system's (no .deps/runtime.tar.xz)"
fi
# cuBLAS and NCCL are the CUDA module's libraries (ddptok links none: it opens the module
# for --backend cuda).
[ -f "$MOD" ] || { row "CUDA module" FAIL "no $MOD (make builds it; device-bundle.sh carries it)"; printf '%s\n' "${ROWS[@]}"; exit 1; }
for lib in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  if ! ldd "$MOD" | grep -q "$lib => /"; then
    d=$(find /usr/local /usr/lib /opt -name "$lib" 2>/dev/null | head -1)
    [ -n "$d" ] && export LD_LIBRARY_PATH=$(dirname "$d"):$LD_LIBRARY_PATH
  fi
  echo "$lib: $(ldd "$MOD" | awk -v l="$lib" '$1 == l {print $3}')"
done
missing=$(ldd "$DDPTOK" "$MOD" | grep 'not found')
if [ -n "$missing" ]; then echo "missing libraries:"; echo "$missing"; row "runtime libraries" FAIL "missing: $(echo $missing | tr -s ' ')"; printf '%s\n' "${ROWS[@]}"; exit 1; fi
command -v mpirun >/dev/null || { echo "no mpirun"; exit 1; }
echo "mpirun: $(command -v mpirun) ($(mpirun --version 2>&1 | head -1))"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 PMIX_MCA_pcompress_base_silence_warning=1
PY=python3
CFG=$ROOT/configs/minimum.yaml TINY=$ROOT/configs/tiny.yaml
W=$(mktemp -d /tmp/ddptok-dev.XXXXXX); cd "$W"
run() { timeout -k 5 120 "$@"; }
ddp() { local np=$1; shift; run mpirun -np "$np" "$DDPTOK" "$@"; }
jget() { $PY -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

echo; echo "== 1. CPU vs GPU forward and gradient"
for c in "tiny:$TINY" "minimum:$CFG" "minimum prefix 20:$CFG data.unsupervised_prefix=20" \
         "sequence unit, ignored labels:$CFG train.loss_unit=sequence data.ignore_token=3 data.unsupervised_prefix=10"; do
  name=${c%%:*}; args=(${c#*:})
  out=$(run "$TCM" "${args[@]}" 2>&1); rc=$?; echo "$out"
  worst=$(echo "$out" | awk '/gradient gpu vs cpu/ {for (i = 1; i <= NF; i++) if ($i == "err") print $(i+1)}' | sort -g | tail -1)
  row "cpu vs gpu gradient + sgd/adamw ($name)" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "max abs err $worst; repeat bit-identical: $(grep -q 'bit-identical' <<<"$out" && echo yes || echo NO)"
done

echo; echo "== 2. parity, 2 ranks on one GPU over --comm mpi (host staging)"
run "$DDPTOK" prepare --config "$CFG" >/dev/null && run "$DDPTOK" reference --config "$CFG" --backend cpu >/dev/null
ddp 2 parity --config "$CFG" --backend cpu > parity-cpu.txt 2>&1; cp outputs/parity.json parity-cpu.json
rm -f outputs/parity.json
ddp 2 parity --config "$CFG" --backend cuda --comm mpi > parity-gpu.txt 2>&1; rc=$?; cat parity-gpu.txt
cp outputs/parity.json parity-gpu.json
same=$($PY -c "
import json; a, b = json.load(open('parity-cpu.json')), json.load(open('parity-gpu.json'))
print(all(a['modes'][m]['pass'] == b['modes'][m]['pass'] for m in a['modes']))")
row "parity W=2 cuda+mpi (one GPU)" "$([ $rc -eq 0 ] && [ "$same" = True ] && echo ok || echo FAIL)" \
  "global-token max err $(jget parity-gpu.json "'%.3g' % j['modes']['global-token']['max_abs_err']"), mean-of-means $(jget parity-gpu.json "'%.3g' % j['modes']['mean-of-means']['max_abs_err']"); verdicts = CPU's: $same"

echo; echo "== 3. NCCL with 1 rank"
one=(--set train.world_size=1 --set train.rank_bands=auto --set paths.outputs=o1 --set paths.artifacts=a1)
run "$DDPTOK" prepare --config "$CFG" "${one[@]}" >/dev/null && run "$DDPTOK" reference --config "$CFG" "${one[@]}" --backend cpu >/dev/null
ddp 1 check-env --config "$CFG" "${one[@]}" --backend cuda --comm nccl 2>&1 | tee env1.txt
row "CUDA module found and opened" "$(grep -q '^check-env: CUDA module loads, [1-9]' env1.txt && echo ok || echo FAIL)" \
  "$(grep -o 'module [^ ]*ddptok-cuda.so' env1.txt | head -1); $(grep -o '[0-9]* GPU(s) visible' env1.txt)"
ddp 1 parity --config "$CFG" "${one[@]}" --backend cuda --comm nccl > p1.txt 2>&1; rc=$?; cat p1.txt
row "parity W=1 cuda+nccl" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "$(grep -m1 global-token p1.txt | tr -s ' ')"

echo; echo "== 4. NCCL with 2 ranks on one GPU"
ddp 2 check-env --config "$CFG" --backend cuda --comm nccl > env2.txt 2>&1; rc=$?; cat env2.txt
nv=$(grep -m1 -o 'NCCL [0-9.]*' env1.txt | cut -d' ' -f2)
if grep -q 'share GPU' env2.txt; then row "nccl W=2 on one GPU" skipped "NCCL $nv < 2.30: refused before init with the --comm mpi hint (as designed)"
else row "nccl W=2 on one GPU" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "exit $rc"; fi

echo; echo "== 5. resume bit-exactness and determinism on the GPU"
resume() {  # LABEL NP ARGS...
  local label=$1 np=$2; shift 2
  ddp "$np" train --config "$CFG" "$@" > "tr-$label.txt" 2>&1 && ddp "$np" train --config "$CFG" "$@" --continuous >> "tr-$label.txt" 2>&1 \
    && ddp "$np" train --config "$CFG" "$@" --resume latest >> "tr-$label.txt" 2>&1; local rc=$?
  tail -3 "tr-$label.txt"
  local a; a=$(grep -o 'artifacts=[^ ]*' <<<"$*" | cut -d= -f2); a=${a:-artifacts}
  d=$($PY "$ROOT/tests/compare_ckpt.py" "$a/checkpoints/step-0100" "$a/continuous/step-0100"); local same=$?
  row "resume $label" "$([ $rc -eq 0 ] && [ $same -eq 0 ] && echo ok || echo FAIL)" "max |dtheta| = $d"
}
resume "W=2 cuda+mpi dropout 0.1" 2 --backend cuda --comm mpi
resume "W=1 cuda+nccl dropout 0.1" 1 "${one[@]}" --backend cuda --comm nccl
adamw=(--set train.optimizer.name=adamw --set train.optimizer.lr=0.003 --set train.optimizer.weight_decay=0.01)
resume "W=2 cuda+mpi AdamW" 2 --backend cuda --comm mpi "${adamw[@]}" --set paths.artifacts=aadam
ddp 2 train --config "$CFG" --backend cpu "${adamw[@]}" --set paths.artifacts=aadamcpu --continuous > adamcpu.txt 2>&1
d=$($PY "$ROOT/tests/compare_ckpt.py" aadam/continuous/step-0100 aadamcpu/continuous/step-0100)
row "AdamW gpu vs cpu (W=2, 100 updates)" info "max |dtheta|, |dm|, |dv| = $d (FP32 rounding drift, not bit-exact)"
ddp 2 train --config "$CFG" --backend cuda --comm mpi --continuous --set paths.artifacts=again > again.txt 2>&1
d=$($PY "$ROOT/tests/compare_ckpt.py" artifacts/continuous/step-0100 again/continuous/step-0100); same=$?
row "gpu run twice (W=2, 100 updates)" "$([ $same -eq 0 ] && echo ok || echo FAIL)" "max |dtheta| = $d"
run "$DDPTOK" evaluate --config "$CFG" --backend cuda > ev-gpu.txt 2>&1; run "$DDPTOK" evaluate --config "$CFG" --backend cpu > ev-cpu.txt 2>&1
lg=$(grep -o 'test loss [0-9.]*' ev-gpu.txt); lc=$(grep -o 'test loss [0-9.]*' ev-cpu.txt)
row "evaluate gpu vs cpu (GPU-trained model)" "$([ -n "$lg" ] && [ "$lg" = "$lc" ] && echo ok || echo CHECK)" "gpu: $lg; cpu: $lc"

echo; echo "== 6. tokens per second (continuous runs: sum of tokens / sum of window seconds, first 5 skipped)"
tps() { $PY -c "
import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][5:]
print('%.0f' % (sum(x['tokens'] for x in r) / sum(x['seconds'] for x in r)))" "$1"; }
cp outputs/train/continuous.jsonl gpu-min.jsonl  # the W=2 cuda+mpi run of section 5
ddp 2 train --config "$CFG" --backend cpu --continuous --set paths.artifacts=acpu > cpu.txt 2>&1
row "tokens/s minimum.yaml W=2 (steps 6-100)" info "cpu $(tps outputs/train/continuous.jsonl), gpu (cuda+mpi, one GPU) $(tps gpu-min.jsonl)"
big=(--set model.hidden=4096 --set train.batch_size_per_rank=32 --set train.updates=20 --set train.interrupt_at=0 --set paths.outputs=obig)
run "$DDPTOK" prepare --config "$CFG" "${big[@]}" >/dev/null
ddp 2 train --config "$CFG" "${big[@]}" --set paths.artifacts=abig --backend cpu --continuous > bigc.txt 2>&1
mv obig/train/continuous.jsonl bigcpu.jsonl
ddp 2 train --config "$CFG" "${big[@]}" --set paths.artifacts=abig2 --backend cuda --comm mpi --continuous > bigg.txt 2>&1
row "tokens/s H=4096 B=32 W=2 (steps 6-20)" info "cpu $(tps bigcpu.jsonl), gpu $(tps obig/train/continuous.jsonl 2>/dev/null)"

echo; echo "== 7. the GPT (model.kind: gpt) on the GPU: cuda/gpt_cuda.cu, never run on a device before this script"
GPT=$ROOT/configs/gpt-tiny.yaml
# the recipe gpt-tiny.yaml ships runs on the CPU backend only for now (decay matrices; grad_clip
# under NCCL's device buffers): the GPU check is of the model, with plain AdamW
g=(--set paths.outputs=ogpt --set paths.artifacts=agpt --set train.optimizer.decay=all --set train.grad_clip=0)
run "$DDPTOK" prepare --config "$GPT" "${g[@]}" >/dev/null && run "$DDPTOK" reference --config "$GPT" "${g[@]}" --backend cpu >/dev/null
ddp 2 parity --config "$GPT" "${g[@]}" --backend cpu > gpt-cpu.txt 2>&1; cp ogpt/parity.json gpt-parity-cpu.json 2>/dev/null
ddp 2 parity --config "$GPT" "${g[@]}" --backend cuda --comm mpi > gpt-cuda.txt 2>&1; rc=$?; cat gpt-cuda.txt
cp ogpt/parity.json gpt-parity-gpu.json 2>/dev/null
same=$($PY -c "
import json; a, b = json.load(open('gpt-parity-cpu.json')), json.load(open('gpt-parity-gpu.json'))
print(all(a['modes'][m]['pass'] == b['modes'][m]['pass'] for m in a['modes']))" 2>/dev/null)
row "gpt parity W=2 cuda+mpi (one GPU)" "$([ $rc -eq 0 ] && [ "$same" = True ] && echo ok || echo FAIL)" \
  "notice: $(grep -c 'not yet been verified on a device' gpt-cuda.txt); verdicts = CPU's: $same; $(grep -m1 global-token gpt-cuda.txt | tr -s ' ')"
g1=("${g[@]}" --set train.world_size=1 --set train.rank_bands=auto)
ddp 1 parity --config "$GPT" "${g1[@]}" --backend cuda --comm nccl > gpt-nccl.txt 2>&1; rc=$?
row "gpt parity W=1 cuda+nccl" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "$(grep -m1 global-token gpt-nccl.txt | tr -s ' ')"
CFG=$GPT resume "gpt W=2 cuda+mpi" 2 "${g[@]}" --backend cuda --comm mpi
# still to add (issue 36): the GPT's per-tensor window gradient GPU vs CPU (test_cuda_model
# knows the MLP only), a CPU checkpoint resumed on the GPU and back, tokens/s at GPT-2
# small's width, and a --dry-run mode on the CPU.

cp parity-*.json "$RES/" 2>/dev/null
echo; echo "== device-check table ($(( $(date +%s) - T0 )) s)"
printf '%s\n' "${ROWS[@]}" | tee "$RES/device-check-table.txt"
! printf '%s\n' "${ROWS[@]}" | grep -q ' FAIL '
