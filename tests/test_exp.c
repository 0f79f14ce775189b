// test_exp.c — exp_f32 against double exp over every 13th float of [−87, 0] (~80 million
// values; the log-softmax's domain): at most 2 ulp; exp_f32(0) = 1, 0 below −87, NaN kept.
// Negative control: the same Cody–Waite reduction with a degree-5 Taylor polynomial (too
// short for |r| ≤ 0.35) must fail the same check.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../include/exp_f32.h"

static float exp_degree5(float x) {
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120)))));
    int32_t bits = ((int32_t)n + 127) << 23;
    float two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    return p * two_n;
}

// Largest error in ulp of the correctly rounded result over the sample of [−87, 0].
static double max_ulp(float (*f)(float), float *worst_x) {
    double worst = 0;
    for (uint32_t u = 0x80000000u; u <= 0xc2ae0000u; u += 13) {  // −0 .. −87
        float x;
        memcpy(&x, &u, sizeof x);
        double ref = exp((double)x);
        float rf = (float)ref;
        double ulp = (double)(nextafterf(rf, INFINITY) - rf);
        double e = fabs((double)f(x) - ref) / ulp;
        if (e > worst) worst = e, *worst_x = x;
    }
    return worst;
}

int main(void) {
    int failed = 0;
    float wx = 0;
    double e = max_ulp(exp_f32, &wx);
    printf("exp_f32: max %.3f ulp on [-87, 0] (at x = %.9g)\n", e, wx);
    if (!(e <= 2.0)) failed = printf("FAIL exp_f32 exceeds 2 ulp\n");
    if (exp_f32(0.0f) != 1.0f || exp_f32(-0.0f) != 1.0f || exp_f32(-87.5f) != 0.0f || exp_f32(-INFINITY) != 0.0f ||
        !isnan(exp_f32(NAN)) || exp_f32(-1e-30f) != 1.0f)
        failed = printf("FAIL exp_f32 special values\n");
    double n = max_ulp(exp_degree5, &wx);
    printf("negative control, degree-5 polynomial: max %.3g ulp (at x = %.9g)\n", n, wx);
    if (n <= 2.0) failed = printf("FAIL the check accepted the short polynomial\n");
    return failed ? 1 : 0;
}
