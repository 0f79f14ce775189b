// gpt_cpu.c — the reference implementation of the GPT (gpt.h) on the CPU: C + CBLAS, FP32
// storage, one microbatch of packed sequences at a time (data/batch.h BATCH_SEQUENCES: no
// padded position is computed, no sequence attends to another), every GEMM one
// cblas_sgemm on one thread and everything else loops in a fixed order, so a window's
// gradient is a pure function of θ and the batch (exact resume). Its shape is llm.c's
// train_gpt2.c: a forward that keeps each block's activations, then the backward block by
// block from the output; attention runs per sequence and head as GEMMs over the run's rows.
//
// Per microbatch of n packed rows (R runs) and T supervised positions:
//   h0 = wte[input] + wpe[t] (dropout)                      (n, C)
//   block l:  ln1 = LN(h); qkv = ln1·qkvwᵀ + qkvb           (n, C), (n, 3C)
//             per run and head: P = causal softmax(q·kᵀ/√hs), Pd = P ⊙ mask, y = Pd·v
//             res2 = h + drop(atty·attprojwᵀ + attprojb)
//             ln2 = LN(res2); fch = ln2·fcwᵀ + fcb; fcg = gelu(fch)
//             res3 = res2 + drop(fcg·fcprojwᵀ + fcprojb)   (the next block's h)
//   lnf = LN(h); sup = lnf's supervised rows; logits = sup·wteᵀ   (T, V)
// and the backward of scale · Σ_t w_t·loss_t accumulated into the gradient. The output
// softmax uses the MLP's row kernels (cpu_kernels.h): the same bits on every instruction set.
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
#include "model/cpu_kernels.h"
#include "model/gpt.h"
#include "model/layers.h"

struct Compute {
    ModelShape m;
    int cap;                  // max rows (packed positions) per microbatch
    float *theta;             // (P)
    float *grad;              // (P + 1)
    // what the backward reads, kept by the forward
    float *h0;                // (cap, C) the embeddings after dropout: block 0's input
    float *ln1, *ln1_stat;    // (NL, cap, C) ln_1's output, (NL, cap, 2) its (mean, rstd) per row
    float *qkv;               // (NL, cap, 3C)
    float *att;               // (NL, att_cap) run j's probabilities (NH, len, len) at run_att[j] of a block's
    size_t att_cap;           // NH · Lmax · cap: Σ_j NH·len_j² ≤ NH·Lmax·Σ_j len_j
    float *atty;              // (NL, cap, C) the heads' outputs, concatenated
    float *res2;              // (NL, cap, C) the residual stream after attention
    float *ln2, *ln2_stat;    // (NL, cap, C), (NL, cap, 2)
    float *fch, *fcg;         // (NL, cap, 4C) before and after GELU
    float *res3;              // (NL, cap, C) the residual stream after the MLP: block l's output
    float *lnf, *lnf_stat;    // (cap, C), (cap, 2)
    float *sup;               // (cap, C) lnf's supervised rows
    float *logits;            // (cap, V) their logits, then dlogits
    int64_t *run_att;         // (cap + 1)
    // the backward's own
    float *dres;              // (cap, C) ∂/∂ the residual stream
    float *dln;               // (cap, C) ∂/∂ a LayerNorm's output; the forward's projection scratch
    float *datty;             // (cap, C)
    float *dqkv;              // (cap, 3C)
    float *dfc;               // (cap, 4C)
    float *dpd, *ds;          // (Lmax, Lmax) one head: its dropped probabilities, then ∂/∂ them; its scores, then ∂/∂ them
    float *row;               // (max(4C, NH·Lmax)) one row's exp terms
    float *ex;                // (V) exp terms of one row of the log-softmax
    // the dropout masks the forward drew (1: kept), read again by the backward
    uint8_t *keep_emb;        // (cap, C)
    uint8_t *keep_res1, *keep_res2;  // (NL, cap, C) the attention's and the MLP's residual branch
    uint8_t *keep_att;        // (NL, att_cap) as att
    uint8_t *keep_tmp;        // (max(C, NH·Lmax) + 4) one row's flags from a block boundary
    const CpuKernels *kern;
    GradTailHook tail_hook;   // called once ln_f's gradient is final (model.h)
    void *tail_ctx;
    double loss;              // the current microbatch's Σ w·loss, handed to tail_hook
    // the current microbatch's dropout (forward_backward's): the backward draws the same masks
    const Dropout *d;
    int drop;
    uint32_t thr;
    float inv;
};

static size_t block_rows(const Compute *cc, size_t width) { return (size_t)cc->cap * width; }

static Compute *gpt_create(const ModelShape *m, int cap, FirstLayer first_layer) {
    ASSERT(first_layer == FIRST_LAYER_DENSE && m->kind == MODEL_GPT);
    Compute *cc = xcalloc(1, sizeof *cc);
    cc->m = *m;
    cc->cap = cap > 0 ? cap : 1;
    size_t C = (size_t)m->n_embd, NL = (size_t)m->n_layer, NH = (size_t)m->n_head, T = (size_t)m->max_length, V = (size_t)m->V;
    size_t n = (size_t)cc->cap;
    cc->theta = xcalloc(m->total, sizeof(float));
    cc->grad = xcalloc(m->total + 1, sizeof(float));
    cc->h0 = xmalloc(n * C * sizeof(float));
    cc->ln1 = xmalloc(NL * n * C * sizeof(float));
    cc->ln1_stat = xmalloc(NL * n * 2 * sizeof(float));
    cc->qkv = xmalloc(NL * n * 3 * C * sizeof(float));
    cc->att_cap = NH * T * n;
    cc->att = xmalloc(NL * cc->att_cap * sizeof(float));
    cc->atty = xmalloc(NL * n * C * sizeof(float));
    cc->res2 = xmalloc(NL * n * C * sizeof(float));
    cc->ln2 = xmalloc(NL * n * C * sizeof(float));
    cc->ln2_stat = xmalloc(NL * n * 2 * sizeof(float));
    cc->fch = xmalloc(NL * n * 4 * C * sizeof(float));
    cc->fcg = xmalloc(NL * n * 4 * C * sizeof(float));
    cc->res3 = xmalloc(NL * n * C * sizeof(float));
    cc->lnf = xmalloc(n * C * sizeof(float));
    cc->lnf_stat = xmalloc(n * 2 * sizeof(float));
    cc->sup = xmalloc(n * C * sizeof(float));
    cc->logits = xmalloc(n * V * sizeof(float));
    cc->run_att = xmalloc((n + 1) * sizeof(int64_t));
    cc->dres = xmalloc(n * C * sizeof(float));
    cc->dln = xmalloc(n * C * sizeof(float));
    cc->datty = xmalloc(n * C * sizeof(float));
    cc->dqkv = xmalloc(n * 3 * C * sizeof(float));
    cc->dfc = xmalloc(n * 4 * C * sizeof(float));
    cc->dpd = xmalloc(T * T * sizeof(float));
    cc->ds = xmalloc(T * T * sizeof(float));
    cc->row = xmalloc((4 * C > NH * T ? 4 * C : NH * T) * sizeof(float));
    cc->ex = xmalloc(V * sizeof(float));
    cc->keep_emb = xmalloc(n * C);
    cc->keep_res1 = xmalloc(NL * n * C);
    cc->keep_res2 = xmalloc(NL * n * C);
    cc->keep_att = xmalloc(NL * cc->att_cap);
    cc->keep_tmp = xmalloc((C > NH * T ? C : NH * T) + 4);
    cc->kern = cpu_kernels_select();
    return cc;
}

static void gpt_destroy(Compute *cc) {
    if (!cc) return;
    float *f[] = {cc->theta, cc->grad, cc->h0, cc->ln1, cc->ln1_stat, cc->qkv, cc->att, cc->atty, cc->res2, cc->ln2,
                  cc->ln2_stat, cc->fch, cc->fcg, cc->res3, cc->lnf, cc->lnf_stat, cc->sup, cc->logits, cc->dres,
                  cc->dln, cc->datty, cc->dqkv, cc->dfc, cc->dpd, cc->ds, cc->row, cc->ex};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) free(f[i]);
    free(cc->run_att);
    free(cc->keep_emb), free(cc->keep_res1), free(cc->keep_res2), free(cc->keep_att), free(cc->keep_tmp);
    free(cc);
}

static void gpt_set_params(Compute *cc, const float *t) { memcpy(cc->theta, t, cc->m.total * sizeof(float)); }
static void gpt_get_params(Compute *cc, float *t) { memcpy(t, cc->theta, cc->m.total * sizeof(float)); }
static void gpt_zero_grad(Compute *cc) { memset(cc->grad, 0, (cc->m.total + 1) * sizeof(float)); }
static void gpt_get_grad(Compute *cc, float *g) { memcpy(g, cc->grad, (cc->m.total + 1) * sizeof(float)); }
static void gpt_set_grad(Compute *cc, const float *g) { memcpy(cc->grad, g, (cc->m.total + 1) * sizeof(float)); }
static float *gpt_grad_buffer(Compute *cc) { return cc->grad; }
static float *gpt_param_buffer(Compute *cc) { return cc->theta; }
static void gpt_set_grad_extra(Compute *cc, float v) { cc->grad[cc->m.total] = v; }
static float gpt_get_grad_extra(Compute *cc) { return cc->grad[cc->m.total]; }
static void gpt_finish_backward(Compute *cc) { (void)cc; }  // nothing is left pending
static void gpt_set_tail_hook(Compute *cc, GradTailHook hook, void *ctx) { cc->tail_hook = hook, cc->tail_ctx = ctx; }

// Block l's slice of a stacked tensor p (ln1w .. fcprojb: first dimension NL), in θ or in the gradient.
static float *param(const Compute *cc, float *base, int p, int l) {
    const ModelShape *m = &cc->m;
    ASSERT(p >= GPT_LN1W && p <= GPT_FCPROJB && l >= 0 && l < m->n_layer);
    return base + m->offset[p] + (size_t)l * (m->size[p] / (size_t)m->n_layer);
}

// ---------------------------------------------------------------------------------------
// The layers, forward and backward

// The keep flags of units u0 .. u0 + n - 1 of `site` at padded position `at` (gpt.h's draws)
// through the row kernel, from the Philox block that holds u0 (the kernel's counter words
// start there).
static void keep_units(Compute *cc, const Batch *b, uint32_t at, uint32_t site, uint32_t u0, int n, uint8_t *keep) {
    uint64_t block;
    uint32_t word, off = u0 & 3;
    dropout_counter(cc->d->block, cc->d->ids, b->L, cc->d->step, at, &block, &word);
    cc->kern->dropout_keep(off ? cc->keep_tmp : keep, n + (int)off, &cc->d->stream, block, word, site << 24 | u0 >> 2, cc->thr);
    if (off) memcpy(keep, cc->keep_tmp + off, (size_t)n);
}

// Dropout of one row of C features at `site` (no-op without dropout): draws its mask into
// keep (C) and scales x (C) by it, 1/(1 − p) or 0.
static void drop_row(Compute *cc, const Batch *b, int p, uint32_t site, float *x, uint8_t *keep) {
    if (!cc->drop) return;
    int C = cc->m.n_embd;
    keep_units(cc, b, (uint32_t)b->at[p], site, 0, C, keep);
    for (int i = 0; i < C; i++) x[i] *= keep[i] ? cc->inv : 0.0f;
}

// The largest of x[0..n-1] (n ≥ 1), eight lanes at a time (max is exact: any order, the same value).
static float row_max(const float *x, int n) {
    float m[8];
    for (int l = 0; l < 8; l++) m[l] = x[0];
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int l = 1; l < 8; l++) m[0] = m[l] > m[0] ? m[l] : m[0];
    return m[0];
}

// Σ a[i]·b[i] in double as eight partial sums over i mod 8 added pairwise (as sum_exp's).
static double row_dot(const float *a, const float *b, int n) {
    double acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)a[i + l] * (double)b[i + l];
    for (int l = 0; i + l < n; l++) acc[l] += (double)a[i + l] * (double)b[i + l];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Attention over a run of len rows, in blocks of ATT_BLOCK query rows: rows r0..r1 - 1 read
// keys 0..r1 - 1 only, so the GEMMs skip most of the causal mask's zero half.
enum { ATT_BLOCK = 64 };

// One block's attention: per run and head, P (kept in att) and y = (P ⊙ mask)·v into atty.
// The causal softmax of row t over keys 0..t takes the log-softmax's row kernels (exp_f32,
// eight partial sums in double): the same bits on every instruction set.
static void attention_forward(Compute *cc, const Batch *b, int l) {
    const ModelShape *m = &cc->m;
    int C = m->n_embd, NH = m->n_head, hs = C / NH, T = m->max_length;
    const float *qkv = cc->qkv + block_rows(cc, 3 * (size_t)C) * l;
    float *att = cc->att + cc->att_cap * l, *atty = cc->atty + block_rows(cc, (size_t)C) * l;
    uint8_t *keep_att = cc->keep_att + cc->att_cap * l;
    float scale = (float)(1.0 / sqrt((double)hs));
    for (int j = 0; j < b->runs; j++) {
        int s = b->run_start[j], len = b->run_start[j + 1] - s;
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (size_t)s * 3 * C + h * hs, *k = q + C, *v = q + 2 * C;
            size_t at0 = (size_t)cc->run_att[j] + (size_t)h * len * len;
            float *P = att + at0, *S = cc->ds, *D = cc->dpd;
            uint8_t *keep = keep_att + at0;
            for (int r0 = 0; r0 < len; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < len ? r0 + ATT_BLOCK : len;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, hs, scale, q + (size_t)r0 * 3 * C, 3 * C, k, 3 * C,
                            0.0f, S + (size_t)r0 * len, len);
                for (int t = r0; t < r1; t++) {  // causal softmax: keys 0..t
                    const float *st = S + (size_t)t * len;
                    float *pt = P + (size_t)t * len, mx = row_max(st, t + 1);
                    double sum = cc->kern->sum_exp(st, cc->row, t + 1, mx);
                    cc->kern->scaled_softmax(pt, cc->row, t + 1, 1.0 / sum, 1.0f);
                    for (int u = t + 1; u < len; u++) pt[u] = 0.0f;
                    if (cc->drop) {  // Pd = P ⊙ mask; row t's keys are units h·Lmax + u of the attention site
                        float *dt = D + (size_t)t * len;
                        uint8_t *kt = keep + (size_t)t * len;
                        keep_units(cc, b, (uint32_t)b->at[s + t], gpt_site_attention(l), (uint32_t)(h * T), t + 1, kt);
                        for (int u = 0; u <= t; u++) dt[u] = pt[u] * (kt[u] ? cc->inv : 0.0f);
                        for (int u = t + 1; u < r1; u++) dt[u] = 0.0f;
                    }
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, hs, r1, 1.0f, (cc->drop ? D : P) + (size_t)r0 * len, len,
                            v, 3 * C, 0.0f, atty + (size_t)(s + r0) * C + h * hs, C);
            }
        }
    }
}

// ∂/∂qkv of one block (dqkv, written) from ∂/∂atty (datty), by the same blocks: a query block
// reads the keys up to its end, a key block the queries from its start.
static void attention_backward(Compute *cc, const Batch *b, int l) {
    const ModelShape *m = &cc->m;
    int C = m->n_embd, NH = m->n_head, hs = C / NH;
    const float *qkv = cc->qkv + block_rows(cc, 3 * (size_t)C) * l, *att = cc->att + cc->att_cap * l;
    const uint8_t *keep_att = cc->keep_att + cc->att_cap * l;
    float scale = (float)(1.0 / sqrt((double)hs));
    for (int j = 0; j < b->runs; j++) {
        int s = b->run_start[j], len = b->run_start[j + 1] - s;
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (size_t)s * 3 * C + h * hs, *k = q + C, *v = q + 2 * C, *dy = cc->datty + (size_t)s * C + h * hs;
            size_t at0 = (size_t)cc->run_att[j] + (size_t)h * len * len;
            const float *P = att + at0, *Pd = P;
            const uint8_t *keep = keep_att + at0;
            float *dq = cc->dqkv + (size_t)s * 3 * C + h * hs, *dk = dq + C, *dv = dq + 2 * C, *dP = cc->dpd, *dS = cc->ds;
            if (cc->drop) {  // Pd = P ⊙ mask again, in dS (which the softmax's backward below overwrites after the last read)
                for (int t = 0; t < len; t++) {
                    const float *pt = P + (size_t)t * len;
                    const uint8_t *kt = keep + (size_t)t * len;
                    float *ds = dS + (size_t)t * len;
                    for (int u = 0; u <= t; u++) ds[u] = pt[u] * (kt[u] ? cc->inv : 0.0f);
                    for (int u = t + 1; u < len; u++) ds[u] = 0.0f;
                }
                Pd = dS;
            }
            // dv = Pdᵀ·dy: key block c0..c1 from the queries c0..len - 1
            for (int c0 = 0; c0 < len; c0 += ATT_BLOCK) {
                int c1 = c0 + ATT_BLOCK < len ? c0 + ATT_BLOCK : len;
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c1 - c0, hs, len - c0, 1.0f, Pd + (size_t)c0 * len + c0, len,
                            dy + (size_t)c0 * C, C, 0.0f, dv + (size_t)c0 * 3 * C, 3 * C);
            }
            // dPd = dy·vᵀ (query block r0..r1 over the keys 0..r1 - 1); dP = dPd ⊙ mask; the
            // softmax's backward dS = P ⊙ (dP − Σ_u P·dP). Where P = 0 (a masked key) dS is 0
            // whatever dP is.
            for (int r0 = 0; r0 < len; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < len ? r0 + ATT_BLOCK : len;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, hs, 1.0f, dy + (size_t)r0 * C, C, v, 3 * C, 0.0f,
                            dP + (size_t)r0 * len, len);
                for (int t = r0; t < r1; t++) {
                    float *dpt = dP + (size_t)t * len, *dst = dS + (size_t)t * len;
                    const float *pt = P + (size_t)t * len;
                    if (cc->drop) {
                        const uint8_t *kt = keep + (size_t)t * len;
                        for (int u = 0; u <= t; u++) dpt[u] *= kt[u] ? cc->inv : 0.0f;
                    }
                    float dotf = (float)row_dot(pt, dpt, t + 1);  // Σ_u P·dP over the row's keys
                    for (int u = 0; u <= t; u++) dst[u] = pt[u] * (dpt[u] - dotf);
                    for (int u = t + 1; u < r1; u++) dst[u] = 0.0f;
                }
                // scores = scale·q·kᵀ: dq = scale·dS·k over the block's keys
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, hs, r1, scale, dS + (size_t)r0 * len, len, k, 3 * C,
                            0.0f, dq + (size_t)r0 * 3 * C, 3 * C);
            }
            // dk = scale·dSᵀ·q: key block c0..c1 from the queries c0..len - 1
            for (int c0 = 0; c0 < len; c0 += ATT_BLOCK) {
                int c1 = c0 + ATT_BLOCK < len ? c0 + ATT_BLOCK : len;
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c1 - c0, hs, len - c0, scale, dS + (size_t)c0 * len + c0, len,
                            q + (size_t)c0 * 3 * C, 3 * C, 0.0f, dk + (size_t)c0 * 3 * C, 3 * C);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Forward, loss and backward of one microbatch

static void gpt_forward_cpu(Compute *cc, const Batch *b, const Dropout *d) {
    const ModelShape *m = &cc->m;
    int n = b->n, C = m->n_embd, NH = m->n_head, V = m->V;
    ASSERT(n <= cc->cap && b->spec.layout == BATCH_SEQUENCES);
    cc->d = d;
    cc->drop = d && d->p > 0;
    cc->thr = cc->drop ? dropout_threshold(d->p) : 0;
    cc->inv = cc->drop ? (float)(1.0 / (1.0 - d->p)) : 1.0f;
    cc->run_att[0] = 0;
    for (int j = 0; j < b->runs; j++) {
        int64_t len = b->run_start[j + 1] - b->run_start[j];
        cc->run_att[j + 1] = cc->run_att[j] + (int64_t)NH * len * len;
    }
    ASSERT((size_t)cc->run_att[b->runs] <= cc->att_cap);
    const float *wte = cc->theta + m->offset[GPT_WTE], *wpe = cc->theta + m->offset[GPT_WPE];
    for (int j = 0; j < b->runs; j++)
        for (int p = b->run_start[j], t = 0; p < b->run_start[j + 1]; p++, t++) {
            float *x = cc->h0 + (size_t)p * C;
            const float *te = wte + (size_t)b->input[p] * C, *pe = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++) x[i] = te[i] + pe[i];
            drop_row(cc, b, p, GPT_SITE_EMBEDDING, x, cc->keep_emb + (size_t)p * C);
        }
    const float *h = cc->h0;
    for (int l = 0; l < m->n_layer; l++) {
        size_t o1 = block_rows(cc, (size_t)C) * l, o3 = block_rows(cc, 3 * (size_t)C) * l, o4 = block_rows(cc, 4 * (size_t)C) * l;
        float *ln1 = cc->ln1 + o1, *ln1s = cc->ln1_stat + block_rows(cc, 2) * l, *qkv = cc->qkv + o3;
        float *res2 = cc->res2 + o1, *ln2 = cc->ln2 + o1, *ln2s = cc->ln2_stat + block_rows(cc, 2) * l;
        float *fch = cc->fch + o4, *fcg = cc->fcg + o4, *res3 = cc->res3 + o1, *proj = cc->dln;
        layernorm_forward(ln1, ln1s, h, param(cc, cc->theta, GPT_LN1W, l), param(cc, cc->theta, GPT_LN1B, l), n, C, GPT_LN_EPS);
        matmul_forward(qkv, ln1, param(cc, cc->theta, GPT_QKVW, l), param(cc, cc->theta, GPT_QKVB, l), n, C, 3 * C);
        attention_forward(cc, b, l);
        matmul_forward(proj, cc->atty + o1, param(cc, cc->theta, GPT_ATTPROJW, l), param(cc, cc->theta, GPT_ATTPROJB, l), n, C, C);
        for (int p = 0; p < n; p++) {
            float *y = proj + (size_t)p * C, *r = res2 + (size_t)p * C;
            drop_row(cc, b, p, gpt_site_attn_residual(l), y, cc->keep_res1 + o1 + (size_t)p * C);
            for (int i = 0; i < C; i++) r[i] = h[(size_t)p * C + i] + y[i];
        }
        layernorm_forward(ln2, ln2s, res2, param(cc, cc->theta, GPT_LN2W, l), param(cc, cc->theta, GPT_LN2B, l), n, C, GPT_LN_EPS);
        matmul_forward(fch, ln2, param(cc, cc->theta, GPT_FCW, l), param(cc, cc->theta, GPT_FCB, l), n, C, 4 * C);
        gelu_forward(fcg, fch, (size_t)n * 4 * C);
        matmul_forward(proj, fcg, param(cc, cc->theta, GPT_FCPROJW, l), param(cc, cc->theta, GPT_FCPROJB, l), n, 4 * C, C);
        for (int p = 0; p < n; p++) {
            float *y = proj + (size_t)p * C, *r = res3 + (size_t)p * C;
            drop_row(cc, b, p, gpt_site_mlp_residual(l), y, cc->keep_res2 + o1 + (size_t)p * C);
            for (int i = 0; i < C; i++) r[i] = res2[(size_t)p * C + i] + y[i];
        }
        h = res3;
    }
    layernorm_forward(cc->lnf, cc->lnf_stat, h, cc->theta + m->offset[GPT_LNFW], cc->theta + m->offset[GPT_LNFB], n, C, GPT_LN_EPS);
    for (int i = 0; i < b->T; i++) memcpy(cc->sup + (size_t)i * C, cc->lnf + (size_t)b->row[i] * C, (size_t)C * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b->T, V, C, 1.0f, cc->sup, C, wte, C, 0.0f, cc->logits, V);
}

// Row-wise log-softmax loss Σ_t w_t·loss_t (w = 1 without weights); optionally (backward)
// turns the logits into dlogits = scale·w_t·(softmax − onehot). As mlp_cpu.c's (no bias).
static double gpt_loss_cpu(Compute *cc, const Batch *b, const float *weight, float scale, int backward, int64_t *correct) {
    int V = cc->m.V;
    double total = 0;
    for (int t = 0; t < b->T; t++) {
        float w = weight ? weight[t] : 1.0f;
        total += cpu_row_loss(cc->kern, cc->logits + (size_t)t * V, cc->ex, V, b->target[t], w, scale * w, backward, correct);
    }
    return total;
}

// out (n, C) = dres ⊙ the forward's dropout scales, from its mask keep (n, C) (no dropout: a copy).
static void drop_rows_backward(Compute *cc, const Batch *b, const uint8_t *keep, const float *dres, float *out) {
    size_t n = (size_t)b->n * cc->m.n_embd;
    if (!cc->drop) {
        memcpy(out, dres, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++) out[i] = dres[i] * (keep[i] ? cc->inv : 0.0f);
}

static void gpt_backward_cpu(Compute *cc, const Batch *b) {
    const ModelShape *m = &cc->m;
    int n = b->n, C = m->n_embd, V = m->V, T = b->T;
    const float *wte = cc->theta + m->offset[GPT_WTE];
    float *gwte = cc->grad + m->offset[GPT_WTE], *gwpe = cc->grad + m->offset[GPT_WPE];
    // the output layer (tied): gwte += dlogitsᵀ·sup; ∂/∂sup = dlogits·wte, scattered to its rows
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, C, T, 1.0f, cc->logits, V, cc->sup, C, 1.0f, gwte, C);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, C, V, 1.0f, cc->logits, V, wte, C, 0.0f, cc->dln, C);
    memset(cc->datty, 0, (size_t)n * C * sizeof(float));
    for (int i = 0; i < T; i++) memcpy(cc->datty + (size_t)b->row[i] * C, cc->dln + (size_t)i * C, (size_t)C * sizeof(float));
    memset(cc->dres, 0, (size_t)n * C * sizeof(float));
    const float *h_last = m->n_layer ? cc->res3 + block_rows(cc, (size_t)C) * (m->n_layer - 1) : cc->h0;
    layernorm_backward(cc->dres, cc->grad + m->offset[GPT_LNFW], cc->grad + m->offset[GPT_LNFB], cc->datty, h_last, cc->lnf_stat,
                       cc->theta + m->offset[GPT_LNFW], n, C);
    if (cc->tail_hook) cc->tail_hook(cc->tail_ctx, cc->loss);  // ln_f final: the tail bucket may go
    for (int l = m->n_layer - 1; l >= 0; l--) {
        size_t o1 = block_rows(cc, (size_t)C) * l, o4 = block_rows(cc, 4 * (size_t)C) * l;
        const float *h = l ? cc->res3 + block_rows(cc, (size_t)C) * (l - 1) : cc->h0;
        float *dproj = cc->dln;
        // the MLP: res3 = res2 + drop(fcg·fcprojwᵀ + fcprojb)
        drop_rows_backward(cc, b, cc->keep_res2 + o1, cc->dres, dproj);
        matmul_backward(cc->dfc, param(cc, cc->grad, GPT_FCPROJW, l), param(cc, cc->grad, GPT_FCPROJB, l), dproj, cc->fcg + o4,
                        param(cc, cc->theta, GPT_FCPROJW, l), n, 4 * C, C);
#ifndef DDPTOK_TEST_BREAK_GELU
        gelu_backward(cc->dfc, cc->fch + o4, (size_t)n * 4 * C);
#endif  // else the negative control of tests/test_gpt.c: GELU's derivative forgotten
        matmul_backward(cc->dln, param(cc, cc->grad, GPT_FCW, l), param(cc, cc->grad, GPT_FCB, l), cc->dfc, cc->ln2 + o1,
                        param(cc, cc->theta, GPT_FCW, l), n, C, 4 * C);
        layernorm_backward(cc->dres, param(cc, cc->grad, GPT_LN2W, l), param(cc, cc->grad, GPT_LN2B, l), cc->dln, cc->res2 + o1,
                           cc->ln2_stat + block_rows(cc, 2) * l, param(cc, cc->theta, GPT_LN2W, l), n, C);
        // attention: res2 = h + drop(atty·attprojwᵀ + attprojb)
        drop_rows_backward(cc, b, cc->keep_res1 + o1, cc->dres, dproj);
        matmul_backward(cc->datty, param(cc, cc->grad, GPT_ATTPROJW, l), param(cc, cc->grad, GPT_ATTPROJB, l), dproj, cc->atty + o1,
                        param(cc, cc->theta, GPT_ATTPROJW, l), n, C, C);
        attention_backward(cc, b, l);
        matmul_backward(cc->dln, param(cc, cc->grad, GPT_QKVW, l), NULL, cc->dqkv, cc->ln1 + o1, param(cc, cc->theta, GPT_QKVW, l), n,
                        C, 3 * C);
        // The key bias's gradient is identically zero: adding b to every key adds q·b to all of a
        // query's scores, which the softmax ignores (dropout and the causal mask act after it).
        // Its float sum would be rounding noise, which AdamW's normalisation turns into a random
        // walk of the key bias (3e-5 in 6 updates at lr 0.01, and a resume on another W would
        // walk another way): it is left at 0, exactly as the equations have it.
        bias_backward(param(cc, cc->grad, GPT_QKVB, l), cc->dqkv, n, 3 * C, 0, C);
        bias_backward(param(cc, cc->grad, GPT_QKVB, l), cc->dqkv, n, 3 * C, 2 * C, 3 * C);
        layernorm_backward(cc->dres, param(cc, cc->grad, GPT_LN1W, l), param(cc, cc->grad, GPT_LN1B, l), cc->dln, h,
                           cc->ln1_stat + block_rows(cc, 2) * l, param(cc, cc->theta, GPT_LN1W, l), n, C);
    }
    // the embeddings: h0 = drop(wte[input] + wpe[t]), scattered in row order (deterministic)
    drop_rows_backward(cc, b, cc->keep_emb, cc->dres, cc->dln);
    for (int j = 0; j < b->runs; j++)
        for (int p = b->run_start[j], t = 0; p < b->run_start[j + 1]; p++, t++) {
            const float *d = cc->dln + (size_t)p * C;
            float *te = gwte + (size_t)b->input[p] * C, *pe = gwpe + (size_t)t * C;
            for (int i = 0; i < C; i++) te[i] += d[i], pe[i] += d[i];
        }
}

static double gpt_forward_backward(Compute *cc, const Batch *b, float scale, const Dropout *d) {
    if (b->T == 0) return 0;
    gpt_forward_cpu(cc, b, d);
    double loss = gpt_loss_cpu(cc, b, b->weight, scale, 1, NULL);
    cc->loss = loss;
    gpt_backward_cpu(cc, b);
    cc->d = NULL;
    return loss;
}

static double gpt_evaluate(Compute *cc, const Batch *b, int64_t *correct) {
    if (b->T == 0) return 0;
    gpt_forward_cpu(cc, b, NULL);
    return gpt_loss_cpu(cc, b, NULL, 0, 0, correct);
}

static void gpt_last_logits(Compute *cc, const Batch *b, float *logits) {
    ASSERT(b->T > 0);
    gpt_forward_cpu(cc, b, NULL);
    memcpy(logits, cc->logits + (size_t)(b->T - 1) * cc->m.V, (size_t)cc->m.V * sizeof(float));
}

const ComputeOps compute_gpt_cpu = {
    .name = "cpu",
    .model = MODEL_GPT,
    .on_device = 0,
    .first_layers = {[FIRST_LAYER_DENSE] = 1},
    .create = gpt_create,
    .destroy = gpt_destroy,
    .set_params = gpt_set_params,
    .get_params = gpt_get_params,
    .zero_grad = gpt_zero_grad,
    .get_grad = gpt_get_grad,
    .set_grad = gpt_set_grad,
    .grad_buffer = gpt_grad_buffer,
    .param_buffer = gpt_param_buffer,
    .set_grad_extra = gpt_set_grad_extra,
    .get_grad_extra = gpt_get_grad_extra,
    .forward_backward = gpt_forward_backward,
    .finish_backward = gpt_finish_backward,
    .set_tail_hook = gpt_set_tail_hook,
    .evaluate = gpt_evaluate,
    .last_logits = gpt_last_logits,
    .optimizer = &optimizer_cpu,
};
