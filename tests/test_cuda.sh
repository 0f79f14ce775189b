# The CUDA variant: built and linked whenever nvcc, cuBLAS and NCCL are present (they are on
# these machines); it falls back to the CPU backend where no GPU is visible. Nothing here
# can run a GPU: run/device-check.sh does that on a GPU machine.
cfg="$CONFIGS/tiny.yaml"
# cuda_built: true when this build has the CUDA backend; else the case is skipped, visibly.
cuda_built() {
  grep -q '^CUDA_FOUND' <(make -s -C "$ROOT" print-cuda 2>/dev/null) && return 0
  skip "$CASE" "nvcc, cuBLAS or NCCL not found; the binary is CPU-only"; return 1
}
case_links() {
  cuda_built || return
  local libs; libs=$(ldd "$DDPTOK")
  grep -q libcublas <<<"$libs" && grep -q libnccl <<<"$libs" && ok "ddptok links cuBLAS and NCCL" || bad "ddptok links cuBLAS and NCCL" "— ldd: $libs"
  [ -x "$ROOT/build/ddptok-cpu" ] && ! ldd "$ROOT/build/ddptok-cpu" | grep -q libcublas && ok "the CPU-only variant (make CUDA=0) builds too" \
    || bad "the CPU-only variant (make CUDA=0) builds too"
}
case_cpu_fallback() {
  cuda_built || return
  expect_rc "CUDA build without a GPU falls back to the CPU backend" 0 ddp 2 check-env --config "$cfg"
  expect_grep "CUDA build without a GPU: check-env says backend cpu, comm mpi" 'backend cpu, comm mpi' "$OUT"
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
