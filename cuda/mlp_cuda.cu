// mlp_cuda.cu — the window MLP of docs/spec.md §4 on the GPU: cuBLAS SGEMMs in FP32 with TF32
// off (CUBLAS_PEDANTIC_MATH) and small kernels, with the same function shapes as the
// CPU reference (src/model/mlp_cpu.c). Deterministic: no atomics feed the gradient — the bias
// and embedding gradients are summed by one thread per output in position order, and the
// embedding scatter goes through a per-microbatch CSR list built on the host.
//
// cuBLAS is column-major: a row-major (M, N) matrix is a column-major (N, M) one, so each
// row-major product C = A·Bᵀ below is called as Cᵀ = B·Aᵀ.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.h"
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

__global__ void broadcast_rows_kernel(float *X, const float *row, int T, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < T * N) X[idx] = row[idx % N];
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

// One block per row: log-softmax loss (double accumulation), argmax, and optionally the
// row turned into scale·(softmax − onehot). Fixed-order tree reductions: deterministic.
__global__ void softmax_loss_kernel(float *Y, const int32_t *target, const float *weight, int V, float scale, int backward,
                                    double *row_loss, int *row_hit) {
    extern __shared__ unsigned char smem[];
    double *sd = (double *)smem;                  // (blockDim)
    int *si = (int *)(sd + blockDim.x);           // (blockDim)
    float *y = Y + (size_t)blockIdx.x * V;
    int tid = threadIdx.x;
    // max and argmax (lowest index on ties)
    float mx = -INFINITY;
    int arg = 0;
    for (int v = tid; v < V; v += blockDim.x)
        if (y[v] > mx) mx = y[v], arg = v;
    sd[tid] = mx, si[tid] = arg;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s && (sd[tid + s] > sd[tid] || (sd[tid + s] == sd[tid] && si[tid + s] < si[tid])))
            sd[tid] = sd[tid + s], si[tid] = si[tid + s];
        __syncthreads();
    }
    float rmax = (float)sd[0];
    int rarg = si[0];
    __syncthreads();
    double s = 0;
    for (int v = tid; v < V; v += blockDim.x) s += exp((double)(y[v] - rmax));
    sd[tid] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) sd[tid] += sd[tid + k];
        __syncthreads();
    }
    double lse = (double)rmax + log(sd[0]);
    int tgt = target[blockIdx.x];
    float w = weight ? weight[blockIdx.x] : 1.0f, sw = scale * w;
    if (tid == 0) {
        row_loss[blockIdx.x] = (double)w * (lse - (double)y[tgt]);
        row_hit[blockIdx.x] = rarg == tgt;
    }
    __syncthreads();
    if (backward) {
        for (int v = tid; v < V; v += blockDim.x) y[v] = sw * (float)exp((double)y[v] - lse) - (v == tgt ? sw : 0.0f);
    }
}

// out[n] += Σ_t X[t][n], one thread per column, t in order.
__global__ void column_sum_kernel(float *out, const float *X, int T, int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    float acc = out[n];
    for (int t = 0; t < T; t++) acc += X[(size_t)t * N + n];
    out[n] = acc;
}

__global__ void tanh_backward_kernel(float *dH, const float *M, const float *Hh, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) dH[idx] *= M[idx] * (1.0f - Hh[idx] * Hh[idx]);
}

// gemb[v][d] += Σ over the entries of row v (in position order) of dE[entry][d].
__global__ void scatter_embedding_kernel(float *gemb, const float *dE, const int32_t *start, const int32_t *entry, int V,
                                         int D) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= V * D) return;
    int v = idx / D, d = idx % D;
    int a = start[v], b = start[v + 1];
    if (a == b) return;
    float acc = gemb[idx];
    for (int e = a; e < b; e++) acc += dE[(size_t)entry[e] * D + d];
    gemb[idx] = acc;
}

static inline unsigned blocks(size_t n, unsigned t) { return (unsigned)((n + t - 1) / t); }

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
    int32_t *cnt = cc->h_count, *start = cc->h_csr_start;
    memset(cnt, 0, (size_t)(V + 1) * sizeof *cnt);
    for (int e = 0; e < T * k; e++) cnt[b->ctx[e]]++;
    start[0] = 0;
    for (int v = 0; v < V; v++) start[v + 1] = start[v] + cnt[v];
    memcpy(cnt, start, (size_t)V * sizeof *cnt);  // cursor per row
    for (int e = 0; e < T * k; e++) cc->h_csr_entry[cnt[b->ctx[e]]++] = e;
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
    const float one = 1.0f;
    gather_embedding_kernel<<<blocks((size_t)T * kD, 256), 256, 0, cc->stream>>>(cc->E, emb, cc->ctx, T, k, D);
    CUDA_LAUNCH_CHECK();
    broadcast_rows_kernel<<<blocks((size_t)T * H, 256), 256, 0, cc->stream>>>(cc->Hh, b1, T, H);
    CUDA_LAUNCH_CHECK();
    // Z (T, H) = E · w1ᵀ + b1
    CUBLAS_CHECK(cublasSgemm(cc->blas, CUBLAS_OP_T, CUBLAS_OP_N, H, T, kD, &one, w1, kD, cc->E, kD, &one, cc->Hh, H));
    int drop = d && d->p > 0;
    RngStream s = drop ? d->stream : rng_stream(0, 0, 0);
    int keyed = drop && d->ids;
    ASSERT(!keyed || b->B <= cc->cap);
    if (keyed)
        CUDA_CHECK(cudaMemcpyAsync(cc->slot_ids, d->ids, (size_t)b->B * sizeof(int32_t), cudaMemcpyHostToDevice, cc->stream));
    tanh_dropout_kernel<<<blocks((size_t)T * H, 256), 256, 0, cc->stream>>>(
        cc->Hh, cc->M, cc->Hd, cc->pos, T, H, drop, s, drop ? d->block : 0, keyed ? cc->slot_ids : NULL, b->L,
        keyed ? d->step : 0, drop ? dropout_threshold(d->p) : 0, drop ? (float)(1.0 / (1.0 - d->p)) : 1.0f);
    CUDA_LAUNCH_CHECK();
    broadcast_rows_kernel<<<blocks((size_t)T * V, 256), 256, 0, cc->stream>>>(cc->Y, b2, T, V);
    CUDA_LAUNCH_CHECK();
    // Y (T, V) = Hd · w2ᵀ + b2
    CUBLAS_CHECK(cublasSgemm(cc->blas, CUBLAS_OP_T, CUBLAS_OP_N, V, T, H, &one, w2, H, cc->Hd, H, &one, cc->Y, V));
}

// Row losses and hits on the device, summed on the host in position order.
static double mlp_loss_cuda(Compute *cc, const Batch *b, int weighted, float scale, int backward, int64_t *correct) {
    int T = b->T;
    softmax_loss_kernel<<<T, 128, 128 * (sizeof(double) + sizeof(int)), cc->stream>>>(
        cc->Y, cc->target, weighted ? cc->weight : NULL, cc->m.V, scale, backward, cc->row_loss, cc->row_hit);
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
    const float one = 1.0f, zero = 0.0f;
    // w2 (V, H) += dYᵀ · Hd ; b2 += Σ_t dY ; dH (T, H) = dY · w2
    CUBLAS_CHECK(cublasSgemm(cc->blas, CUBLAS_OP_N, CUBLAS_OP_T, H, V, T, &one, cc->Hd, H, cc->Y, V, &one, gw2, H));
    column_sum_kernel<<<blocks(V, 128), 128, 0, cc->stream>>>(gb2, cc->Y, T, V);
    CUDA_LAUNCH_CHECK();
    CUBLAS_CHECK(cublasSgemm(cc->blas, CUBLAS_OP_N, CUBLAS_OP_N, H, T, V, &one, w2, H, cc->Y, V, &zero, cc->dH, H));
    // dZ = dH ⊙ M ⊙ (1 − Hh²)
    tanh_backward_kernel<<<blocks((size_t)T * H, 256), 256, 0, cc->stream>>>(cc->dH, cc->M, cc->Hh, T * H);
    CUDA_LAUNCH_CHECK();
    // w1 (H, kD) += dZᵀ · E ; b1 += Σ_t dZ ; dE (T, kD) = dZ · w1
    CUBLAS_CHECK(cublasSgemm(cc->blas, CUBLAS_OP_N, CUBLAS_OP_T, kD, H, T, &one, cc->E, kD, cc->dH, H, &one, gw1, kD));
    column_sum_kernel<<<blocks(H, 128), 128, 0, cc->stream>>>(gb1, cc->dH, T, H);
    CUDA_LAUNCH_CHECK();
    CUBLAS_CHECK(cublasSgemm(cc->blas, CUBLAS_OP_N, CUBLAS_OP_N, kD, T, H, &one, w1, kD, cc->dH, H, &zero, cc->dE, kD));
    // dE rows are (t, j) entries of D floats: treat dE as (T·k, D).
    scatter_embedding_kernel<<<blocks((size_t)V * D, 128), 128, 0, cc->stream>>>(gemb, cc->dE, cc->csr_start, cc->csr_entry, V, D);
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

static double cuda_evaluate(Compute *cc, const Batch *b, int64_t *correct) {
    ASSERT(b->T <= cc->cap);
    if (b->T == 0) return 0;
    upload_batch(cc, b);
    mlp_forward_cuda(cc, b, NULL);
    return mlp_loss_cuda(cc, b, 0, 0, 0, correct);
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
