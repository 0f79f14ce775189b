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
// (training: the T rows at once; evaluate and last_logits: in chunks of gpt_logits_rows(V)
// rows, gpt.h) and the backward of scale · Σ_t w_t·loss_t accumulated into the gradient. Every step is a
// layer of layers.h (functions of explicit buffers and dimensions, shared with the other
// models), called in the order cuda/gpt_cuda.cu calls its twins; the output softmax uses the
// MLP's row kernels (cpu_kernels.h): the same bits on every instruction set.
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
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
    float *logits;            // (cap, V) their logits, then dlogits; outside training a chunk's (logits_rows, V) at its start
    int logits_rows;          // rows of one output-layer chunk outside training: gpt_logits_rows(V)
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
    GradTailHook tail_hook;   // called once ln_f's gradient is final (model.h)
    void *tail_ctx;
    double loss;              // the current microbatch's Σ w·loss, handed to tail_hook
    // the current microbatch's dropout (the forward's): the backward reads the masks it drew
    DropDraw drop;
    // The tests' knobs, read at create: DDPTOK_TEST_LOGITS_ROWS=N (a chunk of N rows, to cut the
    // small configs' passes), DDPTOK_TEST_LOGITS_SKIP_LAST (evaluate's last chunk of a pass keeps
    // the previous chunk's logits: the negative control of a chunk loop that loses a chunk).
    int test_skip_last;
};

static size_t block_rows(const Compute *cc, size_t width) { return (size_t)cc->cap * width; }

static Compute *gpt_create(const ModelShape *m, int cap, FirstLayer first_layer) {
    ASSERT(first_layer == FIRST_LAYER_DENSE && m->kind == MODEL_GPT);
    Compute *cc = xcalloc(1, sizeof *cc);
    cc->m = *m;
    cc->cap = cap > 0 ? cap : 1;
    size_t C = (size_t)gpt_dims(m)->n_embd, NL = (size_t)gpt_dims(m)->n_layer, NH = (size_t)gpt_dims(m)->n_head, T = (size_t)m->max_length, V = (size_t)m->V;
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
    cc->logits = xmalloc(n * V * sizeof(float));  // touched only a chunk's rows unless this instance trains
    cc->logits_rows = gpt_logits_rows((int)V);
    const char *rows = getenv("DDPTOK_TEST_LOGITS_ROWS");
    if (rows && atoi(rows) > 0) cc->logits_rows = atoi(rows);
    cc->test_skip_last = getenv("DDPTOK_TEST_LOGITS_SKIP_LAST") != NULL;
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

// ---------------------------------------------------------------------------------------
// Forward, loss and backward of one microbatch: the layers of layers.h, call for call as
// cuda/gpt_cuda.cu makes them

static void gpt_forward_cpu(Compute *cc, const Batch *b, const Dropout *d) {
    const ModelShape *m = &cc->m;
    int n = b->n, C = gpt_dims(m)->n_embd, NH = gpt_dims(m)->n_head, Lmax = m->max_length;
    ASSERT(n <= cc->cap && b->spec.layout == BATCH_SEQUENCES);
    dropout_draw_init(&cc->drop, d, b->L, cc->keep_tmp);
    attention_runs(cc->run_att, b->run_start, b->runs, NH);
    ASSERT((size_t)cc->run_att[b->runs] <= cc->att_cap);
    const float *wte = cc->theta + m->offset[GPT_WTE], *wpe = cc->theta + m->offset[GPT_WPE];
    const float *lnfw = cc->theta + m->offset[GPT_LNFW], *lnfb = cc->theta + m->offset[GPT_LNFB];
    encoder_forward(cc->h0, wte, wpe, b->input, b->run_start, b->runs, C);
    dropout_forward(cc->h0, cc->keep_emb, b->at, GPT_SITE_EMBEDDING, n, C, &cc->drop);
    const float *h = cc->h0;
    for (int l = 0; l < gpt_dims(m)->n_layer; l++) {
        GptBlock w = gpt_block(m, cc->theta, l);
        size_t o1 = block_rows(cc, (size_t)C) * l, o3 = block_rows(cc, 3 * (size_t)C) * l, o4 = block_rows(cc, 4 * (size_t)C) * l;
        float *ln1 = cc->ln1 + o1, *ln1s = cc->ln1_stat + block_rows(cc, 2) * l, *qkv = cc->qkv + o3;
        float *att = cc->att + cc->att_cap * l, *atty = cc->atty + o1;
        float *res2 = cc->res2 + o1, *ln2 = cc->ln2 + o1, *ln2s = cc->ln2_stat + block_rows(cc, 2) * l;
        float *fch = cc->fch + o4, *fcg = cc->fcg + o4, *res3 = cc->res3 + o1, *proj = cc->dln;
        uint8_t *keep_att = cc->keep_att + cc->att_cap * l, *keep_res1 = cc->keep_res1 + o1, *keep_res2 = cc->keep_res2 + o1;
        layernorm_forward(ln1, ln1s, h, w.ln1w, w.ln1b, n, C, GPT_LN_EPS);
        matmul_forward(qkv, ln1, w.qkvw, w.qkvb, n, C, 3 * C);
        attention_forward(atty, att, keep_att, qkv, b->run_start, cc->run_att, b->runs, b->at, gpt_site_attention(l), NH, C, Lmax,
                          &cc->drop, cc->dpd, cc->ds, cc->row);
        matmul_forward(proj, atty, w.attprojw, w.attprojb, n, C, C);
        dropout_forward(proj, keep_res1, b->at, gpt_site_attn_residual(l), n, C, &cc->drop);
        residual_forward(res2, h, proj, (size_t)n * C);
        layernorm_forward(ln2, ln2s, res2, w.ln2w, w.ln2b, n, C, GPT_LN_EPS);
        matmul_forward(fch, ln2, w.fcw, w.fcb, n, C, 4 * C);
        gelu_forward(fcg, fch, (size_t)n * 4 * C);
        matmul_forward(proj, fcg, w.fcprojw, w.fcprojb, n, 4 * C, C);
        dropout_forward(proj, keep_res2, b->at, gpt_site_mlp_residual(l), n, C, &cc->drop);
        residual_forward(res3, res2, proj, (size_t)n * C);
        h = res3;
    }
    layernorm_forward(cc->lnf, cc->lnf_stat, h, lnfw, lnfb, n, C, GPT_LN_EPS);
    rows_gather(cc->sup, cc->lnf, b->row, b->T, C);
}

// The output layer, tied to wte: the logits (rows, V) of supervised positions t0 .. t0+rows-1
// into the start of cc->logits.
static void gpt_output_layer_cpu(Compute *cc, int t0, int rows) {
    const ModelShape *m = &cc->m;
    int C = gpt_dims(m)->n_embd;
    matmul_forward(cc->logits, cc->sup + (size_t)t0 * C, cc->theta + m->offset[GPT_WTE], NULL, rows, C, m->V);
}

// Σ_t w_t·loss_t (w = 1 without weights); with backward the logits become dlogits =
// scale·w_t·(softmax − onehot). As mlp_cpu.c's (no bias); row_loss and row_hit (T) too.
static double gpt_loss_cpu(Compute *cc, const Batch *b, const float *weight, float scale, int backward, int64_t *correct,
                           double *row_loss, int32_t *row_hit) {
    return crossentropy_forward(cc->logits, cc->ex, b->target, weight, b->T, cc->m.V, scale, backward, correct, row_loss, row_hit);
}

static void gpt_backward_cpu(Compute *cc, const Batch *b) {
    const ModelShape *m = &cc->m;
    int n = b->n, C = gpt_dims(m)->n_embd, NH = gpt_dims(m)->n_head, V = m->V, T = b->T;
    const float *wte = cc->theta + m->offset[GPT_WTE], *lnfw = cc->theta + m->offset[GPT_LNFW];
    float *gwte = cc->grad + m->offset[GPT_WTE], *gwpe = cc->grad + m->offset[GPT_WPE];
    float *glnfw = cc->grad + m->offset[GPT_LNFW], *glnfb = cc->grad + m->offset[GPT_LNFB];
    // the output layer (tied): gwte += dlogitsᵀ·sup; ∂/∂sup = dlogits·wte, scattered to its rows
    matmul_backward(cc->dln, gwte, NULL, cc->logits, cc->sup, wte, T, C, V);
    rows_scatter(cc->datty, cc->dln, b->row, T, n, C);
    memset(cc->dres, 0, (size_t)n * C * sizeof(float));
    const float *h_last = gpt_dims(m)->n_layer ? cc->res3 + block_rows(cc, (size_t)C) * (gpt_dims(m)->n_layer - 1) : cc->h0;
    layernorm_backward(cc->dres, glnfw, glnfb, cc->datty, h_last, cc->lnf_stat, lnfw, n, C);
    if (cc->tail_hook) cc->tail_hook(cc->tail_ctx, MODEL_BUCKET_TAIL, cc->loss);  // ln_f final: the tail bucket may go
    for (int l = gpt_dims(m)->n_layer - 1; l >= 0; l--) {
        GptBlock w = gpt_block(m, cc->theta, l), g = gpt_block(m, cc->grad, l);
        size_t o1 = block_rows(cc, (size_t)C) * l, o3 = block_rows(cc, 3 * (size_t)C) * l, o4 = block_rows(cc, 4 * (size_t)C) * l;
        const float *h = l ? cc->res3 + block_rows(cc, (size_t)C) * (l - 1) : cc->h0;
        const float *ln1 = cc->ln1 + o1, *ln1s = cc->ln1_stat + block_rows(cc, 2) * l, *qkv = cc->qkv + o3;
        const float *att = cc->att + cc->att_cap * l, *atty = cc->atty + o1;
        const float *res2 = cc->res2 + o1, *ln2 = cc->ln2 + o1, *ln2s = cc->ln2_stat + block_rows(cc, 2) * l;
        const float *fcg = cc->fcg + o4;
        const uint8_t *keep_att = cc->keep_att + cc->att_cap * l, *keep_res1 = cc->keep_res1 + o1, *keep_res2 = cc->keep_res2 + o1;
        float *dproj = cc->dln;
        // the MLP: res3 = res2 + drop(fcg·fcprojwᵀ + fcprojb)
        dropout_backward(dproj, cc->dres, keep_res2, (size_t)n * C, &cc->drop);
        matmul_backward(cc->dfc, g.fcprojw, g.fcprojb, dproj, fcg, w.fcprojw, n, 4 * C, C);
#ifndef DDPTOK_TEST_BREAK_GELU
        gelu_backward(cc->dfc, cc->fch + o4, (size_t)n * 4 * C);
#endif  // else the negative control of tests/fd_gpt.c: GELU's derivative forgotten
        matmul_backward(cc->dln, g.fcw, g.fcb, cc->dfc, ln2, w.fcw, n, C, 4 * C);
        layernorm_backward(cc->dres, g.ln2w, g.ln2b, cc->dln, res2, ln2s, w.ln2w, n, C);
        // attention: res2 = h + drop(atty·attprojwᵀ + attprojb)
        dropout_backward(dproj, cc->dres, keep_res1, (size_t)n * C, &cc->drop);
        matmul_backward(cc->datty, g.attprojw, g.attprojb, dproj, atty, w.attprojw, n, C, C);
        attention_backward(cc->dqkv, cc->datty, qkv, att, keep_att, b->run_start, cc->run_att, b->runs, NH, C, &cc->drop, cc->dpd,
                           cc->ds);
        matmul_backward(cc->dln, g.qkvw, NULL, cc->dqkv, ln1, w.qkvw, n, C, 3 * C);
        // The key bias's gradient is identically zero: adding b to every key adds q·b to all of a
        // query's scores, which the softmax ignores (dropout and the causal mask act after it).
        // Its float sum would be rounding noise, which AdamW's normalisation turns into a random
        // walk of the key bias (3e-5 in 6 updates at lr 0.01, and a resume on another W would
        // walk another way): it is left at 0, exactly as the equations have it.
        bias_backward(g.qkvb, cc->dqkv, n, 3 * C, 0, C);
        bias_backward(g.qkvb, cc->dqkv, n, 3 * C, 2 * C, 3 * C);
        layernorm_backward(cc->dres, g.ln1w, g.ln1b, cc->dln, h, ln1s, w.ln1w, n, C);
        if (cc->tail_hook) cc->tail_hook(cc->tail_ctx, l, cc->loss);  // block l's slices final: its bucket may go
    }
    // the embeddings: h0 = drop(wte[input] + wpe[t]), scattered in row order (deterministic)
    dropout_backward(cc->dln, cc->dres, cc->keep_emb, (size_t)n * C, &cc->drop);
    encoder_backward(gwte, gwpe, cc->dln, b->input, b->run_start, b->runs, C);
}

static double gpt_forward_backward(Compute *cc, const Batch *b, float scale, const Dropout *d) {
    if (b->T == 0) return 0;
    gpt_forward_cpu(cc, b, d);
    gpt_output_layer_cpu(cc, 0, b->T);  // all T rows: the backward reads every dlogits row
    double loss = gpt_loss_cpu(cc, b, b->weight, scale, 1, NULL, NULL, NULL);
    cc->loss = loss;
    gpt_backward_cpu(cc, b);
    return loss;
}

// The output layer and the loss chunk by chunk (gpt_logits_rows, gpt.h), the chunks' sums
// added in order (a pass of one chunk: the one running sum, as before chunks).
static double gpt_evaluate(Compute *cc, const Batch *b, int64_t *correct, double *row_loss, int32_t *row_hit) {
    if (b->T == 0) return 0;
    int T = b->T, V = cc->m.V;
    gpt_forward_cpu(cc, b, NULL);
    double total = 0;
    for (int t0 = 0; t0 < T; t0 += cc->logits_rows) {
        int rows = T - t0 < cc->logits_rows ? T - t0 : cc->logits_rows;
        if (!(cc->test_skip_last && t0 > 0 && t0 + rows == T)) gpt_output_layer_cpu(cc, t0, rows);
        total += crossentropy_forward(cc->logits, cc->ex, b->target + t0, NULL, rows, V, 0, 0, correct,
                                      row_loss ? row_loss + t0 : NULL, row_hit ? row_hit + t0 : NULL);
    }
    return total;
}

// The chunk evaluate computes the last position in, and only it.
static void gpt_last_logits(Compute *cc, const Batch *b, float *logits) {
    ASSERT(b->T > 0);
    gpt_forward_cpu(cc, b, NULL);
    int t0 = (b->T - 1) / cc->logits_rows * cc->logits_rows, rows = b->T - t0 < cc->logits_rows ? b->T - t0 : cc->logits_rows;
    gpt_output_layer_cpu(cc, t0, rows);
    memcpy(logits, cc->logits + (size_t)(b->T - 1 - t0) * cc->m.V, (size_t)cc->m.V * sizeof(float));
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
