// layers.h — the CPU layers the models share, as llm.c's train_gpt2.c writes them: each a
// function of explicit buffers and dimensions (no backend struct), N rows of width C stored
// row-major (the packed layout of data/batch.h: a microbatch's sequences back to back, runs
// for attention), one thread, a fixed order, so the bits are a pure function of the inputs.
// A model's forward and backward (gpt_cpu.c) is a sequence of these calls and of its own; its
// CUDA twin (cuda/gpt_cuda.cu) makes the same calls under the same names, with the same
// arguments after its cuBLAS handle and stream (cuda/layers/*.cuh), so the two read side by
// side. The element-wise ones run through the CPU's row kernels (cpu_kernels.h: every
// instruction set the same bits). src/model/layers.c.
//
// Letters: N rows, C width, IC/OC a GEMM's in/out width, T supervised rows, V vocabulary,
// NH heads of hs = C/NH, Lmax the longest run (data.max_length).
#ifndef DDPTOK_LAYERS_H
#define DDPTOK_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

// out (N, OC) = inp (N, IC) · weightᵀ (weight: (OC, IC)) + bias (OC; NULL: none), one sgemm.
void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int IC, int OC);
// dweight (OC, IC) += doutᵀ·inp; dbias (OC) += Σ_rows dout (NULL: none); dinp (N, IC) = dout·weight (written).
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp, const float *weight, int N,
                     int IC, int OC);
// dbias[o] += Σ_rows dout[., o] (rows ascending) for the columns o in [from, to) of dout (N, OC).
void bias_backward(float *dbias, const float *dout, int N, int OC, int from, int to);
// LayerNorm of N rows of C (ε = eps; cpu_kernels.h LayerNormFn): stat (N, 2) keeps each row's (mean, rstd).
void layernorm_forward(float *out, float *stat, const float *inp, const float *weight, const float *bias, int N, int C, double eps);
// dinp (N, C) += ∂/∂inp; dweight, dbias (C) += over the rows in order.
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp, const float *stat,
                        const float *weight, int N, int C);
// out (N) = gelu_tanh(inp) (cpu_kernels.h GeluFn).
void gelu_forward(float *out, const float *inp, size_t N);
// d (N): ∂/∂out in, ∂/∂inp out (d ·= gelu'(inp)).
void gelu_backward(float *d, const float *inp, size_t N);
// out (N) = inp1 + inp2.
void residual_forward(float *out, const float *inp1, const float *inp2, size_t N);

// One microbatch's dropout as the layers draw it (model.h Dropout; the draws of gpt.h: unit
// u of `site` at padded position `at` is kept when word u mod 4 of the Philox block at
// counter (block, word, site << 24 | u / 4) is ≥ thr, (block, word) = dropout_counter(...)):
// the host twin of cuda/layers/dropout.cuh's DropDev. Off (p = 0): every dropout layer is the
// identity and draws nothing.
typedef struct {
    int on;              // p > 0
    const Dropout *d;    // the stream and the keying (NULL when off)
    int L;               // the batch's padded length
    uint32_t thr;        // dropout_threshold(p)
    float inv;           // 1/(1 − p)
    uint8_t *tmp;        // (max units per call + 4) one call's flags from its Philox block's start
} DropDraw;
// dd from d (NULL or p = 0: off) for a batch of padded length L; tmp as above.
void dropout_draw_init(DropDraw *dd, const Dropout *d, int L, uint8_t *tmp);
// keep (n) = the flags of units u0 .. u0 + n − 1 of `site` at padded position `at`
// (cpu_kernels.h DropoutKeepFn from the Philox block that holds u0).
void dropout_keep_units(uint8_t *keep, const DropDraw *dd, uint32_t at, uint32_t site, uint32_t u0, int n);
// Dropout of N rows of C at `site`: keep (N, C) the flags of row p's units 0..C-1 at padded
// position at[p], x (N, C) ·= keep ? inv : 0. Off: nothing (keep not written).
void dropout_forward(float *x, uint8_t *keep, const int32_t *at, uint32_t site, int N, int C, const DropDraw *dd);
// dinp (N) = dout ⊙ (keep ? inv : 0), keep the forward's flags; off: dinp = dout.
void dropout_backward(float *dinp, const float *dout, const uint8_t *keep, size_t N, const DropDraw *dd);

// The token and position embeddings of packed runs: out (N, C) row p = wte[input[p]] +
// wpe[t] (t: p's position in its run; wpe NULL: no position table), N = run_start[runs].
void encoder_forward(float *out, const float *wte, const float *wpe, const int32_t *input, const int32_t *run_start, int runs, int C);
// dwte[input[p]] += dout's row p, dwpe[t] += it (dwpe NULL: none), rows in order (deterministic).
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *input, const int32_t *run_start, int runs, int C);

// Causal multi-head self-attention over packed runs (no run attends to another): run j is
// rows run_start[j] .. run_start[j+1]-1 of qkv (N, 3C: q's C, k's, v's; head h its columns
// h·hs ..), its probabilities P (NH, len, len) at att + run_att[j] (run_att (runs + 1):
// Σ NH·len² before run j, attention_runs), row t over keys 0..t; out (N, C) = concat_heads(
// (P ⊙ mask)·v). Dropout on P at `site` (unit h·Lmax + u for key u of head h), its flags in
// keep (as att). Scratch: dpd, ds (Lmax, Lmax), ex (Lmax).
void attention_runs(int64_t *run_att, const int32_t *run_start, int runs, int NH);
void attention_forward(float *out, float *att, uint8_t *keep, const float *qkv, const int32_t *run_start, const int64_t *run_att,
                       int runs, const int32_t *at, uint32_t site, int NH, int C, int Lmax, const DropDraw *dd, float *dpd, float *ds,
                       float *ex);
// dqkv (N, 3C, written) from dout (N, C) through the forward's att and keep.
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att, const uint8_t *keep,
                        const int32_t *run_start, const int64_t *run_att, int runs, int NH, int C, const DropDraw *dd, float *dpd,
                        float *ds);
// out (T, C) = rows row[0..T-1] of inp (·, C).
void rows_gather(float *out, const float *inp, const int32_t *row, int T, int C);
// out (N, C) = 0 except rows row[i] = inp's row i (i < T).
void rows_scatter(float *out, const float *inp, const int32_t *row, int T, int N, int C);
// The output's loss: Σ_t w_t·loss_t over T rows of V logits (w NULL: 1), cpu_row_loss per row;
// with backward, logits become dlogits = scale·w_t·(softmax − onehot(target_t)). ex: V floats.
// row_loss and row_hit (T), when not NULL: each row's term of the sum and 1 where its argmax is
// the target (evaluate --per-sequence).
double crossentropy_forward(float *logits, float *ex, const int32_t *target, const float *weight, int T, int V, float scale,
                            int backward, int64_t *correct, double *row_loss, int32_t *row_hit);

#endif
