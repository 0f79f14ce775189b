// test_kernels.c — every variant of the CPU row kernels (cpu_kernels.h) that this machine can
// run gives, bit for bit, the scalar definition, over rows of many lengths (whole and partial
// SIMD steps):
//   hidden_row: mm[i] = inv if dropout_bits(s, block, pos, i) >= thr else +0.0f,
//     hh[i] = tanh_f32(z[i]), hd[i] = hh[i]·mm[i] (hd = hh without dropout), for several
//     counters and keep rates; negative controls: the same check rejects a kernel fed the
//     next position's counter and one fed another threshold;
//   sum_exp / scaled_softmax: e[v] = exp_f32(y[v] − mx), s = the eight partial sums (v mod 8)
//     added pairwise, y[v] = sw·(float)(e[v]·(1/s)); negative control: the plain sequential
//     sum, which the check must tell apart;
//   attn_softmax / attn_softmax_backward (the causal attention's rows): the row's softmax
//     (the maximum, the eight-lane sum, 1/s in double) then the masked keys' zeros, and
//     dP ⊙ keep scales, dot = (float) the eight-lane Σ P·dP, dS = P·(dP − dot) then zeros,
//     with and without a keep mask; negative control: the dot as a plain sequential float sum;
//   tanh_backward: dz = dz·(mm·(1 − hh²)) (dz·(1 − hh²) without dropout), gb += dz over
//     several rows; negative control: the product in another order, (dz·mm)·(1 − hh²);
//   dropout_keep (the GPT's): keep[i] = word i mod 4 of dropout_block(s, block, pos, q0 + i/4)
//     >= thr, q0 with a site in its top byte; negative control: the next position's counter;
//   layernorm / layernorm_backward (the GPT's): the definition of cpu_kernels.h (eight-lane
//     sums in double added pairwise) over rows of many widths; negative control: the unbiased
//     variance (÷ (C − 1), torch.var's default, a classic LayerNorm slip);
//   gelu / gelu_backward (the GPT's): the definition of cpu_kernels.h over values from −12 to
//     12, 0, ±1e-30 and huge ones; negative control: the same formula with libm's tanhf;
//   the optimizer's AdamW pass (optimizer_cpu.c), every variant this CPU runs: the scalar
//     update of optimizer_cpu.c's comment, with and without the decay mask, divisors 1, 2
//     and 3, lengths of whole and partial vectors; negative control: v updated with
//     (1 − β2)·(g·g) instead of ((1 − β2)·g)·g.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cpu_kernels.h"
#include "base/exp_f32.h"
#include "base/tanh_f32.h"
#include "base/row_reduce.h"
#include "method/optimizer.h"

enum { HMAX = 2048 + 64 };

// Mismatching rows of `k` against the scalar definition over the whole sample; the kernel is
// called with its position shifted by pos_shift and its threshold xor-ed with thr_flip
// (both 0: the real check).
static int mismatches(const CpuKernels *k, uint32_t pos_shift, uint32_t thr_flip, int verbose) {
    static const int Hs[] = {1, 3, 4, 5, 31, 32, 33, 36, 63, 64, 65, 100, 102, 128, 500, 512, 2048};
    static const double ps[] = {0.0, 0.1, 0.5, 0.9};
    static float z[HMAX], hh[HMAX], hd[HMAX], mm[HMAX], rh[HMAX], rd[HMAX], rm[HMAX];
    RngStream streams[2] = {rng_stream(1234, RNG_DROPOUT, 1), rng_stream(77, RNG_KEYED_DROPOUT, 0)};
    uint64_t blocks[3] = {0, 5, 17ull | 3ull << 32};
    int bad = 0;
    uint32_t seed = 1;
    for (size_t hi = 0; hi < sizeof Hs / sizeof *Hs; hi++)
        for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++)
            for (int si = 0; si < 2; si++)
                for (int bi = 0; bi < 3; bi++)
                    for (uint32_t pos = 0; pos < 130; pos += 43) {
                        int H = Hs[hi];
                        double p = ps[pi];
                        const RngStream *s = &streams[si];
                        for (int i = 0; i < H; i++) {  // z over (-8, 8), some exactly 0 and tiny
                            seed = seed * 1664525u + 1013904223u;
                            z[i] = i % 37 == 0 ? 0.0f : i % 41 == 0 ? 1e-30f : ((float)(seed >> 8) / 16777216.0f - 0.5f) * 16.0f;
                        }
                        uint32_t thr = dropout_threshold(p);
                        float inv = (float)(1.0 / (1.0 - p));
                        for (int i = 0; i < H; i++) {
                            rm[i] = dropout_bits(s, blocks[bi], pos, (uint32_t)i) >= thr ? inv : 0.0f;
                            rh[i] = tanh_f32(z[i]);
                            rd[i] = p > 0 ? rh[i] * rm[i] : rh[i];
                        }
                        memcpy(hh, z, (size_t)H * sizeof(float));
                        memset(mm, 0xff, sizeof mm);  // NaN: a unit left unwritten shows
                        k->hidden_row(hh, hd, p > 0 ? mm : NULL, H, s, blocks[bi], pos + pos_shift, thr ^ thr_flip, inv);
                        int ok = !memcmp(hh, rh, (size_t)H * sizeof(float)) && !memcmp(hd, rd, (size_t)H * sizeof(float)) &&
                                 (p == 0 || !memcmp(mm, rm, (size_t)H * sizeof(float)));
                        if (!ok && verbose && bad < 5) {
                            int i = 0;
                            while (i < H && hh[i] == rh[i] && hd[i] == rd[i] && (p == 0 || mm[i] == rm[i])) i++;
                            printf("FAIL %s: H %d p %g stream %d block %d pos %u: first mismatch at unit %d: hh %a vs %a, hd %a vs %a, mm %a vs %a\n",
                                   k->name, H, p, si, bi, pos, i, hh[i], rh[i], hd[i], rd[i], mm[i], rm[i]);
                        }
                        bad += !ok;
                    }
    return bad;
}

// The log-softmax definition: the terms, and their sum in the documented order (sequential:
// the negative control's order).
static double sum_exp_ref(const float *y, float *e, int V, float mx, int sequential) {
    double acc[8] = {0}, seq = 0;
    for (int v = 0; v < V; v++) e[v] = exp_f32(y[v] - mx), acc[v % 8] += (double)e[v], seq += (double)e[v];
    return sequential ? seq : ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Rows of logits whose sums or softmax differ from the definition (`sequential`: from the
// plain sequential sum instead).
static int softmax_mismatches(const CpuKernels *k, int sequential, int verbose) {
    static const int Vs[] = {1, 2, 7, 8, 9, 15, 16, 17, 100, 128, 129, 1000};
    static float y[1024], e[1024], re[1024], dy[1024], rdy[1024];
    int bad = 0;
    uint32_t seed = 7;
    for (size_t vi = 0; vi < sizeof Vs / sizeof *Vs; vi++)
        for (int rep = 0; rep < 20; rep++) {
            int V = Vs[vi];
            float mx = -INFINITY, spread = rep < 10 ? 4.0f : 60.0f;  // wide rows reach exp_f32's 0 below −87
            for (int v = 0; v < V; v++) {
                seed = seed * 1664525u + 1013904223u;
                y[v] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * spread;
                mx = y[v] > mx ? y[v] : mx;
            }
            double rs = sum_exp_ref(y, re, V, mx, sequential), s = k->sum_exp(y, e, V, mx);
            float sw = 0.37f;
            for (int v = 0; v < V; v++) rdy[v] = sw * (float)((double)re[v] * (1.0 / rs)), dy[v] = y[v];
            k->scaled_softmax(dy, e, V, 1.0 / s, sw);
            int ok = s == rs && !memcmp(e, re, (size_t)V * sizeof(float)) && !memcmp(dy, rdy, (size_t)V * sizeof(float));
            if (!ok && verbose && bad < 5) printf("FAIL %s softmax: V %d row %d: sum %.17g vs %.17g\n", k->name, V, rep, s, rs);
            bad += !ok;
        }
    return bad;
}

// Attention rows whose softmax or softmax backward differs from the definition (`seqdot`:
// from one whose dot is a sequential float sum, the control).
static int attn_mismatches(const CpuKernels *k, int seqdot, int verbose) {
    static const int ns[] = {1, 2, 7, 8, 9, 16, 17, 31, 63, 64, 100, 255, 256};
    static float sc[512], p[512], rp[512], ex[512], rex[512], dp[512], rdp[512], ds[512], rds[512];
    static uint8_t keep[512];
    int bad = 0;
    uint32_t seed = 5;
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
        for (int drop = 0; drop < 2; drop++)
            for (int rep = 0; rep < 6; rep++) {
                int n = ns[ni], nz = rep * 7 % 40;
                float inv = 1.0f / 0.9f;
                for (int u = 0; u < n + nz; u++) {
                    float r[2];
                    for (int q = 0; q < 2; q++) seed = seed * 1664525u + 1013904223u, r[q] = (float)(seed >> 8) / 16777216.0f - 0.5f;
                    sc[u] = r[0] * (rep < 3 ? 8.0f : 90.0f), dp[u] = rdp[u] = r[1];
                    keep[u] = (seed >> 29) != 0;
                    p[u] = rp[u] = ds[u] = rds[u] = 99.0f;  // the zeros must be written
                }
                float mx = row_max(sc, n);
                double rs = sum_exp_ref(sc, rex, n, mx, 0);
                for (int u = 0; u < n; u++) rp[u] = 1.0f * (float)((double)rex[u] * (1.0 / rs));
                for (int u = 0; u < nz; u++) rp[n + u] = 0.0f;
                k->attn_softmax(p, sc, ex, n, nz);
                int ok = !memcmp(p, rp, (size_t)(n + nz) * sizeof(float));
                if (drop)
                    for (int u = 0; u < n; u++) rdp[u] *= keep[u] ? inv : 0.0f;
                float dot = 0.0f;
                if (seqdot)
                    for (int u = 0; u < n; u++) dot += rp[u] * rdp[u];
                else
                    dot = (float)row_dot(rp, rdp, n);
                for (int u = 0; u < n; u++) rds[u] = rp[u] * (rdp[u] - dot);
                for (int u = 0; u < nz; u++) rds[n + u] = 0.0f;
                k->attn_softmax_backward(ds, dp, p, drop ? keep : NULL, inv, n, nz);
                ok = ok && !memcmp(dp, rdp, (size_t)n * sizeof(float)) && !memcmp(ds, rds, (size_t)(n + nz) * sizeof(float));
                if (!ok && verbose && bad < 5) printf("FAIL %s attention row: n %d nz %d drop %d rep %d\n", k->name, n, nz, drop, rep);
                bad += !ok;
            }
    return bad;
}

// Rows whose tanh backward (dz and the running b1 sums) differs from the definition
// (`reordered`: from (dz·mm)·(1 − hh²) instead).
static int backward_mismatches(const CpuKernels *k, int reordered, int verbose) {
    static const int Hs[] = {1, 5, 16, 17, 100, 512, 2048};
    static float dz[HMAX], rdz[HMAX], gb[HMAX], rgb[HMAX], hh[HMAX], mm[HMAX];
    int bad = 0;
    uint32_t seed = 11;
    for (size_t hi = 0; hi < sizeof Hs / sizeof *Hs; hi++)
        for (int drop = 0; drop < 2; drop++) {
            int H = Hs[hi];
            memset(gb, 0, sizeof gb), memset(rgb, 0, sizeof rgb);
            for (int row = 0; row < 6; row++) {
                for (int i = 0; i < H; i++) {
                    seed = seed * 1664525u + 1013904223u;
                    dz[i] = rdz[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 3.0f;
                    hh[i] = tanh_f32(((float)(seed & 0xffff) / 65536.0f - 0.5f) * 6.0f);
                    mm[i] = (seed >> 3) % 10 ? 1.0f / 0.9f : 0.0f;
                    float g = drop ? (reordered ? (rdz[i] * mm[i]) * (1.0f - hh[i] * hh[i]) : rdz[i] * (mm[i] * (1.0f - hh[i] * hh[i])))
                                   : rdz[i] * (1.0f - hh[i] * hh[i]);
                    rdz[i] = g, rgb[i] += g;
                }
                k->tanh_backward(dz, gb, hh, drop ? mm : NULL, H);
                int ok = !memcmp(dz, rdz, (size_t)H * sizeof(float)) && !memcmp(gb, rgb, (size_t)H * sizeof(float));
                if (!ok && verbose && bad < 5) printf("FAIL %s tanh backward: H %d dropout %d row %d\n", k->name, H, drop, row);
                bad += !ok;
            }
        }
    return bad;
}

// Values whose GELU or GELU backward differ from the definition (`libm`: tanhf instead of tanh_f32).
static int gelu_mismatches(const CpuKernels *k, int libm, int verbose) {
    enum { N = 4099 };
    static float x[N], out[N], ref[N], rd[N];
    const float S = 0.7978845608028654f, c = 0.044715f;
    uint32_t seed = 3;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = i % 97 == 0 ? 0.0f : i % 89 == 0 ? 1e-30f : i % 83 == 0 ? -3e4f : ((float)(seed >> 8) / 16777216.0f - 0.5f) * 24.0f;
        float t = libm ? tanhf(S * (x[i] + c * x[i] * x[i] * x[i])) : tanh_f32(S * (x[i] + c * x[i] * x[i] * x[i]));
        ref[i] = (0.5f * x[i]) * (1.0f + t);
        rd[i] = ((float)(seed & 0xffff) / 65536.0f - 0.5f) * 2.0f;
        rd[i] *= 0.5f * (1.0f + t) + (0.5f * x[i]) * (1.0f - t * t) * S * (1.0f + 3.0f * c * x[i] * x[i]);
    }
    int bad = 0;
    for (int n = 1; n <= N; n = n * 3 + 1) {  // whole and partial SIMD steps
        k->gelu(out, x, (size_t)n);
        bad += memcmp(out, ref, (size_t)n * sizeof(float)) != 0;
    }
    // the backward over the whole sample
    float *dz = malloc(N * sizeof *dz);
    seed = 3;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        dz[i] = ((float)(seed & 0xffff) / 65536.0f - 0.5f) * 2.0f;
    }
    k->gelu_backward(dz, x, N);
    bad += memcmp(dz, rd, N * sizeof(float)) != 0;
    if (bad && verbose) {
        int i = 0;
        while (i < N && out[i] == ref[i]) i++;
        printf("FAIL %s gelu: first mismatch at %d: x %a: %a vs %a\n", k->name, i, x[i], out[i], ref[i]);
    }
    free(dz);
    return bad;
}

// Rows of keep flags that differ from the definition (the kernel given pos + pos_shift).
static int keep_mismatches(const CpuKernels *k, uint32_t pos_shift, int verbose) {
    static const int ns[] = {1, 3, 4, 5, 31, 32, 33, 63, 64, 65, 100, 129, 512, 1000};
    static const uint32_t q0s[] = {0, 5u << 24, (7u << 24) | 3, (1u << 24) | 4095};
    static uint8_t keep[1024], ref[1024];
    RngStream streams[2] = {rng_stream(9, RNG_DROPOUT, 3), rng_stream(10, RNG_KEYED_DROPOUT, 0)};
    int bad = 0;
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
        for (size_t qi = 0; qi < sizeof q0s / sizeof *q0s; qi++)
            for (int si = 0; si < 2; si++)
                for (uint32_t pos = 0; pos < 300; pos += 97) {
                    int n = ns[ni];
                    uint64_t block = si ? (5ull | 11ull << 32) : 2;
                    uint32_t thr = dropout_threshold(0.3);
                    for (int i = 0; i < n; i++) ref[i] = dropout_block(&streams[si], block, pos, q0s[qi] + (uint32_t)i / 4).v[i % 4] >= thr;
                    memset(keep, 0x55, sizeof keep);  // neither 0 nor 1: a flag left unwritten shows
                    k->dropout_keep(keep, n, &streams[si], block, pos + pos_shift, q0s[qi], thr);
                    int ok = !memcmp(keep, ref, (size_t)n);
                    if (!ok && verbose && bad < 5) printf("FAIL %s dropout_keep: n %d q0 %#x stream %d pos %u\n", k->name, n, q0s[qi], si, pos);
                    bad += !ok;
                }
    return bad;
}

// The LayerNorm definition (`unbiased`: the variance over C − 1 instead, the control).
static double lane_sum(const double *v, int n) {
    double acc[8] = {0};
    for (int i = 0; i < n; i++) acc[i % 8] += v[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
static int layernorm_mismatches(const CpuKernels *k, int unbiased, int verbose) {
    static const int Cs[] = {1, 7, 8, 9, 16, 33, 64, 100, 768};
    static float x[1024], w[1024], b[1024], y[1024], ry[1024], d[1024], dx[1024], rdx[1024], dw[1024], rdw[1024], db[1024], rdb[1024];
    static double t[1024];
    int bad = 0;
    uint32_t seed = 13;
    for (size_t ci = 0; ci < sizeof Cs / sizeof *Cs; ci++)
        for (int rep = 0; rep < 6; rep++) {
            int C = Cs[ci];
            for (int i = 0; i < C; i++) {
                seed = seed * 1664525u + 1013904223u;
                x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * (rep < 3 ? 4.0f : 400.0f) + (rep == 5 ? 1000.0f : 0.0f);
                w[i] = 1.0f + ((float)(seed & 0xff) / 256.0f - 0.5f) * 0.2f, b[i] = ((float)((seed >> 4) & 0xff) / 256.0f - 0.5f);
                d[i] = ((float)((seed >> 12) & 0xffff) / 65536.0f - 0.5f) * 2.0f;
                dx[i] = rdx[i] = 0.25f, dw[i] = rdw[i] = 0.5f, db[i] = rdb[i] = -0.5f;
            }
            for (int i = 0; i < C; i++) t[i] = (double)x[i];
            double mean = lane_sum(t, C) / C;
            for (int i = 0; i < C; i++) t[i] = ((double)x[i] - mean) * ((double)x[i] - mean);
            float mf = (float)mean, rstd = (float)(1.0 / sqrt(lane_sum(t, C) / (unbiased && C > 1 ? C - 1 : C) + 1e-5)), stat[2],
                  rstat[2] = {mf, rstd};
            for (int i = 0; i < C; i++) ry[i] = (x[i] - mf) * rstd * w[i] + b[i];
            k->layernorm(y, stat, x, w, b, C, 1e-5);
            static double dm[1024], dnm[1024];
            for (int i = 0; i < C; i++) {
                float norm = (x[i] - mf) * rstd, dn = w[i] * d[i];
                dm[i] = (double)dn, dnm[i] = (double)dn * (double)norm;
            }
            float dmf = (float)(lane_sum(dm, C) / C), dnmf = (float)(lane_sum(dnm, C) / C);
            for (int i = 0; i < C; i++) {
                float norm = (x[i] - mf) * rstd, dn = w[i] * d[i];
                rdw[i] += norm * d[i], rdb[i] += d[i], rdx[i] += (dn - dmf - norm * dnmf) * rstd;
            }
            k->layernorm_backward(dx, dw, db, d, x, rstat, w, C);
            int ok = !memcmp(y, ry, (size_t)C * sizeof(float)) && !memcmp(stat, rstat, sizeof stat) &&
                     !memcmp(dx, rdx, (size_t)C * sizeof(float)) && !memcmp(dw, rdw, (size_t)C * sizeof(float)) &&
                     !memcmp(db, rdb, (size_t)C * sizeof(float));
            if (!ok && verbose && bad < 5) printf("FAIL %s layernorm: C %d row %d\n", k->name, C, rep);
            bad += !ok;
        }
    return bad;
}

// Elements of the AdamW pass `variant` that differ in bits (θ, m or v) from the scalar
// definition, over several lengths, masks and divisors; reorder: the definition's v with
// (1 − β2)·(g·g), the slip the control must catch.
static long adamw_mismatches(const char *variant, int reorder) {
    enum { NMAX = 1037 };
    static float th[NMAX], m[NMAX], v[NMAX], g[NMAX], rth[NMAX], rm[NMAX], rv[NMAX];
    static uint8_t mask[NMAX];
    static const size_t ns[] = {1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, NMAX};
    static const float divs[] = {1.0f, 2.0f, 3.0f};
    AdamWScalars sc = {.decay = 0.999f, .beta1 = 0.9f, .beta2 = 0.95f, .one_minus_beta1 = 0.1f, .one_minus_beta2 = 0.05f,
                       .step_size = 1e-3f / 0.271f, .bias2_sqrt = 0.3122498999f, .eps = 1e-8f};
    uint32_t seed = 99;
    long bad = 0;
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
        for (int withmask = 0; withmask < 2; withmask++)
            for (size_t di = 0; di < 3; di++) {
                size_t n = ns[ni];
                float div = divs[di];
                for (size_t i = 0; i < n; i++) {
                    float r[4];
                    for (int q = 0; q < 4; q++) seed = seed * 1664525u + 1013904223u, r[q] = (float)(seed >> 8) / 16777216.0f - 0.5f;
                    th[i] = r[0], m[i] = r[1] * 0.1f, v[i] = r[2] * r[2] * 0.01f, g[i] = i % 29 == 0 ? 0.0f : r[3] * 3.0f;
                    mask[i] = (uint8_t)(seed >> 31);
                }
                for (size_t i = 0; i < n; i++) {  // the definition
                    float gi = g[i] / div, t = th[i];
                    if (!withmask || mask[i]) t *= sc.decay;
                    rm[i] = sc.beta1 * m[i] + sc.one_minus_beta1 * gi;
                    rv[i] = reorder ? sc.beta2 * v[i] + sc.one_minus_beta2 * (gi * gi) : sc.beta2 * v[i] + sc.one_minus_beta2 * gi * gi;
                    rth[i] = t - sc.step_size * (rm[i] / (sqrtf(rv[i]) / sc.bias2_sqrt + sc.eps));
                }
                if (optimizer_cpu_adamw_pass(variant, th, m, v, g, withmask ? mask : NULL, n, div, &sc)) return -1;  // not run
                for (size_t i = 0; i < n; i++)
                    bad += memcmp(&th[i], &rth[i], 4) || memcmp(&m[i], &rm[i], 4) || memcmp(&v[i], &rv[i], 4);
            }
    return bad;
}

int main(void) {
    int failed = 0, ran = 0;
    for (int v = 0; v < cpu_kernels_count; v++) {
        const CpuKernels *k = &cpu_kernels_all[v];
        if (!k->supported()) {
            printf("skip %s: this CPU cannot run it\n", k->name);
            continue;
        }
        ran++;
        int bad = mismatches(k, 0, 0, 1);
        printf("%s: %d rows differ from the scalar definition\n", k->name, bad);
        failed |= bad != 0;
        // negative controls: the same check must see a wrong counter and a wrong threshold
        int shifted = mismatches(k, 1, 0, 0), flipped = mismatches(k, 0, 0x80000000u, 0);
        printf("%s, negative controls: %d rows differ with the next position's counter, %d with another threshold\n", k->name,
               shifted, flipped);
        if (!shifted || !flipped) failed = printf("FAIL the check accepted a wrong %s kernel\n", k->name);
        int sbad = softmax_mismatches(k, 0, 1), sseq = softmax_mismatches(k, 1, 0);
        printf("%s: %d log-softmax rows differ from the definition; negative control: %d differ from the sequential sum\n",
               k->name, sbad, sseq);
        failed |= sbad != 0;
        if (!sseq) failed = printf("FAIL the check cannot tell the %s sum from a sequential one\n", k->name);
        int tbad = attn_mismatches(k, 0, 1), tseq = attn_mismatches(k, 1, 0);
        printf("%s: %d attention softmax rows differ from the definition; negative control: %d differ from a sequential dot\n",
               k->name, tbad, tseq);
        failed |= tbad != 0;
        if (!tseq) failed = printf("FAIL the check cannot tell the %s attention backward from a sequential dot\n", k->name);
        int bbad = backward_mismatches(k, 0, 1), breo = backward_mismatches(k, 1, 0);
        printf("%s: %d tanh-backward rows differ from the definition; negative control: %d differ from the reordered product\n",
               k->name, bbad, breo);
        failed |= bbad != 0;
        if (!breo) failed = printf("FAIL the check cannot tell the %s backward from a reordered product\n", k->name);
        int kbad = keep_mismatches(k, 0, 1), kshift = keep_mismatches(k, 1, 0);
        printf("%s: %d dropout keep rows differ from the definition; negative control: %d differ with the next position's counter\n",
               k->name, kbad, kshift);
        failed |= kbad != 0;
        if (!kshift) failed = printf("FAIL the check accepted a wrong %s dropout_keep\n", k->name);
        int lbad = layernorm_mismatches(k, 0, 1), lseq = layernorm_mismatches(k, 1, 0);
        printf("%s: %d LayerNorm rows differ from the definition; negative control: %d differ from the unbiased variance\n", k->name,
               lbad, lseq);
        failed |= lbad != 0;
        if (!lseq) failed = printf("FAIL the check cannot tell the %s LayerNorm from one with the unbiased variance\n", k->name);
        int gbad = gelu_mismatches(k, 0, 1), glibm = gelu_mismatches(k, 1, 0);
        printf("%s: %d GELU checks differ from the definition; negative control: %d differ from it with libm's tanhf\n", k->name, gbad,
               glibm);
        failed |= gbad != 0;
        if (!glibm) failed = printf("FAIL the check cannot tell the %s GELU from one with libm's tanhf\n", k->name);
    }
    const char *av[8];
    int nav = optimizer_cpu_adamw_variants(av, 8);
    for (int i = 0; i < nav; i++) {
        long abad = adamw_mismatches(av[i], 0), areo = adamw_mismatches(av[i], 1);
        printf("adamw %s: %ld elements differ from the definition; negative control: %ld differ from it with (1 - b2)*(g*g)\n", av[i],
               abad, areo);
        if (abad < 0 || areo < 0) failed = printf("FAIL the AdamW variant %s did not run\n", av[i]);
        failed |= abad != 0;
        if (!areo) failed = printf("FAIL the check cannot tell the %s AdamW pass from a reordered one\n", av[i]);
    }
    if (!nav) failed = printf("FAIL no AdamW variant ran\n");
    printf("test_kernels: selected %s; %d of %d variants checked\n", cpu_kernels_select()->name, ran, cpu_kernels_count);
    if (!ran) failed = printf("FAIL no variant ran\n");
    return failed ? 1 : 0;
}
