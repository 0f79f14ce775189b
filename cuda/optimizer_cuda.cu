// optimizer_cuda.cu — the optimizer steps on the GPU, twin of src/optimizer_cpu.c (same
// formulas, same host-side scalars; FMA contraction may round differently, so the device
// check compares it with the CPU within a tolerance, not bit for bit). The kernels run on
// the default stream and the step synchronizes: the compute backend has finished the
// gradient (param_buffer/grad_buffer synchronize its stream) before the step reads it.
#include "cuda_common.h"
#include "method/optimizer.h"

static inline unsigned blocks(size_t n, unsigned t) { return (unsigned)((n + t - 1) / t); }

// grad / div: div = W when grad holds the all-reduced sum (MPI data plane), 1 after ncclAvg.
// damp = 1 − dampening.
// mask (n bytes, device; NULL: every element): weight decay only where it is 1, the CPU's
// optimizer_cpu.c (train.optimizer.decay: matrices).
__global__ void sgd_kernel(float *theta, float *mom, const float *grad, size_t n, float div, float lr, float mu, float damp,
                           float wd, int valid, const uint8_t *mask) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = grad[i] / div;
    if (!mask || mask[i]) g += wd * theta[i];
    float b = valid ? mu * mom[i] + damp * g : g;
    mom[i] = b;
    theta[i] -= lr * b;
}

__global__ void adamw_kernel(float *theta, float *m, float *v, const float *grad, size_t n, float div, AdamWScalars s,
                             const uint8_t *mask) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = grad[i] / div;
    float th = !mask || mask[i] ? theta[i] * s.decay : theta[i];
    float mi = s.beta1 * m[i] + s.one_minus_beta1 * g;
    float vi = s.beta2 * v[i] + s.one_minus_beta2 * g * g;
    m[i] = mi, v[i] = vi;
    theta[i] = th - s.step_size * (mi / (sqrtf(vi) / s.bias2_sqrt + s.eps));
}

static float *cuda_alloc(size_t n) {
    float *p;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
    CUDA_CHECK(cudaMemset(p, 0, n * sizeof(float)));
    return p;
}
static void cuda_release(float *buf) { cudaFree(buf); }
static void cuda_download(float *host, const float *buf, size_t n) {
    CUDA_CHECK(cudaMemcpy(host, buf, n * sizeof(float), cudaMemcpyDeviceToHost));
}
static void cuda_upload(float *buf, const float *host, size_t n) {
    CUDA_CHECK(cudaMemcpy(buf, host, n * sizeof(float), cudaMemcpyHostToDevice));
}
static const uint8_t *cuda_mask_upload(const uint8_t *host, size_t n) {
    uint8_t *p;
    CUDA_CHECK(cudaMalloc(&p, n));
    CUDA_CHECK(cudaMemcpy(p, host, n, cudaMemcpyHostToDevice));
    return p;
}
static void cuda_mask_release(const uint8_t *mask) { cudaFree((void *)mask); }

static void sgd_step_cuda(const Optimizer *o, float *theta, const float *grad, float div) {
    sgd_kernel<<<blocks(o->P, 256), 256>>>(theta, o->state[0], grad, o->P, div, (float)o->lr, (float)o->h.momentum,
                                           (float)(1.0 - o->h.dampening), (float)o->h.weight_decay, o->steps > 1, o->decay_mask);
    CUDA_LAUNCH_CHECK();
    CUDA_CHECK(cudaDeviceSynchronize());
}

static void adamw_step_cuda(const Optimizer *o, float *theta, const float *grad, float div) {
    AdamWScalars s;
    adamw_scalars(o, &s);
    adamw_kernel<<<blocks(o->P, 256), 256>>>(theta, o->state[0], o->state[1], grad, o->P, div, s, o->decay_mask);
    CUDA_LAUNCH_CHECK();
    CUDA_CHECK(cudaDeviceSynchronize());
}

extern "C" const OptimizerOps optimizer_cuda = {
    .name = "cuda",
    .alloc = cuda_alloc,
    .release = cuda_release,
    .download = cuda_download,
    .upload = cuda_upload,
    .step = {/* [OPT_SGD] = */ sgd_step_cuda, /* [OPT_ADAMW] = */ adamw_step_cuda},  // C++ has no array designators
    .mask_upload = cuda_mask_upload,
    .mask_release = cuda_mask_release,
};
