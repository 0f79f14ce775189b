// common.cuh — what every device layer (cuda/layers/*.cuh) shares: LAYER_FN, the macro that
// makes a layer's per-row math a __host__ __device__ inline function when nvcc compiles it and
// a plain static inline C function when gcc does (tests/test_cuda_layers.c runs those rows on
// the CPU against the CPU reference's kernels, bit for bit), the eight-lane sum of the CPU's
// row kernels, and the launch arithmetic.
//
// Every row function here is the same C as its CPU twin (src/model/cpu_kernels.c,
// src/model/layers.c): the same operations in the same order, never contracted into FMAs
// (the Makefile compiles cuda/*.cu with --fmad=false; gcc's -std=c11 keeps
// -ffp-contract=off), so a device row gives the CPU's bits for the same inputs. What differs
// between the twins is the GEMMs (cuBLAS and OpenBLAS sum in other orders) and the row loss's
// double sum (a fixed tree, loss.cuh): both are deterministic, run to run.
#ifndef DDPTOK_CUDA_LAYERS_COMMON_CUH
#define DDPTOK_CUDA_LAYERS_COMMON_CUH

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "base/exp_f32.h"
#include "base/philox.h"
#include "base/tanh_f32.h"

#ifdef __CUDACC__
#define LAYER_FN static inline __host__ __device__
#else
#define LAYER_FN static inline
#endif

// ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)): cpu_kernels.c's lanes_sum.
LAYER_FN double lanes_sum8(const double acc[8]) {
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

#ifdef __CUDACC__
static inline unsigned layer_blocks(size_t n, unsigned t) { return (unsigned)((n + t - 1) / t); }
#endif

#endif
