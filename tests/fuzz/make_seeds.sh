#!/usr/bin/env bash
# Regenerates the HDF5 seeds of tests/fuzz/corpus/ from configs/tiny.yaml (the config the
# fuzz targets read them under): corpus.h5, plan.h5 and rank 0's file of the step-6
# checkpoint. The config, manifest and json seeds are written by hand (the json ones from a
# protocol run's outputs, prefixed with the reader's byte: 0 evaluate, 1 plot). Usage: bash tests/fuzz/make_seeds.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
cd "$w"
"$root/ddptok" prepare --config "$root/configs/tiny.yaml" >/dev/null
mpirun -np 2 "$root/ddptok" train --config "$root/configs/tiny.yaml" >/dev/null
cp outputs/data/corpus.h5 "$root/tests/fuzz/corpus/corpus/tiny-corpus.h5"
cp outputs/data/plan.h5 "$root/tests/fuzz/corpus/plan/tiny-plan.h5"
cp artifacts/checkpoints/step-0006/rank-0000.h5 "$root/tests/fuzz/corpus/checkpoint/tiny-rank-0000.h5"
