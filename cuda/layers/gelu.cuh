// gelu.cuh — the tanh GELU and its backward, element-wise (cpu_kernels.c's gelu_row and
// gelu_backward_row: tanh_f32, the products in that order, none contracted).
#ifndef DDPTOK_CUDA_LAYERS_GELU_CUH
#define DDPTOK_CUDA_LAYERS_GELU_CUH

#include "layers/common.cuh"

#define GELU_DEV_S 0.7978845608028654f  // √(2/π)
#define GELU_DEV_C 0.044715f

LAYER_FN float gelu_dev(float x) { return (0.5f * x) * (1.0f + tanh_f32(GELU_DEV_S * (x + GELU_DEV_C * x * x * x))); }
// d · gelu'(x)
LAYER_FN float gelu_backward_dev(float d, float x) {
    float t = tanh_f32(GELU_DEV_S * (x + GELU_DEV_C * x * x * x));
    return d * (0.5f * (1.0f + t) + (0.5f * x) * (1.0f - t * t) * GELU_DEV_S * (1.0f + 3.0f * GELU_DEV_C * x * x));
}

#ifdef __CUDACC__
static __global__ void gelu_forward_kernel(float *out, const float *inp, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = gelu_dev(inp[i]);
}
static __global__ void gelu_backward_kernel(float *d, const float *inp, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = gelu_backward_dev(d[i], inp[i]);
}
static inline void gelu_forward(cudaStream_t st, float *out, const float *inp, size_t n) {
    gelu_forward_kernel<<<layer_blocks(n, 256), 256, 0, st>>>(out, inp, n);
}
// d (n) ·= gelu'(inp)
static inline void gelu_backward(cudaStream_t st, float *d, const float *inp, size_t n) {
    gelu_backward_kernel<<<layer_blocks(n, 256), 256, 0, st>>>(d, inp, n);
}
#endif

#endif
