// layers.h — the CPU layers every model shares, as llm.c's train_gpt2.c writes them: each a
// function of explicit buffers and dimensions (no backend struct), rows of N positions stored
// row-major, one thread, a fixed order, so the bits are a pure function of the inputs. A
// model's forward and backward (gpt_cpu.c) is a sequence of these calls and of its own layers
// (still static in gpt_cpu.c: attention, embeddings, dropout); a CUDA twin mirrors them
// function for function (cuda/layers/*.cuh). The
// element-wise ones run through the CPU's row kernels (cpu_kernels.h: every instruction set
// the same bits). src/model/layers.c.
#ifndef DDPTOK_LAYERS_H
#define DDPTOK_LAYERS_H

#include <stddef.h>
#include <stdint.h>

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
// x (N) ·= keep ? inv : 0 (keep: the flags a dropout drew, 1 kept).
void dropout_forward(float *x, const uint8_t *keep, float inv, size_t N);
// dinp (N) = dout ⊙ (keep ? inv : 0); keep NULL (no dropout): dinp = dout.
void dropout_backward(float *dinp, const float *dout, const uint8_t *keep, float inv, size_t N);
// out (T, C) = rows row[0..T-1] of inp (·, C).
void rows_gather(float *out, const float *inp, const int32_t *row, int T, int C);
// out (N, C) = 0 except rows row[i] = inp's row i (i < T).
void rows_scatter(float *out, const float *inp, const int32_t *row, int T, int N, int C);
// The output's loss: Σ_t w_t·loss_t over T rows of V logits (w NULL: 1), cpu_row_loss per row;
// with backward, logits become dlogits = scale·w_t·(softmax − onehot(target_t)). ex: V floats.
double crossentropy_forward(float *logits, float *ex, const int32_t *target, const float *weight, int T, int V, float scale,
                            int backward, int64_t *correct);

#endif
