// layernorm.cuh — LayerNorm forward and backward over n rows of C (the GPT's ln_1, ln_2,
// ln_f): one thread per row runs cpu_kernels.c's layernorm_row / layernorm_backward_row (its
// sums in double as eight partial sums over i mod 8), and the weight and bias gradients are
// column sums over the rows in ascending order, one thread per column, as the CPU's row loop
// adds them: no atomics, the CPU's bits.
#ifndef DDPTOK_CUDA_LAYERS_LAYERNORM_CUH
#define DDPTOK_CUDA_LAYERS_LAYERNORM_CUH

#include "layers/common.cuh"

// One row: y (C), stat = (mean, rstd) as the floats the normalisation used.
LAYER_FN void layernorm_row_dev(float *y, float *stat, const float *x, const float *w, const float *b, int C, double eps) {
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= C; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)x[i + l];
    for (int l = 0; i + l < C; l++) acc[l] += (double)x[i + l];
    double mean = lanes_sum8(acc) / C, var[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (i = 0; i + 8 <= C; i += 8)
        for (int l = 0; l < 8; l++) {
            double e = (double)x[i + l] - mean;
            var[l] += e * e;
        }
    for (int l = 0; i + l < C; l++) {
        double e = (double)x[i + l] - mean;
        var[l] += e * e;
    }
    float mf = (float)mean, rstd = (float)(1.0 / sqrt(lanes_sum8(var) / C + eps));
    for (i = 0; i < C; i++) y[i] = (x[i] - mf) * rstd * w[i] + b[i];
    stat[0] = mf, stat[1] = rstd;
}

// One row's input gradient: dx (C) += ∂/∂x (the weight and bias gradients: layernorm_dwdb_col).
LAYER_FN void layernorm_backward_row_dev(float *dx, const float *d, const float *x, const float *stat, const float *w, int C) {
    float mf = stat[0], rstd = stat[1];
    double dm[8] = {0, 0, 0, 0, 0, 0, 0, 0}, dnm[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= C; i += 8)
        for (int l = 0; l < 8; l++) {
            float norm = (x[i + l] - mf) * rstd, dn = w[i + l] * d[i + l];
            dm[l] += (double)dn, dnm[l] += (double)dn * (double)norm;
        }
    for (int l = 0; i + l < C; l++) {
        float norm = (x[i + l] - mf) * rstd, dn = w[i + l] * d[i + l];
        dm[l] += (double)dn, dnm[l] += (double)dn * (double)norm;
    }
    float dmf = (float)(lanes_sum8(dm) / C), dnmf = (float)(lanes_sum8(dnm) / C);
    for (i = 0; i < C; i++) {
        float norm = (x[i] - mf) * rstd, dn = w[i] * d[i];
        dx[i] += (dn - dmf - norm * dnmf) * rstd;
    }
}

// Column i of the weight and bias gradients over n rows, ascending: dw[i] += norm·d, db[i] += d.
LAYER_FN void layernorm_dwdb_col_dev(float *dw, float *db, const float *d, const float *x, const float *stat, int n, int C, int i) {
    float aw = dw[i], ab = db[i];
    for (int p = 0; p < n; p++) {
        float norm = (x[(size_t)p * C + i] - stat[2 * p]) * stat[2 * p + 1];
        aw += norm * d[(size_t)p * C + i];
        ab += d[(size_t)p * C + i];
    }
    dw[i] = aw, db[i] = ab;
}

#ifdef __CUDACC__
static __global__ void layernorm_forward_kernel(float *out, float *stat, const float *inp, const float *w, const float *b, int n, int C,
                                         double eps) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) layernorm_row_dev(out + (size_t)p * C, stat + 2 * p, inp + (size_t)p * C, w, b, C, eps);
}
static __global__ void layernorm_backward_rows_kernel(float *dinp, const float *dout, const float *inp, const float *stat, const float *w,
                                               int n, int C) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) layernorm_backward_row_dev(dinp + (size_t)p * C, dout + (size_t)p * C, inp + (size_t)p * C, stat + 2 * p, w, C);
}
static __global__ void layernorm_dwdb_kernel(float *dw, float *db, const float *dout, const float *inp, const float *stat, int n, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < C) layernorm_dwdb_col_dev(dw, db, dout, inp, stat, n, C, i);
}

// llm.c's shape: out (n, C), stat (n, 2) = LN(inp (n, C)).
static inline void layernorm_forward(cudaStream_t st, float *out, float *stat, const float *inp, const float *w, const float *b, int n,
                                     int C, double eps) {
    layernorm_forward_kernel<<<layer_blocks((size_t)n, 64), 64, 0, st>>>(out, stat, inp, w, b, n, C, eps);
}
// dinp (n, C) += ∂/∂inp; dw, db (C) += over the rows in order.
static inline void layernorm_backward(cudaStream_t st, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                      const float *stat, const float *w, int n, int C) {
    layernorm_backward_rows_kernel<<<layer_blocks((size_t)n, 64), 64, 0, st>>>(dinp, dout, inp, stat, w, n, C);
    layernorm_dwdb_kernel<<<layer_blocks((size_t)C, 128), 128, 0, st>>>(dw, db, dout, inp, stat, n, C);
}
#endif

#endif
