// corpus.h — the synthetic corpus (docs/spec.md §2): a seeded sparse order-1 Markov chain, its
// splits, the data lock, and the microbatch layout of supervised positions. An imported
// corpus (data/import.h, docs/data.md) has the same layout and is read by the same corpus_read.
//
// Generating process (docs/model.md "Corpus"): token 0 is the begin state. For every
// state a in 0..V-1 the chain picks S = data.markov_support distinct successors uniformly
// from 1..V-1 and gives them Dirichlet(1, …, 1) weights. A sequence has a length uniform
// in [min_length, max_length] and starts from state 0. Sequences 0..n_train-1 are train,
// then validation, then test. All draws come from the corpus Philox stream.
#ifndef DDPTOK_CORPUS_H
#define DDPTOK_CORPUS_H

#include <stdint.h>

#include "config/config.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { SPLIT_TRAIN = 0, SPLIT_VALIDATION = 1, SPLIT_TEST = 2 };

typedef struct {
    int n;             // sequences
    int64_t n_tokens;  // total tokens
    int32_t *tokens;   // (n_tokens)
    int64_t *offsets;  // (n+1): sequence i is tokens[offsets[i] : offsets[i+1]]
    uint8_t *split;    // (n)
    int split_first[4];  // split s is sequences split_first[s] .. split_first[s + 1] - 1 (train, validation, test)
    char lock[65];     // data lock (hex SHA-256), see corpus_lock
} Corpus;

// Sequences are grouped by split: train first, then validation, then test (an import keeps
// document order within each split). Fills split_first from split; -1 if not grouped.
int corpus_index_splits(Corpus *corpus);
static inline int corpus_split_begin(const Corpus *c, int split) { return c->split_first[split]; }
static inline int corpus_split_end(const Corpus *c, int split) { return c->split_first[split + 1]; }
static inline int corpus_split_count(const Corpus *c, int split) { return c->split_first[split + 1] - c->split_first[split]; }

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

void corpus_generate(Corpus *corpus, const Config *cfg);
void corpus_free(Corpus *corpus);
static inline int corpus_len(const Corpus *corpus, int i) { return (int)(corpus->offsets[i + 1] - corpus->offsets[i]); }

// Data lock: SHA-256 over the corpus content and every config field that decides which
// tokens a rank sees (seed, data.*, world size, bands, batch size, accumulation; under the
// global sampler the sampler and global_batch instead of the layout on ranks).
void corpus_lock(const Corpus *corpus, const Config *cfg, char out[65]);

// Writes `<outputs>/data/corpus.h5` (docs/spec.md §10); 0 or -1.
int corpus_write(const Corpus *corpus, const Config *cfg, const char *path);
// What `import` writes beside the corpus (docs/data.md): the attribute `source` (the
// config's data.source), /document int64 (n): the source document each sequence was cut
// from, and n_attrs more string attributes (name, value pairs in attrs[2 * n_attrs]).
typedef struct {
    const int64_t *document;  // (n), or NULL
    int n_attrs;
    const char *const *attrs;
} CorpusProvenance;
int corpus_write_provenance(const Corpus *corpus, const Config *cfg, const char *path, const CorpusProvenance *p);
// Reads corpus.h5 and checks its data lock against the lock of its content under `cfg`;
// a mismatch is an error that says to run prepare (import, for data.source: imported).
// 0 or -1 (error printed).
int corpus_read(Corpus *corpus, const Config *cfg, const char *path);

// Which positions carry a label (docs/spec.md §2; docs/objective.md "Labels"): t ≥ prefix, target ≠
// ignore_token, and at most max_labels of them per sequence (the first ones; 0 = all).
typedef struct {
    int prefix, ignore_token, max_labels;
} LabelRule;

static inline LabelRule label_rule(const Config *cfg) {
    LabelRule r = {cfg->data.unsupervised_prefix, cfg->data.ignore_token, cfg->data.max_labels};
    return r;
}

// One microbatch, laid out as the supervised positions only (padded and unlabelled
// positions are neither computed nor counted).
typedef struct {
    int B, L;            // sequences (slots), padded length (longest sequence)
    int T;               // supervised positions
    int64_t padded;      // B * L: what padding-in-denominator counts for the token unit
    int sequences;       // slots holding a sequence with at least one label
    int ns_min, ns_max;  // fewest and most labels among those sequences
    int k;               // context
    int32_t *ctx;        // (T, k) context ids (0 = pad/begin)
    int32_t *target;     // (T)
    int32_t *pos;        // (T) padded position b * L + t (the dropout counter word)
    float *weight;       // (T) loss weight: 1 (token unit), or 1/n_s of its sequence (sequence unit)
    int cap;             // capacity in positions
} Batch;

void batch_init(Batch *b, int cap_positions, int k);
void batch_free(Batch *b);
// Lays out sequences ids[0..B-1] (-1 = empty slot) under `rule`, with the weights of `unit`.
void batch_build(Batch *b, const Corpus *corpus, const int32_t *ids, int B, const LabelRule *rule, LossUnit unit);

#ifdef __cplusplus
}
#endif
#endif
