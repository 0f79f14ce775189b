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
// with the scalars of adamw_scalars (optimizer.c), one pass over the P values. Every
// operation is IEEE-exact per element (÷, ×, +, √; no contraction, -ffp-contract=off), so
// the variants below, the same C compiled for wider vectors (this file builds with
// -fno-math-errno, which lets sqrtf vectorize: √ is correctly rounded either way), give
// the portable pass's bits; the decay mask selects θ or θ·decay per element, no branch.
static inline __attribute__((always_inline)) void adamw_pass(float *restrict theta, float *restrict m, float *restrict v,
                                                             const float *restrict grad, const uint8_t *restrict mask, size_t n,
                                                             float div, const AdamWScalars *sc) {
    const float decay = sc->decay, b1 = sc->beta1, c1 = sc->one_minus_beta1, b2 = sc->beta2, c2 = sc->one_minus_beta2;
    const float step = sc->step_size, b2s = sc->bias2_sqrt, eps = sc->eps;
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] / div;
        float t = theta[i], td = t * decay;
        t = !mask || mask[i] ? td : t;
        float mi = b1 * m[i] + c1 * g;
        float vi = b2 * v[i] + c2 * g * g;
        m[i] = mi, v[i] = vi;
        theta[i] = t - step * (mi / (sqrtf(vi) / b2s + eps));
    }
}

typedef void (*AdamWPassFn)(float *theta, float *m, float *v, const float *grad, const uint8_t *mask, size_t n, float div,
                            const AdamWScalars *sc);
#define ADAMW_VARIANT(isa, attr)                                                                                        \
    attr static void adamw_pass_##isa(float *theta, float *m, float *v, const float *grad, const uint8_t *mask, size_t n, \
                                      float div, const AdamWScalars *sc) {                                            \
        if (mask) adamw_pass(theta, m, v, grad, mask, n, div, sc);                                                    \
        else adamw_pass(theta, m, v, grad, NULL, n, div, sc);                                                         \
    }
ADAMW_VARIANT(portable, )
ADAMW_VARIANT(avx2, __attribute__((target("avx2"))))
ADAMW_VARIANT(avx512, __attribute__((target("avx512f"))))

static int always(void) { return 1; }
static int has_avx2(void) { return __builtin_cpu_supports("avx2"); }
static int has_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static const struct {
    const char *name;
    int (*supported)(void);
    AdamWPassFn pass;
} adamw_variants[] = {{"avx512", has_avx512, adamw_pass_avx512}, {"avx2", has_avx2, adamw_pass_avx2}, {"portable", always, adamw_pass_portable}};

int optimizer_cpu_adamw_variants(const char **names, int max) {
    int n = 0;
    for (size_t i = 0; i < sizeof adamw_variants / sizeof *adamw_variants; i++)
        if (adamw_variants[i].supported() && n < max) names[n++] = adamw_variants[i].name;
    return n;
}

int optimizer_cpu_adamw_pass(const char *variant, float *theta, float *m, float *v, const float *grad, const uint8_t *mask,
                              size_t n, float div, const AdamWScalars *sc) {
    static AdamWPassFn chosen;
    AdamWPassFn f = NULL;
    if (variant) {
        for (size_t i = 0; i < sizeof adamw_variants / sizeof *adamw_variants; i++)
            if (!strcmp(adamw_variants[i].name, variant) && adamw_variants[i].supported()) f = adamw_variants[i].pass;
        if (!f) return -1;  // not a variant this CPU runs
    } else {
        if (!chosen) {
            size_t i = 0;
            while (!adamw_variants[i].supported()) i++;  // the last one always is
            chosen = adamw_variants[i].pass;
        }
        f = chosen;
    }
    f(theta, m, v, grad, mask, n, div, sc);
    return 0;
}

static void adamw_step_cpu(const Optimizer *o, float *theta, const float *grad, float div) {
    AdamWScalars s;
    adamw_scalars(o, &s);
    optimizer_cpu_adamw_pass(NULL, theta, o->state[0], o->state[1], grad, o->decay_mask, o->P, div, &s);
}

const OptimizerOps optimizer_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .release = cpu_release,
    .download = cpu_download,
    .upload = cpu_upload,
    .step = {[OPT_SGD] = sgd_step_cpu, [OPT_ADAMW] = adamw_step_cpu},
};
