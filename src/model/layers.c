// layers.c — the CPU layers every model shares (layers.h): GEMMs through one cblas_sgemm
// each, the element-wise layers through the row kernel this CPU runs (cpu_kernels_select:
// the same bits on every instruction set), sums over rows in row order.
#include "model/layers.h"

#include <cblas.h>
#include <string.h>

#include "model/cpu_kernels.h"

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int IC, int OC) {
    if (!bias) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC, 0.0f, out, OC);
        return;
    }
    for (int p = 0; p < N; p++) memcpy(out + (size_t)p * OC, bias, (size_t)OC * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC, 1.0f, out, OC);
}

void bias_backward(float *dbias, const float *dout, int N, int OC, int from, int to) {
    for (int p = 0; p < N; p++) {
        const float *d = dout + (size_t)p * OC;
        for (int o = from; o < to; o++) dbias[o] += d[o];
    }
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp, const float *weight, int N,
                     int IC, int OC) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dweight, IC);
    if (dbias) bias_backward(dbias, dout, N, OC, 0, OC);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, weight, IC, 0.0f, dinp, IC);
}

void layernorm_forward(float *out, float *stat, const float *inp, const float *weight, const float *bias, int N, int C, double eps) {
    const CpuKernels *k = cpu_kernels_select();
    for (int p = 0; p < N; p++) k->layernorm(out + (size_t)p * C, stat + 2 * p, inp + (size_t)p * C, weight, bias, C, eps);
}

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp, const float *stat,
                        const float *weight, int N, int C) {
    const CpuKernels *k = cpu_kernels_select();
    for (int p = 0; p < N; p++)
        k->layernorm_backward(dinp + (size_t)p * C, dweight, dbias, dout + (size_t)p * C, inp + (size_t)p * C, stat + 2 * p, weight, C);
}

void gelu_forward(float *out, const float *inp, size_t N) { cpu_kernels_select()->gelu(out, inp, N); }

void gelu_backward(float *d, const float *inp, size_t N) { cpu_kernels_select()->gelu_backward(d, inp, N); }

void residual_forward(float *out, const float *inp1, const float *inp2, size_t N) {
    for (size_t i = 0; i < N; i++) out[i] = inp1[i] + inp2[i];
}

void dropout_forward(float *x, const uint8_t *keep, float inv, size_t N) {
    for (size_t i = 0; i < N; i++) x[i] *= keep[i] ? inv : 0.0f;
}

void dropout_backward(float *dinp, const float *dout, const uint8_t *keep, float inv, size_t N) {
    if (!keep) {
        memcpy(dinp, dout, N * sizeof(float));
        return;
    }
    for (size_t i = 0; i < N; i++) dinp[i] = dout[i] * (keep[i] ? inv : 0.0f);
}

void rows_gather(float *out, const float *inp, const int32_t *row, int T, int C) {
    for (int i = 0; i < T; i++) memcpy(out + (size_t)i * C, inp + (size_t)row[i] * C, (size_t)C * sizeof(float));
}

void rows_scatter(float *out, const float *inp, const int32_t *row, int T, int N, int C) {
    memset(out, 0, (size_t)N * C * sizeof(float));
    for (int i = 0; i < T; i++) memcpy(out + (size_t)row[i] * C, inp + (size_t)i * C, (size_t)C * sizeof(float));
}

double crossentropy_forward(float *logits, float *ex, const int32_t *target, const float *weight, int T, int V, float scale,
                            int backward, int64_t *correct) {
    const CpuKernels *k = cpu_kernels_select();
    double total = 0;
    for (int t = 0; t < T; t++) {
        float w = weight ? weight[t] : 1.0f;
        total += cpu_row_loss(k, logits + (size_t)t * V, ex, V, target[t], w, scale * w, backward, correct);
    }
    return total;
}
