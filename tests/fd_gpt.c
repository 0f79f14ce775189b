// fd_gpt.c — the GPT's row of the finite-difference test (fd.h): its CPU backward
// (src/model/gpt_cpu.c) against central finite differences of an independent double-precision
// forward written from the equations of include/model/gpt.h, for every parameter tensor of
// the row: two accumulated microbatches of packed sequences with dropout at every site, an
// unlabelled prefix and the sequence unit's weights, under both dropout keyings (per
// microbatch; keyed by step and sequence id). Also: the forward's loss sum against the
// double one, each sequence attending only to itself (a sequence's loss alone equals its
// share of the batch), and the tied output layer. Built again with the GELU derivative
// forgotten (build/test_gpt_broken), which this same test must reject: tests/test_unit.sh
// expects that binary to fail.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/synthetic.h"
#include "data/sampler.h"
#include "model/gpt.h"

#include "fd.h"

static const char TINY[] =
    "seed: 11\n"
    "data: {vocab_size: 11, splits: {train: 40, validation: 0, test: 0}, min_length: 3, max_length: 9,\n"
    "       unsupervised_prefix: 2, markov_support: 3}\n"
    "model: {kind: gpt, n_layer: 2, n_head: 2, n_embd: 8, dropout: 0.3}\n"
    "train: {world_size: 1, rank_bands: auto, batch_size_per_rank: 3, accumulation: 2, updates: 1, interrupt_at: 0}\n";

// --- The independent forward, in double -------------------------------------------------

typedef struct {
    const ModelShape *m;
    const double *th;
} Net;

static const double *T_(const Net *n, int p, int l) {
    const ModelShape *m = n->m;
    size_t per = p >= GPT_LN1W && p <= GPT_FCPROJB ? m->size[p] / (size_t)gpt_dims(m)->n_layer : 0;
    return n->th + m->offset[p] + (size_t)l * per;
}

static void ln(const double *x, const double *w, const double *b, int C, double *y) {
    double mean = 0, var = 0;
    for (int i = 0; i < C; i++) mean += x[i];
    mean /= C;
    for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= C;
    for (int i = 0; i < C; i++) y[i] = (x[i] - mean) / sqrt(var + GPT_LN_EPS) * w[i] + b[i];
}

static double gelu(double x) { return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

// The dropout scale of one unit, as a double (gpt.h's scheme, through its one helper).
static double keep(const Dropout *d, int L, int at, uint32_t site, uint32_t u) {
    if (!d || d->p == 0) return 1;
    float s;
    gpt_dropout_scales(d, L, (uint32_t)at, site, u, 1, dropout_threshold(d->p), (float)(1.0 / (1.0 - d->p)), &s);
    return s;
}

// Σ_t w_t·loss_t over one batch: each run forward alone (the sequence attends to itself only).
static double batch_loss(const Net *net, const Batch *b, const Dropout *d) {
    const ModelShape *m = net->m;
    int C = gpt_dims(m)->n_embd, NH = gpt_dims(m)->n_head, hs = C / NH, V = m->V, Lmax = m->max_length;
    double total = 0;
    for (int j = 0; j < b->runs; j++) {
        int s0 = b->run_start[j], len = b->run_start[j + 1] - s0;
        double *h = calloc((size_t)len * C, sizeof *h), *a = malloc(sizeof(double) * (size_t)len * C),
               *qkv = malloc(sizeof(double) * (size_t)len * 3 * C), *y = malloc(sizeof(double) * (size_t)len * C),
               *f = malloc(sizeof(double) * (size_t)len * 4 * C), *logit = malloc(sizeof(double) * V), *att = malloc(sizeof(double) * len);
        for (int t = 0; t < len; t++)
            for (int i = 0; i < C; i++)
                h[t * C + i] = (T_(net, GPT_WTE, 0)[(size_t)b->input[s0 + t] * C + i] + T_(net, GPT_WPE, 0)[(size_t)t * C + i]) *
                               keep(d, b->L, b->at[s0 + t], GPT_SITE_EMBEDDING, (uint32_t)i);
        for (int l = 0; l < gpt_dims(m)->n_layer; l++) {
            for (int t = 0; t < len; t++) ln(h + t * C, T_(net, GPT_LN1W, l), T_(net, GPT_LN1B, l), C, a + t * C);
            const double *W = T_(net, GPT_QKVW, l), *B = T_(net, GPT_QKVB, l);
            for (int t = 0; t < len; t++)
                for (int o = 0; o < 3 * C; o++) {
                    double z = B[o];
                    for (int i = 0; i < C; i++) z += W[(size_t)o * C + i] * a[t * C + i];
                    qkv[t * 3 * C + o] = z;
                }
            for (int t = 0; t < len; t++)
                for (int hh = 0; hh < NH; hh++) {
                    double mx = -INFINITY, sum = 0;
                    for (int u = 0; u <= t; u++) {
                        double sc = 0;
                        for (int e = 0; e < hs; e++) sc += qkv[t * 3 * C + hh * hs + e] * qkv[u * 3 * C + C + hh * hs + e];
                        att[u] = sc / sqrt((double)hs);
                        mx = fmax(mx, att[u]);
                    }
                    for (int u = 0; u <= t; u++) att[u] = exp(att[u] - mx), sum += att[u];
                    for (int e = 0; e < hs; e++) {
                        double acc = 0;
                        for (int u = 0; u <= t; u++)
                            acc += att[u] / sum * keep(d, b->L, b->at[s0 + t], gpt_site_attention(l), (uint32_t)(hh * Lmax + u)) *
                                   qkv[u * 3 * C + 2 * C + hh * hs + e];
                        y[t * C + hh * hs + e] = acc;
                    }
                }
            W = T_(net, GPT_ATTPROJW, l), B = T_(net, GPT_ATTPROJB, l);
            for (int t = 0; t < len; t++)
                for (int o = 0; o < C; o++) {
                    double z = B[o];
                    for (int i = 0; i < C; i++) z += W[(size_t)o * C + i] * y[t * C + i];
                    h[t * C + o] += z * keep(d, b->L, b->at[s0 + t], gpt_site_attn_residual(l), (uint32_t)o);
                }
            for (int t = 0; t < len; t++) ln(h + t * C, T_(net, GPT_LN2W, l), T_(net, GPT_LN2B, l), C, a + t * C);
            W = T_(net, GPT_FCW, l), B = T_(net, GPT_FCB, l);
            for (int t = 0; t < len; t++)
                for (int o = 0; o < 4 * C; o++) {
                    double z = B[o];
                    for (int i = 0; i < C; i++) z += W[(size_t)o * C + i] * a[t * C + i];
                    f[t * 4 * C + o] = gelu(z);
                }
            W = T_(net, GPT_FCPROJW, l), B = T_(net, GPT_FCPROJB, l);
            for (int t = 0; t < len; t++)
                for (int o = 0; o < C; o++) {
                    double z = B[o];
                    for (int i = 0; i < 4 * C; i++) z += W[(size_t)o * 4 * C + i] * f[t * 4 * C + i];
                    h[t * C + o] += z * keep(d, b->L, b->at[s0 + t], gpt_site_mlp_residual(l), (uint32_t)o);
                }
        }
        for (int i = 0; i < b->T; i++) {
            int t = b->row[i] - s0;
            if (t < 0 || t >= len) continue;
            ln(h + t * C, T_(net, GPT_LNFW, 0), T_(net, GPT_LNFB, 0), C, a);
            double mx = -INFINITY, sum = 0;
            for (int v = 0; v < V; v++) {
                double z = 0;
                for (int e = 0; e < C; e++) z += T_(net, GPT_WTE, 0)[(size_t)v * C + e] * a[e];  // tied
                logit[v] = z, mx = fmax(mx, z);
            }
            for (int v = 0; v < V; v++) sum += exp(logit[v] - mx);
            total += b->weight[i] * (mx + log(sum) - logit[b->target[i]]);
        }
        free(h), free(a), free(qkv), free(y), free(f), free(logit), free(att);
    }
    return total;
}

// The window's loss, as fd.h wants it: Σ_a scale · batch_loss.
static double gpt_window_loss(const ModelShape *m, const double *th, const Batch *mb, int A, double scale, const Dropout *d) {
    Net net = {m, th};
    double s = 0;
    for (int a = 0; a < A; a++) s += scale * batch_loss(&net, &mb[a], &d[a]);
    return s;
}

// --- The checks -------------------------------------------------------------------------

// Each sequence attends only to itself: the float backend's loss of a batch equals the sum of
// its sequences' losses computed alone (one-sequence batches), within 1e-5 relative (other
// GEMM shapes round differently).
static void sequences_apart(const ModelShape *m, const float *theta, const Corpus *c, const int32_t *ids, int B, const LabelRule *rule,
                            int *passed, int *failed) {
    const BatchSpec spec = model_batch_spec(m);
    Batch all, one;
    batch_init(&all, &spec, B), batch_init(&one, &spec, 1);
    batch_build(&all, c, ids, B, rule, UNIT_TOKEN);
    Compute *cc = compute_gpt_cpu.create(m, all.cap, FIRST_LAYER_DENSE);
    compute_gpt_cpu.set_params(cc, theta);
    int64_t hits = 0;
    double together = compute_gpt_cpu.evaluate(cc, &all, &hits, NULL, NULL), apart = 0;
    for (int s = 0; s < B; s++) {
        batch_build(&one, c, &ids[s], 1, rule, UNIT_TOKEN);
        apart += compute_gpt_cpu.evaluate(cc, &one, &hits, NULL, NULL);
    }
    compute_gpt_cpu.destroy(cc);
    int ok = fabs(together - apart) <= 1e-5 * fabs(apart) && all.runs > 1;
    if (ok) (*passed)++, printf("ok   %d sequences in one batch: loss %.9g, each alone: %.9g (no attention across sequences)\n", all.runs, together, apart);
    else (*failed)++, printf("FAIL %d sequences in one batch: loss %.9g, each alone: %.9g\n", all.runs, together, apart);
    batch_free(&all), batch_free(&one);
}

// The GPT's checks: θ moved off GPT-2's init (weights 10x, LayerNorms and biases off their 1
// and 0) so that every path carries a gradient well above the tolerance (and no softmax
// saturates); the backward against finite differences under both dropout keyings; each
// sequence attending only to itself.
static void gpt_run(FdWindow *w, int *passed, int *failed) {
    const Config *cfg = w->cfg;
    const ModelShape *m = w->m;
    float *theta = w->theta;
    uint32_t lcg = 12345;
    for (int p = 0; p < m->n_tensors; p++)
        for (size_t i = m->offset[p]; i < m->offset[p] + m->size[p]; i++) {
            lcg = lcg * 1664525u + 1013904223u;
            float u = (float)(lcg >> 8) / 8388608.0f - 1.0f;  // [-1, 1)
            int lnw = p == GPT_LN1W || p == GPT_LN2W || p == GPT_LNFW, bias = m->rank[p] == 1 || p == GPT_LN1B || p == GPT_LN2B ||
                                                                              p == GPT_QKVB || p == GPT_ATTPROJB || p == GPT_FCB || p == GPT_FCPROJB;
            theta[i] = lnw ? 1.0f + 0.1f * u : bias ? 0.1f * u : 10.0f * theta[i];
        }
    const int32_t *ids = w->ids;
    int B = w->B;
    Dropout per[2] = {{.p = cfg->model.dropout, .stream = rng_stream(cfg->seed, RNG_DROPOUT, 0), .block = 0},
                      {.p = cfg->model.dropout, .stream = rng_stream(cfg->seed, RNG_DROPOUT, 0), .block = 1}};
    fd_check("per-microbatch dropout", m, FIRST_LAYER_DENSE, theta, w->mb, w->A, w->N, per, gpt_window_loss, passed, failed);
    Dropout keyed[2] = {{.p = cfg->model.dropout, .stream = rng_stream(cfg->seed, RNG_KEYED_DROPOUT, 0), .ids = ids, .step = 3},
                        {.p = cfg->model.dropout, .stream = rng_stream(cfg->seed, RNG_KEYED_DROPOUT, 0), .ids = ids + B, .step = 3}};
    fd_check("keyed dropout", m, FIRST_LAYER_DENSE, theta, w->mb, w->A, w->N, keyed, gpt_window_loss, passed, failed);
    sequences_apart(m, theta, w->corpus, ids, w->A * B, &w->rule, passed, failed);
}

const FdModel fd_gpt = {.yaml = TINY, .run = gpt_run};
