// test_model.c — the CPU backward against central finite differences of an independent
// double-precision forward (SPEC §4), for every parameter tensor, with dropout and an
// unlabelled prefix, over two accumulated microbatches. Built a second time against a
// deliberately broken backward (build/test_model_broken), which this same test must
// reject: tests/run.sh expects that binary to fail.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "config.h"
#include "corpus.h"
#include "model.h"
#include "sampler.h"

static const char *TINY =
    "seed: 7\n"
    "data: {vocab_size: 11, splits: {train: 40, validation: 0, test: 0}, min_length: 3, max_length: 9,\n"
    "       unsupervised_prefix: 2, markov_support: 3}\n"
    "model: {context: 3, embed_dim: 4, hidden: 6, dropout: 0.3}\n"
    "train: {world_size: 1, rank_bands: auto, batch_size_per_rank: 3, accumulation: 2, updates: 1, interrupt_at: 0}\n";

// Independent forward in double: Σ over microbatches of scale · Σ_t w_t·loss_t.
static double loss_double(const ModelShape *m, const double *th, Batch *mb, int A, double scale, double p,
                          const RngStream *drop) {
    int k = m->k, D = m->D, H = m->H, V = m->V;
    const double *emb = th + m->offset[P_EMBEDDING], *w1 = th + m->offset[P_W1], *b1 = th + m->offset[P_B1],
                 *w2 = th + m->offset[P_W2], *b2 = th + m->offset[P_B2];
    uint32_t thr = dropout_threshold(p);
    double total = 0, *h = malloc(sizeof(double) * H), *y = malloc(sizeof(double) * V);
    for (int a = 0; a < A; a++) {
        const Batch *b = &mb[a];
        for (int t = 0; t < b->T; t++) {
            for (int i = 0; i < H; i++) {
                double z = b1[i];
                for (int j = 0; j < k; j++)
                    for (int d = 0; d < D; d++) z += w1[(size_t)i * k * D + j * D + d] * emb[(size_t)b->ctx[t * k + j] * D + d];
                int keep = p == 0 || dropout_bits(drop, (uint64_t)a, (uint32_t)b->pos[t], (uint32_t)i) >= thr;
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

int main(void) {
    Config cfg;
    char err[512];
    if (config_from_yaml(&cfg, TINY, "tiny", err, sizeof err)) {
        printf("FAIL config: %s\n", err);
        return 1;
    }
    Corpus c;
    corpus_generate(&c, &cfg);
    Sampler s;
    if (sampler_init(&s, &cfg, &c, 0)) return 1;
    int A = 2, B = 3, cap = B * cfg.data.max_length;
    int32_t ids[6];
    sampler_next(&s, ids);
    Batch mb[2];
    int64_t N = 0, expect_N = 0;
    for (int a = 0; a < A; a++) {
        batch_init(&mb[a], cap, cfg.model.context);
        LabelRule rule = label_rule(&cfg);
        batch_build(&mb[a], &c, ids + a * B, B, &rule, UNIT_SEQUENCE);  // weights 1/n_s exercise the weighted path
        N += mb[a].T;
        for (int j = 0; j < B; j++) expect_N += corpus_len(&c, ids[a * B + j]) - cfg.data.unsupervised_prefix;
    }
    int failed = 0, passed = 0;
    if (N != expect_N || N == 0) failed++, printf("FAIL supervised count %lld, expected %lld\n", (long long)N, (long long)expect_N);
    else passed++;

    ModelShape m;
    model_shape(&m, &cfg);
    float *theta = malloc(m.total * sizeof *theta), *g = malloc((m.total + 1) * sizeof *g);
    model_init_params(&m, cfg.seed, theta);
    double scale = 1.0 / (double)N;
    RngStream drop = rng_stream(cfg.seed, RNG_DROPOUT, 0);
    Compute *cc = compute_cpu.create(&m, cap);
    compute_cpu.set_params(cc, theta);
    compute_cpu.zero_grad(cc);
    double S = 0;
    for (int a = 0; a < A; a++) {
        Dropout d = {.p = cfg.model.dropout, .stream = drop, .block = (uint64_t)a};
        S += compute_cpu.forward_backward(cc, &mb[a], (float)scale, &d);
    }
    compute_cpu.get_grad(cc, g);

    double *th = malloc(m.total * sizeof *th);
    for (size_t i = 0; i < m.total; i++) th[i] = theta[i];
    double L = loss_double(&m, th, mb, A, 1.0, cfg.model.dropout, &drop);
    if (fabs(L - S) > 1e-4 * fabs(L)) failed++, printf("FAIL forward: float loss sum %.9g, double %.9g\n", S, L);
    else passed++;

    // Central differences for every component; tolerance atol 1e-6, rtol 1e-4.
    const double h = 1e-5, atol = 1e-6, rtol = 1e-4;
    for (int p = 0; p < N_PARAMS; p++) {
        int bad = 0;
        double worst = 0;
        size_t wi = 0;
        double wg = 0, wf = 0;
        for (size_t i = m.offset[p]; i < m.offset[p] + m.size[p]; i++) {
            double keep = th[i];
            th[i] = keep + h;
            double lp = loss_double(&m, th, mb, A, scale, cfg.model.dropout, &drop);
            th[i] = keep - h;
            double lm = loss_double(&m, th, mb, A, scale, cfg.model.dropout, &drop);
            th[i] = keep;
            double fd = (lp - lm) / (2 * h), err = fabs(g[i] - fd);
            if (err > atol + rtol * fabs(fd)) bad++;
            if (err > worst) worst = err, wi = i, wg = g[i], wf = fd;
        }
        if (bad) {
            failed++;
            printf("FAIL %-9s %d of %zu components off; worst [%zu]: backward %.9g, finite difference %.9g\n", param_names[p],
                   bad, m.size[p], wi - m.offset[p], wg, wf);
        } else {
            passed++;
            printf("ok   %-9s %zu components, max |backward - fd| = %.3g\n", param_names[p], m.size[p], worst);
        }
    }
    printf("test_model: %d passed, %d failed\n", passed, failed);
    compute_cpu.destroy(cc);
    return failed ? 1 : 0;
}
