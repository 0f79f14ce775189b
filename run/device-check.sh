#!/usr/bin/env bash
# run/device-check.sh [--dry-run] — the prepared checks for a machine with one GPU (under 8
# minutes on one H200). It prints what it found, runs each check time-bounded, goes on after
# a failure, and prints a short table last:
#   CPU vs GPU forward/gradient (tiny and minimum configs, per-tensor max error against
#   atol 1e-6 / rtol 1e-4, repeat bit-identical); parity with 2 ranks on one GPU over
#   --comm mpi (the CPU's verdicts); NCCL with 1 rank; NCCL with 2 ranks on one GPU (needs
#   NCCL >= 2.30, else refused as designed and reported skipped); GPU resume bit-exactness
#   (mpi and nccl), with SGD and with AdamW; AdamW GPU vs CPU after 100 updates; GPU
#   run-to-run determinism; tokens/s CPU vs GPU; the GPT's twin (cuda/gpt_cuda.cu): its
#   per-tensor window gradient GPU vs CPU (dropout 0.1 at every site; test_cuda_model reads
#   the model row's tensor list), its parity at W=2 (cuda+mpi) and W=1 (nccl) against the
#   CPU's verdicts, its resume, a CPU checkpoint resumed on the GPU and a GPU one on the CPU
#   (within a stated bound of the CPU's own run), and tokens/s at gpt-tiny.yaml and at GPT-2
#   small's width with ms per window split and the share of the H200's FP32 peak.
#   test_cuda_model also checks both optimizers' GPU twins (θ and every state tensor after
#   two steps) against the CPU.
# --dry-run: the whole script on a machine without a GPU (tests/test_commands.sh runs it):
#   every step that would use the GPU runs with --backend cpu (NCCL as --comm mpi), the
#   twin's checks with the CPU backend in the twin's place (test_cuda_model --cpu-twin),
#   what only a GPU can answer (the module's devices, NCCL with 2 ranks) is a
#   "dry-run: skipped (needs a GPU)" row, and the runs are short (8 updates, small shapes),
#   so every path, file name, JSON read and table row is exercised. Its verdicts say the
#   script works, not that the GPU does.
# DDPTOK_DEVCHECK_BREAK=gradient|parity (a negative control): the twin's θ scaled by 1.01 in
#   every test_cuda_model row / the GPU parity's global-token verdict flipped before it is
#   compared: the rows must read FAIL and the script exit 1. DDPTOK_DEVCHECK_SECTIONS runs
#   only the sections named (below); DDPTOK_DEVCHECK_BIN another ddptok binary.
# A GPU machine may lack Open MPI, HDF5, libyaml and OpenBLAS: `bash run/device-bundle.sh`
# (on the build machine) packs them into .deps/, which this script unpacks and uses.
# Exit 0 when every check that ran passed.
set -u
DRY=0
case "${1:-}" in
  --dry-run) DRY=1 ;;
  "") ;;
  *) echo "usage: run/device-check.sh [--dry-run]" >&2; exit 2 ;;
esac
BREAK=${DDPTOK_DEVCHECK_BREAK:-}
# DDPTOK_DEVCHECK_SECTIONS="1 2": only those sections (1, 2, 3, 4 and 7 stand alone; 5 needs
# 2's data, 6 needs 5's runs). Default: all.
SECTIONS=${DDPTOK_DEVCHECK_SECTIONS:-}
want() { [ -z "$SECTIONS" ] || [[ " $SECTIONS " == *" $1 "* ]]; }
case "$BREAK" in ""|gradient|parity) ;; *) echo "DDPTOK_DEVCHECK_BREAK: expected gradient or parity, got '$BREAK'" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RES=${OUT:-$ROOT/device-out}
mkdir -p "$RES"
exec > >(tee "$RES/device-check.log") 2>&1
T0=$(date +%s)
ROWS=()
row() { ROWS+=("$(printf '%-44s %-8s %s' "$1" "$2" "$3")"); echo ">> $1: $2 $3"; }
SKIP="dry-run: skipped (needs a GPU)"
# What the GPU steps run with: on a device the GPU; in a dry run the CPU (NCCL as MPI), the
# twin checks with the CPU as the twin, and short runs (SHORT: 8 updates, the first 4 before the
# interruption; STEP the last checkpoint's directory; SKIPN the windows the speed rows skip).
if [ $DRY -eq 1 ]; then
  GPU=(--backend cpu); NCCL=(--comm mpi); TCMF=(--cpu-twin); SHORT=(--set train.updates=8 --set train.interrupt_at=4)
  STEP=step-0008; SKIPN=2
  echo "== DRY RUN (no GPU used): --backend cuda runs as --backend cpu, --comm nccl as --comm mpi, test_cuda_model --cpu-twin"
else
  GPU=(--backend cuda); NCCL=(--comm nccl); TCMF=(); SHORT=(); STEP=step-0100; SKIPN=5
fi
[ "$BREAK" = gradient ] && TCMF+=(--break-twin)
[ -n "$BREAK" ] && echo "== negative control: DDPTOK_DEVCHECK_BREAK=$BREAK (this run must end with FAIL rows and exit 1)"

echo "== what this machine has"
uname -a; [ $DRY -eq 1 ] || nvidia-smi -L 2>&1 | head -4
if [ -f .deps/runtime.tar.xz ] && [ $DRY -eq 0 ]; then
  RT=/tmp/ddptok-runtime; rm -rf "$RT"; mkdir -p "$RT"; tar -C "$RT" -xJf .deps/runtime.tar.xz
  B=$RT/bundle
  export OPAL_PREFIX=$B/usr PMIX_PREFIX=$B/usr PMIX_MCA_mca_base_component_path=$B/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
  export PATH=$B/usr/bin:$PATH LD_LIBRARY_PATH=$B/lib:$B/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
  DDPTOK=$ROOT/.deps/ddptok; TCM=$ROOT/.deps/test_cuda_model; MOD=$ROOT/.deps/ddptok-cuda.so
  echo "runtime: carried bundle (Open MPI, HDF5, libyaml, OpenBLAS) unpacked in $RT"
else
  DDPTOK=${DDPTOK_DEVCHECK_BIN:-$ROOT/ddptok}; TCM=$ROOT/build/test_cuda_model; MOD=$ROOT/build/cuda/ddptok-cuda.so
  echo "runtime: the system's (no .deps/runtime.tar.xz, or a dry run)"
fi
# cuBLAS and NCCL are the CUDA module's libraries (ddptok links none: it opens the module
# for --backend cuda). A dry run on a CPU-only build has neither module nor test_cuda_model:
# those rows are skipped there.
if [ ! -f "$MOD" ]; then
  if [ $DRY -eq 1 ]; then row "CUDA module" skipped "dry-run: no $MOD (a CPU-only build)"
  else row "CUDA module" FAIL "no $MOD (make builds it; device-bundle.sh carries it)"; printf '%s\n' "${ROWS[@]}"; exit 1; fi
else
  for lib in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    if ! ldd "$MOD" | grep -q "$lib => /"; then
      d=$(find /usr/local /usr/lib /opt -name "$lib" 2>/dev/null | head -1)
      [ -n "$d" ] && export LD_LIBRARY_PATH=$(dirname "$d"):${LD_LIBRARY_PATH:-}
    fi
    echo "$lib: $(ldd "$MOD" | awk -v l="$lib" '$1 == l {print $3}')"
  done
  missing=$(ldd "$DDPTOK" "$MOD" | grep 'not found')
  if [ -n "$missing" ]; then echo "missing libraries:"; echo "$missing"; row "runtime libraries" FAIL "missing: $(echo $missing | tr -s ' ')"; printf '%s\n' "${ROWS[@]}"; exit 1; fi
  row "CUDA module" ok "$MOD, its libraries found"
fi
command -v mpirun >/dev/null || { echo "no mpirun"; exit 1; }
echo "mpirun: $(command -v mpirun) ($(mpirun --version 2>&1 | head -1))"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 PMIX_MCA_pcompress_base_silence_warning=1
# h5py for tests/compare_ckpt.py: the first python3 that has it.
PY=python3
for c in ${DDPTOK_DEVCHECK_PY:-} python3 /usr/bin/python3; do "$c" -c 'import h5py' 2>/dev/null && { PY=$c; break; }; done
echo "python: $PY ($($PY -c 'import h5py; print("h5py", h5py.__version__)' 2>&1 | tail -1))"
CFG=$ROOT/configs/minimum.yaml TINY=$ROOT/configs/tiny.yaml GPT=$ROOT/configs/gpt-tiny.yaml
W=$(mktemp -d /tmp/ddptok-dev.XXXXXX); cd "$W"
[ $DRY -eq 1 ] && trap 'rm -rf "$W"' EXIT
# gpt-tiny.yaml ships nanoGPT's recipe, and the dry run's 8 updates are below its warmup: the
# device check is of the model, with plain AdamW (constant rate, no clip, decay on every
# tensor), resolved once by ddptok config; the recipe on the device has a row of its own (7b').
"$DDPTOK" config --config "$GPT" --set train.lr_schedule=constant --set train.grad_clip=0 --set train.optimizer.decay=all \
  > gpt-tiny-plain.yaml && GPT=$W/gpt-tiny-plain.yaml
run() { timeout -k 5 120 "$@"; }
ddp() { local np=$1; shift; run mpirun -np "$np" "$DDPTOK" "$@"; }
jget() { $PY -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
# tcm NAME CONFIG ARGS...: test_cuda_model's table (per tensor) and its row.
tcm() {
  local name=$1; shift
  if [ ! -x "$TCM" ]; then row "cpu vs gpu gradient + sgd/adamw ($name)" skipped "no $TCM (a CPU-only build)"; return; fi
  local out rc worst
  out=$(run "$TCM" "${TCMF[@]}" "$@" 2>&1); rc=$?; echo "$out"
  worst=$(echo "$out" | awk '/gradient gpu vs cpu/ {for (i = 1; i <= NF; i++) if ($i == "err") print $(i+1)}' | sort -g | tail -1)
  row "cpu vs gpu gradient + sgd/adamw ($name)" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" \
    "max abs err ${worst:-none} over $(grep -c 'gradient gpu vs cpu' <<<"$out") tensors; repeat bit-identical: $(grep -q 'bit-identical' <<<"$out" && echo yes || echo NO)"
}
# verdicts CPU.json GPU.json: True when every mode's pass/reject is the CPU's (the break
# "parity" flips the GPU's global-token verdict first).
verdicts() {
  [ "$BREAK" = parity ] && $PY -c "
import json,sys; j=json.load(open(sys.argv[1])); j['modes']['global-token']['pass'] = not j['modes']['global-token']['pass']
json.dump(j, open(sys.argv[1], 'w'))" "$2"
  $PY -c "
import json,sys; a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(set(a['modes']) == set(b['modes']) and all(a['modes'][m]['pass'] == b['modes'][m]['pass'] for m in a['modes']))" "$1" "$2" 2>/dev/null
}

resume() {  # LABEL NP ARGS...
  local label=$1 np=$2; shift 2
  ddp "$np" train --config "$CFG" "${SHORT[@]}" "$@" > "tr-$label.txt" 2>&1 && ddp "$np" train --config "$CFG" "${SHORT[@]}" "$@" --continuous >> "tr-$label.txt" 2>&1 \
    && ddp "$np" train --config "$CFG" "${SHORT[@]}" "$@" --resume latest >> "tr-$label.txt" 2>&1; local rc=$?
  tail -3 "tr-$label.txt"
  local a; a=$(grep -o 'artifacts=[^ ]*' <<<"$*" | tail -1 | cut -d= -f2); a=${a:-artifacts}
  d=$($PY "$ROOT/tests/compare_ckpt.py" "$a/checkpoints/$STEP" "$a/continuous/$STEP"); local same=$?
  row "resume $label" "$([ $rc -eq 0 ] && [ $same -eq 0 ] && echo ok || echo FAIL)" "max |dtheta| = $d"
}
tps() { $PY -c "
import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2]):]
print('%.0f' % (sum(x['tokens'] for x in r) / sum(x['seconds'] for x in r)))" "$1" "$SKIPN"; }
if want 1; then
echo; echo "== 1. CPU vs GPU forward and gradient (at $(( $(date +%s) - T0 )) s)"
for c in "tiny:$TINY" "minimum:$CFG" "minimum prefix 20:$CFG data.unsupervised_prefix=20" \
         "sequence unit, ignored labels:$CFG train.loss_unit=sequence data.ignore_token=3 data.unsupervised_prefix=10"; do
  tcm "${c%%:*}" ${c#*:}
done

fi
if want 2; then
echo; echo "== 2. parity, 2 ranks on one GPU over --comm mpi (host staging) (at $(( $(date +%s) - T0 )) s)"
run "$DDPTOK" prepare --config "$CFG" >/dev/null && run "$DDPTOK" reference --config "$CFG" --backend cpu >/dev/null
ddp 2 parity --config "$CFG" --backend cpu > parity-cpu.txt 2>&1; cp outputs/parity.json parity-cpu.json
rm -f outputs/parity.json
ddp 2 parity --config "$CFG" "${GPU[@]}" --comm mpi > parity-gpu.txt 2>&1; rc=$?; cat parity-gpu.txt
cp outputs/parity.json parity-gpu.json
same=$(verdicts parity-cpu.json parity-gpu.json)
row "parity W=2 cuda+mpi (one GPU)" "$([ $rc -eq 0 ] && [ "$same" = True ] && echo ok || echo FAIL)" \
  "global-token max err $(jget parity-gpu.json "'%.3g' % j['modes']['global-token']['max_abs_err']"), mean-of-means $(jget parity-gpu.json "'%.3g' % j['modes']['mean-of-means']['max_abs_err']"); verdicts = CPU's: $same"

fi
if want 3; then
echo; echo "== 3. NCCL with 1 rank (at $(( $(date +%s) - T0 )) s)"
one=(--set train.world_size=1 --set train.rank_bands=auto --set paths.outputs=o1 --set paths.artifacts=a1)
run "$DDPTOK" prepare --config "$CFG" "${one[@]}" >/dev/null && run "$DDPTOK" reference --config "$CFG" "${one[@]}" --backend cpu >/dev/null
if [ $DRY -eq 1 ]; then row "CUDA module found and opened" skipped "$SKIP"
else
  ddp 1 check-env --config "$CFG" "${one[@]}" --backend cuda --comm nccl 2>&1 | tee env1.txt
  row "CUDA module found and opened" "$(grep -q '^check-env: CUDA module loads, [1-9]' env1.txt && echo ok || echo FAIL)" \
    "$(grep -o 'module [^ ]*ddptok-cuda.so' env1.txt | head -1); $(grep -o '[0-9]* GPU(s) visible' env1.txt)"
fi
ddp 1 parity --config "$CFG" "${one[@]}" "${GPU[@]}" "${NCCL[@]}" > p1.txt 2>&1; rc=$?; cat p1.txt
row "parity W=1 cuda+nccl" "$([ $rc -eq 0 ] && grep -q 'global-token.*passes' p1.txt && echo ok || echo FAIL)" "$(grep -m1 global-token p1.txt | tr -s ' ')"

fi
if want 4; then
echo; echo "== 4. NCCL with 2 ranks on one GPU (at $(( $(date +%s) - T0 )) s)"
if [ $DRY -eq 1 ]; then row "nccl W=2 on one GPU" skipped "$SKIP"
else
  ddp 2 check-env --config "$CFG" --backend cuda --comm nccl > env2.txt 2>&1; rc=$?; cat env2.txt
  nv=$(grep -m1 -o 'NCCL [0-9.]*' env1.txt | cut -d' ' -f2)
  if grep -q 'share GPU' env2.txt; then row "nccl W=2 on one GPU" skipped "NCCL $nv < 2.30: refused before init with the --comm mpi hint (as designed)"
  else row "nccl W=2 on one GPU" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "exit $rc"; fi
fi

fi
if want 5; then
echo; echo "== 5. resume bit-exactness and determinism on the GPU (at $(( $(date +%s) - T0 )) s)"
resume "W=2 cuda+mpi dropout 0.1" 2 "${GPU[@]}" --comm mpi
resume "W=1 cuda+nccl dropout 0.1" 1 "${one[@]}" "${GPU[@]}" "${NCCL[@]}"
adamw=(--set train.optimizer.name=adamw --set train.optimizer.lr=0.003 --set train.optimizer.weight_decay=0.01)
resume "W=2 cuda+mpi AdamW" 2 "${GPU[@]}" --comm mpi "${adamw[@]}" --set paths.artifacts=aadam
ddp 2 train --config "$CFG" "${SHORT[@]}" --backend cpu "${adamw[@]}" --set paths.artifacts=aadamcpu --continuous > adamcpu.txt 2>&1
d=$($PY "$ROOT/tests/compare_ckpt.py" aadam/continuous/$STEP aadamcpu/continuous/$STEP)
row "AdamW gpu vs cpu (W=2, 100 updates)" info "max |dtheta|, |dm|, |dv| = $d (FP32 rounding drift, not bit-exact)"
rm -f outputs/train/continuous.jsonl  # section 6 reads this GPU run's: none of another run's
ddp 2 train --config "$CFG" "${SHORT[@]}" "${GPU[@]}" --comm mpi --continuous --set paths.artifacts=again > again.txt 2>&1
d=$($PY "$ROOT/tests/compare_ckpt.py" artifacts/continuous/$STEP again/continuous/$STEP); same=$?
row "gpu run twice (W=2, 100 updates)" "$([ $same -eq 0 ] && echo ok || echo FAIL)" "max |dtheta| = $d"
run "$DDPTOK" evaluate --config "$CFG" "${SHORT[@]}" "${GPU[@]}" > ev-gpu.txt 2>&1; run "$DDPTOK" evaluate --config "$CFG" "${SHORT[@]}" --backend cpu > ev-cpu.txt 2>&1
lg=$(grep -o 'test loss [0-9.]*' ev-gpu.txt); lc=$(grep -o 'test loss [0-9.]*' ev-cpu.txt)
row "evaluate gpu vs cpu (GPU-trained model)" "$([ -n "$lg" ] && [ "$lg" = "$lc" ] && echo ok || echo CHECK)" "gpu: $lg; cpu: $lc"

fi
if want 6; then
echo; echo "== 6. tokens per second (continuous runs: sum of tokens / sum of window seconds, first $SKIPN skipped) (at $(( $(date +%s) - T0 )) s)"
cp outputs/train/continuous.jsonl gpu-min.jsonl 2>/dev/null  # the W=2 cuda+mpi run of section 5
ddp 2 train --config "$CFG" "${SHORT[@]}" --backend cpu --continuous --set paths.artifacts=acpu > cpu.txt 2>&1
row "tokens/s minimum.yaml W=2 (steps 6-100)" info "cpu $(tps outputs/train/continuous.jsonl), gpu (cuda+mpi, one GPU) $(tps gpu-min.jsonl)"
if [ $DRY -eq 1 ]; then big=(--set model.hidden=256 --set train.batch_size_per_rank=8 --set train.updates=5)
else big=(--set model.hidden=4096 --set train.batch_size_per_rank=32 --set train.updates=20); fi
big+=(--set train.interrupt_at=0 --set paths.outputs=obig)
run "$DDPTOK" prepare --config "$CFG" "${big[@]}" >/dev/null
ddp 2 train --config "$CFG" "${big[@]}" --set paths.artifacts=abig --backend cpu --continuous > bigc.txt 2>&1
mv obig/train/continuous.jsonl bigcpu.jsonl
ddp 2 train --config "$CFG" "${big[@]}" --set paths.artifacts=abig2 "${GPU[@]}" --comm mpi --continuous > bigg.txt 2>&1
row "tokens/s H=4096 B=32 W=2 (steps 6-20)" info "cpu $(tps bigcpu.jsonl), gpu $(tps obig/train/continuous.jsonl 2>/dev/null)"

fi
if want 7; then
echo; echo "== 7. the GPT (model.kind: gpt) on the GPU: cuda/gpt_cuda.cu, never run on a device before this script (at $(( $(date +%s) - T0 )) s)"
# 7a. The window gradient per tensor of the row's list (16 tensors), dropout 0.1 at every site
# (embeddings, attention weights, both residual branches), and both optimizers' steps.
tcm "gpt-tiny, dropout 0.1 every site" "$GPT"
tcm "gpt-tiny prefix 8, sequence unit" "$GPT" data.unsupervised_prefix=8 train.loss_unit=sequence
g=(--set paths.outputs=ogpt --set paths.artifacts=agpt)
run "$DDPTOK" prepare --config "$GPT" "${g[@]}" >/dev/null && run "$DDPTOK" reference --config "$GPT" "${g[@]}" --backend cpu >/dev/null
ddp 2 parity --config "$GPT" "${g[@]}" --backend cpu > gpt-cpu.txt 2>&1; cp ogpt/parity.json gpt-parity-cpu.json 2>/dev/null
rm -f ogpt/parity.json  # the GPU's verdicts, or none: never the CPU's read twice
ddp 2 parity --config "$GPT" "${g[@]}" "${GPU[@]}" --comm mpi > gpt-cuda.txt 2>&1; rc=$?; cat gpt-cuda.txt
cp ogpt/parity.json gpt-parity-gpu.json 2>/dev/null
same=$(verdicts gpt-parity-cpu.json gpt-parity-gpu.json)
notice=$(grep -c 'not yet been verified on a device' gpt-cuda.txt)
row "gpt parity W=2 cuda+mpi (one GPU)" "$([ $rc -eq 0 ] && [ "$same" = True ] && echo ok || echo FAIL)" \
  "notice: $notice; verdicts = CPU's: $same; $(grep -m1 global-token gpt-cuda.txt | tr -s ' ')"
# W = 1 prepares its own data and reference (a corpus partitioned for 1 rank has another
# data lock than the W = 2 one: the reference of ogpt is refused there).
g1=(--set paths.outputs=ogpt1 --set paths.artifacts=agpt1 --set train.world_size=1 --set train.rank_bands=auto)
run "$DDPTOK" prepare --config "$GPT" "${g1[@]}" >/dev/null && run "$DDPTOK" reference --config "$GPT" "${g1[@]}" --backend cpu >/dev/null
ddp 1 parity --config "$GPT" "${g1[@]}" "${GPU[@]}" "${NCCL[@]}" > gpt-nccl.txt 2>&1; rc=$?; cat gpt-nccl.txt
row "gpt parity W=1 cuda+nccl" "$([ $rc -eq 0 ] && grep -q 'global-token.*passes' gpt-nccl.txt && echo ok || echo FAIL)" "$(grep -m1 global-token gpt-nccl.txt | tr -s ' ')"
rm -f ogpt/train/continuous.jsonl
CFG=$GPT resume "gpt W=2 cuda+mpi" 2 "${g[@]}" "${GPU[@]}" --comm mpi
cp ogpt/train/continuous.jsonl gpt-tiny-gpu.jsonl 2>/dev/null  # that resume's continuous run (cuda+mpi, W=2)
# 7b. Across backends: a CPU checkpoint (step 50) resumed on the GPU to step 100, and a GPU
# checkpoint resumed on the CPU, each against the CPU's uninterrupted run. Bound: max |Δ| ≤
# 1e-3 over θ and AdamW's m and v (the model moves ~0.1 in 50 steps of lr 3e-3; a wrong load —
# state not uploaded, bias correction restarted, a tensor misplaced — moves it by ~lr a step,
# far more). The two halves round differently (cuBLAS vs OpenBLAS sums), so the result is not
# bit-exact; the dry run's (CPU both ways) must be.
xb() {  # LABEL DIR FIRST-BACKEND... -- SECOND-BACKEND...
  local label=$1 dir=$2; shift 2; local first=() second=(); while [ "$1" != -- ]; do first+=("$1"); shift; done; shift; second=("$@")
  local x=(--set paths.outputs=ogpt --set paths.artifacts="$dir")
  ddp 2 train --config "$GPT" "${SHORT[@]}" "${x[@]}" "${first[@]}" > "$dir.txt" 2>&1 \
    && ddp 2 train --config "$GPT" "${SHORT[@]}" "${x[@]}" "${second[@]}" --resume latest >> "$dir.txt" 2>&1; local rc=$?
  tail -2 "$dir.txt"
  local d; d=$($PY "$ROOT/tests/compare_ckpt.py" "$dir/checkpoints/$STEP" axcpu/continuous/$STEP)
  local within; within=$($PY -c "import sys; print(float(sys.argv[1]) <= 1e-3)" "$d" 2>/dev/null)
  [ $DRY -eq 1 ] && [ "$d" != 0 ] && within="False (dry run: CPU both ways must be bit-exact)"
  row "gpt resume $label" "$([ $rc -eq 0 ] && [ "$within" = True ] && echo ok || echo FAIL)" "max |dtheta|, |dm|, |dv| vs the CPU's run = $d (bound 1e-3)"
}
ddp 2 train --config "$GPT" "${SHORT[@]}" --set paths.outputs=ogpt --set paths.artifacts=axcpu --backend cpu --continuous > xcpu.txt 2>&1
xb "cpu ckpt on gpu" ax-cpu-gpu --backend cpu -- "${GPU[@]}" --comm mpi
xb "gpu ckpt on cpu" ax-gpu-cpu "${GPU[@]}" --comm mpi -- --backend cpu
# 7b'. gpt-tiny.yaml as shipped (cosine, train.grad_clip 1.0, decay on the matrices) at W = 1
# over NCCL, where the clip takes the all-reduced gradient to the host and back and the decay
# mask is the device's copy, against the same run on the CPU (warmup 2 so that the dry run's 8
# updates pass it): max |dθ|, |dm|, |dv| within 1e-3; the dry run's (CPU both ways) exactly 0.
rec=(--set train.warmup_updates=2 --set train.world_size=1 --set train.rank_bands=auto --set paths.outputs=orec)
run "$DDPTOK" prepare --config "$ROOT/configs/gpt-tiny.yaml" "${rec[@]}" > rec-prep.txt 2>&1
ddp 1 train --config "$ROOT/configs/gpt-tiny.yaml" "${SHORT[@]}" "${rec[@]}" --set paths.artifacts=arec-cpu --backend cpu --continuous > rec-cpu.txt 2>&1
ddp 1 train --config "$ROOT/configs/gpt-tiny.yaml" "${SHORT[@]}" "${rec[@]}" --set paths.artifacts=arec-gpu "${GPU[@]}" "${NCCL[@]}" --continuous > rec-gpu.txt 2>&1; rc=$?
tail -1 rec-gpu.txt
d=$($PY "$ROOT/tests/compare_ckpt.py" arec-gpu/continuous/$STEP arec-cpu/continuous/$STEP)
within=$($PY -c "import sys; print(float(sys.argv[1]) <= 1e-3)" "$d" 2>/dev/null)
[ $DRY -eq 1 ] && [ "$d" != 0 ] && within="False (dry run: CPU both ways must be bit-exact)"
row "gpt recipe W=1 cuda+nccl vs cpu" "$([ $rc -eq 0 ] && [ "$within" = True ] && echo ok || echo FAIL)" \
  "cosine + clip 1.0 + decay matrices; max |dtheta|, |dm|, |dv| = $d (bound 1e-3)"
# 7c. Speed: tokens/s, ms per window split (JSONL window_split: compute = forward + backward,
# the gradient all-reduce, the optimizer, the draw), and the share of the FP32 peak.
# FLOPs per token = 6·(P − T·C) (the GEMMs, the tied head included, wpe a lookup) + 12·NL·C·len
# (QKᵀ and AV, forward and backward, at the window's mean sequence length len = tokens /
# sequences: a lower estimate, the true term is Σlen²/Σlen). Peak: 67 TFLOP/s FP32, the H200
# SXM's (NVIDIA H200 Tensor Core GPU datasheet; FP32 without tensor cores, as TF32 is off).
speed() {  # LABEL JSONL NL C T V
  $PY - "$@" "$SKIPN" <<'PYEOF'
import json, sys
label, path, NL, C, T, V, skip = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
r = [json.loads(l) for l in open(path)][skip:]
P = V * C + T * C + NL * (12 * C * C + 13 * C) + 2 * C
tok, sec, seq = sum(x['tokens'] for x in r), sum(x['seconds'] for x in r), sum(x['sequences'] for x in r)
ln = tok / seq
flop = 6 * (P - T * C) + 12 * NL * C * ln
ms = {k: 1e3 * sum(x['window_split'][k] for x in r) / len(r) for k in ('compute', 'grad_allreduce', 'optimizer', 'draw')}
print('%.0f tokens/s (P %.1fM, %d windows, mean len %.0f); ms/window %.1f: fwd+bwd %.1f, all-reduce %.1f, optimizer %.1f, draw %.1f; '
      '%.2f TFLOP/s = %.1f%% of 67 TFLOP/s FP32' % (tok / sec, P / 1e6, len(r), ln, 1e3 * sec / len(r), ms['compute'],
      ms['grad_allreduce'], ms['optimizer'], ms['draw'], flop * tok / sec / 1e12, 100 * flop * tok / sec / 67e12))
PYEOF
}
s=$(speed gpt-tiny gpt-tiny-gpu.jsonl 2 64 128 128 2>speed.err) || s="no timings: $(tail -1 speed.err)"
row "tokens/s gpt-tiny W=2 cuda+mpi" "$([ -n "$s" ] && grep -q 'tokens/s' <<<"$s" && echo info || echo FAIL)" "$s"
# GPT-2 small's width (12 blocks, C 768, 12 heads, context 1024, V 50257) at B = 4, one rank;
# a dry run at 2 x 64, context 256, V 1024.
if [ $DRY -eq 1 ]; then w=(2 64 4 256 1024); else w=(12 768 12 1024 50257); fi
s2=(--set model.n_layer=${w[0]} --set model.n_embd=${w[1]} --set model.n_head=${w[2]} --set data.max_length=${w[3]}
    --set data.vocab_size=${w[4]} --set data.splits.train=256 --set data.splits.validation=16 --set data.splits.test=16
    --set train.batch_size_per_rank=4 --set train.accumulation=1 --set train.updates=$([ $DRY -eq 1 ] && echo 5 || echo 25)
    --set train.interrupt_at=0 --set train.checkpoint_every=0 --set paths.outputs=og2 --set paths.artifacts=ag2
    --set train.world_size=1 --set train.rank_bands=auto)
run "$DDPTOK" prepare --config "$GPT" "${s2[@]}" > g2-prep.txt 2>&1
ddp 1 train --config "$GPT" "${s2[@]}" "${GPU[@]}" "${NCCL[@]}" --continuous > g2.txt 2>&1; rc=$?; tail -2 g2.txt
s=$([ $rc -eq 0 ] && speed gpt2-small og2/train/continuous.jsonl "${w[0]}" "${w[1]}" "${w[3]}" "${w[4]}" 2>speed.err) || s=""
row "tokens/s gpt GPT-2 small width W=1 B=4" "$([ $rc -eq 0 ] && grep -q 'tokens/s' <<<"$s" && echo info || echo FAIL)" \
  "${w[0]}x${w[1]} T ${w[3]} V ${w[4]}: ${s:-exit $rc: $(grep -m1 -i 'error' g2.txt g2-prep.txt speed.err 2>/dev/null | cut -c1-200)}"

fi
cp parity-*.json gpt-parity-*.json "$RES/" 2>/dev/null
echo; echo "== device-check table ($(( $(date +%s) - T0 )) s)$([ $DRY -eq 1 ] && echo ': DRY RUN on the CPU, no GPU result')"
printf '%s\n' "${ROWS[@]}" | tee "$RES/device-check-table.txt"
! printf '%s\n' "${ROWS[@]}" | grep -q ' FAIL '
