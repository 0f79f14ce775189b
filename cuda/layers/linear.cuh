// linear.cuh — the GEMMs and bias terms of every device model: cuBLAS SGEMMs in FP32 (the
// handle's math mode: CUBLAS_PEDANTIC_MATH, TF32 only where a backend turns it on), called in
// the CPU reference's row-major terms, and the bias's broadcast and column sums (one thread
// per column, the rows ascending: the CPU's order, no atomics).
#ifndef DDPTOK_CUDA_LAYERS_LINEAR_CUH
#define DDPTOK_CUDA_LAYERS_LINEAR_CUH

#include "layers/common.cuh"

// Column o of db += Σ_rows d[., o] over n rows of width N, ascending (layers.c's bias_backward).
LAYER_FN void column_sum_dev(float *db, const float *d, int n, int N, int o) {
    float acc = db[o];
    for (int p = 0; p < n; p++) acc += d[(size_t)p * N + o];
    db[o] = acc;
}

#ifdef __CUDACC__
#include "cuda_common.h"

// Row-major C (M, N) = alpha·op(A)·op(B) + beta·C, batch of them at strides sA, sB, sC (the
// cblas_sgemm(CblasRowMajor, ...) call of the CPU reference, term for term). cuBLAS is
// column-major: a row-major matrix is the transposed column-major one, so this is Cᵀ =
// op(B)ᵀ·op(A)ᵀ.
static inline void gemm_rm(cublasHandle_t h, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc, int batch = 1, long long sA = 0, long long sB = 0,
                           long long sC = 0) {
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch == 1)
        CUBLAS_CHECK(cublasSgemm(h, ob, oa, N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc));
    else
        CUBLAS_CHECK(cublasSgemmStridedBatched(h, ob, oa, N, M, K, &alpha, B, ldb, sB, A, lda, sA, &beta, C, ldc, sC, batch));
}

// X (T, N) = the row (N) on every row.
static __global__ void broadcast_rows_kernel(float *X, const float *row, int T, int N) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (size_t)T * N) X[idx] = row[idx % N];
}
// out[o] += Σ_t X[t][o] for o in [from, to), t in order.
static __global__ void column_sum_kernel(float *out, const float *X, int T, int N, int from, int to) {
    int o = from + blockIdx.x * blockDim.x + threadIdx.x;
    if (o < to) column_sum_dev(out, X, T, N, o);
}
// layers.h bias_backward.
static inline void bias_backward(cudaStream_t st, float *db, const float *dout, int n, int OC, int from, int to) {
    if (to > from) column_sum_kernel<<<layer_blocks((size_t)(to - from), 128), 128, 0, st>>>(db, dout, n, OC, from, to);
}
// out (n, OC) = inp (n, IC)·wᵀ + bias (w: (OC, IC); bias NULL: none) (layers.h matmul_forward).
static inline void matmul_forward(cublasHandle_t h, cudaStream_t st, float *out, const float *inp, const float *w, const float *bias,
                                  int n, int IC, int OC) {
    if (!bias) {
        gemm_rm(h, 0, 1, n, OC, IC, 1.0f, inp, IC, w, IC, 0.0f, out, OC);
        return;
    }
    broadcast_rows_kernel<<<layer_blocks((size_t)n * OC, 256), 256, 0, st>>>(out, bias, n, OC);
    gemm_rm(h, 0, 1, n, OC, IC, 1.0f, inp, IC, w, IC, 1.0f, out, OC);
}
// dw (OC, IC) += doutᵀ·inp; db (OC) += Σ_rows dout (db NULL: the caller sums it); dinp (n, IC) = dout·w
// (layers.h matmul_backward).
static inline void matmul_backward(cublasHandle_t h, cudaStream_t st, float *dinp, float *dw, float *db, const float *dout,
                                   const float *inp, const float *w, int n, int IC, int OC) {
    gemm_rm(h, 1, 0, OC, IC, n, 1.0f, dout, OC, inp, IC, 1.0f, dw, IC);
    if (db) bias_backward(st, db, dout, n, OC, 0, OC);
    gemm_rm(h, 0, 0, n, IC, OC, 1.0f, dout, OC, w, IC, 0.0f, dinp, IC);
}
#endif

#endif
