// embedding.cuh — embedding tables on the device: the GPT's encoder (token and position rows
// added), the rows gathered and scattered, and the gradient scatter of every model through a CSR list of each
// table row's entries built on the host in entry order, so a table row's gradient adds its
// entries in the CPU's order (one thread per (row, feature), no atomics).
#ifndef DDPTOK_CUDA_LAYERS_EMBEDDING_CUH
#define DDPTOK_CUDA_LAYERS_EMBEDDING_CUH

#include <string.h>

#include "layers/common.cuh"
#ifdef __CUDACC__
#include "cuda_common.h"
#endif

// start (K + 1), entry (n): the entries e of key[e] = v are entry[start[v] .. start[v+1] - 1],
// ascending; cnt (K + 1) scratch. Host code.
static inline void csr_build(const int32_t *key, int n, int K, int32_t *start, int32_t *entry, int32_t *cnt) {
    memset(cnt, 0, (size_t)(K + 1) * sizeof *cnt);
    for (int e = 0; e < n; e++) cnt[key[e]]++;
    start[0] = 0;
    for (int v = 0; v < K; v++) start[v + 1] = start[v] + cnt[v];
    memcpy(cnt, start, (size_t)K * sizeof *cnt);
    for (int e = 0; e < n; e++) entry[cnt[key[e]]++] = e;
}

// Feature d of table row v: g[v][d] += Σ over its entries (ascending) of dE[entry][d].
LAYER_FN void embedding_scatter_dev(float *g, const float *dE, const int32_t *start, const int32_t *entry, int D, int v, int d) {
    int a = start[v], b = start[v + 1];
    if (a == b) return;
    float acc = g[(size_t)v * D + d];
    for (int e = a; e < b; e++) acc += dE[(size_t)entry[e] * D + d];
    g[(size_t)v * D + d] = acc;
}

#ifdef __CUDACC__
static __global__ void embedding_scatter_kernel(float *g, const float *dE, const int32_t *start, const int32_t *entry, int V, int D) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (size_t)V * D) embedding_scatter_dev(g, dE, start, entry, D, (int)(idx / D), (int)(idx % D));
}
static inline void embedding_backward(cudaStream_t st, float *g, const float *dE, const int32_t *start, const int32_t *entry, int V, int D) {
    embedding_scatter_kernel<<<layer_blocks((size_t)V * D, 128), 128, 0, st>>>(g, dE, start, entry, V, D);
}
// out (n, C) row p = wte[input[p]] + wpe[tpos[p]] (tpos: the row's position in its run; layers.h
// encoder_forward, which walks the runs on the host).
static __global__ void encoder_forward_kernel(float *out, const float *wte, const float *wpe, const int32_t *input, const int32_t *tpos,
                                              int n, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)n * C) return;
    size_t p = i / C, c = i % C;
    out[i] = wte[(size_t)input[p] * C + c] + wpe[(size_t)tpos[p] * C + c];
}
static inline void encoder_forward(cudaStream_t st, float *out, const float *wte, const float *wpe, const int32_t *input,
                                   const int32_t *tpos, int n, int C) {
    encoder_forward_kernel<<<layer_blocks((size_t)n * C, 256), 256, 0, st>>>(out, wte, wpe, input, tpos, n, C);
}
// dwte, dwpe += dout's rows through the CSR lists of each table row's entries (layers.h
// encoder_backward: the same order, entries ascending).
static inline void encoder_backward(cudaStream_t st, float *dwte, float *dwpe, const float *dout, const int32_t *wte_start,
                                    const int32_t *wte_entry, const int32_t *wpe_start, const int32_t *wpe_entry, int V, int Lmax, int C) {
    embedding_backward(st, dwte, dout, wte_start, wte_entry, V, C);
    embedding_backward(st, dwpe, dout, wpe_start, wpe_entry, Lmax, C);
}
// Rows of X (rows, C) gathered (out[i] = X[row[i]]) or scattered (out[row[i]] = X[i], the rest untouched).
static __global__ void rows_gather_kernel(float *out, const float *X, const int32_t *row, int rows, int C, int scatter) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * C) return;
    size_t r = i / C, c = i % C;
    if (scatter) out[(size_t)row[r] * C + c] = X[i];
    else out[i] = X[(size_t)row[r] * C + c];
}
// out (T, C) = rows row[0..T-1] of inp (layers.h rows_gather).
static inline void rows_gather(cudaStream_t st, float *out, const float *inp, const int32_t *row, int T, int C) {
    rows_gather_kernel<<<layer_blocks((size_t)T * C, 256), 256, 0, st>>>(out, inp, row, T, C, 0);
}
// out (N, C) = 0 except rows row[i] = inp's row i (layers.h rows_scatter).
static inline void rows_scatter(cudaStream_t st, float *out, const float *inp, const int32_t *row, int T, int N, int C) {
    CUDA_CHECK(cudaMemsetAsync(out, 0, (size_t)N * C * sizeof(float), st));
    rows_gather_kernel<<<layer_blocks((size_t)T * C, 256), 256, 0, st>>>(out, inp, row, T, C, 1);
}
#endif

#endif
