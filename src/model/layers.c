// layers.c — the CPU layers every model shares (layers.h): GEMMs through one cblas_sgemm
// each, the element-wise layers through the row kernel this CPU runs (cpu_kernels_select:
// the same bits on every instruction set), sums over rows in row order.
#include "model/layers.h"

#include <cblas.h>
#include <math.h>
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

// ---------------------------------------------------------------------------------------
// Dropout

void dropout_draw_init(DropDraw *dd, const Dropout *d, int L, uint8_t *tmp) {
    memset(dd, 0, sizeof *dd);
    dd->on = d && d->p > 0;
    dd->inv = 1.0f;
    if (!dd->on) return;
    dd->d = d, dd->L = L, dd->tmp = tmp;
    dd->thr = dropout_threshold(d->p);
    dd->inv = (float)(1.0 / (1.0 - d->p));
}

void dropout_keep_units(uint8_t *keep, const DropDraw *dd, uint32_t at, uint32_t site, uint32_t u0, int n) {
    uint64_t block;
    uint32_t word, off = u0 & 3;
    dropout_counter(dd->d->block, dd->d->ids, dd->L, dd->d->step, at, &block, &word);
    cpu_kernels_select()->dropout_keep(off ? dd->tmp : keep, n + (int)off, &dd->d->stream, block, word, site << 24 | u0 >> 2, dd->thr);
    if (off) memcpy(keep, dd->tmp + off, (size_t)n);
}

void dropout_forward(float *x, uint8_t *keep, const int32_t *at, uint32_t site, int N, int C, const DropDraw *dd) {
    if (!dd->on) return;
    for (int p = 0; p < N; p++) {
        float *xp = x + (size_t)p * C;
        uint8_t *kp = keep + (size_t)p * C;
        dropout_keep_units(kp, dd, (uint32_t)at[p], site, 0, C);
        for (int i = 0; i < C; i++) xp[i] *= kp[i] ? dd->inv : 0.0f;
    }
}

void dropout_backward(float *dinp, const float *dout, const uint8_t *keep, size_t N, const DropDraw *dd) {
    if (!dd->on) {
        memcpy(dinp, dout, N * sizeof(float));
        return;
    }
    for (size_t i = 0; i < N; i++) dinp[i] = dout[i] * (keep[i] ? dd->inv : 0.0f);
}

// ---------------------------------------------------------------------------------------
// Embeddings

void encoder_forward(float *out, const float *wte, const float *wpe, const int32_t *input, const int32_t *run_start, int runs, int C) {
    for (int j = 0; j < runs; j++)
        for (int p = run_start[j], t = 0; p < run_start[j + 1]; p++, t++) {
            float *x = out + (size_t)p * C;
            const float *te = wte + (size_t)input[p] * C;
            if (!wpe) {
                memcpy(x, te, (size_t)C * sizeof(float));
                continue;
            }
            const float *pe = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++) x[i] = te[i] + pe[i];
        }
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *input, const int32_t *run_start, int runs, int C) {
    for (int j = 0; j < runs; j++)
        for (int p = run_start[j], t = 0; p < run_start[j + 1]; p++, t++) {
            const float *d = dout + (size_t)p * C;
            float *te = dwte + (size_t)input[p] * C;
            if (!dwpe) {
                for (int i = 0; i < C; i++) te[i] += d[i];
                continue;
            }
            float *pe = dwpe + (size_t)t * C;
            for (int i = 0; i < C; i++) te[i] += d[i], pe[i] += d[i];
        }
}

// ---------------------------------------------------------------------------------------
// Causal self-attention over packed runs

// A query row's softmax and its backward: cpu_kernels.h's attn_softmax and
// attn_softmax_backward, one pass of each instruction set's row kernels (row_max and row_dot
// are base/row_reduce.h's, which the device's attention rows use too).

// A run of len rows in blocks of ATT_BLOCK query rows: rows r0..r1 - 1 read keys 0..r1 - 1
// only, so the GEMMs skip most of the causal mask's zero half.
enum { ATT_BLOCK = 64 };

void attention_runs(int64_t *run_att, const int32_t *run_start, int runs, int NH) {
    run_att[0] = 0;
    for (int j = 0; j < runs; j++) {
        int64_t len = run_start[j + 1] - run_start[j];
        run_att[j + 1] = run_att[j] + (int64_t)NH * len * len;
    }
}

// Per run and head, P (kept in att) and y = (P ⊙ mask)·v into out. The causal softmax of row
// t over keys 0..t takes the log-softmax's row kernels (exp_f32, eight partial sums in
// double): the same bits on every instruction set.
void attention_forward(float *out, float *att, uint8_t *keep_att, const float *qkv, const int32_t *run_start, const int64_t *run_att,
                       int runs, const int32_t *at, uint32_t site, int NH, int C, int Lmax, const DropDraw *dd, float *dpd, float *ds,
                       float *ex) {
    const CpuKernels *kern = cpu_kernels_select();
    int hs = C / NH;
    float scale = (float)(1.0 / sqrt((double)hs));
    for (int j = 0; j < runs; j++) {
        int s = run_start[j], len = run_start[j + 1] - s;
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (size_t)s * 3 * C + h * hs, *k = q + C, *v = q + 2 * C;
            size_t at0 = (size_t)run_att[j] + (size_t)h * len * len;
            float *P = att + at0, *S = ds, *D = dpd;
            uint8_t *keep = keep_att + at0;
            for (int r0 = 0; r0 < len; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < len ? r0 + ATT_BLOCK : len;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, hs, scale, q + (size_t)r0 * 3 * C, 3 * C, k, 3 * C,
                            0.0f, S + (size_t)r0 * len, len);
                for (int t = r0; t < r1; t++) {  // causal softmax: keys 0..t
                    float *pt = P + (size_t)t * len;
                    // then the masked keys up to the block's end: what P·v here and the
                    // backward's block GEMMs read (a row's keys beyond r1 are read by neither)
                    kern->attn_softmax(pt, S + (size_t)t * len, ex, t + 1, r1 - t - 1);
                    if (dd->on) {  // Pd = P ⊙ mask; row t's keys are units h·Lmax + u of the site
                        float *dt = D + (size_t)t * len;
                        uint8_t *kt = keep + (size_t)t * len;
                        dropout_keep_units(kt, dd, (uint32_t)at[s + t], site, (uint32_t)(h * Lmax), t + 1);
                        for (int u = 0; u <= t; u++) dt[u] = pt[u] * (kt[u] ? dd->inv : 0.0f);
                        for (int u = t + 1; u < r1; u++) dt[u] = 0.0f;
                    }
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, hs, r1, 1.0f, (dd->on ? D : P) + (size_t)r0 * len, len,
                            v, 3 * C, 0.0f, out + (size_t)(s + r0) * C + h * hs, C);
            }
        }
    }
}

// By the forward's blocks: a query block reads the keys up to its end, a key block the
// queries from its start.
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att, const uint8_t *keep_att,
                        const int32_t *run_start, const int64_t *run_att, int runs, int NH, int C, const DropDraw *dd, float *dpd,
                        float *ds) {
    const CpuKernels *kern = cpu_kernels_select();
    int hs = C / NH;
    float scale = (float)(1.0 / sqrt((double)hs));
    for (int j = 0; j < runs; j++) {
        int s = run_start[j], len = run_start[j + 1] - s;
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (size_t)s * 3 * C + h * hs, *k = q + C, *v = q + 2 * C, *dy = dout + (size_t)s * C + h * hs;
            size_t at0 = (size_t)run_att[j] + (size_t)h * len * len;
            const float *P = att + at0, *Pd = P;
            const uint8_t *keep = keep_att + at0;
            float *dq = dqkv + (size_t)s * 3 * C + h * hs, *dk = dq + C, *dv = dq + 2 * C, *dP = dpd, *dS = ds;
            if (dd->on) {  // Pd = P ⊙ mask again, in dS (which the softmax's backward below overwrites after the last read)
                for (int t = 0; t < len; t++) {
                    const float *pt = P + (size_t)t * len;
                    const uint8_t *kt = keep + (size_t)t * len;
                    float *dst = dS + (size_t)t * len;
                    int end = (t / ATT_BLOCK + 1) * ATT_BLOCK < len ? (t / ATT_BLOCK + 1) * ATT_BLOCK : len;  // t's block's end
                    for (int u = 0; u <= t; u++) dst[u] = pt[u] * (kt[u] ? dd->inv : 0.0f);
                    for (int u = t + 1; u < end; u++) dst[u] = 0.0f;  // as far as the dv GEMMs read
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
                for (int t = r0; t < r1; t++)  // dP ⊙ mask, Σ_u P·dP over the row's keys, dS; zeros to r1
                    kern->attn_softmax_backward(dS + (size_t)t * len, dP + (size_t)t * len, P + (size_t)t * len,
                                                dd->on ? keep + (size_t)t * len : NULL, dd->inv, t + 1, r1 - t - 1);
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
// Rows and the loss

void rows_gather(float *out, const float *inp, const int32_t *row, int T, int C) {
    for (int i = 0; i < T; i++) memcpy(out + (size_t)i * C, inp + (size_t)row[i] * C, (size_t)C * sizeof(float));
}

void rows_scatter(float *out, const float *inp, const int32_t *row, int T, int N, int C) {
    memset(out, 0, (size_t)N * C * sizeof(float));
    for (int i = 0; i < T; i++) memcpy(out + (size_t)row[i] * C, inp + (size_t)i * C, (size_t)C * sizeof(float));
}

double crossentropy_forward(float *logits, float *ex, const int32_t *target, const float *weight, int T, int V, float scale,
                            int backward, int64_t *correct, double *row_loss, int32_t *row_hit) {
    const CpuKernels *k = cpu_kernels_select();
    double total = 0;
    for (int t = 0; t < T; t++) {
        float w = weight ? weight[t] : 1.0f;
        int64_t hit = 0;
        double loss = cpu_row_loss(k, logits + (size_t)t * V, ex, V, target[t], w, scale * w, backward,
                                   correct || row_hit ? &hit : NULL);
        total += loss;
        if (correct) *correct += hit;
        if (row_loss) row_loss[t] = loss;
        if (row_hit) row_hit[t] = (int32_t)hit;
    }
    return total;
}
