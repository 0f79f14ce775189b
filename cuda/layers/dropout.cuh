// dropout.cuh — the keyed Philox dropout on the device: the keep flag of unit u of `site` at
// padded position `at` is gpt.h's draw (word u mod 4 of the Philox block at counter (block,
// word, site << 24 | u / 4), (block, word) = dropout_counter(...), philox.h), the CPU's
// dropout_keep kernels' bits by construction (integers only), so the global sampler's W-free
// masks hold on the GPU; and the residual addition. The host functions are layers.h's, by
// name and argument order (after the stream).
#ifndef DDPTOK_CUDA_LAYERS_DROPOUT_CUH
#define DDPTOK_CUDA_LAYERS_DROPOUT_CUH

#include "layers/common.cuh"

// One microbatch's dropout as the kernels read it (ids: the slots' sequence ids on the
// device, NULL for per-microbatch keying).
typedef struct {
    int on;            // p > 0
    RngStream stream;
    uint64_t block;
    const int32_t *ids;
    int L;             // the batch's padded length
    uint32_t step;
    uint32_t thr;      // dropout_threshold(p)
    float inv;         // 1/(1 − p)
} DropDev;

LAYER_FN int dropout_keep_dev(const DropDev *d, uint32_t at, uint32_t site, uint32_t u) {
    uint64_t block;
    uint32_t word;
    dropout_counter(d->block, d->ids, d->L, d->step, at, &block, &word);
    return rng_block(&d->stream, block, word, site << 24 | u >> 2).v[u & 3] >= d->thr;
}
LAYER_FN float dropout_scale_dev(const DropDev *d, int keep) { return keep ? d->inv : 0.0f; }

#ifdef __CUDACC__
// x (n, C) ·= keep ? inv : 0, keep (n, C) the flags of row p's units 0..C-1 at padded
// position at[p] (layers.h dropout_forward); off: nothing.
static __global__ void dropout_forward_kernel(float *x, uint8_t *keep, const int32_t *at, uint32_t site, int n, int C, DropDev d) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)n * C) return;
    int k = dropout_keep_dev(&d, (uint32_t)at[i / C], site, (uint32_t)(i % C));
    keep[i] = (uint8_t)k;
    x[i] *= dropout_scale_dev(&d, k);
}
// out (n·C) = dres ⊙ the forward's scales (layers.h dropout_backward); off: a copy.
static __global__ void dropout_backward_kernel(float *out, const float *dres, const uint8_t *keep, size_t n, DropDev d) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = d.on ? dres[i] * dropout_scale_dev(&d, keep[i]) : dres[i];
}
// out (N) = inp1 + inp2 (layers.h residual_forward).
static __global__ void residual_forward_kernel(float *out, const float *inp1, const float *inp2, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = inp1[i] + inp2[i];
}
static inline void dropout_forward(cudaStream_t st, float *x, uint8_t *keep, const int32_t *at, uint32_t site, int n, int C,
                                   const DropDev *d) {
    if (d->on) dropout_forward_kernel<<<layer_blocks((size_t)n * C, 256), 256, 0, st>>>(x, keep, at, site, n, C, *d);
}
static inline void dropout_backward(cudaStream_t st, float *out, const float *dres, const uint8_t *keep, size_t n, const DropDev *d) {
    dropout_backward_kernel<<<layer_blocks(n, 256), 256, 0, st>>>(out, dres, keep, n, *d);
}
static inline void residual_forward(cudaStream_t st, float *out, const float *inp1, const float *inp2, size_t N) {
    residual_forward_kernel<<<layer_blocks(N, 256), 256, 0, st>>>(out, inp1, inp2, N);
}
#endif

#endif
