# The CUDA variant: built whenever nvcc, cuBLAS and NCCL are present (they are on these
# machines) as a module, build/cuda/ddptok-cuda.so, that ddptok opens only for the cuda
# backend (include/job/cuda_api.h); the binary falls back to the CPU backend where no GPU is
# visible. Nothing here can run a GPU: run/device-check.sh does that on a GPU machine.
cfg="$CONFIGS/tiny.yaml"
# cuda_built: true when this build has the CUDA backend (and sets MOD, the module's path);
# else the case is skipped, visibly.
cuda_built() {
  if grep -q '^CUDA_FOUND' <(make -s -C "$ROOT" print-cuda 2>/dev/null); then
    MOD=$ROOT/$(make -s -C "$ROOT" print-cuda | grep -o 'module=[^ ]*' | cut -d= -f2)
    return 0
  fi
  skip "$CASE" "nvcc, cuBLAS or NCCL not found; the binary is CPU-only"; return 1
}
# 1. The binary links no CUDA library; the module links them (the control that the
# readelf reading works) and exports its one entry.
case_links() {
  cuda_built || return
  local need mneed exports
  need=$(readelf -d "$DDPTOK" | awk '/NEEDED/ {print $NF}' | tr -d '[]' | tr '\n' ' ')
  grep -qE 'libcudart|libcublas|libnccl|libcuda\.' <<<"$need" && bad "ddptok links no CUDA library" "— DT_NEEDED: $need" \
    || ok "ddptok links no CUDA library" "(DT_NEEDED: $need)"
  [ -f "$MOD" ] && ok "the CUDA module is built" "($MOD)" || bad "the CUDA module is built" "— no $MOD"
  mneed=$(readelf -d "$MOD" 2>&1 | awk '/NEEDED/ {print $NF}' | tr -d '[]' | tr '\n' ' ')
  grep -q libcublas <<<"$mneed" && grep -q libnccl <<<"$mneed" && ok "the CUDA module links cuBLAS and NCCL" "($mneed)" \
    || bad "the CUDA module links cuBLAS and NCCL" "— DT_NEEDED: $mneed"
  exports=$(nm -D --defined-only "$MOD" 2>&1 | awk '{print $NF}' | tr '\n' ' ')
  [ "$exports" = "ddptok_cuda_entry " ] && ok "the CUDA module exports one symbol, its entry ddptok_cuda_entry" \
    || bad "the CUDA module exports one symbol, its entry ddptok_cuda_entry" "— got: $exports"
  [ -x "$ROOT/build/ddptok-cpu" ] && ! ldd "$ROOT/build/ddptok-cpu" | grep -q libcublas && ok "the CPU-only variant (make CUDA=0) builds too" \
    || bad "the CPU-only variant (make CUDA=0) builds too"
}
# 2. A CPU run opens no CUDA library (the dynamic loader's own list of what it loads);
# control: --backend cuda opens the module and NCCL.
loaded() { LD_DEBUG=files "$@" 2>&1 | awk '/calling init:/ {print $NF}' | tr '\n' ' '; }
case_cpu_run_opens_no_cuda() {
  cuda_built || return
  local l
  l=$(loaded "$DDPTOK" prepare --config "$cfg")
  grep -qE 'ddptok-cuda|libcublas|libnccl|libcuda' <<<"$l" && bad "a CPU run opens no CUDA library (prepare, default backend)" "— it opened: $l" \
    || ok "a CPU run opens no CUDA library (prepare, default backend)"
  l=$(loaded "$DDPTOK" prepare --config "$cfg" --backend cuda)
  grep -q 'ddptok-cuda.so' <<<"$l" && grep -q libnccl <<<"$l" && ok "a CPU run opens no CUDA library, control: --backend cuda opens the module and NCCL" \
    || bad "a CPU run opens no CUDA library, control: --backend cuda opens the module and NCCL" "— it opened: $l"
}
case_cpu_fallback() {
  cuda_built || return
  expect_rc "CUDA build without a GPU falls back to the CPU backend" 0 ddp 2 check-env --config "$cfg"
  expect_grep "CUDA build without a GPU: check-env says backend cpu, comm mpi" 'backend cpu, comm mpi' "$OUT"
  expect_grep "CUDA build without a GPU: check-env says the module would load" '^check-env: CUDA module loads, 0 GPU\(s\) visible here$' "$OUT"
}
# 3. The module missing, a library of it missing, or a module of another build: one line,
# exit 2, every rank; the real module on this GPU-less machine is the control.
one_line() {  # NAME PATTERN CMD...: exit 2 and exactly one line, matching PATTERN
  local name=$1 pat=$2; shift 2
  OUT=$("$@" 2>&1); local rc=$? n; n=$(grep -c '^ddptok: ' <<<"$OUT")
  [ $rc -eq 2 ] && [ "$n" -eq 1 ] && grep -qE -- "$pat" <<<"$OUT" && ok "$name" "(exit 2, one line)" \
    || { bad "$name" "— exit $rc, $n ddptok line(s), expected exit 2, one line matching /$pat/:"; echo "$OUT" | head -4 | sed 's/^/       /'; }
}
case_module_missing() {
  cuda_built || return
  one_line "--backend cuda, DDPTOK_CUDA_MODULE at a missing file: the path and dlerror" \
    '^ddptok: error: cannot load the CUDA module /nonexistent/ddptok-cuda.so: .*No such file or directory \(make builds it' \
    env DDPTOK_CUDA_MODULE=/nonexistent/ddptok-cuda.so "$DDPTOK" prepare --config "$cfg" --backend cuda
  one_line "--backend cuda, the CUDA module missing, with 2 ranks: every rank stops, the line once" \
    '^ddptok: ranks 0-1: error: cannot load the CUDA module /nonexistent/ddptok-cuda.so' \
    env DDPTOK_CUDA_MODULE=/nonexistent/ddptok-cuda.so timeout -k 5 120 mpirun -np 2 "$DDPTOK" check-env --config "$cfg" --backend cuda
  one_line "--backend cuda, control: the real module, no GPU here: the no-GPU error instead" \
    '^ddptok: error: --backend cuda: no GPU is visible on ' "$DDPTOK" prepare --config "$cfg" --backend cuda
  one_line "--check --backend cuda opens the module too" 'cannot load the CUDA module /nonexistent' \
    env DDPTOK_CUDA_MODULE=/nonexistent "$DDPTOK" --check train --config "$cfg" --backend cuda --set train.world_size=1 --set train.rank_bands=auto
}
case_module_library_missing() {
  cuda_built || return
  python3 - "$MOD" nccl.so <<'PY'  # the module with its NEEDED libnccl.so.2 renamed libnccx.so.2
import sys; b = open(sys.argv[1], 'rb').read(); assert b.count(b'libnccl.so.2\0') == 1
open(sys.argv[2], 'wb').write(b.replace(b'libnccl.so.2\0', b'libnccx.so.2\0'))
PY
  one_line "a library of the CUDA module missing: named by dlerror" \
    'cannot load the CUDA module ./nccl.so: libnccx.so.2: cannot open shared object file' \
    env DDPTOK_CUDA_MODULE=nccl.so "$DDPTOK" prepare --config "$cfg" --backend cuda
}
case_module_other_build() {
  cuda_built || return
  local layout; layout=$(make -s -C "$ROOT" print-cuda | grep -o 'layout=[^ ]*' | cut -d= -f2)
  python3 - "$MOD" abi.so "$layout" <<'PY'  # the module of other headers: its layout hash changed
import sys; b = open(sys.argv[1], 'rb').read(); h = sys.argv[3].encode(); assert len(h) == 64 and b.count(h) == 1
open(sys.argv[2], 'wb').write(b.replace(h, b'0' * 64))
PY
  one_line "a CUDA module from another build (other headers): refused before use" \
    'the CUDA module ./abi.so is from another build \(ABI [0-9]+, headers 0000000000000000; this ddptok: ABI [0-9]+, headers [0-9a-f]{16}\)' \
    env DDPTOK_CUDA_MODULE=abi.so "$DDPTOK" prepare --config "$cfg" --backend cuda
  one_line "a shared library that is no ddptok CUDA module" 'has no entry ddptok_cuda_entry\(\)' \
    env DDPTOK_CUDA_MODULE="$(ldd "$DDPTOK" | awk '$1 ~ /^libm\.so/ {print $3}')" "$DDPTOK" prepare --config "$cfg" --backend cuda
}
# Installed beside the binary: found there first (/proc/self/exe), before the build tree.
case_module_installed() {
  cuda_built || return
  local W=$PWD
  mkdir inst && cp "$DDPTOK" inst/ddptok && cp "$MOD" inst/ddptok-cuda.so
  expect_grep "a CUDA module installed beside the binary is the one named" "module $W/inst/ddptok-cuda.so, opened on use" "$(inst/ddptok --version)"
  mkdir -p pfx/bin pfx/lib/ddptok && cp "$DDPTOK" pfx/bin/ddptok && cp "$MOD" pfx/lib/ddptok/ddptok-cuda.so
  expect_grep "a CUDA module installed as PREFIX/lib/ddptok/ddptok-cuda.so is the one named" "module $W/pfx/bin/../lib/ddptok/ddptok-cuda.so, opened on use" "$(pfx/bin/ddptok --version)"
}
case_backend_cuda_no_gpu() {
  cuda_built || return
  expect_rc "--backend cuda without a GPU: clear error" 2 one prepare --config "$cfg" --backend cuda
  expect_grep "--backend cuda without a GPU: the error names the host" 'no GPU is visible on' "$OUT"
}
case_comm_nccl_cpu() {
  cuda_built || return
  expect_rc "--comm nccl with the CPU backend: clear error" 2 one prepare --config "$cfg" --comm nccl
}
# Same numbers from both variants: parity max error identical on the CPU backend.
case_variants_parity() {
  cuda_built || return
  prep_ref "$cfg"
  local a b
  a=$(ddp 2 parity --config "$cfg" 2>&1 | grep global-token)
  b=$(timeout 120 mpirun -np 2 "$ROOT/build/ddptok-cpu" parity --config "$cfg" 2>&1 | grep global-token)
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "CUDA and CPU-only builds give the same CPU parity" "($a)" || bad "CUDA and CPU-only builds give the same CPU parity" "— '$a' vs '$b'"
}
# 4. The GPT's twin is in the module's table (issue 36): --backend cuda with model.kind gpt is
# no longer refused ("has no gpt yet"); it says once that the twin is unverified on a device,
# naming run/device-check.sh, and then stops here only for want of a GPU. Control: the MLP
# on --backend cuda gets no such notice (the same no-GPU error alone).
case_gpt_twin_in_table() {
  cuda_built || return
  local gcfg="$CONFIGS/gpt-tiny.yaml" o n
  # --check goes on without asking for a GPU: the twin is picked from the module's table and
  # its notice printed; a run that needs the GPU stops at the no-GPU error alone.
  o=$("$DDPTOK" --check train --config "$gcfg" --backend cuda 2>&1)
  n=$(grep -c 'this CUDA twin has not yet been verified on a device (run/device-check.sh' <<<"$o")
  [ "$n" -eq 1 ] && ! grep -q 'has no gpt yet' <<<"$o" \
    && ok "gpt --backend cuda: the twin is in the module's table, one 'not yet verified' line naming run/device-check.sh" \
    || { bad "gpt --backend cuda: the twin is in the module's table, one 'not yet verified' line" "— got:"; echo "$o" | head -4 | sed 's/^/       /'; }
  o=$(timeout -k 5 120 mpirun -np 2 "$DDPTOK" --check train --config "$gcfg" --backend cuda 2>&1)
  n=$(grep -c 'not yet been verified on a device' <<<"$o")
  [ "$n" -eq 1 ] && ok "gpt --backend cuda with 2 ranks: the notice once" || bad "gpt --backend cuda with 2 ranks: the notice once" "— $n lines"
  o=$("$DDPTOK" prepare --config "$gcfg" --backend cuda 2>&1)
  [ "$(grep -c '^ddptok: ' <<<"$o")" -eq 1 ] && grep -q 'no GPU is visible on' <<<"$o" \
    && ok "gpt --backend cuda without a GPU: the no-GPU error alone, no notice before it" \
    || { bad "gpt --backend cuda without a GPU: the no-GPU error alone, no notice before it" "— got:"; echo "$o" | head -3 | sed 's/^/       /'; }
  o=$("$DDPTOK" --check train --config "$cfg" --backend cuda 2>&1)
  n=$(grep -c 'model.kind mlp on --backend cuda: this CUDA twin has not yet been verified on a device' <<<"$o")
  [ "$n" -eq 1 ] && ok "the MLP's twin, changed since its device run (the shared layers), says so too, once" \
    || bad "the MLP's twin, changed since its device run (the shared layers), says so too, once" "— $n lines: $(head -2 <<<"$o")"
  o=$("$DDPTOK" --check train --config "$gcfg" --backend cpu 2>&1)
  grep -q 'not yet been verified' <<<"$o" && bad "control: the GPT on --backend cpu gets no 'unverified' notice" "— $o" \
    || ok "control: the GPT on --backend cpu gets no 'unverified' notice"
  nm "$ROOT/build/cuda/gpt_cuda.cu.o" | grep -q ' [DR] compute_gpt_cuda$' && ok "cuda/gpt_cuda.cu defines compute_gpt_cuda" \
    || bad "cuda/gpt_cuda.cu defines compute_gpt_cuda"
}
# The model twins share the device layers (issue 36): each includes cuda/layers/' linear, loss and
# embedding headers, and no kernel a twin defines is one the layers define (the MLP's twin had
# its own broadcast, column sum, row loss and scatter). Control: a twin with one of them copied
# back in is caught.
twin_own_layers() {  # FILE: the kernels FILE defines that cuda/layers/*.cuh define too
  comm -12 <(grep -oE '__global__ void [a-z_0-9]+' "$1" | awk '{print $3}' | sort -u) \
           <(grep -ohE '__global__ void [a-z_0-9]+' "$ROOT"/cuda/layers/*.cuh | awk '{print $3}' | sort -u)
}
case_twins_share_layers() {
  local f dup h missing=""
  for f in $(grep -l "const ComputeOps compute_" "$ROOT"/cuda/*.cu); do  # the model twins
    for h in linear loss embedding; do grep -q "^#include \"layers/$h.cuh\"" "$f" || missing+=" $(basename "$f"):$h"; done
    dup=$(twin_own_layers "$f" | tr '\n' ' ')
    [ -z "$dup" ] && ok "$(basename "$f") defines no kernel of cuda/layers/" || bad "$(basename "$f") defines no kernel of cuda/layers/" "— $dup"
  done
  [ -z "$missing" ] && ok "every twin includes layers/linear, loss and embedding" || bad "every twin includes layers/linear, loss and embedding" "—$missing"
  { cat "$ROOT/cuda/mlp_cuda.cu"; echo '__global__ void broadcast_rows_kernel(float *X, const float *row, int T, int N) {}'; } > copied.cu
  [ "$(twin_own_layers copied.cu)" = broadcast_rows_kernel ] && ok "control: a twin with the layers' broadcast_rows_kernel copied back is caught" \
    || bad "control: a twin with the layers' broadcast_rows_kernel copied back is caught"
}
# 5. The device layers' per-row math on the CPU, against the CPU reference's row kernels
# (bit for bit; the row loss within 1e-12), each with a negative control: needs no GPU.
case_layers_host() {
  make -s -C "$ROOT" build/test_cuda_layers >/dev/null 2>&1 || { bad "build/test_cuda_layers builds"; return; }
  local o; o=$("$ROOT/build/test_cuda_layers" 2>&1); local rc=$?
  echo "$o" | sed 's/^/     /'
  [ $rc -eq 0 ] && grep -q '^12 passed, 0 failed$' <<<"$o" && ok "device layer rows = the CPU's rows (12 checks, controls rejected)" \
    || bad "device layer rows = the CPU's rows" "— exit $rc"
}
# 6. What needs no GPU of the twins (issue 36): the module's table holds a twin of every model
# row (its kind, on the device, an optimizer, the CPU's first layers), and the GPT twin's
# device plan holds the row's P (θ) and P + 1 (gradient) and, per packed row, the bytes of the
# row's budget terms (build/test_cuda_model --host, no GPU opened). Controls inside: the MLP's
# entry checked as the GPT's, and the plan against the budget of another shape, rejected.
case_twin_table_plan() {
  cuda_built || return
  make -s -C "$ROOT" build/test_cuda_model >/dev/null 2>&1 || { bad "build/test_cuda_model builds (for --host)"; return; }
  local o; o=$("$ROOT/build/test_cuda_model" --host "$CONFIGS/gpt-tiny.yaml" 2>&1); local rc=$?
  echo "$o" | sed 's/^/     /'
  [ $rc -eq 0 ] && grep -q '^test_cuda_model --host: 6 passed, 0 failed$' <<<"$o" \
    && grep -q 'ok   control: the MLP.s entry is not taken for the GPT.s' <<<"$o" && grep -q 'ok   control: the plan against the budget of another shape' <<<"$o" \
    && ok "module table: a twin per model row; gpt device plan = the row's P and per-row budget bytes (2 controls rejected)" \
    || bad "module table and gpt device plan" "— exit $rc"
}
# 7. run/device-check.sh --dry-run: the whole device script on this CPU (--backend cpu for the
# GPU, --comm mpi for NCCL, test_cuda_model --cpu-twin), every row of its table present and
# none FAIL; the two rows only a GPU can answer are "skipped". Negative controls: the twin
# broken (DDPTOK_DEVCHECK_BREAK=gradient, section 1) and a GPU parity verdict flipped
# (=parity, section 2) must each make their rows FAIL and the script exit 1.
case_device_check_dry_run() {
  local DEVCHECK_ROWS=("CUDA module" "cpu vs gpu gradient + sgd/adamw (tiny)" "cpu vs gpu gradient + sgd/adamw (minimum)"
    "cpu vs gpu gradient + sgd/adamw (minimum prefix 20)" "cpu vs gpu gradient + sgd/adamw (sequence unit, ignored labels)"
    "parity W=2 cuda+mpi (one GPU)" "CUDA module found and opened" "parity W=1 cuda+nccl" "nccl W=2 on one GPU"
    "resume W=2 cuda+mpi dropout 0.1" "resume W=1 cuda+nccl dropout 0.1" "resume W=2 cuda+mpi AdamW"
    "AdamW gpu vs cpu (W=2, 100 updates)" "gpu run twice (W=2, 100 updates)" "evaluate gpu vs cpu (GPU-trained model)"
    "tokens/s minimum.yaml W=2 (steps 6-100)" "tokens/s H=4096 B=32 W=2 (steps 6-20)"
    "cpu vs gpu gradient + sgd/adamw (gpt-tiny, dropout 0.1 every site)" "cpu vs gpu gradient + sgd/adamw (gpt-tiny prefix 8, sequence unit)"
    "gpt parity W=2 cuda+mpi (one GPU)" "gpt parity W=1 cuda+nccl" "resume gpt W=2 cuda+mpi"
    "gpt resume cpu ckpt on gpu" "gpt resume gpu ckpt on cpu" "gpt recipe W=1 cuda+nccl vs cpu" "tokens/s gpt-tiny W=2 cuda+mpi" "tokens/s gpt GPT-2 small width W=1 B=4")
  local built=0; grep -q '^CUDA_FOUND' <(make -s -C "$ROOT" print-cuda 2>/dev/null) && built=1
  [ $built -eq 1 ] && { make -s -C "$ROOT" build/test_cuda_model >/dev/null 2>&1 || { bad "build/test_cuda_model builds (for the dry run)"; return; }; }
  local t0=$SECONDS rc
  OUT=$PWD/dc DDPTOK_DEVCHECK_BIN=$DDPTOK timeout -k 5 400 bash "$ROOT/run/device-check.sh" --dry-run > dc.log 2>&1; rc=$?
  sed -n '/== device-check table/,$p' dc.log | sed 's/^/     /'
  [ $rc -eq 0 ] && ok "device-check --dry-run exits 0" "($((SECONDS - t0)) s)" || { bad "device-check --dry-run exits 0" "— exit $rc:"; tail -5 dc.log | sed 's/^/       /'; }
  local tab=dc/device-check-table.txt missing=() wrong=() l line st
  [ -f "$tab" ] || { bad "device-check --dry-run writes its table" "— no $tab"; return; }
  for l in "${DEVCHECK_ROWS[@]}"; do
    line=$(grep -F -- "$l " "$tab" | awk -v l="$l" 'index($0, l " ") == 1' | head -1)
    [ -n "$line" ] || { missing+=("$l"); continue; }
    st=$(awk '{print $1}' <<<"${line#"$l"}")
    case "$st" in
      ok|info) ;;
      skipped) [[ $l == "CUDA module found and opened" || $l == "nccl W=2 on one GPU" ]] || [ $built -eq 0 ] || wrong+=("$l: skipped") ;;
      *) wrong+=("$l: $st") ;;
    esac
  done
  [ ${#missing[@]} -eq 0 ] && [ "$(wc -l < "$tab")" -eq ${#DEVCHECK_ROWS[@]} ] \
    && ok "device-check --dry-run: every one of the ${#DEVCHECK_ROWS[@]} rows, no other" \
    || bad "device-check --dry-run: every row" "— missing: ${missing[*]:-none}; $(wc -l < "$tab") rows"
  [ ${#wrong[@]} -eq 0 ] && ! grep -q ' FAIL ' "$tab" && ok "device-check --dry-run: no row FAIL (ok, info, or skipped where only a GPU can answer)" \
    || bad "device-check --dry-run: no row FAIL" "— ${wrong[*]}"
  if [ $built -eq 1 ]; then
    [ "$(grep -c 'gpt-tiny.*over 16 tensors; repeat bit-identical: yes' "$tab")" -eq 2 ] && [ "$(grep -c 'adamw (.*over 5 tensors' "$tab")" -eq 4 ] \
      && ok "device-check --dry-run: test_cuda_model reads the row's tensor list (gpt 16, mlp 5)" \
      || bad "device-check --dry-run: test_cuda_model reads the row's tensor list (gpt 16, mlp 5)"
  fi
  [ "$(grep -c '% of 67 TFLOP/s FP32' "$tab")" -eq 2 ] && grep -q 'gpt resume cpu ckpt on gpu .*= 0 (bound' "$tab" \
    && ok "device-check --dry-run: the GPT's speed rows (share of the FP32 peak) and its cross-backend resume (bit-exact on the CPU)" \
    || bad "device-check --dry-run: the GPT's speed and cross-backend resume rows"
  # Negative controls.
  if [ $built -eq 1 ]; then
    OUT=$PWD/dcg DDPTOK_DEVCHECK_BIN=$DDPTOK DDPTOK_DEVCHECK_BREAK=gradient DDPTOK_DEVCHECK_SECTIONS=1 \
      timeout -k 5 200 bash "$ROOT/run/device-check.sh" --dry-run > dcg.log 2>&1; rc=$?
    [ $rc -eq 1 ] && [ "$(grep -c '^cpu vs gpu gradient .* FAIL ' dcg/device-check-table.txt)" -eq 4 ] \
      && ok "control: a broken twin (theta x 1.01) makes the 4 gradient rows FAIL, exit 1" \
      || bad "control: a broken twin makes the gradient rows FAIL" "— exit $rc"
  fi
  OUT=$PWD/dcp DDPTOK_DEVCHECK_BIN=$DDPTOK DDPTOK_DEVCHECK_BREAK=parity DDPTOK_DEVCHECK_SECTIONS=2 \
    timeout -k 5 200 bash "$ROOT/run/device-check.sh" --dry-run > dcp.log 2>&1; rc=$?
  [ $rc -eq 1 ] && grep -q '^parity W=2 cuda+mpi (one GPU) .* FAIL .*verdicts = CPU.s: False' dcp/device-check-table.txt \
    && ok "control: a flipped GPU parity verdict makes the parity row FAIL, exit 1" \
    || bad "control: a flipped GPU parity verdict makes the parity row FAIL" "— exit $rc"
}
