// model_cuda.cu — the window MLP of SPEC §4 on the GPU: cuBLAS SGEMMs in FP32 with TF32
// off (CUBLAS_PEDANTIC_MATH) and small kernels, with the same function shapes as the
// CPU reference (src/model_cpu.c). Deterministic: no atomics feed the gradient — the bias
// and embedding gradients are summed by one thread per output in position order, and the
// embedding scatter goes through a per-microbatch CSR list built on the host.
//
// cuBLAS is column-major: a row-major (M, N) matrix is a column-major (N, M) one, so each
// row-major product C = A·Bᵀ below is called as Cᵀ = B·Aᵀ.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "cuda_common.h"

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

static Compute *cuda_create(const ModelShape *m, int cap) {
    Compute *c = (Compute *)xcalloc(1, sizeof *c);
    c->m = *m;
    c->cap = cap;
    size_t P = m->total, kD = (size_t)m->k * m->D, H = m->H, V = m->V, T = cap;
    CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&c->blas));
    CUBLAS_CHECK(cublasSetStream(c->blas, c->stream));
    // FP32 throughout: no TF32 or other reduced-precision tensor-core math.
    CUBLAS_CHECK(cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH));
    CUDA_CHECK(cudaMalloc(&c->theta, P * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->grad, (P + 1) * sizeof(float)));
    CUDA_CHECK(cudaMemset(c->grad, 0, (P + 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->E, T * kD * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->Hh, T * H * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->M, T * H * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->Hd, T * H * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->Y, T * V * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->dH, T * H * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->dE, T * kD * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->row_loss, T * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&c->row_hit, T * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&c->ctx, T * m->k * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&c->target, T * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&c->pos, T * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&c->slot_ids, T * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&c->weight, T * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c->csr_start, (V + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&c->csr_entry, T * m->k * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&c->h_csr_start, (V + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&c->h_csr_entry, T * m->k * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&c->h_count, (V + 1) * sizeof(int32_t)));
    CUDA_CHECK(cudaMallocHost(&c->h_row_loss, T * sizeof(double)));
    CUDA_CHECK(cudaMallocHost(&c->h_row_hit, T * sizeof(int)));
    return c;
}

static void cuda_destroy(Compute *c) {
    if (!c) return;
    cudaStreamSynchronize(c->stream);
    cublasDestroy(c->blas);
    void *dev[] = {c->theta, c->grad, c->E, c->Hh, c->M, c->Hd, c->Y, c->dH, c->dE, c->row_loss, c->row_hit,
                   c->ctx, c->target, c->pos, c->slot_ids, c->weight, c->csr_start, c->csr_entry};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) cudaFree(dev[i]);
    void *host[] = {c->h_csr_start, c->h_csr_entry, c->h_count, c->h_row_loss, c->h_row_hit};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) cudaFreeHost(host[i]);
    cudaStreamDestroy(c->stream);
    free(c);
}

static void copy_sync(Compute *c, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
}

static void cuda_set_params(Compute *c, const float *t) { copy_sync(c, c->theta, t, c->m.total * sizeof(float), cudaMemcpyHostToDevice); }
static void cuda_get_params(Compute *c, float *t) { copy_sync(c, t, c->theta, c->m.total * sizeof(float), cudaMemcpyDeviceToHost); }
static void cuda_zero_grad(Compute *c) { CUDA_CHECK(cudaMemsetAsync(c->grad, 0, (c->m.total + 1) * sizeof(float), c->stream)); }
static void cuda_get_grad(Compute *c, float *g) { copy_sync(c, g, c->grad, (c->m.total + 1) * sizeof(float), cudaMemcpyDeviceToHost); }
static void cuda_set_grad(Compute *c, const float *g) { copy_sync(c, c->grad, g, (c->m.total + 1) * sizeof(float), cudaMemcpyHostToDevice); }
static float *cuda_grad_buffer(Compute *c) {
    CUDA_CHECK(cudaStreamSynchronize(c->stream));  // the gradient is complete before any reduction reads it
    return c->grad;
}
static float *cuda_param_buffer(Compute *c) {
    CUDA_CHECK(cudaStreamSynchronize(c->stream));  // no kernel of this stream still reads θ when the optimizer writes it
    return c->theta;
}
static void cuda_set_grad_extra(Compute *c, float v) { copy_sync(c, c->grad + c->m.total, &v, sizeof v, cudaMemcpyHostToDevice); }
static float cuda_get_grad_extra(Compute *c) {
    float v;
    copy_sync(c, &v, c->grad + c->m.total, sizeof v, cudaMemcpyDeviceToHost);
    return v;
}

// Uploads one microbatch and the CSR list of embedding rows → (t, j) entries.
static void upload_batch(Compute *c, const Batch *b) {
    int T = b->T, k = c->m.k, V = c->m.V;
    int32_t *cnt = c->h_count, *start = c->h_csr_start;
    memset(cnt, 0, (size_t)(V + 1) * sizeof *cnt);
    for (int e = 0; e < T * k; e++) cnt[b->ctx[e]]++;
    start[0] = 0;
    for (int v = 0; v < V; v++) start[v + 1] = start[v] + cnt[v];
    memcpy(cnt, start, (size_t)V * sizeof *cnt);  // cursor per row
    for (int e = 0; e < T * k; e++) c->h_csr_entry[cnt[b->ctx[e]]++] = e;
    CUDA_CHECK(cudaMemcpyAsync(c->ctx, b->ctx, (size_t)T * k * sizeof(int32_t), cudaMemcpyHostToDevice, c->stream));
    CUDA_CHECK(cudaMemcpyAsync(c->target, b->target, (size_t)T * sizeof(int32_t), cudaMemcpyHostToDevice, c->stream));
    CUDA_CHECK(cudaMemcpyAsync(c->pos, b->pos, (size_t)T * sizeof(int32_t), cudaMemcpyHostToDevice, c->stream));
    CUDA_CHECK(cudaMemcpyAsync(c->weight, b->weight, (size_t)T * sizeof(float), cudaMemcpyHostToDevice, c->stream));
    CUDA_CHECK(cudaMemcpyAsync(c->csr_start, start, (size_t)(V + 1) * sizeof(int32_t), cudaMemcpyHostToDevice, c->stream));
    CUDA_CHECK(cudaMemcpyAsync(c->csr_entry, c->h_csr_entry, (size_t)T * k * sizeof(int32_t), cudaMemcpyHostToDevice, c->stream));
}

static void mlp_forward_cuda(Compute *c, const Batch *b, const Dropout *d) {
    const ModelShape *m = &c->m;
    int T = b->T, k = m->k, D = m->D, H = m->H, V = m->V, kD = k * D;
    const float *emb = c->theta + m->offset[P_EMBEDDING], *w1 = c->theta + m->offset[P_W1],
                *b1 = c->theta + m->offset[P_B1], *w2 = c->theta + m->offset[P_W2], *b2 = c->theta + m->offset[P_B2];
    const float one = 1.0f;
    gather_embedding_kernel<<<blocks((size_t)T * kD, 256), 256, 0, c->stream>>>(c->E, emb, c->ctx, T, k, D);
    CUDA_LAUNCH_CHECK();
    broadcast_rows_kernel<<<blocks((size_t)T * H, 256), 256, 0, c->stream>>>(c->Hh, b1, T, H);
    CUDA_LAUNCH_CHECK();
    // Z (T, H) = E · w1ᵀ + b1
    CUBLAS_CHECK(cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, H, T, kD, &one, w1, kD, c->E, kD, &one, c->Hh, H));
    int drop = d && d->p > 0;
    RngStream s = drop ? d->stream : rng_stream(0, 0, 0);
    int keyed = drop && d->ids;
    ASSERT(!keyed || b->B <= c->cap);
    if (keyed)
        CUDA_CHECK(cudaMemcpyAsync(c->slot_ids, d->ids, (size_t)b->B * sizeof(int32_t), cudaMemcpyHostToDevice, c->stream));
    tanh_dropout_kernel<<<blocks((size_t)T * H, 256), 256, 0, c->stream>>>(
        c->Hh, c->M, c->Hd, c->pos, T, H, drop, s, drop ? d->block : 0, keyed ? c->slot_ids : NULL, b->L,
        keyed ? d->step : 0, drop ? dropout_threshold(d->p) : 0, drop ? (float)(1.0 / (1.0 - d->p)) : 1.0f);
    CUDA_LAUNCH_CHECK();
    broadcast_rows_kernel<<<blocks((size_t)T * V, 256), 256, 0, c->stream>>>(c->Y, b2, T, V);
    CUDA_LAUNCH_CHECK();
    // Y (T, V) = Hd · w2ᵀ + b2
    CUBLAS_CHECK(cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, V, T, H, &one, w2, H, c->Hd, H, &one, c->Y, V));
}

// Row losses and hits on the device, summed on the host in position order.
static double mlp_loss_cuda(Compute *c, const Batch *b, int weighted, float scale, int backward, int64_t *correct) {
    int T = b->T;
    softmax_loss_kernel<<<T, 128, 128 * (sizeof(double) + sizeof(int)), c->stream>>>(
        c->Y, c->target, weighted ? c->weight : NULL, c->m.V, scale, backward, c->row_loss, c->row_hit);
    CUDA_LAUNCH_CHECK();
    CUDA_CHECK(cudaMemcpyAsync(c->h_row_loss, c->row_loss, (size_t)T * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    CUDA_CHECK(cudaMemcpyAsync(c->h_row_hit, c->row_hit, (size_t)T * sizeof(int), cudaMemcpyDeviceToHost, c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    double total = 0;
    for (int t = 0; t < T; t++) {
        total += c->h_row_loss[t];
        if (correct) *correct += c->h_row_hit[t];
    }
    return total;
}

static void mlp_backward_cuda(Compute *c, const Batch *b) {
    const ModelShape *m = &c->m;
    int T = b->T, k = m->k, D = m->D, H = m->H, V = m->V, kD = k * D;
    const float *w1 = c->theta + m->offset[P_W1], *w2 = c->theta + m->offset[P_W2];
    float *gemb = c->grad + m->offset[P_EMBEDDING], *gw1 = c->grad + m->offset[P_W1], *gb1 = c->grad + m->offset[P_B1],
          *gw2 = c->grad + m->offset[P_W2], *gb2 = c->grad + m->offset[P_B2];
    const float one = 1.0f, zero = 0.0f;
    // w2 (V, H) += dYᵀ · Hd ; b2 += Σ_t dY ; dH (T, H) = dY · w2
    CUBLAS_CHECK(cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, H, V, T, &one, c->Hd, H, c->Y, V, &one, gw2, H));
    column_sum_kernel<<<blocks(V, 128), 128, 0, c->stream>>>(gb2, c->Y, T, V);
    CUDA_LAUNCH_CHECK();
    CUBLAS_CHECK(cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, H, T, V, &one, w2, H, c->Y, V, &zero, c->dH, H));
    // dZ = dH ⊙ M ⊙ (1 − Hh²)
    tanh_backward_kernel<<<blocks((size_t)T * H, 256), 256, 0, c->stream>>>(c->dH, c->M, c->Hh, T * H);
    CUDA_LAUNCH_CHECK();
    // w1 (H, kD) += dZᵀ · E ; b1 += Σ_t dZ ; dE (T, kD) = dZ · w1
    CUBLAS_CHECK(cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, kD, H, T, &one, c->E, kD, c->dH, H, &one, gw1, kD));
    column_sum_kernel<<<blocks(H, 128), 128, 0, c->stream>>>(gb1, c->dH, T, H);
    CUDA_LAUNCH_CHECK();
    CUBLAS_CHECK(cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, kD, T, H, &one, w1, kD, c->dH, H, &zero, c->dE, kD));
    // dE rows are (t, j) entries of D floats: treat dE as (T·k, D).
    scatter_embedding_kernel<<<blocks((size_t)V * D, 128), 128, 0, c->stream>>>(gemb, c->dE, c->csr_start, c->csr_entry, V, D);
    CUDA_LAUNCH_CHECK();
}

static double cuda_forward_backward(Compute *c, const Batch *b, float scale, const Dropout *d) {
    ASSERT(b->T <= c->cap);
    if (b->T == 0) return 0;
    upload_batch(c, b);
    mlp_forward_cuda(c, b, d);
    double loss = mlp_loss_cuda(c, b, 1, scale, 1, NULL);
    mlp_backward_cuda(c, b);
    return loss;
}

static double cuda_evaluate(Compute *c, const Batch *b, int64_t *correct) {
    ASSERT(b->T <= c->cap);
    if (b->T == 0) return 0;
    upload_batch(c, b);
    mlp_forward_cuda(c, b, NULL);
    return mlp_loss_cuda(c, b, 0, 0, 0, correct);
}

extern "C" const ComputeOps compute_cuda = {
    .name = "cuda",
    .on_device = 1,
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
    .evaluate = cuda_evaluate,
    .optimizer = &optimizer_cuda,
};
