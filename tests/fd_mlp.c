// fd_mlp.c — the MLP's row of the finite-difference test (fd.h): the CPU backward against
// central finite differences of an independent double-precision forward (docs/spec.md §4),
// for every parameter tensor of the row, with dropout and an unlabelled prefix, over two
// accumulated microbatches, for both first layers (dense and factored, train.first_layer);
// and the factored gradient against the dense one after θ changed through param_buffer (as
// the optimizer changes it: no stale tables). Built again against a deliberately broken
// backward (build/test_model_broken: tanh' dropped, both layers) and a broken factored
// backward (build/test_mlp_factored_broken: slot j's sums under slot j+1's id), which this
// same test must reject: tests/test_unit.sh expects those binaries to fail.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "config/config.h"
#include "data/corpus.h"
#include "data/synthetic.h"
#include "data/sampler.h"
#include "model/mlp.h"

#include "fd.h"

static const char TINY[] =
    "seed: 7\n"
    "data: {vocab_size: 11, splits: {train: 40, validation: 0, test: 0}, min_length: 3, max_length: 9,\n"
    "       unsupervised_prefix: 2, markov_support: 3}\n"
    "model: {context: 3, embed_dim: 4, hidden: 6, dropout: 0.3}\n"
    "train: {world_size: 1, rank_bands: auto, batch_size_per_rank: 3, accumulation: 2, updates: 1, interrupt_at: 0}\n";

// Independent forward in double: Σ over microbatches of scale · Σ_t w_t·loss_t.
static double loss_double(const ModelShape *m, const double *th, const Batch *mb, int A, double scale, const Dropout *dr) {
    int k = mlp_dims(m)->k, D = mlp_dims(m)->D, H = mlp_dims(m)->H, V = m->V;
    const double *emb = th + m->offset[MLP_EMBEDDING], *w1 = th + m->offset[MLP_W1], *b1 = th + m->offset[MLP_B1],
                 *w2 = th + m->offset[MLP_W2], *b2 = th + m->offset[MLP_B2];
    double p = dr[0].p;
    uint32_t thr = dropout_threshold(p);
    double total = 0, *h = malloc(sizeof(double) * H), *y = malloc(sizeof(double) * V);
    for (int a = 0; a < A; a++) {
        const Batch *b = &mb[a];
        for (int t = 0; t < b->T; t++) {
            for (int i = 0; i < H; i++) {
                double z = b1[i];
                for (int j = 0; j < k; j++)
                    for (int d = 0; d < D; d++) z += w1[(size_t)i * k * D + j * D + d] * emb[(size_t)b->ctx[t * k + j] * D + d];
                int keep = p == 0 || dropout_bits(&dr[a].stream, dr[a].block, (uint32_t)b->pos[t], (uint32_t)i) >= thr;
                h[i] = keep ? tanh(z) / (1.0 - p) : 0.0;
            }
            double mx = -INFINITY, s = 0;
            for (int v = 0; v < V; v++) {
                y[v] = b2[v];
                for (int i = 0; i < H; i++) y[v] += w2[(size_t)v * H + i] * h[i];
                mx = fmax(mx, y[v]);
            }
            for (int v = 0; v < V; v++) s += exp(y[v] - mx);
            total += scale * b->weight[t] * (mx + log(s) - y[b->target[t]]);
        }
    }
    free(h), free(y);
    return total;
}

// One window's gradient (P + 1 into g) of the A microbatches from θ with this first layer;
// returns the loss sum. `cc` is reused when given (its θ as it stands), else made from θ.
static double window_grad(Compute *cc, const float *theta, Batch *mb, int A, double scale, double p, const RngStream *drop, float *g) {
    if (theta) compute_mlp_cpu.set_params(cc, theta);
    compute_mlp_cpu.zero_grad(cc);
    double S = 0;
    for (int a = 0; a < A; a++) {
        Dropout d = {.p = p, .stream = *drop, .block = (uint64_t)a};
        S += compute_mlp_cpu.forward_backward(cc, &mb[a], (float)scale, &d);
    }
    compute_mlp_cpu.finish_backward(cc);
    compute_mlp_cpu.get_grad(cc, g);
    return S;
}

// A second window after θ changed through param_buffer (as the optimizer changes it): the
// factored gradient equals the dense one from the new θ (the tables P follow θ).
static void factored_after_step(const ModelShape *m, const float *theta, Batch *mb, int A, int64_t N, double p,
                                const RngStream *drop, int *passed, int *failed) {
    int cap = mb[0].cap;
    size_t n = m->total + 1;
    float *gd = malloc(n * sizeof *gd), *gf = malloc(n * sizeof *gf), *stepped = malloc(m->total * sizeof *stepped);
    Compute *cf = compute_mlp_cpu.create(m, cap, FIRST_LAYER_FACTORED), *cd = compute_mlp_cpu.create(m, cap, FIRST_LAYER_DENSE);
    double scale = 1.0 / (double)N;
    window_grad(cf, theta, mb, A, scale, p, drop, gf);
    window_grad(cd, theta, mb, A, scale, p, drop, gd);  // θ0's gradient: the control below
    float *th = compute_mlp_cpu.param_buffer(cf);
    for (size_t i = 0; i < m->total; i++) th[i] -= 0.5f * gf[i], stepped[i] = th[i];
    window_grad(cf, NULL, mb, A, scale, p, drop, gf);
    const double atol = 1e-6, rtol = 1e-4;
    // Sensitivity control: stale tables would give θ0's gradient; the step moves it beyond the tolerance.
    size_t moved = 0;
    for (size_t i = 0; i < m->total; i++) moved += fabs((double)gf[i] - gd[i]) > atol + rtol * fabs(gd[i]);
    if (!moved) (*failed)++, printf("FAIL factored after a step: the gradient equals θ0's, the check could not see stale tables\n");
    else (*passed)++, printf("ok   negative control: θ0's gradient differs from the stepped one in %zu components\n", moved);
    window_grad(cd, stepped, mb, A, scale, p, drop, gd);
    size_t bad = 0, wi = 0;
    double worst = 0;
    for (size_t i = 0; i < m->total; i++) {
        double err = fabs((double)gf[i] - gd[i]);
        if (err > atol + rtol * fabs(gd[i])) bad++;
        if (err > worst) worst = err, wi = i;
    }
    if (bad) (*failed)++, printf("FAIL factored after a step: %zu of %zu components off the dense gradient; worst [%zu]: %.9g vs %.9g\n",
                                 bad, m->total, wi, gf[wi], gd[wi]);
    else (*passed)++, printf("ok   factored after a step through param_buffer: the dense gradient within %g + %g|g| (max %.3g)\n", atol, rtol, worst);
    compute_mlp_cpu.destroy(cf), compute_mlp_cpu.destroy(cd);
    free(gd), free(gf), free(stepped);
}

// ComputeOps.last_logits (the backend's float logits at the batch's last supervised position)
// against the row's double logits for generate from that position's context, |a − b| ≤ 1e-5 +
// 1e-4·|b| for every v; control: the first position's logits, another context, are rejected.
static void last_logits(const ModelShape *m, const float *theta, Batch *b, int *passed, int *failed) {
    const ModelRow *row = model_row(m);
    int V = m->V, k = mlp_dims(m)->k, T = b->T;
    float *got = malloc((size_t)V * sizeof *got);
    double *want = malloc((size_t)V * sizeof *want), *first = malloc((size_t)V * sizeof *first);
    Compute *cc = row->cpu->create(m, b->cap, FIRST_LAYER_DENSE);
    row->cpu->set_params(cc, theta);
    row->cpu->last_logits(cc, b, got);
    row->cpu->destroy(cc);
    row->logits(m, theta, b->ctx + (size_t)(T - 1) * k, k, want);
    row->logits(m, theta, b->ctx, k, first);
    int bad = 0, control = 0;
    double worst = 0;
    for (int v = 0; v < V; v++) {
        double err = fabs(got[v] - want[v]);
        bad += err > 1e-5 + 1e-4 * fabs(want[v]);
        control += fabs(got[v] - first[v]) > 1e-5 + 1e-4 * fabs(first[v]);
        worst = err > worst ? err : worst;
    }
    if (bad || T < 2) (*failed)++, printf("FAIL last_logits: %d of %d logits off the row's (T = %d)\n", bad, V, T);
    else (*passed)++, printf("ok   last_logits = the row's double logits at position %d of %d (max err %.3g)\n", T - 1, T, worst);
    if (!control) (*failed)++, printf("FAIL control: the first position's logits pass as the last's\n");
    else (*passed)++, printf("ok   control: the first position's logits rejected (%d of %d off)\n", control, V);
    free(got), free(want), free(first);
}

// The MLP's checks: the window's supervised count, both first layers against finite
// differences, the factored one after a step.
static void mlp_run(FdWindow *w, int *passed, int *failed) {
    const Config *cfg = w->cfg;
    const ModelShape *m = w->m;
    int64_t expect_N = 0;
    for (int j = 0; j < w->A * w->B; j++) expect_N += corpus_len(w->corpus, w->ids[j]) - cfg->data.unsupervised_prefix;
    if (w->N != expect_N || w->N == 0) (*failed)++, printf("FAIL supervised count %lld, expected %lld\n", (long long)w->N, (long long)expect_N);
    else (*passed)++;
    RngStream drop = rng_stream(cfg->seed, RNG_DROPOUT, 0);
    Dropout dr[2] = {{.p = cfg->model.dropout, .stream = drop, .block = 0}, {.p = cfg->model.dropout, .stream = drop, .block = 1}};
    for (int fl = 0; fl < FIRST_LAYER_COUNT; fl++)
        fd_check(first_layer_names[fl], m, (FirstLayer)fl, w->theta, w->mb, w->A, w->N, dr, loss_double, passed, failed);
    factored_after_step(m, w->theta, w->mb, w->A, w->N, cfg->model.dropout, &drop, passed, failed);
    last_logits(m, w->theta, &w->mb[0], passed, failed);
}

const FdModel fd_mlp = {.yaml = TINY, .run = mlp_run};
