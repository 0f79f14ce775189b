// tanh_f32.h — tanh in single precision without branches, so that the CPU backend's loop
// over a (T, H) activation vectorizes (glibc's tanhf is a scalar call through expm1f and
// was ~45 % of a CPU training step).
//
//   |x| < 0.625:  x + x·z·P(z), z = x², P of degree 4 fitted to (tanh(x)/x − 1)/z by least
//                 squares on Chebyshev nodes (approximation error 4.5e-9 relative);
//   |x| ≥ 0.625:  (1 − e)/(1 + e), e = exp(−2|x|) ∈ (0, 0.29] (no cancellation), with
//                 exp_f32_core (exp_f32.h: 2ⁿ·p(r), Cody–Waite, degree-7 Taylor).
// Max error 1.57 ulp over every non-negative finite float (checked exhaustively against
// double tanh; glibc's tanhf reaches 2.1 ulp by the same measure); odd; NaN propagates;
// tanh(±inf) = ±1. tests/test_tanh.c checks a dense sample on every `make test`.
// Vectorizing the select needs -fno-trapping-math (see the Makefile); it changes no result.
#ifndef DDPTOK_TANH_F32_H
#define DDPTOK_TANH_F32_H

#include <math.h>

#include "base/exp_f32.h"

F32_FN float tanh_f32(float x) {
    float a = fabsf(x), z = a * a;
    float small = a + a * z * (-0.33333281284113087f +
                               z * (0.13331431753509346f +
                                    z * (-0.05373915650364926f + z * (0.020637861489242723f + z * -0.005704042524953702f))));
    float e = exp_f32_core(-2.0f * (a < 40.0f ? a : 40.0f));  // e = 0 beyond: tanh = 1; n ∈ [−116, 0]
    float t = a < 0.625f ? small : (1.0f - e) / (1.0f + e);
    return x != x ? x : copysignf(t, x);
}

#endif
