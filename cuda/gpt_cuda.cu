// gpt_cuda.cu — the GPT (gpt.h) on the GPU, function for function the CPU reference
// (src/model/gpt_cpu.c): the same packed layout (one microbatch of whole sequences back to
// back, data/batch.h BATCH_SEQUENCES: no padded position is computed, no sequence attends to
// another), the same buffers (what the forward keeps for the backward), the same layers in the
// same order with the same arguments, their per-row math the CPU's own C (cuda/layers/*.cuh:
// the same bits for the same inputs), cuBLAS SGEMMs for every product (FP32,
// CUBLAS_PEDANTIC_MATH; TF32 only with DDPTOK_CUDA_TF32=1, see create), the attention per
// packed run with its heads strided-batched, dropout by the same keyed Philox draws (the same
// mask bits: the global sampler's W-free dropout holds on the GPU), and every sum into the
// gradient in a fixed order (column sums one thread per column over the rows ascending, the
// embedding scatter through CSR lists built on the host; no atomics), so a window's gradient
// is a pure function of θ and the batch and a GPU run resumes bit for bit.
//
// Not yet run on a GPU (docs/cuda.md): built and host-checked only; run/device-check.sh
// checks it against the CPU on a device.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.h"
#include "layers/attention.cuh"
#include "layers/dropout.cuh"
#include "layers/embedding.cuh"
#include "layers/gelu.cuh"
#include "layers/layernorm.cuh"
#include "layers/linear.cuh"
#include "layers/loss.cuh"
#include "model/gpt.h"
#include "gpt_cuda_plan.h"

struct Compute {
    ModelShape m;
    int cap;                  // max rows (packed positions) per microbatch
    cublasHandle_t blas;
    cudaStream_t stream;
    float *theta, *grad;      // (P), (P + 1) device
    // what the backward reads, kept by the forward (gpt_cpu.c's, on the device)
    float *h0, *ln1, *ln1_stat, *qkv, *att, *atty, *res2, *ln2, *ln2_stat, *fch, *fcg, *res3, *lnf, *lnf_stat, *sup, *logits;
    size_t att_cap;           // NH · Lmax · cap
    int64_t *run_att;         // (cap + 1) host: run j's probabilities at run_att[j] of a block's
    // the backward's own
    float *dres, *dln, *datty, *dqkv, *dfc;
    float *dpd, *ds;          // (NH, Lmax, Lmax) one run's heads: Pd, then ∂/∂P and dS (the CPU: one head's)
    uint8_t *keep_emb, *keep_res1, *keep_res2, *keep_att;
    // the microbatch on the device, and its host staging (pinned)
    int32_t *input, *at, *tpos, *row, *target, *ids;  // (cap) each
    float *weight;                                      // (cap)
    int32_t *wte_start, *wte_entry, *wpe_start, *wpe_entry;  // CSR: (V + 1), (cap), (Lmax + 1), (cap)
    double *row_loss;
    int *row_hit;
    int32_t *h_tpos, *h_wte_start, *h_wte_entry, *h_wpe_start, *h_wpe_entry, *h_cnt;
    double *h_row_loss;
    int *h_row_hit;
    // the current microbatch's dropout (forward_backward's): the backward reads the same masks
    DropDev d;
};

// ---------------------------------------------------------------------------------------
// The device buffers, as a table (cuda/gpt_cuda_plan.h): create allocates exactly
// these, and tests/test_cuda_layers.c checks the per-row ones against the row's budget.

#define F4 sizeof(float)
size_t gpt_cuda_plan(const ModelShape *m, int cap, GptCudaBuffer *out) {
    size_t C = (size_t)gpt_dims(m)->n_embd, NL = (size_t)gpt_dims(m)->n_layer, NH = (size_t)gpt_dims(m)->n_head, T = (size_t)m->max_length, V = (size_t)m->V;
    size_t n = (size_t)(cap > 0 ? cap : 1), P = m->total;
    GptCudaBuffer b[] = {
        {"theta", GPT_BUF_PARAMS, P * F4}, {"grad", GPT_BUF_PARAMS, (P + 1) * F4},
        {"h0", GPT_BUF_ROWS, n * C * F4}, {"ln1", GPT_BUF_ROWS, NL * n * C * F4}, {"ln1_stat", GPT_BUF_ROWS, NL * n * 2 * F4},
        {"qkv", GPT_BUF_ROWS, NL * n * 3 * C * F4}, {"att", GPT_BUF_ROWS, NL * NH * T * n * F4},
        {"atty", GPT_BUF_ROWS, NL * n * C * F4}, {"res2", GPT_BUF_ROWS, NL * n * C * F4}, {"ln2", GPT_BUF_ROWS, NL * n * C * F4},
        {"ln2_stat", GPT_BUF_ROWS, NL * n * 2 * F4}, {"fch", GPT_BUF_ROWS, NL * n * 4 * C * F4},
        {"fcg", GPT_BUF_ROWS, NL * n * 4 * C * F4}, {"res3", GPT_BUF_ROWS, NL * n * C * F4}, {"lnf", GPT_BUF_ROWS, n * C * F4},
        {"lnf_stat", GPT_BUF_ROWS, n * 2 * F4}, {"sup", GPT_BUF_ROWS, n * C * F4}, {"logits", GPT_BUF_ROWS, n * V * F4},
        {"run_att", GPT_BUF_ROWS, (n + 1) * sizeof(int64_t)},  // host memory on the GPU (pinned), counted as the CPU's
        {"dres", GPT_BUF_ROWS, n * C * F4}, {"dln", GPT_BUF_ROWS, n * C * F4}, {"datty", GPT_BUF_ROWS, n * C * F4},
        {"dqkv", GPT_BUF_ROWS, n * 3 * C * F4}, {"dfc", GPT_BUF_ROWS, n * 4 * C * F4},
        {"keep_emb", GPT_BUF_ROWS, n * C}, {"keep_res1", GPT_BUF_ROWS, NL * n * C}, {"keep_res2", GPT_BUF_ROWS, NL * n * C},
        {"keep_att", GPT_BUF_ROWS, NL * NH * T * n},
        {"dpd", GPT_BUF_SCRATCH, NH * T * T * F4}, {"ds", GPT_BUF_SCRATCH, NH * T * T * F4},
        {"input", GPT_BUF_BATCH, n * 4}, {"at", GPT_BUF_BATCH, n * 4}, {"tpos", GPT_BUF_BATCH, n * 4}, {"row", GPT_BUF_BATCH, n * 4},
        {"target", GPT_BUF_BATCH, n * 4}, {"ids", GPT_BUF_BATCH, n * 4}, {"weight", GPT_BUF_BATCH, n * 4},
        {"wte_start", GPT_BUF_BATCH, (V + 1) * 4}, {"wte_entry", GPT_BUF_BATCH, n * 4}, {"wpe_start", GPT_BUF_BATCH, (T + 1) * 4},
        {"wpe_entry", GPT_BUF_BATCH, n * 4}, {"row_loss", GPT_BUF_BATCH, n * sizeof(double)}, {"row_hit", GPT_BUF_BATCH, n * sizeof(int)},
    };
    size_t k = sizeof b / sizeof *b;
    ASSERT(k <= GPT_CUDA_MAX_BUFFERS);
    if (out) memcpy(out, b, sizeof b);
    return k;
}

static void *plan_alloc(const GptCudaBuffer *b, size_t k, const char *name) {
    for (size_t i = 0; i < k; i++)
        if (!strcmp(b[i].name, name)) {
            void *p;
            CUDA_CHECK(cudaMalloc(&p, b[i].bytes ? b[i].bytes : 1));
            return p;
        }
    ASSERT(!"no such buffer in gpt_cuda_plan");
    return NULL;
}

static Compute *gpt_cuda_create(const ModelShape *m, int cap, FirstLayer first_layer) {
    ASSERT(first_layer == FIRST_LAYER_DENSE && m->kind == MODEL_GPT);
    Compute *cc = (Compute *)xcalloc(1, sizeof *cc);
    cc->m = *m;
    cc->cap = cap > 0 ? cap : 1;
    size_t n = (size_t)cc->cap, V = (size_t)m->V, T = (size_t)m->max_length;
    cc->att_cap = (size_t)gpt_dims(m)->n_head * T * n;
    CUDA_CHECK(cudaStreamCreateWithFlags(&cc->stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&cc->blas));
    CUBLAS_CHECK(cublasSetStream(cc->blas, cc->stream));
    // FP32 as the CPU; TF32 tensor cores only when asked (DDPTOK_CUDA_TF32=1: a 10-bit
    // mantissa in every product, so the gradient agrees with the CPU's to ~1e-3 relative, not
    // to the parity tolerance; off by default).
    const char *tf32 = getenv("DDPTOK_CUDA_TF32");
    CUBLAS_CHECK(cublasSetMathMode(cc->blas, tf32 && !strcmp(tf32, "1") ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
    GptCudaBuffer b[GPT_CUDA_MAX_BUFFERS];
    size_t k = gpt_cuda_plan(m, cc->cap, b);
#define A(field) cc->field = (decltype(cc->field))plan_alloc(b, k, #field)
    A(theta), A(grad), A(h0), A(ln1), A(ln1_stat), A(qkv), A(att), A(atty), A(res2), A(ln2), A(ln2_stat), A(fch), A(fcg), A(res3);
    A(lnf), A(lnf_stat), A(sup), A(logits), A(dres), A(dln), A(datty), A(dqkv), A(dfc), A(dpd), A(ds);
    A(keep_emb), A(keep_res1), A(keep_res2), A(keep_att);
    A(input), A(at), A(tpos), A(row), A(target), A(ids), A(weight), A(wte_start), A(wte_entry), A(wpe_start), A(wpe_entry);
    A(row_loss), A(row_hit);
#undef A
    CUDA_CHECK(cudaMemset(cc->grad, 0, (m->total + 1) * sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&cc->run_att, (n + 1) * sizeof(int64_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_tpos, n * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_wte_start, (V + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_wte_entry, n * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_wpe_start, (T + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_wpe_entry, n * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_cnt, ((V > T ? V : T) + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_row_loss, n * sizeof(double)));
    CUDA_CHECK(cudaMallocHost(&cc->h_row_hit, n * sizeof(int)));
    return cc;
}

static void gpt_cuda_destroy(Compute *cc) {
    if (!cc) return;
    cudaStreamSynchronize(cc->stream);
    cublasDestroy(cc->blas);
    void *dev[] = {cc->theta, cc->grad, cc->h0, cc->ln1, cc->ln1_stat, cc->qkv, cc->att, cc->atty, cc->res2, cc->ln2, cc->ln2_stat,
                   cc->fch, cc->fcg, cc->res3, cc->lnf, cc->lnf_stat, cc->sup, cc->logits, cc->dres, cc->dln, cc->datty, cc->dqkv,
                   cc->dfc, cc->dpd, cc->ds, cc->keep_emb, cc->keep_res1, cc->keep_res2, cc->keep_att, cc->input, cc->at, cc->tpos,
                   cc->row, cc->target, cc->ids, cc->weight, cc->wte_start, cc->wte_entry, cc->wpe_start, cc->wpe_entry,
                   cc->row_loss, cc->row_hit};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) cudaFree(dev[i]);
    void *host[] = {cc->run_att, cc->h_tpos, cc->h_wte_start, cc->h_wte_entry, cc->h_wpe_start, cc->h_wpe_entry, cc->h_cnt,
                    cc->h_row_loss, cc->h_row_hit};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) cudaFreeHost(host[i]);
    cudaStreamDestroy(cc->stream);
    free(cc);
}

static void copy_sync(Compute *cc, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, cc->stream));
    CUDA_CHECK(cudaStreamSynchronize(cc->stream));
}
static void gpt_cuda_set_params(Compute *cc, const float *t) { copy_sync(cc, cc->theta, t, cc->m.total * sizeof(float), cudaMemcpyHostToDevice); }
static void gpt_cuda_get_params(Compute *cc, float *t) { copy_sync(cc, t, cc->theta, cc->m.total * sizeof(float), cudaMemcpyDeviceToHost); }
static void gpt_cuda_zero_grad(Compute *cc) { CUDA_CHECK(cudaMemsetAsync(cc->grad, 0, (cc->m.total + 1) * sizeof(float), cc->stream)); }
static void gpt_cuda_get_grad(Compute *cc, float *g) { copy_sync(cc, g, cc->grad, (cc->m.total + 1) * sizeof(float), cudaMemcpyDeviceToHost); }
static void gpt_cuda_set_grad(Compute *cc, const float *g) { copy_sync(cc, cc->grad, g, (cc->m.total + 1) * sizeof(float), cudaMemcpyHostToDevice); }
static float *gpt_cuda_grad_buffer(Compute *cc) {
    CUDA_CHECK(cudaStreamSynchronize(cc->stream));  // the gradient is complete before any reduction reads it
    return cc->grad;
}
static float *gpt_cuda_param_buffer(Compute *cc) {
    CUDA_CHECK(cudaStreamSynchronize(cc->stream));  // no kernel of this stream still reads θ when the optimizer writes it
    return cc->theta;
}
static void gpt_cuda_set_grad_extra(Compute *cc, float v) { copy_sync(cc, cc->grad + cc->m.total, &v, sizeof v, cudaMemcpyHostToDevice); }
static float gpt_cuda_get_grad_extra(Compute *cc) {
    float v;
    copy_sync(cc, &v, cc->grad + cc->m.total, sizeof v, cudaMemcpyDeviceToHost);
    return v;
}
static void gpt_cuda_finish_backward(Compute *cc) { (void)cc; }  // nothing is left pending

static size_t block_rows(const Compute *cc, size_t width) { return (size_t)cc->cap * width; }

// One microbatch to the device: its rows' ids, padded positions and positions in their run,
// the supervised rows, targets and weights, the slots' sequence ids (keyed dropout) and the
// CSR lists of the wte and wpe rows each packed row adds to (the embedding's backward).
static void upload_batch(Compute *cc, const Batch *b, const Dropout *d) {
    const ModelShape *m = &cc->m;
    int n = b->n, T = b->T;
    for (int j = 0; j < b->runs; j++)
        for (int p = b->run_start[j], t = 0; p < b->run_start[j + 1]; p++, t++) cc->h_tpos[p] = t;
    csr_build(b->input, n, m->V, cc->h_wte_start, cc->h_wte_entry, cc->h_cnt);
    csr_build(cc->h_tpos, n, m->max_length, cc->h_wpe_start, cc->h_wpe_entry, cc->h_cnt);
    cudaStream_t s = cc->stream;
    CUDA_CHECK(cudaMemcpyAsync(cc->input, b->input, (size_t)n * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cc->at, b->at, (size_t)n * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cc->tpos, cc->h_tpos, (size_t)n * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cc->row, b->row, (size_t)T * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cc->target, b->target, (size_t)T * 4, cudaMemcpyHostToDevice, s));
    if (b->weight) CUDA_CHECK(cudaMemcpyAsync(cc->weight, b->weight, (size_t)T * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cc->wte_start, cc->h_wte_start, (size_t)(m->V + 1) * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cc->wte_entry, cc->h_wte_entry, (size_t)n * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cc->wpe_start, cc->h_wpe_start, (size_t)(m->max_length + 1) * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cc->wpe_entry, cc->h_wpe_entry, (size_t)n * 4, cudaMemcpyHostToDevice, s));
    DropDev *dd = &cc->d;
    memset(dd, 0, sizeof *dd);
    dd->on = d && d->p > 0;
    if (dd->on) {
        dd->stream = d->stream, dd->block = d->block, dd->L = b->L, dd->step = d->ids ? d->step : 0;
        dd->thr = dropout_threshold(d->p), dd->inv = (float)(1.0 / (1.0 - d->p));
        if (d->ids) {
            ASSERT(b->B <= cc->cap);
            CUDA_CHECK(cudaMemcpyAsync(cc->ids, d->ids, (size_t)b->B * 4, cudaMemcpyHostToDevice, s));
            dd->ids = cc->ids;
        }
    }
    // the host copies above read pinned staging that the next microbatch rewrites: wait here
    CUDA_CHECK(cudaStreamSynchronize(s));
}

// ---------------------------------------------------------------------------------------
// Forward, loss and backward of one microbatch: gpt_cpu.c's, call for call, each layer
// layers.h's name and arguments after the cuBLAS handle and stream (cuda/layers/*.cuh)

static void gpt_forward_cuda(Compute *cc, const Batch *b) {
    const ModelShape *m = &cc->m;
    int n = b->n, C = gpt_dims(m)->n_embd, NH = gpt_dims(m)->n_head, Lmax = m->max_length;
    ASSERT(n <= cc->cap && b->spec.layout == BATCH_SEQUENCES);
    cudaStream_t st = cc->stream;
    cublasHandle_t blas = cc->blas;
    attention_runs(cc->run_att, b->run_start, b->runs, NH);
    ASSERT((size_t)cc->run_att[b->runs] <= cc->att_cap);
    const float *wte = cc->theta + m->offset[GPT_WTE], *wpe = cc->theta + m->offset[GPT_WPE];
    const float *lnfw = cc->theta + m->offset[GPT_LNFW], *lnfb = cc->theta + m->offset[GPT_LNFB];
    encoder_forward(st, cc->h0, wte, wpe, cc->input, cc->tpos, n, C);
    CUDA_LAUNCH_CHECK();
    dropout_forward(st, cc->h0, cc->keep_emb, cc->at, GPT_SITE_EMBEDDING, n, C, &cc->d);
    CUDA_LAUNCH_CHECK();
    const float *h = cc->h0;
    for (int l = 0; l < gpt_dims(m)->n_layer; l++) {
        GptBlock w = gpt_block(m, cc->theta, l);
        size_t o1 = block_rows(cc, (size_t)C) * l, o3 = block_rows(cc, 3 * (size_t)C) * l, o4 = block_rows(cc, 4 * (size_t)C) * l;
        float *ln1 = cc->ln1 + o1, *ln1s = cc->ln1_stat + block_rows(cc, 2) * l, *qkv = cc->qkv + o3;
        float *att = cc->att + cc->att_cap * l, *atty = cc->atty + o1;
        float *res2 = cc->res2 + o1, *ln2 = cc->ln2 + o1, *ln2s = cc->ln2_stat + block_rows(cc, 2) * l;
        float *fch = cc->fch + o4, *fcg = cc->fcg + o4, *res3 = cc->res3 + o1, *proj = cc->dln;
        uint8_t *keep_att = cc->keep_att + cc->att_cap * l, *keep_res1 = cc->keep_res1 + o1, *keep_res2 = cc->keep_res2 + o1;
        layernorm_forward(st, ln1, ln1s, h, w.ln1w, w.ln1b, n, C, GPT_LN_EPS);
        CUDA_LAUNCH_CHECK();
        matmul_forward(blas, st, qkv, ln1, w.qkvw, w.qkvb, n, C, 3 * C);
        attention_forward(blas, st, atty, att, keep_att, qkv, b->run_start, cc->run_att, b->runs, cc->at, gpt_site_attention(l), NH, C,
                          Lmax, &cc->d, cc->dpd, cc->ds);
        matmul_forward(blas, st, proj, atty, w.attprojw, w.attprojb, n, C, C);
        dropout_forward(st, proj, keep_res1, cc->at, gpt_site_attn_residual(l), n, C, &cc->d);
        residual_forward(st, res2, h, proj, (size_t)n * C);
        CUDA_LAUNCH_CHECK();
        layernorm_forward(st, ln2, ln2s, res2, w.ln2w, w.ln2b, n, C, GPT_LN_EPS);
        CUDA_LAUNCH_CHECK();
        matmul_forward(blas, st, fch, ln2, w.fcw, w.fcb, n, C, 4 * C);
        gelu_forward(st, fcg, fch, (size_t)n * 4 * C);
        CUDA_LAUNCH_CHECK();
        matmul_forward(blas, st, proj, fcg, w.fcprojw, w.fcprojb, n, 4 * C, C);
        dropout_forward(st, proj, keep_res2, cc->at, gpt_site_mlp_residual(l), n, C, &cc->d);
        residual_forward(st, res3, res2, proj, (size_t)n * C);
        CUDA_LAUNCH_CHECK();
        h = res3;
    }
    layernorm_forward(st, cc->lnf, cc->lnf_stat, h, lnfw, lnfb, n, C, GPT_LN_EPS);
    CUDA_LAUNCH_CHECK();
    rows_gather(st, cc->sup, cc->lnf, cc->row, b->T, C);
    CUDA_LAUNCH_CHECK();
}

// The output layer, tied to wte: the logits (rows, V) of supervised positions t0 .. t0+rows-1
// into the start of cc->logits (gpt_cpu.c's gpt_output_layer_cpu; outside training in chunks
// of gpt_logits_rows(V), gpt.h).
static void gpt_output_layer_cuda(Compute *cc, int t0, int rows) {
    const ModelShape *m = &cc->m;
    int C = gpt_dims(m)->n_embd;
    matmul_forward(cc->blas, cc->stream, cc->logits, cc->sup + (size_t)t0 * C, cc->theta + m->offset[GPT_WTE], NULL, rows, C, m->V);
    CUDA_LAUNCH_CHECK();
}

// The T rows' losses and hits to the host; their Σ in t order.
static double gpt_loss_rows_host(Compute *cc, int T, int64_t *correct) {
    CUDA_CHECK(cudaMemcpyAsync(cc->h_row_loss, cc->row_loss, (size_t)T * sizeof(double), cudaMemcpyDeviceToHost, cc->stream));
    CUDA_CHECK(cudaMemcpyAsync(cc->h_row_hit, cc->row_hit, (size_t)T * sizeof(int), cudaMemcpyDeviceToHost, cc->stream));
    CUDA_CHECK(cudaStreamSynchronize(cc->stream));
    double total = 0;
    for (int t = 0; t < T; t++) {
        total += cc->h_row_loss[t];
        if (correct) *correct += cc->h_row_hit[t];
    }
    return total;
}

// Σ_t w_t·loss_t (the rows on the device, loss.cuh; added here in t order); with backward
// the logits become dlogits = scale·w_t·(softmax − onehot).
static double gpt_loss_cuda(Compute *cc, const Batch *b, int weighted, float scale, int backward, int64_t *correct) {
    row_loss_forward(cc->stream, cc->logits, cc->target, weighted ? cc->weight : NULL, b->T, cc->m.V, scale, backward, cc->row_loss,
                     cc->row_hit);
    CUDA_LAUNCH_CHECK();
    return gpt_loss_rows_host(cc, b->T, correct);
}

static void gpt_backward_cuda(Compute *cc, const Batch *b) {
    const ModelShape *m = &cc->m;
    int n = b->n, C = gpt_dims(m)->n_embd, NH = gpt_dims(m)->n_head, V = m->V, T = b->T;
    cudaStream_t st = cc->stream;
    cublasHandle_t blas = cc->blas;
    const float *wte = cc->theta + m->offset[GPT_WTE], *lnfw = cc->theta + m->offset[GPT_LNFW];
    float *gwte = cc->grad + m->offset[GPT_WTE], *gwpe = cc->grad + m->offset[GPT_WPE];
    float *glnfw = cc->grad + m->offset[GPT_LNFW], *glnfb = cc->grad + m->offset[GPT_LNFB];
    // the output layer (tied): gwte += dlogitsᵀ·sup; ∂/∂sup = dlogits·wte, scattered to its rows
    matmul_backward(blas, st, cc->dln, gwte, NULL, cc->logits, cc->sup, wte, T, C, V);
    rows_scatter(st, cc->datty, cc->dln, cc->row, T, n, C);
    CUDA_LAUNCH_CHECK();
    CUDA_CHECK(cudaMemsetAsync(cc->dres, 0, (size_t)n * C * sizeof(float), st));
    const float *h_last = gpt_dims(m)->n_layer ? cc->res3 + block_rows(cc, (size_t)C) * (gpt_dims(m)->n_layer - 1) : cc->h0;
    layernorm_backward(st, cc->dres, glnfw, glnfb, cc->datty, h_last, cc->lnf_stat, lnfw, n, C);
    CUDA_LAUNCH_CHECK();
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
        dropout_backward(st, dproj, cc->dres, keep_res2, (size_t)n * C, &cc->d);
        CUDA_LAUNCH_CHECK();
        matmul_backward(blas, st, cc->dfc, g.fcprojw, g.fcprojb, dproj, fcg, w.fcprojw, n, 4 * C, C);
        gelu_backward(st, cc->dfc, cc->fch + o4, (size_t)n * 4 * C);
        CUDA_LAUNCH_CHECK();
        matmul_backward(blas, st, cc->dln, g.fcw, g.fcb, cc->dfc, ln2, w.fcw, n, C, 4 * C);
        layernorm_backward(st, cc->dres, g.ln2w, g.ln2b, cc->dln, res2, ln2s, w.ln2w, n, C);
        CUDA_LAUNCH_CHECK();
        // attention: res2 = h + drop(atty·attprojwᵀ + attprojb)
        dropout_backward(st, dproj, cc->dres, keep_res1, (size_t)n * C, &cc->d);
        CUDA_LAUNCH_CHECK();
        matmul_backward(blas, st, cc->datty, g.attprojw, g.attprojb, dproj, atty, w.attprojw, n, C, C);
        attention_backward(blas, st, cc->dqkv, cc->datty, qkv, att, keep_att, b->run_start, cc->run_att, b->runs, NH, C, &cc->d, cc->dpd,
                           cc->ds);
        matmul_backward(blas, st, cc->dln, g.qkvw, NULL, cc->dqkv, ln1, w.qkvw, n, C, 3 * C);
        // the key bias's gradient is left at 0, exactly as the equations have it (gpt_cpu.c says why)
        bias_backward(st, g.qkvb, cc->dqkv, n, 3 * C, 0, C);
        bias_backward(st, g.qkvb, cc->dqkv, n, 3 * C, 2 * C, 3 * C);
        CUDA_LAUNCH_CHECK();
        layernorm_backward(st, cc->dres, g.ln1w, g.ln1b, cc->dln, h, ln1s, w.ln1w, n, C);
        CUDA_LAUNCH_CHECK();
    }
    // the embeddings: h0 = drop(wte[input] + wpe[t]), each table row's entries in row order
    dropout_backward(st, cc->dln, cc->dres, cc->keep_emb, (size_t)n * C, &cc->d);
    CUDA_LAUNCH_CHECK();
    encoder_backward(st, gwte, gwpe, cc->dln, cc->wte_start, cc->wte_entry, cc->wpe_start, cc->wpe_entry, V, m->max_length, C);
    CUDA_LAUNCH_CHECK();
}

static double gpt_cuda_forward_backward(Compute *cc, const Batch *b, float scale, const Dropout *d) {
    if (b->T == 0) return 0;
    upload_batch(cc, b, d);
    gpt_forward_cuda(cc, b);
    gpt_output_layer_cuda(cc, 0, b->T);  // all T rows: the backward reads every dlogits row
    double loss = gpt_loss_cuda(cc, b, b->weight != NULL, scale, 1, NULL);
    gpt_backward_cuda(cc, b);
    return loss;
}

static double gpt_cuda_evaluate(Compute *cc, const Batch *b, int64_t *correct, double *row_loss, int32_t *row_hit) {
    if (b->T == 0) return 0;
    upload_batch(cc, b, NULL);
    gpt_forward_cuda(cc, b);
    int T = b->T, R = gpt_logits_rows(cc->m.V);  // gpt_cpu.c's chunks (gpt.h)
    for (int t0 = 0; t0 < T; t0 += R) {
        int rows = T - t0 < R ? T - t0 : R;
        gpt_output_layer_cuda(cc, t0, rows);
        row_loss_forward(cc->stream, cc->logits, cc->target + t0, NULL, rows, cc->m.V, 0, 0, cc->row_loss + t0, cc->row_hit + t0);
        CUDA_LAUNCH_CHECK();
    }
    double loss = gpt_loss_rows_host(cc, T, correct);
    // the rows gpt_loss_cuda copied to the host, each position's loss and hit
    for (int t = 0; t < b->T; t++) {
        if (row_loss) row_loss[t] = cc->h_row_loss[t];
        if (row_hit) row_hit[t] = cc->h_row_hit[t];
    }
    return loss;
}

static void gpt_cuda_last_logits(Compute *cc, const Batch *b, float *logits) {
    ASSERT(b->T > 0);
    upload_batch(cc, b, NULL);
    gpt_forward_cuda(cc, b);
    int R = gpt_logits_rows(cc->m.V), t0 = (b->T - 1) / R * R;  // the chunk evaluate computes it in
    gpt_output_layer_cuda(cc, t0, b->T - t0 < R ? b->T - t0 : R);
    copy_sync(cc, logits, cc->logits + (size_t)(b->T - 1 - t0) * cc->m.V, (size_t)cc->m.V * sizeof(float), cudaMemcpyDeviceToHost);
}

extern "C" const ComputeOps compute_gpt_cuda = {
    .name = "cuda",
    .model = MODEL_GPT,
    .on_device = 1,
    .device_verified = NULL,  // never run on a GPU yet
    .first_layers = {1, 0},
    .create = gpt_cuda_create,
    .destroy = gpt_cuda_destroy,
    .set_params = gpt_cuda_set_params,
    .get_params = gpt_cuda_get_params,
    .zero_grad = gpt_cuda_zero_grad,
    .get_grad = gpt_cuda_get_grad,
    .set_grad = gpt_cuda_set_grad,
    .grad_buffer = gpt_cuda_grad_buffer,
    .param_buffer = gpt_cuda_param_buffer,
    .set_grad_extra = gpt_cuda_set_grad_extra,
    .get_grad_extra = gpt_cuda_get_grad_extra,
    .forward_backward = gpt_cuda_forward_backward,
    .finish_backward = gpt_cuda_finish_backward,
    .set_tail_hook = NULL,  // train.overlap does not apply on the GPU (as the MLP's twin)
    .evaluate = gpt_cuda_evaluate,
    .last_logits = gpt_cuda_last_logits,
    .optimizer = &optimizer_cuda,
};
