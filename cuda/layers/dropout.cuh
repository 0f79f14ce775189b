// dropout.cuh — the keyed Philox dropout on the device: the keep flag of unit u of `site` at
// padded position `at` is gpt.h's draw (word u mod 4 of the Philox block at counter (block,
// word, site << 24 | u / 4), (block, word) = dropout_counter(...), philox.h), the CPU's
// dropout_keep kernels' bits by construction (integers only), so the global sampler's W-free
// masks hold on the GPU; and the residual additions with their dropped branch.
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
// r (n, C) = h + drop(y), y scaled in place, keep (n, C) its flags (gpt_cpu.c's drop_row and
// the residual loop); without dropout r = h + y.
static __global__ void residual_dropout_kernel(float *r, const float *h, float *y, uint8_t *keep, const int32_t *at, uint32_t site, int n,
                                        int C, DropDev d) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)n * C) return;
    float v = y[i];
    if (d.on) {
        int k = dropout_keep_dev(&d, (uint32_t)at[i / C], site, (uint32_t)(i % C));
        keep[i] = (uint8_t)k;
        v *= dropout_scale_dev(&d, k);
        y[i] = v;
    }
    r[i] = h[i] + v;
}
// out (n·C) = dres ⊙ the forward's scales (drop_rows_backward); without dropout a copy.
static __global__ void dropout_backward_kernel(float *out, const float *dres, const uint8_t *keep, size_t n, DropDev d) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = d.on ? dres[i] * dropout_scale_dev(&d, keep[i]) : dres[i];
}
static inline void residual_forward(cudaStream_t st, float *r, const float *h, float *y, uint8_t *keep, const int32_t *at,
                                    uint32_t site, int n, int C, const DropDev *d) {
    residual_dropout_kernel<<<layer_blocks((size_t)n * C, 256), 256, 0, st>>>(r, h, y, keep, at, site, n, C, *d);
}
static inline void dropout_backward(cudaStream_t st, float *out, const float *dres, const uint8_t *keep, size_t n, const DropDev *d) {
    dropout_backward_kernel<<<layer_blocks(n, 256), 256, 0, st>>>(out, dres, keep, n, *d);
}
#endif

#endif
