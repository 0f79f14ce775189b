// gpt_layers.h — the GPT's layers on the CPU, the list its CUDA twin mirrors function for
// function (cuda/gpt_cuda.cu, cuda/layers/*.cuh). Each is a function of explicit buffers and
// dimensions (llm.c's train_gpt2.c), over the packed rows of one microbatch: N rows, runs
// packed sequences, run j rows run_start[j] .. run_start[j + 1] − 1 (data/batch.h). The layers
// every model shares are layers.h's; these are the GPT's own (src/model/gpt_cpu.c).
//
// STATUS (issue 36, part 1 unfinished): these signatures are the settled target; gpt_cpu.c
// still computes them in its static functions over its Compute struct, so nothing defines
// them yet (no caller either). The shared ones in layers.h are in use.
//
// One block's forward, as gpt_cpu.c calls it (the backward the same calls reversed):
//   layernorm_forward(ln1) · matmul_forward(qkv) · attention_forward(atty) · matmul_forward(proj) ·
//   gpt_dropout_forward(proj) · residual_forward(res2) · layernorm_forward(ln2) · matmul_forward(fch) ·
//   gelu_forward(fcg) · matmul_forward(proj) · gpt_dropout_forward(proj) · residual_forward(res3)
// before the blocks encoder_forward, after them layernorm_forward(lnf) · rows_gather(sup) ·
// matmul_forward(logits, no bias) · crossentropy_forward.
#ifndef DDPTOK_GPT_LAYERS_H
#define DDPTOK_GPT_LAYERS_H

#include <stdint.h>

#include "model/model.h"

// One microbatch's dropout as the GPT draws it (gpt.h: the unit u of a site at padded position
// `at` is word u mod 4 of the Philox block (dropout_counter(.., at), site << 24 | u / 4)).
typedef struct {
    int on;               // 0: no dropout (nothing else is read)
    const Dropout *d;     // the window's keying
    int L;                // the batch's padded length
    const int32_t *at;    // (N) each packed row's padded position
    uint32_t thr;         // dropout_threshold(p)
    float inv;            // 1/(1 − p)
    uint8_t *tmp;         // (max(C, NH·Lmax) + 4) scratch: a unit range that starts inside a Philox block
} GptDropout;

// keep (n) = the flags of units u0 .. u0 + n − 1 of `site` at packed row p (1 kept).
void gpt_dropout_keep(uint8_t *keep, const GptDropout *dr, int p, uint32_t site, uint32_t u0, int n);
// out (N, C) = wte[input] + wpe[t] (t: the row's position in its run); dropout at site 0 into keep (N, C).
void encoder_forward(float *out, uint8_t *keep, const int32_t *input, const float *wte, const float *wpe, const int32_t *run_start,
                     int runs, int C, const GptDropout *dr);
// dwte[input], dwpe[t] += dout's rows, rows ascending.
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *input, const int32_t *run_start, int runs, int C);
// x (N, C) ·= the mask of `site` (C features per row) drawn into keep (N, C); dropout off: nothing.
void gpt_dropout_forward(float *x, uint8_t *keep, int N, int C, uint32_t site, const GptDropout *dr);
// out (N, C) = per run and head y = (P ⊙ mask)·v, P = causal softmax(q·kᵀ/√hs) kept in att at
// run_att[j] + h·len² (and its mask in keep_att); qkv (N, 3C). Scratch: S, D (Lmax, Lmax), row (NH·Lmax).
void attention_forward(float *out, float *att, uint8_t *keep_att, float *S, float *D, float *row, const float *qkv,
                       const int32_t *run_start, const int64_t *run_att, int runs, int C, int NH, int Lmax, uint32_t site,
                       const GptDropout *dr);
// dqkv (N, 3C, written) from dout (N, C) and the forward's qkv, att, keep_att. Scratch: dP, dS (Lmax, Lmax).
void attention_backward(float *dqkv, float *dP, float *dS, const float *dout, const float *qkv, const float *att,
                        const uint8_t *keep_att, const int32_t *run_start, const int64_t *run_att, int runs, int C, int NH,
                        const GptDropout *dr);

#endif
