// test_tanh.c — tanh_f32 and exp_f32 (the exp inside it, and the CPU log-softmax's) against
// double tanh and exp over dense samples of the floats:
//   tanh_f32: every 61st bit pattern below 0.5, every 7th in [0.5, 10) where the two formulas
//     meet, every 4099th beyond (~22 million values): at most 2 ulp, odd, NaN kept, ±inf → ±1;
//     negative control: the textbook 1 − 2/(exp(2x) + 1), which cancels for small |x|;
//   exp_f32: every 13th float of [−87, 0] (~80 million values): at most 2 ulp, exp(0) = 1,
//     0 below −87, NaN kept; negative control: the same reduction with a degree-5 polynomial
//     (too short for |r| ≤ 0.35).
// Each negative control must fail the same check.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/exp_f32.h"
#include "base/tanh_f32.h"

static float naive_tanh(float x) { return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f); }

static float exp_degree5(float x) {
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120)))));
    int32_t bits = ((int32_t)n + 127) << 23;
    float two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    return p * two_n;
}

static uint32_t tanh_stride(uint32_t u) { return u < 0x3f000000u ? 61 : u < 0x41200000u ? 7 : 4099; }
static uint32_t exp_stride(uint32_t u) { return (void)u, 13; }

// Largest error in ulp of the correctly rounded result, over the bit patterns from..to.
static double max_ulp(float (*f)(float), double (*ref)(double), uint32_t from, uint32_t to, uint32_t (*stride)(uint32_t),
                      float *worst_x) {
    double worst = 0;
    for (uint64_t u = from; u <= to; u += stride((uint32_t)u)) {
        uint32_t b = (uint32_t)u;
        float x;
        memcpy(&x, &b, sizeof x);
        double r = ref((double)x);
        float rf = (float)r;
        double ulp = rf >= 1.0f ? 5.9604644775390625e-08 : (double)(nextafterf(rf, INFINITY) - rf);
        double e = fabs((double)f(x) - r) / ulp;
        if (e > worst) worst = e, *worst_x = x;
    }
    return worst;
}

int main(void) {
    int failed = 0;
    float wx = 0;
    double e = max_ulp(tanh_f32, tanh, 0, 0x7f7fffffu, tanh_stride, &wx);
    printf("tanh_f32: max %.3f ulp (at x = %.9g)\n", e, wx);
    if (!(e <= 2.0)) failed = printf("FAIL tanh_f32 exceeds 2 ulp\n");
    for (float x = -20; x <= 20; x += 0.01f)
        if (tanh_f32(-x) != -tanh_f32(x)) failed = printf("FAIL tanh_f32 not odd at %g\n", x);
    if (!isnan(tanh_f32(NAN)) || tanh_f32(INFINITY) != 1.0f || tanh_f32(-INFINITY) != -1.0f ||
        tanh_f32(0.0f) != 0.0f || !signbit(tanh_f32(-0.0f)) || tanh_f32(1e-30f) != 1e-30f)
        failed = printf("FAIL tanh_f32 special values\n");
    double n = max_ulp(naive_tanh, tanh, 0, 0x7f7fffffu, tanh_stride, &wx);
    printf("negative control, 1 - 2/(exp(2x) + 1): max %.3g ulp (at x = %.9g)\n", n, wx);
    if (n <= 2.0) failed = printf("FAIL the check accepted the cancelling formula\n");

    e = max_ulp(exp_f32, exp, 0x80000000u, 0xc2ae0000u, exp_stride, &wx);  // −0 .. −87
    printf("exp_f32: max %.3f ulp on [-87, 0] (at x = %.9g)\n", e, wx);
    if (!(e <= 2.0)) failed = printf("FAIL exp_f32 exceeds 2 ulp\n");
    if (exp_f32(0.0f) != 1.0f || exp_f32(-0.0f) != 1.0f || exp_f32(-87.5f) != 0.0f || exp_f32(-INFINITY) != 0.0f ||
        !isnan(exp_f32(NAN)) || exp_f32(-1e-30f) != 1.0f)
        failed = printf("FAIL exp_f32 special values\n");
    n = max_ulp(exp_degree5, exp, 0x80000000u, 0xc2ae0000u, exp_stride, &wx);
    printf("negative control, exp with a degree-5 polynomial: max %.3g ulp (at x = %.9g)\n", n, wx);
    if (n <= 2.0) failed = printf("FAIL the check accepted the short polynomial\n");
    return failed ? 1 : 0;
}
