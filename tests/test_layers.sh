# The layering rule (ARCHITECTURE.md "Layers"): every include edge of src/, include/ and
# cuda/ goes to the file's own layer or below; the base links alone without MPI or HDF5.
case_include_order() {
  local out
  out=$(python3 "$ROOT/tests/check_layers.py" "$ROOT" 2>&1) && ok "layers: every include edge keeps the order" "($(tail -1 <<<"$out"))" \
    || { bad "layers: every include edge keeps the order" "—"; echo "$out" | tail -8 | sed 's/^/       /'; }
}
# Negative controls: the same check on a copy with one bad edge each must fail, naming it.
mkcopy() { rm -rf tree; mkdir -p tree; cp -r "$ROOT/src" "$ROOT/include" "$ROOT/cuda" "$ROOT/ARCHITECTURE.md" tree/; }
# refused_edge NAME FILE SED PATTERN: FILE of a copy edited by SED must make the check fail
# with a line matching PATTERN.
refused_edge() {
  local out
  mkcopy; sed -i "$3" "$2"
  out=$(python3 "$ROOT/tests/check_layers.py" tree 2>&1) && bad "$1" "— it passed" || expect_grep "$1" "$4" "$out"
}
case_control_base_includes_app() { refused_edge "layers negative control: base including app/app.h is refused, naming the edge" tree/src/base/fs.c '0,/#include "base\/report.h"/s@@#include "base/report.h"\n#include "app/app.h"@' 'src/base/fs.c:[0-9]+: base includes "app/app.h" of app'; }
case_control_data_includes_train() { refused_edge "layers negative control: data including train/trainer.h is refused" tree/src/data/corpus.c '0,/#include "data\/corpus.h"/s@@#include "data/corpus.h"\n#include "train/trainer.h"@' 'src/data/corpus.c:[0-9]+: data includes "train/trainer.h" of train'; }
case_control_base_includes_mpi() { refused_edge "layers negative control: the base including <mpi.h> is refused" tree/src/base/mem.c '0,/#include <stdlib.h>/s@@#include <stdlib.h>\n#include <mpi.h>@' 'src/base/mem.c:[0-9]+: the base includes <mpi.h>'; }
# The base alone: build/test_base is plain cc with no MPI, HDF5, YAML or JSON library.
case_base_alone() {
  local libs out
  if [ ! -x "$ROOT/build/test_base" ]; then
    bad "base: build/test_base was built" "— make test-bins builds it"; return
  fi
  libs=$(ldd "$ROOT/build/test_base" 2>&1)
  grep -qE 'libmpi|libhdf5|libyaml|libjansson|libopenblas|libcuda|libnccl' <<<"$libs" \
    && bad "base: build/test_base links no MPI, HDF5, YAML, JSON, BLAS or CUDA library" "— $(grep -oE 'lib(mpi|hdf5|yaml|jansson|openblas|cuda|nccl)[^ ]*' <<<"$libs" | tr '\n' ' ')" \
    || ok "base: build/test_base links no MPI, HDF5, YAML, JSON, BLAS or CUDA library"
  out=$("$ROOT/build/test_base" 2>&1) && ok "base: its own checks pass" "($out)" || { bad "base: its own checks pass" "—"; echo "$out" | sed 's/^/       /'; }
}
