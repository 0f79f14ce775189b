# The layering rule (ARCHITECTURE.md "Layers"): every include edge of src/, include/ and
# cuda/ goes to the file's own layer or below; the base links alone without MPI or HDF5.
out=$(python3 "$ROOT/tests/check_layers.py" "$ROOT" 2>&1) && ok "layers: every include edge keeps the order ($(tail -1 <<<"$out"))" \
  || { bad "layers: an include edge goes against the order" "—"; echo "$out" | tail -8 | sed 's/^/       /'; }
# Negative controls: the same check on a copy with one bad edge each must fail, naming it.
L=$(workdir)
mkcopy() { rm -rf "$L/tree"; mkdir -p "$L/tree"; cp -r "$ROOT/src" "$ROOT/include" "$ROOT/cuda" "$ROOT/ARCHITECTURE.md" "$L/tree/"; }
mkcopy; sed -i '0,/#include "base\/report.h"/s@@#include "base/report.h"\n#include "app/app.h"@' "$L/tree/src/base/fs.c"
out=$(python3 "$ROOT/tests/check_layers.py" "$L/tree" 2>&1) && bad "layers negative control: base including app/app.h passed" \
  || expect_grep "layers negative control: base including app/app.h is refused, naming the edge" 'src/base/fs.c:[0-9]+: base includes "app/app.h" of app' "$out"
mkcopy; sed -i '0,/#include "data\/corpus.h"/s@@#include "data/corpus.h"\n#include "train/trainer.h"@' "$L/tree/src/data/corpus.c"
out=$(python3 "$ROOT/tests/check_layers.py" "$L/tree" 2>&1) && bad "layers negative control: data including train/trainer.h passed" \
  || expect_grep "layers negative control: data including train/trainer.h is refused" 'src/data/corpus.c:[0-9]+: data includes "train/trainer.h" of train' "$out"
mkcopy; sed -i '0,/#include <stdlib.h>/s@@#include <stdlib.h>\n#include <mpi.h>@' "$L/tree/src/base/mem.c"
out=$(python3 "$ROOT/tests/check_layers.py" "$L/tree" 2>&1) && bad "layers negative control: the base including <mpi.h> passed" \
  || expect_grep "layers negative control: the base including <mpi.h> is refused" 'src/base/mem.c:[0-9]+: the base includes <mpi.h>' "$out"
rm -rf "$L"
# The base alone: build/test_base is plain cc with no MPI, HDF5, YAML or JSON library.
if [ -x "$ROOT/build/test_base" ]; then
  libs=$(ldd "$ROOT/build/test_base" 2>&1)
  grep -qE 'libmpi|libhdf5|libyaml|libjansson|libopenblas|libcuda|libnccl' <<<"$libs" \
    && bad "base: build/test_base links a library beyond the base's" "— $(grep -oE 'lib(mpi|hdf5|yaml|jansson|openblas|cuda|nccl)[^ ]*' <<<"$libs" | tr '\n' ' ')" \
    || ok "base: build/test_base links no MPI, HDF5, YAML, JSON, BLAS or CUDA library"
  out=$("$ROOT/build/test_base" 2>&1) && ok "base: its own checks pass ($out)" || { bad "base: its checks" "—"; echo "$out" | sed 's/^/       /'; }
else
  bad "base: build/test_base was not built" "— make test-bins builds it"
fi
