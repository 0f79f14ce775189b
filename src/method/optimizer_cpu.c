// optimizer_cpu.c — the reference optimizer steps on the CPU (FP32), twin of
// cuda/optimizer_cuda.cu: SGD with torch.optim.SGD semantics (momentum, dampening) and AdamW with
// torch.optim.AdamW semantics (docs/spec.md §4; docs/model.md "Optimizers").
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "method/optimizer.h"

static float *cpu_alloc(size_t n) { return xcalloc(n, sizeof(float)); }
static void cpu_release(float *buf) { free(buf); }
static void cpu_download(float *host, const float *buf, size_t n) { memcpy(host, buf, n * sizeof(float)); }
static void cpu_upload(float *buf, const float *host, size_t n) { memcpy(buf, host, n * sizeof(float)); }

// SGD (torch.optim.SGD, not Nesterov), one pass: the 1/W of the gradient average (grad
// holds the sum when div = W), weight decay, momentum with dampening d and the step:
//   g = grad/div + wd·θ;  buf = g (first update) or μ·buf + (1 − d)·g;  θ −= lr·buf.
// Dividing here gives the bits of an average taken first; for a power-of-two div the
// multiplication by 1/div is exact, so it gives them too; with d = 0 the factor 1 − d = 1
// is exact too (the bits of no dampening). `mul` and `first` are constants at each call, so
// every variant is a loop of its own.
// A decay mask (train.optimizer.decay: matrices) takes the decay term out where it is 0: the
// gradient alone, the bits of wd = 0 there.
static inline __attribute__((always_inline)) void sgd_pass(float *theta, float *mom, const float *grad, size_t P,
                                                           float div, float inv, float lr, float mu, float damp, float wd,
                                                           int mul, int first, const uint8_t *mask) {
    for (size_t i = 0; i < P; i++) {
        float g = mul ? grad[i] * inv : grad[i] / div;
        if (!mask || mask[i]) g += wd * theta[i];
        mom[i] = first ? g : mu * mom[i] + damp * g;
        theta[i] -= lr * mom[i];
    }
}

static void sgd_step_cpu(const Optimizer *o, float *theta, const float *grad, float div) {
    int e;
    int mul = frexpf(div, &e) == 0.5f;  // div a power of two: 1/div is exact
    float inv = 1.0f / div, lr = (float)o->lr, mu = (float)o->h.momentum, wd = (float)o->h.weight_decay;
    float damp = (float)(1.0 - o->h.dampening);
    float *mom = o->state[0];
    int first = o->steps == 1;
    if (mul) first ? sgd_pass(theta, mom, grad, o->P, div, inv, lr, mu, damp, wd, 1, 1, o->decay_mask) : sgd_pass(theta, mom, grad, o->P, div, inv, lr, mu, damp, wd, 1, 0, o->decay_mask);
    else first ? sgd_pass(theta, mom, grad, o->P, div, inv, lr, mu, damp, wd, 0, 1, o->decay_mask) : sgd_pass(theta, mom, grad, o->P, div, inv, lr, mu, damp, wd, 0, 0, o->decay_mask);
}

// AdamW (torch.optim.AdamW, amsgrad off), t = o->steps:
//   θ ← θ·(1 − lr·wd)                         decoupled weight decay, before the update
//   m ← β1·m + (1 − β1)·g;  v ← β2·v + (1 − β2)·g²
//   θ ← θ − (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + ε)
// with the scalars of adamw_scalars (optimizer.c).
static void adamw_step_cpu(const Optimizer *o, float *theta, const float *grad, float div) {
    AdamWScalars s;
    adamw_scalars(o, &s);
    float *m = o->state[0], *v = o->state[1];
    for (size_t i = 0; i < o->P; i++) {
        float g = grad[i] / div;
        if (!o->decay_mask || o->decay_mask[i]) theta[i] *= s.decay;  // the mask: no decay where 0
        m[i] = s.beta1 * m[i] + s.one_minus_beta1 * g;
        v[i] = s.beta2 * v[i] + s.one_minus_beta2 * g * g;
        theta[i] -= s.step_size * (m[i] / (sqrtf(v[i]) / s.bias2_sqrt + s.eps));
    }
}

const OptimizerOps optimizer_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .release = cpu_release,
    .download = cpu_download,
    .upload = cpu_upload,
    .step = {[OPT_SGD] = sgd_step_cpu, [OPT_ADAMW] = adamw_step_cpu},
};
