// attention.cuh — the rows of the causal attention over packed runs (layers.c's
// attention_forward and attention_backward between their GEMMs): one thread per (head, query
// row) of a run, the CPU's row code — the softmax over keys 0..t with exp_f32 and eight
// partial sums in double, the dropout of the probabilities (units h·Lmax + u of the attention
// site), and the softmax's backward dS = P ⊙ (dP − Σ P·dP) with that sum as eight partial
// sums — so a row gets the CPU's bits from the same scores; and the host functions of the
// whole layer, whose GEMMs around those rows are strided-batched over the heads of one run.
#ifndef DDPTOK_CUDA_LAYERS_ATTENTION_CUH
#define DDPTOK_CUDA_LAYERS_ATTENTION_CUH

#include "base/row_reduce.h"
#include "layers/common.cuh"
#include "layers/dropout.cuh"
#ifdef __CUDACC__
#include "layers/linear.cuh"
#endif

// row_max and row_dot: base/row_reduce.h, the CPU layers' own.
// Σ_v exp_f32(y[v] − mx) in double, eight partial sums; e[v] the exps (e may be y: cpu_kernels.c's sum_exp_row).
LAYER_FN double sum_exp_dev(const float *y, float *e, int V, float mx) {
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int v = 0;
    for (; v + 8 <= V; v += 8)
        for (int l = 0; l < 8; l++) {
            float x = exp_f32(y[v + l] - mx);
            e[v + l] = x, acc[l] += (double)x;
        }
    for (int l = 0; v + l < V; l++) {
        float x = exp_f32(y[v + l] - mx);
        e[v + l] = x, acc[l] += (double)x;
    }
    return lanes_sum8(acc);
}

// Query row t of a run of len keys, in place: the scores s (len) become P (keys 0..t, zeros after).
LAYER_FN void causal_softmax_row_dev(float *s, int t, int len) {
    float mx = row_max(s, t + 1);
    double inv = 1.0 / sum_exp_dev(s, s, t + 1, mx);
    for (int u = 0; u <= t; u++) s[u] = 1.0f * (float)((double)s[u] * inv);
    for (int u = t + 1; u < len; u++) s[u] = 0.0f;
}
// Its dropout: pd (len) = p ⊙ mask, keep (len) the flags of units u0 + u (u0 = h·Lmax) at `at`.
LAYER_FN void attention_dropout_row_dev(float *pd, uint8_t *keep, const float *p, int t, int len, const DropDev *d, uint32_t at,
                                        uint32_t site, uint32_t u0) {
    for (int u = 0; u <= t; u++) {
        int k = dropout_keep_dev(d, at, site, u0 + (uint32_t)u);
        keep[u] = (uint8_t)k;
        pd[u] = p[u] * dropout_scale_dev(d, k);
    }
    for (int u = t + 1; u < len; u++) pd[u] = 0.0f;
}
// The softmax's backward of row t, in place: dp (len) = ∂/∂P·mask... becomes dS (zeros after t).
LAYER_FN void causal_softmax_backward_row_dev(float *dp, const float *p, const uint8_t *keep, int t, int len, const DropDev *d) {
    if (d->on)
        for (int u = 0; u <= t; u++) dp[u] *= dropout_scale_dev(d, keep[u]);
    float dotf = (float)row_dot(p, dp, t + 1);
    for (int u = 0; u <= t; u++) dp[u] = p[u] * (dp[u] - dotf);
    for (int u = t + 1; u < len; u++) dp[u] = 0.0f;
}
// Pd = P ⊙ the forward's mask again (the backward's reading of keep).
LAYER_FN void attention_redrop_row_dev(float *pd, const float *p, const uint8_t *keep, int t, int len, const DropDev *d) {
    for (int u = 0; u <= t; u++) pd[u] = p[u] * dropout_scale_dev(d, keep[u]);
    for (int u = t + 1; u < len; u++) pd[u] = 0.0f;
}

#ifdef __CUDACC__
// One run of len rows starting at packed row s0, NH heads of (len, len) at P (head h at h·len²).
static __global__ void causal_softmax_kernel(float *P, float *Pd, uint8_t *keep, int NH, int len, int s0, const int32_t *at, int Lmax,
                                      uint32_t site, DropDev d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // h·len + t
    if (i >= NH * len) return;
    int h = i / len, t = i % len;
    size_t o = (size_t)h * len * len + (size_t)t * len;
    causal_softmax_row_dev(P + o, t, len);
    if (d.on) attention_dropout_row_dev(Pd + o, keep + o, P + o, t, len, &d, (uint32_t)at[s0 + t], site, (uint32_t)(h * Lmax));
}
static __global__ void attention_redrop_kernel(float *Pd, const float *P, const uint8_t *keep, int NH, int len, DropDev d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= NH * len) return;
    size_t o = (size_t)(i / len) * len * len + (size_t)(i % len) * len;
    attention_redrop_row_dev(Pd + o, P + o, keep + o, i % len, len, &d);
}
static __global__ void causal_softmax_backward_kernel(float *dP, const float *P, const uint8_t *keep, int NH, int len, DropDev d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= NH * len) return;
    size_t o = (size_t)(i / len) * len * len + (size_t)(i % len) * len;
    causal_softmax_backward_row_dev(dP + o, P + o, keep + o, i % len, len, &d);
}

// run_att (runs + 1) = Σ NH·len² before run j: where run j's probabilities start (layers.h
// attention_runs; host code).
static inline void attention_runs(int64_t *run_att, const int32_t *run_start, int runs, int NH) {
    run_att[0] = 0;
    for (int j = 0; j < runs; j++) {
        int64_t len = run_start[j + 1] - run_start[j];
        run_att[j + 1] = run_att[j] + (int64_t)NH * len * len;
    }
}

// The attention of one block over packed runs (layers.h attention_forward / attention_backward,
// by name and argument order after the handle and stream; the CPU's ex scratch is a register
// here): per run (run_start on the host), the NH heads as one strided-batched GEMM per
// product (head h: columns h·hs of q, k, v; its (len, len) matrices at h·len²), the rows by
// the kernels above. dpd, ds: (NH, Lmax, Lmax), one run's heads (the CPU: one head's).
static inline void attention_forward(cublasHandle_t blas, cudaStream_t st, float *out, float *att, uint8_t *keep_att, const float *qkv,
                                     const int32_t *run_start, const int64_t *run_att, int runs, const int32_t *at, uint32_t site,
                                     int NH, int C, int Lmax, const DropDev *d, float *dpd, float *ds) {
    (void)ds;
    int hs = C / NH;
    float scale = (float)(1.0 / sqrt((double)hs));
    for (int j = 0; j < runs; j++) {
        int s = run_start[j], len = run_start[j + 1] - s;
        long long L2 = (long long)len * len;
        const float *q = qkv + (size_t)s * 3 * C, *k = q + C, *v = q + 2 * C;
        float *P = att + run_att[j];
        uint8_t *keep = keep_att + run_att[j];
        // S = scale·q·kᵀ (into P), then the causal softmax in place and the dropout into dpd
        gemm_rm(blas, 0, 1, len, len, hs, scale, q, 3 * C, k, 3 * C, 0.0f, P, len, NH, hs, hs, L2);
        causal_softmax_kernel<<<layer_blocks((size_t)NH * len, 64), 64, 0, st>>>(P, dpd, keep, NH, len, s, at, Lmax, site, *d);
        CUDA_LAUNCH_CHECK();
        // y = (P ⊙ mask)·v, head h into columns h·hs of out
        gemm_rm(blas, 0, 0, len, hs, len, 1.0f, d->on ? dpd : P, len, v, 3 * C, 0.0f, out + (size_t)s * C, C, NH, L2, hs, hs);
    }
}

static inline void attention_backward(cublasHandle_t blas, cudaStream_t st, float *dqkv, const float *dout, const float *qkv,
                                      const float *att, const uint8_t *keep_att, const int32_t *run_start, const int64_t *run_att,
                                      int runs, int NH, int C, const DropDev *d, float *dpd, float *ds) {
    int hs = C / NH;
    float scale = (float)(1.0 / sqrt((double)hs));
    for (int j = 0; j < runs; j++) {
        int s = run_start[j], len = run_start[j + 1] - s;
        long long L2 = (long long)len * len;
        const float *q = qkv + (size_t)s * 3 * C, *k = q + C, *v = q + 2 * C, *dy = dout + (size_t)s * C;
        const float *P = att + run_att[j], *Pd = P;
        const uint8_t *keep = keep_att + run_att[j];
        float *dq = dqkv + (size_t)s * 3 * C, *dk = dq + C, *dv = dq + 2 * C, *dS = ds;
        unsigned g = layer_blocks((size_t)NH * len, 64);
        if (d->on) {  // Pd = P ⊙ mask again
            attention_redrop_kernel<<<g, 64, 0, st>>>(dpd, P, keep, NH, len, *d);
            CUDA_LAUNCH_CHECK();
            Pd = dpd;
        }
        // dv = Pdᵀ·dy
        gemm_rm(blas, 1, 0, len, hs, len, 1.0f, Pd, len, dy, C, 0.0f, dv, 3 * C, NH, L2, hs, hs);
        // dPd = dy·vᵀ; dP = dPd ⊙ mask; dS = P ⊙ (dP − Σ_u P·dP), in place
        gemm_rm(blas, 0, 1, len, len, hs, 1.0f, dy, C, v, 3 * C, 0.0f, dS, len, NH, hs, hs, L2);
        causal_softmax_backward_kernel<<<g, 64, 0, st>>>(dS, P, keep, NH, len, *d);
        CUDA_LAUNCH_CHECK();
        // dq = scale·dS·k; dk = scale·dSᵀ·q
        gemm_rm(blas, 0, 0, len, hs, len, scale, dS, len, k, 3 * C, 0.0f, dq, 3 * C, NH, L2, hs, hs);
        gemm_rm(blas, 1, 0, len, hs, len, scale, dS, len, q, 3 * C, 0.0f, dk, 3 * C, NH, L2, hs, hs);
    }
}
#endif

#endif
