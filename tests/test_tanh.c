// test_tanh.c — tanh_f32 against double tanh over a dense sample of the floats (every 61st
// bit pattern below 0.5, every 7th in [0.5, 10) where the two formulas meet, every 4099th
// beyond; ~22 million values): at most 2 ulp, odd, NaN kept,
// ±inf → ±1. Negative control: the textbook 1 − 2/(exp(2x) + 1), which cancels for small
// |x|, must fail the same check.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../include/tanh_f32.h"

static float naive_tanh(float x) { return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f); }

// Largest error in ulp of the correctly rounded result, over the sample.
static double max_ulp(float (*f)(float), float *worst_x) {
    double worst = 0;
    for (uint64_t u = 0; u < 0x7f800000u; u += u < 0x3f000000u ? 61 : u < 0x41200000u ? 7 : 4099) {
        uint32_t b = (uint32_t)u;
        float x;
        memcpy(&x, &b, sizeof x);
        double ref = tanh((double)x);
        float rf = (float)ref;
        double ulp = rf >= 1.0f ? 5.9604644775390625e-08 : (double)(nextafterf(rf, INFINITY) - rf);
        double e = fabs((double)f(x) - ref) / ulp;
        if (e > worst) worst = e, *worst_x = x;
    }
    return worst;
}

int main(void) {
    int failed = 0;
    float wx = 0;
    double e = max_ulp(tanh_f32, &wx);
    printf("tanh_f32: max %.3f ulp (at x = %.9g)\n", e, wx);
    if (!(e <= 2.0)) failed = printf("FAIL tanh_f32 exceeds 2 ulp\n");
    for (float x = -20; x <= 20; x += 0.01f)
        if (tanh_f32(-x) != -tanh_f32(x)) failed = printf("FAIL tanh_f32 not odd at %g\n", x);
    if (!isnan(tanh_f32(NAN)) || tanh_f32(INFINITY) != 1.0f || tanh_f32(-INFINITY) != -1.0f ||
        tanh_f32(0.0f) != 0.0f || !signbit(tanh_f32(-0.0f)) || tanh_f32(1e-30f) != 1e-30f)
        failed = printf("FAIL tanh_f32 special values\n");
    double n = max_ulp(naive_tanh, &wx);
    printf("negative control, 1 - 2/(exp(2x) + 1): max %.3g ulp (at x = %.9g)\n", n, wx);
    if (n <= 2.0) failed = printf("FAIL the check accepted the cancelling formula\n");
    return failed ? 1 : 0;
}
