// mlp.c — the window MLP's row (see mlp.h): its tensors, initialisation, budget and the
// double-precision logits that generate samples from.
#include "model/mlp.h"

#include <math.h>
#include <stdlib.h>

#include "base/mem.h"

static void mlp_shape(ModelShape *m, const Config *cfg) {
    mlp_dims(m)->k = cfg->model.context, mlp_dims(m)->D = cfg->model.embed_dim, mlp_dims(m)->H = cfg->model.hidden;
    size_t V = (size_t)m->V, kD = (size_t)mlp_dims(m)->k * mlp_dims(m)->D, H = (size_t)mlp_dims(m)->H;
    model_add_tensor(m, "embedding", 2, V, (size_t)mlp_dims(m)->D, 1);
    model_add_tensor(m, "w1", 2, H, kD, 1);
    model_add_tensor(m, "b1", 1, H, 1, 1);
    model_add_tensor(m, "w2", 2, V, H, 1);
    model_add_tensor(m, "b2", 1, V, 1, 1);
    m->tail = m->offset[MLP_W2];
    m->context = mlp_dims(m)->k;
    model_add_field(m, "vocab_size", m->V);
    model_add_field(m, "context", mlp_dims(m)->k);
    model_add_field(m, "embed_dim", mlp_dims(m)->D);
    model_add_field(m, "hidden", mlp_dims(m)->H);
}

static void mlp_init(const ModelShape *m, uint32_t seed, float *theta) {
    RngStream rng = rng_stream(seed, RNG_INIT, 0);
    double bound[MLP_TENSORS] = {0, 1 / sqrt((double)mlp_dims(m)->k * mlp_dims(m)->D), 1 / sqrt((double)mlp_dims(m)->k * mlp_dims(m)->D), 1 / sqrt((double)mlp_dims(m)->H),
                                 1 / sqrt((double)mlp_dims(m)->H)};
    for (int p = 0; p < MLP_TENSORS; p++) {
        float *x = theta + m->offset[p];
        for (size_t i = 0; i < m->size[p]; i++) {
            if (p == MLP_EMBEDDING) {
                double u1 = rng_uniform(&rng), u2 = rng_uniform(&rng);
                x[i] = (float)(sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2));
            } else {
                x[i] = (float)((2.0 * rng_uniform(&rng) - 1.0) * bound[p]);
            }
        }
    }
}

// mlp_cpu.c's buffers of `rows` positions: E and dE (kD each, dense), Hh, M, Hd, dH (H each),
// Y (V); the factored layer's tables P and sums G (k·V·H each).
static void mlp_budget(Budget *b, const ModelShape *m, uint64_t rows, const char *rows_text, const char *keys, FirstLayer first_layer) {
    uint64_t V = (uint64_t)m->V, D = (uint64_t)mlp_dims(m)->D, H = (uint64_t)mlp_dims(m)->H, k = (uint64_t)mlp_dims(m)->k;
    uint64_t per_row = size_add(size_mul(size_mul(2, k), D), size_add(size_mul(4, H), V));
    budget_add(b, size_mul(size_mul(rows, per_row), 4), keys, "activations %s*(2kD+4H+V)*4", rows_text);
    budget_add(b, first_layer == FIRST_LAYER_FACTORED ? size_mul(size_mul(size_mul(k, V), H), 8) : 0,
               "model.context x data.vocab_size x model.hidden (train.first_layer: factored)", "factored tables k*V*H*8");
}

static void mlp_logits(const ModelShape *m, const float *theta, const int32_t *ids, int n, double *logits) {
    const float *emb = theta + m->offset[MLP_EMBEDDING], *w1 = theta + m->offset[MLP_W1], *b1 = theta + m->offset[MLP_B1];
    const float *w2 = theta + m->offset[MLP_W2], *b2 = theta + m->offset[MLP_B2];
    size_t kD = (size_t)mlp_dims(m)->k * mlp_dims(m)->D;
    double *x = xmalloc(kD * sizeof *x), *h = xmalloc((size_t)mlp_dims(m)->H * sizeof *h);
    for (int j = 0; j < mlp_dims(m)->k; j++) {
        int at = n - mlp_dims(m)->k + j;
        int32_t id = at >= 0 ? ids[at] : 0;
        for (int d = 0; d < mlp_dims(m)->D; d++) x[(size_t)j * mlp_dims(m)->D + d] = emb[(size_t)id * mlp_dims(m)->D + d];
    }
    for (int i = 0; i < mlp_dims(m)->H; i++) {
        double a = b1[i];
        for (size_t c = 0; c < kD; c++) a += (double)w1[(size_t)i * kD + c] * x[c];
        h[i] = tanh(a);
    }
    for (int v = 0; v < m->V; v++) {
        double a = b2[v];
        for (int i = 0; i < mlp_dims(m)->H; i++) a += (double)w2[(size_t)v * mlp_dims(m)->H + i] * h[i];
        logits[v] = a;
    }
    free(x), free(h);
}

const ModelRow mlp_row = {
    .name = "mlp",
    .layout = BATCH_CONTEXTS,
    .param_text = "V*D+H*k*D+V*H+H+V",
    .shape_keys = "data.vocab_size, model.embed_dim, model.hidden, model.context",
    .shape = mlp_shape,
    .init = mlp_init,
    .budget = mlp_budget,
    .logits = mlp_logits,
    .cpu = &compute_mlp_cpu,
};
