// mlp_factored.c — the factored first layer of the CPU backend (train.first_layer:
// factored; see mlp_factored.h), computing the same Z as the dense layer without E.
#include "model/mlp_factored.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"

typedef float f32x8 __attribute__((vector_size(32)));  // GCC/Clang vector extension

// The gather and the scatter, 8 units at a time in registers across the k slots: each
// element still sums its terms in the same order (b1, then j ascending; t ascending), and
// the AVX2 clone does the same element-wise adds on wider vectors (no contraction).

// Z = b1 + Σ_j P_j[ctx[t, j]] into Z (T, H).
__attribute__((target_clones("avx2", "default"))) static void factored_gather(float *Z, const float *P, const float *b1,
                                                                              const int32_t *ctx, int T, int k, int V, int H) {
    size_t VH = (size_t)V * H;
    const float *row[k];
    for (int t = 0; t < T; t++) {
        float *z = Z + (size_t)t * H;
        for (int j = 0; j < k; j++) row[j] = P + j * VH + (size_t)ctx[(size_t)t * k + j] * H;
        int i = 0;
        for (; i + 8 <= H; i += 8) {
            f32x8 acc, r;
            memcpy(&acc, b1 + i, sizeof acc);
            for (int j = 0; j < k; j++) memcpy(&r, row[j] + i, sizeof r), acc += r;
            memcpy(z + i, &acc, sizeof acc);
        }
        for (; i < H; i++) {
            float acc = b1[i];
            for (int j = 0; j < k; j++) acc += row[j][i];
            z[i] = acc;
        }
    }
}

// G_j[ctx[t, j]] += dZ[t] for t in order (deterministic).
__attribute__((target_clones("avx2", "default"))) static void factored_scatter(float *G, const float *dZ, const int32_t *ctx, int T,
                                                                               int k, int V, int H) {
    size_t VH = (size_t)V * H;
    float *row[k];
    for (int t = 0; t < T; t++) {
        const float *src = dZ + (size_t)t * H;
        for (int j = 0; j < k; j++) {
#ifndef DDPTOK_TEST_BREAK_FACTORED
            int32_t id = ctx[(size_t)t * k + j];
#else  // negative control for the factored parity and finite-difference tests: the slot after j's id
            int32_t id = ctx[(size_t)t * k + (j + 1) % k];
#endif
            row[j] = G + j * VH + (size_t)id * H;
        }
        int i = 0;
        for (; i + 8 <= H; i += 8) {
            f32x8 d, g;
            memcpy(&d, src + i, sizeof d);
            for (int j = 0; j < k; j++) memcpy(&g, row[j] + i, sizeof g), g += d, memcpy(row[j] + i, &g, sizeof g);
        }
        for (; i < H; i++)
            for (int j = 0; j < k; j++) row[j][i] += src[i];
    }
}

struct Factored {
    ModelShape m;
    float *tables;   // (k, V, H) P_j = emb · w1_jᵀ, valid while tables_valid (θ unchanged since)
    int tables_valid;
    float *sums;     // (k, V, H) G_j[v] = Σ dZ[t] over the window's positions with ctx[t, j] = v; zero unless pending
    int pending;     // sums that factored_finish has not yet turned into gw1, gemb
};

Factored *factored_create(const ModelShape *m) {
    Factored *f = xcalloc(1, sizeof *f);
    f->m = *m;
    f->tables = xmalloc((size_t)mlp_dims(m)->k * m->V * mlp_dims(m)->H * sizeof(float));
    f->sums = xcalloc((size_t)mlp_dims(m)->k * m->V * mlp_dims(m)->H, sizeof(float));
    return f;
}

void factored_destroy(Factored *f) {
    if (!f) return;
    free(f->tables), free(f->sums), free(f);
}

void factored_params_changed(Factored *f) { f->tables_valid = 0; }

int factored_pending(const Factored *f) { return f->pending; }

void factored_window_begin(Factored *f) {
    if (f->pending) memset(f->sums, 0, (size_t)mlp_dims(&f->m)->k * f->m.V * mlp_dims(&f->m)->H * sizeof(float));
    f->pending = 0;
    f->tables_valid = 0;
}

void factored_forward(Factored *f, const float *theta, const Batch *b, float *Z) {
    const ModelShape *m = &f->m;
    int k = mlp_dims(m)->k, D = mlp_dims(m)->D, H = mlp_dims(m)->H, V = m->V, kD = k * D;
    const float *emb = theta + m->offset[MLP_EMBEDDING], *w1 = theta + m->offset[MLP_W1], *b1 = theta + m->offset[MLP_B1];
    size_t VH = (size_t)V * H;
    if (!f->tables_valid)  // P_j (V, H) = emb (V, D) · w1_jᵀ (D, H)
        for (int j = 0; j < k; j++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, V, H, D, 1.0f, emb, D, w1 + (size_t)j * D, kD, 0.0f,
                        f->tables + j * VH, H);
    f->tables_valid = 1;
    factored_gather(Z, f->tables, b1, b->ctx, b->T, k, V, H);
}

void factored_backward(Factored *f, const Batch *b, const float *dZ) {
    factored_scatter(f->sums, dZ, b->ctx, b->T, mlp_dims(&f->m)->k, f->m.V, mlp_dims(&f->m)->H);
    f->pending = 1;
}

void factored_finish(Factored *f, const float *theta, float *grad) {
    if (!f->pending) return;
    const ModelShape *m = &f->m;
    int k = mlp_dims(m)->k, D = mlp_dims(m)->D, H = mlp_dims(m)->H, V = m->V, kD = k * D;
    const float *emb = theta + m->offset[MLP_EMBEDDING], *w1 = theta + m->offset[MLP_W1];
    float *gemb = grad + m->offset[MLP_EMBEDDING], *gw1 = grad + m->offset[MLP_W1];
    size_t VH = (size_t)V * H;
    for (int j = 0; j < k; j++) {
        const float *Gj = f->sums + j * VH;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, D, V, 1.0f, Gj, H, emb, D, 1.0f, gw1 + (size_t)j * D, kD);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, V, D, H, 1.0f, Gj, H, w1 + (size_t)j * D, kD, 1.0f, gemb, D);
    }
    memset(f->sums, 0, (size_t)k * VH * sizeof(float));
    f->pending = 0;
}

