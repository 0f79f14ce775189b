// exp_f32.h — exp in single precision without branches, for arguments x ≤ 0: the CPU
// backend's log-softmax (exp of logit − max) and tanh_f32's exp(−2|x|), in loops that
// vectorize (libm's double exp was two scalar calls per logit, ~6 % of a W = 1 window).
//
//   exp(x) = 2ⁿ·p(r), n = round(x/ln 2), r = x − n·ln 2 (Cody–Waite, two constants),
//   p the degree-7 Taylor polynomial (|r| ≤ 0.35: 5e-9 relative).
// exp_f32_core wants x ∈ [−87, 0] (2ⁿ normal, n ∈ [−126, 0]); exp_f32 takes any x ≤ 0:
// below −87 it returns 0 (the true value is under 1.7e-38), NaN propagates.
// Max error 1.2 ulp over [−87, 0] (tests/test_tanh.c: every 13th float of the range against double exp).
// Vectorizing the selects needs -fno-trapping-math (see the Makefile); it changes no result.
#ifndef DDPTOK_EXP_F32_H
#define DDPTOK_EXP_F32_H

#include <stdint.h>
#include <string.h>

// Callable from CUDA kernels too (cuda/layers/: the GPU's rows give the CPU's bits when
// compiled without FMA contraction, as the Makefile compiles them).
#ifdef __CUDACC__
#define F32_FN static inline __host__ __device__
#else
#define F32_FN static inline
#endif

F32_FN float exp_f32_core(float x) {
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest, no libm call
    float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    int32_t bits = ((int32_t)n + 127) << 23;  // 2ⁿ
    float two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    return p * two_n;
}

F32_FN float exp_f32(float x) {
    float e = exp_f32_core(x > -87.0f ? x : -87.0f);  // NaN takes the clamp too: no conversion of NaN to int
    return x != x ? x : x < -87.0f ? 0.0f : e;
}

#endif
