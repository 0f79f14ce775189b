// test_cuda_layers.c — the device layers' per-row math (cuda/layers/*.cuh, compiled here by
// gcc as C: the same functions nvcc compiles into the kernels with --fmad=false) run on the
// CPU against the CPU reference's row kernels (cpu_kernels.h, the portable variant: every
// variant gives its bits): LayerNorm forward and backward, GELU and its backward, the causal
// softmax row and its backward, the dropout keep flags, and the row loss within 1e-12
// relative (its double sum is added in another order). Negative controls: a LayerNorm row
// with ε forgotten, a GELU derivative without its second term, and a row loss without the
// target's −1 must each be rejected by the same comparison. No GPU needed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers/attention.cuh"
#include "layers/dropout.cuh"
#include "layers/gelu.cuh"
#include "layers/layernorm.cuh"
#include "layers/loss.cuh"
#include "model/cpu_kernels.h"

static int failed, passed;
static void check(const char *what, int agree, int expect) {
    if (agree == expect) passed++, printf("ok   %s\n", what);
    else failed++, printf("FAIL %s (expected %s)\n", what, expect ? "agreement" : "disagreement");
}
static int same_bits(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof *a); }
static float frand(uint32_t *s) { *s = *s * 1664525u + 1013904223u; return ((float)(*s >> 8) / 16777216.0f) * 4.0f - 2.0f; }

int main(void) {
    const CpuKernels *k = &cpu_kernels_all[cpu_kernels_count - 1];  // portable: the bits every variant gives
    uint32_t seed = 1;
    enum { C = 77, N = 5, V = 1003, L = 45 };
    float x[N * C], w[C], b[C], d[N * C];
    for (int i = 0; i < N * C; i++) x[i] = frand(&seed), d[i] = frand(&seed);
    for (int i = 0; i < C; i++) w[i] = 1.0f + 0.1f * frand(&seed), b[i] = 0.1f * frand(&seed);
    // LayerNorm forward, rows
    float y1[N * C], y2[N * C], s1[2 * N], s2[2 * N], y3[C], s3[2];
    for (int p = 0; p < N; p++) {
        k->layernorm(y1 + p * C, s1 + 2 * p, x + p * C, w, b, C, 1e-5);
        layernorm_row_dev(y2 + p * C, s2 + 2 * p, x + p * C, w, b, C, 1e-5);
    }
    check("layernorm forward: the device row gives the CPU's bits", same_bits(y1, y2, N * C) && same_bits(s1, s2, 2 * N), 1);
    layernorm_row_dev(y3, s3, x, w, b, C, 0.0);  // control: ε forgotten
    check("layernorm forward, control: ε = 0 is rejected", same_bits(y1, y3, C), 0);
    // LayerNorm backward: dx rows and the dw, db columns over the rows in order
    float dx1[N * C] = {0}, dx2[N * C] = {0}, dw1[C] = {0}, db1[C] = {0}, dw2[C] = {0}, db2[C] = {0};
    for (int p = 0; p < N; p++) k->layernorm_backward(dx1 + p * C, dw1, db1, d + p * C, x + p * C, s1 + 2 * p, w, C);
    for (int p = 0; p < N; p++) layernorm_backward_row_dev(dx2 + p * C, d + p * C, x + p * C, s2 + 2 * p, w, C);
    for (int i = 0; i < C; i++) layernorm_dwdb_col_dev(dw2, db2, d, x, s2, N, C, i);
    check("layernorm backward: dx, dw, db the CPU's bits", same_bits(dx1, dx2, N * C) && same_bits(dw1, dw2, C) && same_bits(db1, db2, C), 1);
    // GELU
    float g1[N * C], g2[N * C], gb1[N * C], gb2[N * C], gb3[N * C];
    k->gelu(g1, x, N * C);
    for (int i = 0; i < N * C; i++) g2[i] = gelu_dev(x[i]);
    check("gelu forward: the CPU's bits", same_bits(g1, g2, N * C), 1);
    memcpy(gb1, d, sizeof d);
    k->gelu_backward(gb1, x, N * C);
    for (int i = 0; i < N * C; i++) {
        gb2[i] = gelu_backward_dev(d[i], x[i]);
        float t = tanh_f32(GELU_DEV_S * (x[i] + GELU_DEV_C * x[i] * x[i] * x[i]));
        gb3[i] = d[i] * (0.5f * (1.0f + t));  // control: the derivative's second term forgotten
    }
    check("gelu backward: the CPU's bits", same_bits(gb1, gb2, N * C), 1);
    check("gelu backward, control: without its second term rejected", same_bits(gb1, gb3, N * C), 0);
    // causal softmax of row t of a run of L keys (layers.c attention_forward: row_max, sum_exp, scaled_softmax)
    int ok_sm = 1, ok_bw = 1;
    float sc[L], e[L], p1[L], p2[L], dp1[L], dp2[L];
    DropDev nod = {0};
    for (int t = 0; t < L; t++) {
        for (int u = 0; u < L; u++) sc[u] = 3.0f * frand(&seed);
        float mx = sc[0];
        for (int u = 1; u <= t; u++) mx = sc[u] > mx ? sc[u] : mx;
        double sum = k->sum_exp(sc, e, t + 1, mx);
        k->scaled_softmax(p1, e, t + 1, 1.0 / sum, 1.0f);
        for (int u = t + 1; u < L; u++) p1[u] = 0.0f;
        memcpy(p2, sc, sizeof sc);
        causal_softmax_row_dev(p2, t, L);
        ok_sm &= same_bits(p1, p2, L);
        // backward: dS = P ⊙ (dP − Σ P·dP), the sum as eight partial sums in double (row_dot)
        for (int u = 0; u < L; u++) dp1[u] = dp2[u] = frand(&seed);
        double acc[8] = {0};
        for (int u = 0; u <= t; u++) acc[u % 8] += (double)p1[u] * (double)dp1[u];
        float dotf = (float)(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
        for (int u = 0; u <= t; u++) dp1[u] = p1[u] * (dp1[u] - dotf);
        for (int u = t + 1; u < L; u++) dp1[u] = 0.0f;
        causal_softmax_backward_row_dev(dp2, p2, NULL, t, L, &nod);
        ok_bw &= same_bits(dp1, dp2, L);
    }
    check("causal softmax rows (t = 0..44 of a run of 45): the CPU's bits", ok_sm, 1);
    check("causal softmax backward rows: the CPU's bits", ok_bw, 1);
    // dropout keep flags: the CPU's dropout_keep (units h·Lmax + u of the attention site)
    DropDev dd = {.on = 1, .stream = rng_stream(7, RNG_DROPOUT, 1), .block = 12345, .ids = NULL, .L = 64, .thr = dropout_threshold(0.3),
                  .inv = 1.0f / 0.7f};
    uint8_t k1[200], k2[200];
    uint32_t site = 4, at = 70, u0 = 3 * 64;
    for (int i = 0; i < 200; i++) k2[i] = (uint8_t)dropout_keep_dev(&dd, at, site, u0 + (uint32_t)i);
    k->dropout_keep(k1, 200, &dd.stream, dd.block, at, site << 24 | u0 >> 2, dd.thr);
    check("dropout keep flags (site 4, units 192..391): the CPU's bits", !memcmp(k1, k2, 200), 1);
    int32_t ids[3] = {11, 22, 33};
    dd.ids = ids, dd.step = 9;
    for (int i = 0; i < 200; i++) k2[i] = (uint8_t)dropout_keep_dev(&dd, at, site, u0 + (uint32_t)i);
    check("dropout keep flags, control: keyed by sequence id, other flags", !memcmp(k1, k2, 200), 0);
    // the row loss: lanes as the kernel's block, against cpu_row_loss
    static float ly[V], l1[V], l2[V], l3[V], ex[V];
    for (int v = 0; v < V; v++) ly[v] = 5.0f * frand(&seed);
    int tgt = 17;
    memcpy(l1, ly, sizeof ly);
    int64_t hit1 = 0;
    double loss1 = cpu_row_loss(k, l1, ex, V, tgt, 0.5f, 0.25f, 1, &hit1);
    memcpy(l2, ly, sizeof ly);
    float ms[ROW_LOSS_LANES], mx;
    int as[ROW_LOSS_LANES], arg;
    double sd[ROW_LOSS_LANES];
    float ytgt = l2[tgt];
    for (int l = 0; l < ROW_LOSS_LANES; l++) row_loss_lane_max(l2, V, l, ROW_LOSS_LANES, &ms[l], &as[l]);
    row_loss_combine_max(ms, as, ROW_LOSS_LANES, V, &mx, &arg);
    for (int l = 0; l < ROW_LOSS_LANES; l++) sd[l] = row_loss_lane_sum(l2, l2, V, l, ROW_LOSS_LANES, mx);
    double s = row_loss_tree(sd, ROW_LOSS_LANES), loss2 = 0.5 * ((double)mx + log(s) - (double)ytgt);
    memcpy(l3, l2, sizeof l2);
    for (int l = 0; l < ROW_LOSS_LANES; l++) row_loss_lane_backward(l2, l2, V, l, ROW_LOSS_LANES, 1.0 / s, 0.25f, tgt);
    for (int l = 0; l < ROW_LOSS_LANES; l++) row_loss_lane_backward(l3, l3, V, l, ROW_LOSS_LANES, 1.0 / s, 0.25f, -1);  // control
    double md = 0, mc = 0;
    for (int v = 0; v < V; v++) {
        md = fmax(md, fabs((double)l1[v] - l2[v]) / (1e-30 + fabs((double)l1[v])));
        mc = fmax(mc, fabs((double)l1[v] - l3[v]) / (1e-30 + fabs((double)l1[v])));
    }
    int hit2 = 0;
    for (int v = 0; v < V; v++) hit2 |= 0;
    int cpu_arg = 0;
    for (int v = 1; v < V; v++) if (ly[v] > ly[cpu_arg]) cpu_arg = v;
    printf("     row loss cpu %.17g device-row %.17g; dlogits max rel diff %.3g\n", loss1, loss2, md);
    check("row loss: loss within 1e-12 relative, dlogits within 1e-6, the same argmax",
          fabs(loss1 - loss2) <= 1e-12 * fabs(loss1) && md <= 1e-6 && arg == cpu_arg, 1);
    check("row loss, control: the target's −1 forgotten is rejected", mc <= 1e-6, 0);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
