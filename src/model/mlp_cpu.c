// mlp_cpu.c — the reference implementation of the window MLP (docs/spec.md §4) on the CPU:
// C + CBLAS, FP32 storage, one microbatch at a time over its supervised positions only.
// The CUDA backend (cuda/mlp_cuda.cu) has the same function shapes and must give the
// same numbers within the parity tolerance.
//
// Per microbatch of T supervised positions:
//   E = gather(embedding, ctx)        (T, kD)
//   Z = E · w1ᵀ + b1                  (T, H)
//   Hh = tanh(Z); Hd = Hh ⊙ M         M = mask / (1 - p), or 1 without dropout
//   Y = Hd · w2ᵀ + b2                 (T, V)
//   loss_t = logsumexp(Y_t) − Y_t[target_t]
// and the backward of scale · Σ_t loss_t accumulated into the gradient.
//
// train.first_layer: factored computes the same Z without E: src/model/mlp_factored.c
// (mlp_factored.h) holds it; this file calls it where the dense layer would gather E.
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
#include "model/cpu_kernels.h"
#include "model/mlp_factored.h"
#include "model/mlp.h"

struct Compute {
    ModelShape m;
    int cap;         // max positions per microbatch
    float *theta;    // (P)
    float *grad;     // (P + 1)
    // activations, allocated once
    float *E;        // (cap, kD) dense first layer only (NULL when factored)
    float *Hh;       // (cap, H) tanh output
    float *M;        // (cap, H) dropout scale (0 or 1/(1-p)), when `dropped`
    int dropped;     // the last forward applied dropout
    float *Hd;       // (cap, H) dropped-out hidden
    float *Y;        // (cap, V) logits, then dlogits
    float *dH;       // (cap, H)
    float *dE;       // (cap, kD) dense first layer only
    // the first layer (train.first_layer); `factored` is NULL when dense
    FirstLayer first_layer;
    Factored *factored;
    float *ex;       // (V) exp terms of one row of the log-softmax
    const CpuKernels *kern;  // the row kernels for this CPU (cpu_kernels.h)
    GradTailHook tail_hook;  // called once the output layer's gradient is final (model.h)
    void *tail_ctx;
    double loss;     // the current microbatch's Σ w·loss, handed to tail_hook
};

static Compute *cpu_create(const ModelShape *m, int cap, FirstLayer first_layer) {
    Compute *cc = xcalloc(1, sizeof *cc);
    cc->m = *m;
    cc->cap = cap;
    cc->first_layer = first_layer;
    size_t P = m->total, kD = (size_t)mlp_dims(m)->k * mlp_dims(m)->D, H = (size_t)mlp_dims(m)->H, V = (size_t)m->V, T = (size_t)cap;
    cc->theta = xcalloc(P, sizeof(float));
    cc->grad = xcalloc(P + 1, sizeof(float));
    cc->Hh = xmalloc(T * H * sizeof(float));
    cc->M = xmalloc(T * H * sizeof(float));
    cc->Hd = xmalloc(T * H * sizeof(float));
    cc->Y = xmalloc(T * V * sizeof(float));
    cc->dH = xmalloc(T * H * sizeof(float));
    if (first_layer == FIRST_LAYER_FACTORED) {
        cc->factored = factored_create(m);
    } else {
        cc->E = xmalloc(T * kD * sizeof(float));
        cc->dE = xmalloc(T * kD * sizeof(float));
    }
    cc->ex = xmalloc(V * sizeof(float));
    cc->kern = cpu_kernels_select();
    return cc;
}

static void cpu_destroy(Compute *cc) {
    if (!cc) return;
    free(cc->theta), free(cc->grad);
    free(cc->E), free(cc->Hh), free(cc->M), free(cc->Hd), free(cc->Y), free(cc->dH), free(cc->dE), free(cc->ex);
    factored_destroy(cc->factored);
    free(cc);
}

// θ may change through set_params and param_buffer (the optimizer steps through it), and
// a window begins at zero_grad: each makes the factored tables stale.
static void cpu_set_params(Compute *cc, const float *t) {
    memcpy(cc->theta, t, cc->m.total * sizeof(float));
    if (cc->factored) factored_params_changed(cc->factored);
}
static void cpu_get_params(Compute *cc, float *t) { memcpy(t, cc->theta, cc->m.total * sizeof(float)); }
static void cpu_zero_grad(Compute *cc) {
    memset(cc->grad, 0, (cc->m.total + 1) * sizeof(float));
    if (cc->factored) factored_window_begin(cc->factored);
}
// Reading the gradient before finish_backward would miss the embedding's and w1's share.
// (grad_buffer may be taken earlier: the tail bucket of train.overlap reduces w2, b2 from it
// while the embedding's and w1's gradients are still pending.)
static void cpu_get_grad(Compute *cc, float *g) {
    ASSERT(!cc->factored || !factored_pending(cc->factored));
    memcpy(g, cc->grad, (cc->m.total + 1) * sizeof(float));
}
static void cpu_set_grad(Compute *cc, const float *g) { memcpy(cc->grad, g, (cc->m.total + 1) * sizeof(float)); }
static float *cpu_grad_buffer(Compute *cc) { return cc->grad; }
static float *cpu_param_buffer(Compute *cc) {
    if (cc->factored) factored_params_changed(cc->factored);
    return cc->theta;
}
static void cpu_set_grad_extra(Compute *cc, float v) { cc->grad[cc->m.total] = v; }
static float cpu_get_grad_extra(Compute *cc) { return cc->grad[cc->m.total]; }

// Completes what the microbatches left pending: the factored layer's gw1 and gemb, once per window.
static void cpu_finish_backward(Compute *cc) {
    if (cc->factored) factored_finish(cc->factored, cc->theta, cc->grad);
}

// ---------------------------------------------------------------------------------------
// Forward, loss and backward of one microbatch

// Forward through the hidden layer and the logits; fills E (dense), Hh, M (with dropout), Hd, Y.
static void mlp_forward_cpu(Compute *cc, const Batch *b, const Dropout *d) {
    const ModelShape *m = &cc->m;
    int T = b->T, k = mlp_dims(m)->k, D = mlp_dims(m)->D, H = mlp_dims(m)->H, V = m->V, kD = k * D;
    const float *emb = cc->theta + m->offset[MLP_EMBEDDING], *w1 = cc->theta + m->offset[MLP_W1],
                *b1 = cc->theta + m->offset[MLP_B1], *w2 = cc->theta + m->offset[MLP_W2], *b2 = cc->theta + m->offset[MLP_B2];
    if (cc->factored) factored_forward(cc->factored, cc->theta, b, cc->Hh);
    else {
        for (int t = 0; t < T; t++)
            for (int j = 0; j < k; j++)
                memcpy(cc->E + (size_t)t * kD + j * D, emb + (size_t)b->ctx[(size_t)t * k + j] * D, (size_t)D * sizeof(float));
        for (int t = 0; t < T; t++) memcpy(cc->Hh + (size_t)t * H, b1, (size_t)H * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, H, kD, 1.0f, cc->E, kD, w1, kD, 1.0f, cc->Hh, H);
    }
    int drop = d && d->p > 0;
    uint32_t thr = drop ? dropout_threshold(d->p) : 0;
    float inv = drop ? (float)(1.0 / (1.0 - d->p)) : 1.0f;
    cc->dropped = drop;
    for (int t = 0; t < T; t++) {
        uint64_t block = 0;
        uint32_t word = 0;  // the dropout counter of this position (philox.h, dropout_counter)
        if (drop) dropout_counter(d->block, d->ids, b->L, d->step, (uint32_t)b->pos[t], &block, &word);
        cc->kern->hidden_row(cc->Hh + (size_t)t * H, cc->Hd + (size_t)t * H, drop ? cc->M + (size_t)t * H : NULL, H,
                       drop ? &d->stream : NULL, block, word, thr, inv);
    }
    for (int t = 0; t < T; t++) memcpy(cc->Y + (size_t)t * V, b2, (size_t)V * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, V, H, 1.0f, cc->Hd, H, w2, H, 1.0f, cc->Y, V);
}

// Row-wise log-softmax loss Σ_t w_t·loss_t (w = 1 without weights); optionally (backward)
// turns Y into dY = scale·w_t·(softmax − onehot) and adds each row of it to the b2 gradient
// while the row is in cache (t ascending, as a separate column sum would).
// row_loss, row_hit (T): each position's loss and hit, when not NULL (ComputeOps.evaluate).
static double mlp_loss_cpu(Compute *cc, const Batch *b, const float *weight, float scale, int backward, int64_t *correct,
                           double *row_loss, int32_t *row_hit) {
    int V = cc->m.V;
    float *restrict gb2 = cc->grad + cc->m.offset[MLP_B2];
    double total = 0;
    for (int t = 0; t < b->T; t++) {
        float *y = cc->Y + (size_t)t * V, w = weight ? weight[t] : 1.0f;
        int64_t hit = 0;
        double loss = cpu_row_loss(cc->kern, y, cc->ex, V, b->target[t], w, scale * w, backward, correct || row_hit ? &hit : NULL);
        total += loss;
        if (correct) *correct += hit;
        if (row_loss) row_loss[t] = loss;
        if (row_hit) row_hit[t] = (int32_t)hit;
        if (backward)
            for (int v = 0; v < V; v++) gb2[v] += y[v];
    }
    return total;
}

static void mlp_backward_cpu(Compute *cc, const Batch *b) {
    const ModelShape *m = &cc->m;
    int T = b->T, k = mlp_dims(m)->k, D = mlp_dims(m)->D, H = mlp_dims(m)->H, V = m->V, kD = k * D;
    const float *w1 = cc->theta + m->offset[MLP_W1], *w2 = cc->theta + m->offset[MLP_W2];
    float *gemb = cc->grad + m->offset[MLP_EMBEDDING], *gw1 = cc->grad + m->offset[MLP_W1], *gb1 = cc->grad + m->offset[MLP_B1],
          *gw2 = cc->grad + m->offset[MLP_W2];
    const float *dY = cc->Y;  // (T, V)
    // w2 += dYᵀ · Hd ; dH = dY · w2 (b2 += Σ_t dY was done by mlp_loss_cpu, row by row)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, H, T, 1.0f, dY, V, cc->Hd, H, 1.0f, gw2, H);
    if (cc->tail_hook) cc->tail_hook(cc->tail_ctx, MODEL_BUCKET_TAIL, cc->loss);  // gw2, gb2 final: the tail bucket may go
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, H, V, 1.0f, dY, V, w2, H, 0.0f, cc->dH, H);
    // dZ = dH ⊙ M ⊙ (1 − Hh²) and b1 += Σ_t dZ (t ascending), in one pass over the rows
    for (int t = 0; t < T; t++) {
        float *dz = cc->dH + (size_t)t * H;
        const float *mm = cc->M + (size_t)t * H;
#ifndef DDPTOK_TEST_BREAK_BACKWARD
        cc->kern->tanh_backward(dz, gb1, cc->Hh + (size_t)t * H, cc->dropped ? mm : NULL, H);
#else  // negative control for tests/fd_mlp.c: forgets tanh's derivative
        for (int i = 0; i < H; i++) dz[i] *= cc->dropped ? mm[i] : 1.0f, gb1[i] += dz[i];
#endif
    }
    // w1 += dZᵀ · E ; dE = dZ · w1 (factored: dZ summed into G, w1 and the embedding from G
    // in cpu_finish_backward)
    if (cc->first_layer == FIRST_LAYER_FACTORED) {
        factored_backward(cc->factored, b, cc->dH);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, kD, T, 1.0f, cc->dH, H, cc->E, kD, 1.0f, gw1, kD);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, kD, H, 1.0f, cc->dH, H, w1, kD, 0.0f, cc->dE, kD);
    // scatter-add into the embedding rows, in position order (deterministic)
    for (int t = 0; t < T; t++)
        for (int j = 0; j < k; j++) {
            float *row = gemb + (size_t)b->ctx[(size_t)t * k + j] * D;
            const float *src = cc->dE + (size_t)t * kD + j * D;
            for (int i = 0; i < D; i++) row[i] += src[i];
        }
}

static double cpu_forward_backward(Compute *cc, const Batch *b, float scale, const Dropout *d) {
    ASSERT(b->T <= cc->cap);
    if (b->T == 0) return 0;
    mlp_forward_cpu(cc, b, d);
    double loss = mlp_loss_cpu(cc, b, b->weight, scale, 1, NULL, NULL, NULL);
    cc->loss = loss;
    mlp_backward_cpu(cc, b);
    return loss;
}

static void cpu_set_tail_hook(Compute *cc, GradTailHook hook, void *ctx) { cc->tail_hook = hook, cc->tail_ctx = ctx; }

static double cpu_evaluate(Compute *cc, const Batch *b, int64_t *correct, double *row_loss, int32_t *row_hit) {
    ASSERT(b->T <= cc->cap);
    if (b->T == 0) return 0;
    mlp_forward_cpu(cc, b, NULL);
    return mlp_loss_cpu(cc, b, NULL, 0, 0, correct, row_loss, row_hit);
}

static void cpu_last_logits(Compute *cc, const Batch *b, float *logits) {
    ASSERT(b->T > 0 && b->T <= cc->cap);
    mlp_forward_cpu(cc, b, NULL);
    memcpy(logits, cc->Y + (size_t)(b->T - 1) * cc->m.V, (size_t)cc->m.V * sizeof(float));
}

const ComputeOps compute_mlp_cpu = {
    .name = "cpu",
    .model = MODEL_MLP,
    .on_device = 0,
    .first_layers = {[FIRST_LAYER_DENSE] = 1, [FIRST_LAYER_FACTORED] = 1},
    .create = cpu_create,
    .destroy = cpu_destroy,
    .set_params = cpu_set_params,
    .get_params = cpu_get_params,
    .zero_grad = cpu_zero_grad,
    .get_grad = cpu_get_grad,
    .set_grad = cpu_set_grad,
    .grad_buffer = cpu_grad_buffer,
    .param_buffer = cpu_param_buffer,
    .set_grad_extra = cpu_set_grad_extra,
    .get_grad_extra = cpu_get_grad_extra,
    .forward_backward = cpu_forward_backward,
    .finish_backward = cpu_finish_backward,
    .set_tail_hook = cpu_set_tail_hook,
    .evaluate = cpu_evaluate,
    .last_logits = cpu_last_logits,
    .optimizer = &optimizer_cpu,
};
