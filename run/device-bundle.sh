#!/usr/bin/env bash
# run/device-bundle.sh — prepares what run/device-check.sh needs on a GPU machine that may
# have CUDA but no Open MPI, HDF5, libyaml, libjansson or OpenBLAS: builds ddptok with CUDA here and
# packs its runtime (the shared libraries it and mpirun need, Open MPI's plugins and help
# files, relocatable through OPAL_PREFIX) into .deps/runtime.tar.xz, next to the binaries
# (ddptok, its CUDA module ddptok-cuda.so beside it, where ddptok looks first, and
# test_cuda_model).
# cuBLAS, NCCL and the driver are NOT packed: the GPU machine's are used (they are large).
# Carry `.deps` and `build` when sending the tree to the GPU machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make -s CUDA=1 ddptok build/cuda/ddptok-cuda.so build/test_cuda_model >/dev/null
B=.deps/bundle
rm -rf .deps && mkdir -p "$B/lib" "$B/usr/bin" "$B/usr/share" "$B/usr/lib/x86_64-linux-gnu"
cp ddptok build/cuda/ddptok-cuda.so build/test_cuda_model .deps/
# Open MPI's tree (libraries, plugins) without headers; PMIx's; help files.
cp -a /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 "$B/usr/lib/x86_64-linux-gnu/"
rm -rf "$B"/usr/lib/x86_64-linux-gnu/*/include
cp -a /usr/share/openmpi "$B/usr/share/"
cp /usr/bin/orterun /usr/bin/orted "$B/usr/bin/"  # orted: singleton MPI_Init forks one
ln -s orterun "$B/usr/bin/mpirun"
# The shared-library closure of everything above, minus glibc, the CUDA stack and the driver.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libcublas|libnccl|libcuda|libcudart)'
objs=(ddptok build/cuda/ddptok-cuda.so build/test_cuda_model /usr/bin/orterun /usr/bin/orted $(find /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 -name '*.so*' -type f))
ldd "${objs[@]}" 2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] && continue
  [ -e "$B/lib/$name" ] || cp -L "$path" "$B/lib/$name"
done
tar -C .deps -cJf .deps/runtime.tar.xz bundle
rm -rf "$B"
du -sh .deps/* | sed 's/^/device-bundle: /'
