// gpt.h — the GPT's row (docs/model.md "The GPT"): GPT-2 exactly as HF transformers'
// GPT2LMHeadModel and nanoGPT compute it.
//
// Letters: V vocabulary, Lmax = data.max_length (the context: positions 0..Lmax-1), C =
// model.n_embd, NH = model.n_head, hs = C / NH, NL = model.n_layer. For a sequence x[0..L-1]
// the input at position t is the previous token (x[t-1]; the begin id 0 at t = 0), so
// position t predicts x[t] and the supervised positions are those of the label rule, as for
// every model (data/batch.h, BATCH_SEQUENCES):
//   h0 = wte[input_t] + wpe[t];                          dropout (site 0)
//   per block l:  a = ln_1(h);  q, k, v = split(a·qkvwᵀ + qkvb)   (NH heads of hs)
//                 P = softmax(q·kᵀ / √hs over keys j ≤ t);         dropout on P (site 1 + 3l)
//                 h += drop(concat_heads(P·v)·attprojwᵀ + attprojb)   (site 2 + 3l)
//                 f = gelu_tanh(ln_2(h)·fcwᵀ + fcb);  h += drop(f·fcprojwᵀ + fcprojb)   (site 3 + 3l)
//   logits = ln_f(h)·wteᵀ (the output layer tied to the token embedding, no bias)
// LayerNorm: (x − mean)/√(var + 1e-5)·w + b, the biased variance over C. gelu_tanh(x) =
// x/2·(1 + tanh(√(2/π)·(x + 0.044715x³))). Each sequence attends only to itself.
//
// Tensors in θ order, llm.c's names and layout (weights (out, in), the blocks stacked on a
// first dimension NL): wte (V, C), wpe (Lmax, C), ln1w (NL, C), ln1b (NL, C),
// qkvw (NL, 3C, C), qkvb (NL, 3C), attprojw (NL, C, C), attprojb (NL, C), ln2w (NL, C),
// ln2b (NL, C), fcw (NL, 4C, C), fcb (NL, 4C), fcprojw (NL, C, 4C), fcprojb (NL, C),
// lnfw (C), lnfb (C). qkvw's rows are q's C, then k's, then v's; head h owns columns
// h·hs .. (h+1)·hs − 1 of each. The overlap's tail bucket is [lnfw, P): ln_f, final first;
// under train.overlap: blocks block l's bucket (slice l of each stacked tensor) follows once
// its backward is done, and wte, wpe (tied: wte is final only after the encoder's backward) last.
//
// Initialisation (GPT-2's): every weight and both embeddings N(0, 0.02), attprojw and fcprojw
// N(0, 0.02/√(2·NL)), biases 0, LayerNorm weights 1 and biases 0; the normals are drawn in θ
// order from the init stream (Box–Muller, as the MLP's embedding).
//
// Dropout (p = model.dropout at every site): the unit u of site `site` at a packed position
// whose padded position is `at` (batch.h) is kept when word u mod 4 of the Philox block at
// counter (block, word, site << 24 | u / 4) is ≥ p·2³², with (block, word) =
// dropout_counter(d->block, d->ids, L, d->step, at) (philox.h): per microbatch under the bands
// sampler, keyed by (step, sequence id, position) under the global sampler. Units: the C
// features of the embedding and residual sites; h·Lmax + j (the key j of head h) for the
// attention site of the query at `at`.
#ifndef DDPTOK_GPT_H
#define DDPTOK_GPT_H

#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GPT_WTE = 0, GPT_WPE, GPT_LN1W, GPT_LN1B, GPT_QKVW, GPT_QKVB, GPT_ATTPROJW, GPT_ATTPROJB,
    GPT_LN2W, GPT_LN2B, GPT_FCW, GPT_FCB, GPT_FCPROJW, GPT_FCPROJB, GPT_LNFW, GPT_LNFB, GPT_TENSORS
};

// Its own shape (ModelShape.own, set by its row's shape from model.n_layer, n_head, n_embd).
typedef struct {
    int n_layer;  // NL blocks
    int n_head;   // NH heads
    int n_embd;   // C, the width
} GptDims;
MODEL_OWN_SHAPE(GptDims, gpt_dims)

#define GPT_LN_EPS 1e-5
#define GPT_INIT_STD 0.02

// Its row, gpt_row (src/model/gpt.c): the budget counts what gpt_cpu.c allocates (per row and
// block 16C + 4 floats and 2C mask bytes, per row NL·NH·Lmax attention probabilities and their
// mask bytes, 13C + 4 + V floats and C bytes more, a per-instance scratch); its logits for generate run the CPU backend on the sequence
// so far (its last Lmax − 1 ids after the begin id once it is longer).

// The output layer outside training (evaluate, last_logits) runs in chunks of rows: each
// chunk's logits (rows, V), their losses, then the next chunk's, so an instance that only
// evaluates (the evaluator's 16 sequences of Lmax rows) touches GPT_LOGITS_CHUNK_BYTES of its
// logits buffer, not 16·Lmax·V floats (823 MB at V 50 257, Lmax 256). Training's forward still
// computes a microbatch's T rows at once (its backward's GEMMs read all of dlogits). The rows
// of a chunk are a function of V alone, so every instance (the trainer's, the evaluator's,
// CPU and CUDA) cuts a pass the same way: OpenBLAS's float sums depend on the rows one GEMM
// is given, and a pass gives the same numbers wherever it runs. Below 64 MiB of logits a
// pass is one chunk, as before (every config of the tests but tests/test_evaluation.sh's
// chunk case, which sets DDPTOK_TEST_LOGITS_ROWS).
#define GPT_LOGITS_CHUNK_BYTES ((size_t)64 << 20)
static inline int gpt_logits_rows(int V) {
    size_t rows = GPT_LOGITS_CHUNK_BYTES / ((size_t)(V > 0 ? V : 1) * sizeof(float));
    return rows < 1 ? 1 : rows > (1 << 30) ? 1 << 30 : (int)rows;
}

// Dropout sites: the embedding, then three per block.
enum { GPT_SITE_EMBEDDING = 0 };
static inline uint32_t gpt_site_attention(int layer) { return 1u + 3u * (uint32_t)layer; }
static inline uint32_t gpt_site_attn_residual(int layer) { return 2u + 3u * (uint32_t)layer; }
static inline uint32_t gpt_site_mlp_residual(int layer) { return 3u + 3u * (uint32_t)layer; }

// The dropout scales of units u0 .. u0 + n - 1 of `site` at padded position `at` of a batch of
// padded length L: out[i] = 1/(1 − p) or 0 (see the top of this file); thr = dropout_threshold(p).
static inline void gpt_dropout_scales(const Dropout *d, int L, uint32_t at, uint32_t site, uint32_t u0, int n, uint32_t thr,
                                      float inv, float *out) {
    uint64_t block;
    uint32_t word;
    dropout_counter(d->block, d->ids, L, d->step, at, &block, &word);
    for (int i = 0; i < n;) {
        uint32_t u = u0 + (uint32_t)i;
        Philox4 r = rng_block(&d->stream, block, word, site << 24 | u >> 2);
        for (uint32_t w = u & 3; w < 4 && i < n; w++, i++) out[i] = r.v[w] >= thr ? inv : 0.0f;
    }
}

// Block l's weights in θ, or their gradients in the gradient buffer (the same offsets), named
// before the layer calls as llm.c's `l_ln1w = …` block: gpt_cpu.c and gpt_cuda.cu alike.
typedef struct {
    float *ln1w, *ln1b;          // (C) each
    float *qkvw, *qkvb;          // (3C, C), (3C)
    float *attprojw, *attprojb;  // (C, C), (C)
    float *ln2w, *ln2b;          // (C) each
    float *fcw, *fcb;            // (4C, C), (4C)
    float *fcprojw, *fcprojb;    // (C, 4C), (C)
} GptBlock;
static inline GptBlock gpt_block(const ModelShape *m, float *base, int l) {
#define GPT_SLICE(p) (base + m->offset[p] + (size_t)l * (m->size[p] / (size_t)gpt_dims(m)->n_layer))
    GptBlock w = {GPT_SLICE(GPT_LN1W), GPT_SLICE(GPT_LN1B),     GPT_SLICE(GPT_QKVW),    GPT_SLICE(GPT_QKVB),
                  GPT_SLICE(GPT_ATTPROJW), GPT_SLICE(GPT_ATTPROJB), GPT_SLICE(GPT_LN2W), GPT_SLICE(GPT_LN2B),
                  GPT_SLICE(GPT_FCW),  GPT_SLICE(GPT_FCB),      GPT_SLICE(GPT_FCPROJW), GPT_SLICE(GPT_FCPROJB)};
#undef GPT_SLICE
    return w;
}

extern const ComputeOps compute_gpt_cpu;  // src/model/gpt_cpu.c: the reference backend

#ifdef __cplusplus
}
#endif
#endif
