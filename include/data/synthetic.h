// synthetic.h — prepare's corpus (docs/spec.md §2, docs/model.md "Corpus"): a seeded sparse
// order-1 Markov chain, its sequences in order, into memory or corpus.h5.
//
// Generating process: token 0 is the begin state. For every state a in 0..V-1 the chain picks
// S = data.markov_support distinct successors uniformly from 1..V-1 and gives them
// Dirichlet(1, …, 1) weights. A sequence has a length uniform in [min_length, max_length]
// and starts from state 0. Sequences 0..n_train-1 are train, then validation, then test.
// All draws come from the corpus Philox stream: the chain, then every length, then every token.
#ifndef DDPTOK_SYNTHETIC_H
#define DDPTOK_SYNTHETIC_H

#include <stdint.h>

#include "config/config.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

// The generating chain: support (V, S) successor ids and probs (V, S) probabilities.
typedef struct {
    int V, S;
    int32_t *succ;   // (V, S)
    double *prob;    // (V, S)
} Chain;

void chain_build(Chain *ch, const Config *cfg);
void chain_free(Chain *ch);
// Probability of token b after state a (0 when b is not a successor).
double chain_prob(const Chain *ch, int a, int b);

// The tokens of each split (from the lengths alone, in one pass over their draws).
void synthetic_tokens(const Config *cfg, int64_t tokens[3]);
// Every sequence in order, handed to emit (split, its tokens, its length; non-zero stops and
// is returned); memory: the chain and one sequence.
typedef int (*SequenceEmit)(void *ctx, int split, const int32_t *ids, int len);
int synthetic_emit(const Config *cfg, SequenceEmit emit, void *ctx);
// The whole corpus in memory, sealed (small corpora: exercise, the tests).
void corpus_generate(Corpus *corpus, const Config *cfg);
// Writes prepare's corpus.h5 at `path` through the writer (data/writer.h), streaming; 0 or -1
// (error printed, nothing published).
int synthetic_write(const Config *cfg, const char *path);

#ifdef __cplusplus
}
#endif
#endif
