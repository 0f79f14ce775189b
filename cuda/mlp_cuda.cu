// mlp_cuda.cu — the window MLP of docs/spec.md §4 on the GPU: cuBLAS SGEMMs in FP32 with TF32
// off (CUBLAS_PEDANTIC_MATH) and small kernels, with the same function shapes as the
// CPU reference (src/model/mlp_cpu.c). The layers it shares with the GPT's twin are those of
// cuda/layers/: the linear layers and their bias sums (linear.cuh), the row loss (loss.cuh, the
// CPU's cpu_row_loss formulas) and the embedding scatter (embedding.cuh); its own are the
// window gather and tanh + dropout. Deterministic: no atomics feed the gradient — the bias and
// embedding gradients are summed by one thread per output in position order, and the embedding
// scatter goes through a per-microbatch CSR list built on the host.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.h"
#include "layers/embedding.cuh"
#include "layers/linear.cuh"
#include "layers/loss.cuh"
#include "model/mlp.h"

struct Compute {
    ModelShape m;
    int cap;               // max positions per microbatch
    cublasHandle_t blas;
    cudaStream_t stream;
    float *theta;          // (P) device
    float *grad;           // (P + 1) device
    // activations (device), allocated once
    float *E;              // (cap, kD)
    float *Hh;             // (cap, H)
    float *M;              // (cap, H)
    float *Hd;             // (cap, H)
    float *Y;              // (cap, V)
    float *dH;             // (cap, H)
    float *dE;             // (cap, kD)
    double *row_loss;      // (cap)
    int *row_hit;          // (cap)
    // microbatch (device + pinned host staging)
    int32_t *ctx, *target, *pos;   // (cap, k), (cap), (cap)
    int32_t *slot_ids;             // (cap) keyed dropout: the sequence id of each slot (a batch has B ≤ cap slots)
    float *weight;                 // (cap) loss weight per position
    int32_t *csr_start;            // (V + 1) rows of the embedding → entries
    int32_t *csr_entry;            // (cap · k) entry = t · k + j
    int32_t *h_csr_start, *h_csr_entry, *h_count;
    double *h_row_loss;
    int *h_row_hit;
};

// ---------------------------------------------------------------------------------------
// Kernels

__global__ void gather_embedding_kernel(float *E, const float *emb, const int32_t *ctx, int T, int k, int D) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;  // over T·k·D
    if (idx >= T * k * D) return;
    int d = idx % D, tj = idx / D;
    E[idx] = emb[(size_t)ctx[tj] * D + d];
}

// `slot_ids` (B, device) and `L`, `step`: keyed dropout (model.h, Dropout); NULL: per-microbatch.
__global__ void tanh_dropout_kernel(float *Hh, float *M, float *Hd, const int32_t *pos, int T, int H, int drop,
                                    RngStream stream, uint64_t block, const int32_t *slot_ids, int L, uint32_t step,
                                    uint32_t thr, float inv) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T * H) return;
    int t = idx / H, i = idx % H;
    float h = tanhf(Hh[idx]);
    uint32_t bits = drop ? dropout_block_at(&stream, block, slot_ids, L, step, (uint32_t)pos[t], (uint32_t)i >> 2).v[i & 3] : 0;
    float m = drop ? (bits >= thr ? inv : 0.0f) : 1.0f;
    Hh[idx] = h;
    M[idx] = m;
    Hd[idx] = h * m;
}

__global__ void tanh_backward_kernel(float *dH, const float *M, const float *Hh, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) dH[idx] *= M[idx] * (1.0f - Hh[idx] * Hh[idx]);
}


// ---------------------------------------------------------------------------------------
// Backend

static Compute *cuda_create(const ModelShape *m, int cap, FirstLayer first_layer) {
    ASSERT(first_layer == FIRST_LAYER_DENSE);  // main refuses the others (first_layers below)
    Compute *cc = (Compute *)xcalloc(1, sizeof *cc);
    cc->m = *m;
    cc->cap = cap;
    size_t P = m->total, kD = (size_t)mlp_dims(m)->k * mlp_dims(m)->D, H = mlp_dims(m)->H, V = m->V, T = cap;
    CUDA_CHECK(cudaStreamCreateWithFlags(&cc->stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&cc->blas));
    CUBLAS_CHECK(cublasSetStream(cc->blas, cc->stream));
    // FP32 throughout: no TF32 or other reduced-precision tensor-core math.
    CUBLAS_CHECK(cublasSetMathMode(cc->blas, CUBLAS_PEDANTIC_MATH));
    CUDA_CHECK(cudaMalloc(&cc->theta, P * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->grad, (P + 1) * sizeof(float)));
    CUDA_CHECK(cudaMemset(cc->grad, 0, (P + 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->E, T * kD * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->Hh, T * H * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->M, T * H * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->Hd, T * H * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->Y, T * V * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->dH, T * H * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->dE, T * kD * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->row_loss, T * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&cc->row_hit, T * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&cc->ctx, T * mlp_dims(m)->k * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&cc->target, T * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&cc->pos, T * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&cc->slot_ids, T * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&cc->weight, T * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cc->csr_start, (V + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&cc->csr_entry, T * mlp_dims(m)->k * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_csr_start, (V + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_csr_entry, T * mlp_dims(m)->k * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_count, (V + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&cc->h_row_loss, T * sizeof(double)));
    CUDA_CHECK(cudaMallocHost(&cc->h_row_hit, T * sizeof(int)));
    return cc;
}

static void cuda_destroy(Compute *cc) {
    if (!cc) return;
    cudaStreamSynchronize(cc->stream);
    cublasDestroy(cc->blas);
    void *dev[] = {cc->theta, cc->grad, cc->E, cc->Hh, cc->M, cc->Hd, cc->Y, cc->dH, cc->dE, cc->row_loss, cc->row_hit,
                   cc->ctx, cc->target, cc->pos, cc->slot_ids, cc->weight, cc->csr_start, cc->csr_entry};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) cudaFree(dev[i]);
    void *host[] = {cc->h_csr_start, cc->h_csr_entry, cc->h_count, cc->h_row_loss, cc->h_row_hit};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) cudaFreeHost(host[i]);
    cudaStreamDestroy(cc->stream);
    free(cc);
}

static void copy_sync(Compute *cc, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, cc->stream));
    CUDA_CHECK(cudaStreamSynchronize(cc->stream));
}

static void cuda_set_params(Compute *cc, const float *t) { copy_sync(cc, cc->theta, t, cc->m.total * sizeof(float), cudaMemcpyHostToDevice); }
static void cuda_get_params(Compute *cc, float *t) { copy_sync(cc, t, cc->theta, cc->m.total * sizeof(float), cudaMemcpyDeviceToHost); }
static void cuda_zero_grad(Compute *cc) { CUDA_CHECK(cudaMemsetAsync(cc->grad, 0, (cc->m.total + 1) * sizeof(float), cc->stream)); }
static void cuda_get_grad(Compute *cc, float *g) { copy_sync(cc, g, cc->grad, (cc->m.total + 1) * sizeof(float), cudaMemcpyDeviceToHost); }
static void cuda_set_grad(Compute *cc, const float *g) { copy_sync(cc, cc->grad, g, (cc->m.total + 1) * sizeof(float), cudaMemcpyHostToDevice); }
static float *cuda_grad_buffer(Compute *cc) {
    CUDA_CHECK(cudaStreamSynchronize(cc->stream));  // the gradient is complete before any reduction reads it
    return cc->grad;
}
static float *cuda_param_buffer(Compute *cc) {
    CUDA_CHECK(cudaStreamSynchronize(cc->stream));  // no kernel of this stream still reads θ when the optimizer writes it
    return cc->theta;
}
static void cuda_set_grad_extra(Compute *cc, float v) { copy_sync(cc, cc->grad + cc->m.total, &v, sizeof v, cudaMemcpyHostToDevice); }
static float cuda_get_grad_extra(Compute *cc) {
    float v;
    copy_sync(cc, &v, cc->grad + cc->m.total, sizeof v, cudaMemcpyDeviceToHost);
    return v;
}

// Uploads one microbatch and the CSR list of embedding rows → (t, j) entries.
static void upload_batch(Compute *cc, const Batch *b) {
    int T = b->T, k = mlp_dims(&cc->m)->k, V = cc->m.V;
    int32_t *start = cc->h_csr_start;
    csr_build(b->ctx, T * k, V, start, cc->h_csr_entry, cc->h_count);
    CUDA_CHECK(cudaMemcpyAsync(cc->ctx, b->ctx, (size_t)T * k * sizeof(int32_t), cudaMemcpyHostToDevice, cc->stream));
    CUDA_CHECK(cudaMemcpyAsync(cc->target, b->target, (size_t)T * sizeof(int32_t), cudaMemcpyHostToDevice, cc->stream));
    CUDA_CHECK(cudaMemcpyAsync(cc->pos, b->pos, (size_t)T * sizeof(int32_t), cudaMemcpyHostToDevice, cc->stream));
    CUDA_CHECK(cudaMemcpyAsync(cc->weight, b->weight, (size_t)T * sizeof(float), cudaMemcpyHostToDevice, cc->stream));
    CUDA_CHECK(cudaMemcpyAsync(cc->csr_start, start, (size_t)(V + 1) * sizeof(int32_t), cudaMemcpyHostToDevice, cc->stream));
    CUDA_CHECK(cudaMemcpyAsync(cc->csr_entry, cc->h_csr_entry, (size_t)T * k * sizeof(int32_t), cudaMemcpyHostToDevice, cc->stream));
}

static void mlp_forward_cuda(Compute *cc, const Batch *b, const Dropout *d) {
    const ModelShape *m = &cc->m;
    int T = b->T, k = mlp_dims(m)->k, D = mlp_dims(m)->D, H = mlp_dims(m)->H, V = m->V, kD = k * D;
    const float *emb = cc->theta + m->offset[MLP_EMBEDDING], *w1 = cc->theta + m->offset[MLP_W1],
                *b1 = cc->theta + m->offset[MLP_B1], *w2 = cc->theta + m->offset[MLP_W2], *b2 = cc->theta + m->offset[MLP_B2];
    gather_embedding_kernel<<<layer_blocks((size_t)T * kD, 256), 256, 0, cc->stream>>>(cc->E, emb, cc->ctx, T, k, D);
    CUDA_LAUNCH_CHECK();
    matmul_forward(cc->blas, cc->stream, cc->Hh, cc->E, w1, b1, T, kD, H);  // Z (T, H) = E · w1ᵀ + b1
    CUDA_LAUNCH_CHECK();
    int drop = d && d->p > 0;
    RngStream s = drop ? d->stream : rng_stream(0, 0, 0);
    int keyed = drop && d->ids;
    ASSERT(!keyed || b->B <= cc->cap);
    if (keyed)
        CUDA_CHECK(cudaMemcpyAsync(cc->slot_ids, d->ids, (size_t)b->B * sizeof(int32_t), cudaMemcpyHostToDevice, cc->stream));
    tanh_dropout_kernel<<<layer_blocks((size_t)T * H, 256), 256, 0, cc->stream>>>(
        cc->Hh, cc->M, cc->Hd, cc->pos, T, H, drop, s, drop ? d->block : 0, keyed ? cc->slot_ids : NULL, b->L,
        keyed ? d->step : 0, drop ? dropout_threshold(d->p) : 0, drop ? (float)(1.0 / (1.0 - d->p)) : 1.0f);
    CUDA_LAUNCH_CHECK();
    matmul_forward(cc->blas, cc->stream, cc->Y, cc->Hd, w2, b2, T, H, V);  // Y (T, V) = Hd · w2ᵀ + b2
    CUDA_LAUNCH_CHECK();
}

// Row losses and hits on the device, summed on the host in position order.
static double mlp_loss_cuda(Compute *cc, const Batch *b, int weighted, float scale, int backward, int64_t *correct) {
    int T = b->T;
    row_loss_forward(cc->stream, cc->Y, cc->target, weighted ? cc->weight : NULL, T, cc->m.V, scale, backward, cc->row_loss,
                     cc->row_hit);
    CUDA_LAUNCH_CHECK();
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

static void mlp_backward_cuda(Compute *cc, const Batch *b) {
    const ModelShape *m = &cc->m;
    int T = b->T, k = mlp_dims(m)->k, D = mlp_dims(m)->D, H = mlp_dims(m)->H, V = m->V, kD = k * D;
    const float *w1 = cc->theta + m->offset[MLP_W1], *w2 = cc->theta + m->offset[MLP_W2];
    float *gemb = cc->grad + m->offset[MLP_EMBEDDING], *gw1 = cc->grad + m->offset[MLP_W1], *gb1 = cc->grad + m->offset[MLP_B1],
          *gw2 = cc->grad + m->offset[MLP_W2], *gb2 = cc->grad + m->offset[MLP_B2];
    // w2 (V, H) += dYᵀ · Hd ; b2 += Σ_t dY ; dH (T, H) = dY · w2
    matmul_backward(cc->blas, cc->stream, cc->dH, gw2, gb2, cc->Y, cc->Hd, w2, T, H, V);
    CUDA_LAUNCH_CHECK();
    // dZ = dH ⊙ M ⊙ (1 − Hh²)
    tanh_backward_kernel<<<layer_blocks((size_t)T * H, 256), 256, 0, cc->stream>>>(cc->dH, cc->M, cc->Hh, T * H);
    CUDA_LAUNCH_CHECK();
    // w1 (H, kD) += dZᵀ · E ; b1 += Σ_t dZ ; dE (T, kD) = dZ · w1
    matmul_backward(cc->blas, cc->stream, cc->dE, gw1, gb1, cc->dH, cc->E, w1, T, kD, H);
    CUDA_LAUNCH_CHECK();
    // dE rows are (t, j) entries of D floats: treat dE as (T·k, D).
    embedding_backward(cc->stream, gemb, cc->dE, cc->csr_start, cc->csr_entry, V, D);
    CUDA_LAUNCH_CHECK();
}

static double cuda_forward_backward(Compute *cc, const Batch *b, float scale, const Dropout *d) {
    ASSERT(b->T <= cc->cap);
    if (b->T == 0) return 0;
    upload_batch(cc, b);
    mlp_forward_cuda(cc, b, d);
    double loss = mlp_loss_cuda(cc, b, 1, scale, 1, NULL);
    mlp_backward_cuda(cc, b);
    return loss;
}

// The dense first layer completes every gradient in each microbatch: nothing is pending.
static void cuda_finish_backward(Compute *cc) { (void)cc; }

static double cuda_evaluate(Compute *cc, const Batch *b, int64_t *correct, double *row_loss, int32_t *row_hit) {
    ASSERT(b->T <= cc->cap);
    if (b->T == 0) return 0;
    upload_batch(cc, b);
    mlp_forward_cuda(cc, b, NULL);
    double loss = mlp_loss_cuda(cc, b, 0, 0, 0, correct);
    // the rows mlp_loss_cuda copied to the host, each position's loss and hit
    for (int t = 0; t < b->T; t++) {
        if (row_loss) row_loss[t] = cc->h_row_loss[t];
        if (row_hit) row_hit[t] = cc->h_row_hit[t];
    }
    return loss;
}

static void cuda_last_logits(Compute *cc, const Batch *b, float *logits) {
    ASSERT(b->T > 0 && b->T <= cc->cap);
    upload_batch(cc, b);
    mlp_forward_cuda(cc, b, NULL);
    copy_sync(cc, logits, cc->Y + (size_t)(b->T - 1) * cc->m.V, (size_t)cc->m.V * sizeof(float), cudaMemcpyDeviceToHost);
}

extern "C" const ComputeOps compute_mlp_cuda = {
    .name = "cuda",
    .model = MODEL_MLP,
    .on_device = 1,
    .device_verified = NULL,  // not since the shared layers (cuda/layers/) took the place of its own
                              // kernels: its H200 figures in docs/cuda.md are of the code before
    .first_layers = {1, 0},  // dense only: train.first_layer factored is refused at start-up
    .create = cuda_create,
    .destroy = cuda_destroy,
    .set_params = cuda_set_params,
    .get_params = cuda_get_params,
    .zero_grad = cuda_zero_grad,
    .get_grad = cuda_get_grad,
    .set_grad = cuda_set_grad,
    .grad_buffer = cuda_grad_buffer,
    .param_buffer = cuda_param_buffer,
    .set_grad_extra = cuda_set_grad_extra,
    .get_grad_extra = cuda_get_grad_extra,
    .forward_backward = cuda_forward_backward,
    .finish_backward = cuda_finish_backward,
    // No tail hook: train.overlap does not apply here, the gradient is reduced after the
    // backward. Overlap would record an event behind the gw2/gb2 kernels and have NCCL's
    // stream (comm_nccl.cu) wait on it before reducing the tail, while this stream goes on.
    .set_tail_hook = NULL,
    .evaluate = cuda_evaluate,
    .last_logits = cuda_last_logits,
    .optimizer = &optimizer_cuda,
};
