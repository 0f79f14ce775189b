// attention.cuh — the rows of the causal attention over packed runs (gpt_cpu.c's
// attention_forward and attention_backward between their GEMMs): one thread per (head, query
// row) of a run, the CPU's row code — the softmax over keys 0..t with exp_f32 and eight
// partial sums in double, the dropout of the probabilities (units h·Lmax + u of the attention
// site), and the softmax's backward dS = P ⊙ (dP − Σ P·dP) with that sum as eight partial
// sums — so a row gets the CPU's bits from the same scores. The GEMMs around them are
// strided-batched over the heads of one run (gpt_cuda.cu).
#ifndef DDPTOK_CUDA_LAYERS_ATTENTION_CUH
#define DDPTOK_CUDA_LAYERS_ATTENTION_CUH

#include "layers/common.cuh"
#include "layers/dropout.cuh"

// The largest of x[0..n-1] (n ≥ 1), eight lanes (gpt_cpu.c's row_max).
LAYER_FN float row_max_dev(const float *x, int n) {
    float m[8];
    for (int l = 0; l < 8; l++) m[l] = x[0];
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int l = 1; l < 8; l++) m[0] = m[l] > m[0] ? m[l] : m[0];
    return m[0];
}
// Σ a·b in double as eight partial sums (gpt_cpu.c's row_dot).
LAYER_FN double row_dot_dev(const float *a, const float *b, int n) {
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)a[i + l] * (double)b[i + l];
    for (int l = 0; i + l < n; l++) acc[l] += (double)a[i + l] * (double)b[i + l];
    return lanes_sum8(acc);
}
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
    float mx = row_max_dev(s, t + 1);
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
    float dotf = (float)row_dot_dev(p, dp, t + 1);
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
#endif

#endif
