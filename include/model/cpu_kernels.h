// cpu_kernels.h — the CPU backends' per-position element-wise kernels: the hidden layer
// (tanh, the dropout mask and the masked activation of one row of H units), the log-softmax
// of one row of V logits and the backward through tanh and the mask (the MLP's), and the
// tanh GELU and its backward (the GPT's), in one variant per instruction set. Every variant
// gives the same bits as the portable one (tests/test_kernels.c compares them on every
// machine that can run them); the backend uses the first one this CPU supports.
#ifndef DDPTOK_CPU_KERNELS_H
#define DDPTOK_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/philox.h"

// One position's hidden layer, in place: hh (H) holds z = E·w1ᵀ + b1 and becomes tanh(z);
// with dropout (mm non-NULL) mm (H) is filled with the unit scales (inv where unit i's draw,
// word i mod 4 of dropout_block(s, block, pos, i / 4), is >= thr, else +0.0f) and
// hd (H) = tanh(z)·mm; without (mm NULL) hd = tanh(z).
typedef void (*HiddenRowFn)(float *hh, float *hd, float *mm, int H, const RngStream *s, uint64_t block, uint32_t pos,
                            uint32_t thr, float inv);

// One row of the log-softmax: e (V) = exp_f32(y[v] − mx) for the logits y (V) whose maximum
// is mx; returns s = Σ_v e[v] in double, as eight partial sums over v mod 8 (v ascending in
// each) added pairwise: ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
typedef double (*SumExpFn)(const float *y, float *e, int V, float mx);
// The row's softmax, scaled: y[v] = sw · (float)(e[v] · inv_s), inv_s = 1/s in double.
typedef void (*ScaledSoftmaxFn)(float *y, const float *e, int V, double inv_s, float sw);

// One query row of the causal attention (layers.c), keys 0..n−1 then nz masked ones. Forward:
// p (n + nz) = softmax(s) over the n keys (mx = row_max, sum_exp, scaled_softmax with sw = 1),
// then nz zeros. Backward, with the row's P in p and dP in dp: dp ⊙= the keep scales (kept:
// inv, dropped: 0; keep NULL without dropout), dot = (float)row_dot(p, dp, n),
// ds[u] = p[u]·(dp[u] − dot) for u < n, then nz zeros. row_max and row_dot are base/row_reduce.h's.
typedef void (*AttnSoftmaxFn)(float *p, const float *s, float *ex, int n, int nz);
typedef void (*AttnSoftmaxBackwardFn)(float *ds, float *dp, const float *p, const uint8_t *keep, float inv, int n, int nz);

// The backward through tanh and the mask of one position, with its b1 column sums:
// dz (H) = dz·(mm·(1 − hh²)), or dz·(1 − hh²) without dropout (mm NULL); gb (H) += dz.
typedef void (*TanhBackwardFn)(float *dz, float *gb, const float *hh, const float *mm, int H);

// The GPT's GELU over n values: out[i] = (0.5·x)·(1 + tanh_f32(√(2/π)·(x + 0.044715·x·x·x)))
// for x = in[i] (the products in that order, none contracted); its backward
// d[i] ·= (0.5·(1 + t) + (0.5·x)·(1 − t·t)·√(2/π)·(1 + 3·0.044715·x·x)), t the same tanh.
typedef void (*GeluFn)(float *out, const float *in, size_t n);
// The GPT's LayerNorm of one row of C (ε = `eps`): mean = s/C with s = Σ x in double as eight
// partial sums over i mod 8 added pairwise (as sum_exp's), var = the same sum of (x − mean)²
// over C, mf = (float)mean, rstd = (float)(1/√(var + eps)); y[i] = (x[i] − mf)·rstd·w[i] + b[i];
// stat = (mf, rstd). Its backward with dm, dnm the same eight-lane sums of w·d and of
// (double)(w·d)·norm (norm = (x − mf)·rstd): dx += (w·d − (float)(dm/C) − norm·(float)(dnm/C))·rstd,
// dw += norm·d, db += d.
typedef void (*LayerNormFn)(float *y, float *stat, const float *x, const float *w, const float *b, int C, double eps);
typedef void (*LayerNormBackwardFn)(float *dx, float *dw, float *db, const float *d, const float *x, const float *stat, const float *w,
                                    int C);
// The GPT's dropout keep flags of n units whose Philox counter is (block, pos, q0 + i/4):
// keep[i] = (word i mod 4 of that block >= thr) (1 kept, 0 dropped); q0 carries the site in
// its top byte (gpt.h), i/4 never carries into it.
typedef void (*DropoutKeepFn)(uint8_t *keep, int n, const RngStream *s, uint64_t block, uint32_t pos, uint32_t q0, uint32_t thr);
typedef void (*GeluBackwardFn)(float *d, const float *in, size_t n);

typedef struct {
    const char *name;
    int (*supported)(void);  // this CPU (and OS) can run it
    HiddenRowFn hidden_row;
    SumExpFn sum_exp;
    ScaledSoftmaxFn scaled_softmax;
    AttnSoftmaxFn attn_softmax;
    AttnSoftmaxBackwardFn attn_softmax_backward;
    TanhBackwardFn tanh_backward;
    GeluFn gelu;
    GeluBackwardFn gelu_backward;
    LayerNormFn layernorm;
    LayerNormBackwardFn layernorm_backward;
    DropoutKeepFn dropout_keep;
} CpuKernels;

// One row's log-softmax loss over its logits y (V): returns w·(logsumexp(y) − y[tgt]) in
// double and counts a correct argmax into *correct (when not NULL); with backward, turns y
// into sw·(softmax − onehot(tgt)). ex: V floats of scratch. Every model's output layer (the
// MLP's and the GPT's loss) goes through it, so their losses round alike.
double cpu_row_loss(const CpuKernels *k, float *y, float *ex, int V, int tgt, float w, float sw, int backward,
                    int64_t *correct);

// Every variant, fastest first; the last one (portable) runs everywhere.
extern const CpuKernels cpu_kernels_all[];
extern const int cpu_kernels_count;
// The first variant of cpu_kernels_all this CPU supports (chosen once, then cached).
const CpuKernels *cpu_kernels_select(void);

#endif
