# The CUDA variant: built and linked whenever nvcc, cuBLAS and NCCL are present (they are on
# these machines); it falls back to the CPU backend where no GPU is visible. Nothing here
# can run a GPU: run/device-check.sh does that on a GPU machine.
if ! grep -q '^CUDA_FOUND' <(make -s -C "$ROOT" print-cuda 2>/dev/null); then
  skip cuda "nvcc, cuBLAS or NCCL not found; the binary is CPU-only"
else
  libs=$(ldd "$DDPTOK")
  grep -q libcublas <<<"$libs" && grep -q libnccl <<<"$libs" && ok "ddptok links cuBLAS and NCCL" || bad "CUDA link" "— ldd: $libs"
  [ -x "$ROOT/build/ddptok-cpu" ] && ! ldd "$ROOT/build/ddptok-cpu" | grep -q libcublas && ok "the CPU-only variant (make CUDA=0) builds too" || bad "CPU-only variant"
  W=$(workdir); cd "$W"
  cfg="$CONFIGS/tiny.yaml"
  expect_rc "CUDA build without a GPU falls back to the CPU backend" 0 ddp 2 check-env --config "$cfg"
  expect_grep "... and says so" 'backend cpu, comm mpi' "$OUT"
  expect_rc "--backend cuda without a GPU: clear error" 2 one prepare --config "$cfg" --backend cuda
  expect_grep "... naming the host" 'no GPU is visible on' "$OUT"
  expect_rc "--comm nccl with the CPU backend: clear error" 2 one prepare --config "$cfg" --comm nccl
  # Same numbers from both variants: parity max error identical on the CPU backend.
  prep_ref "$cfg"
  a=$(ddp 2 parity --config "$cfg" 2>&1 | grep global-token)
  b=$(timeout 120 mpirun -np 2 "$ROOT/build/ddptok-cpu" parity --config "$cfg" 2>&1 | grep global-token)
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "CUDA and CPU-only builds give the same CPU parity ($a)" || bad "variants differ" "— '$a' vs '$b'"
  cd "$ROOT"; rm -rf "$W"
fi
