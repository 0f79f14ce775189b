// batch.h — one microbatch of sequences laid out for a model (docs/objective.md "Labels"):
// which positions carry a label (LabelRule), and the two layouts a model row can ask for
// (BatchSpec): the window MLP's contexts, or whole sequences packed back to back.
//
// Letters: B slots (sequences) of a microbatch, L its padded length (its longest sequence),
// T its supervised positions, n its packed positions (the sequences layout), k the
// context of the contexts layout.
//
// Every layout has the same supervised positions, in the same order (slot by slot, t
// ascending), with the same target, weight and padded position pos = s·L + t (the dropout
// counter word, philox.h); only what a position's prediction reads differs:
//   BATCH_CONTEXTS   the k ids before it (0 before the sequence's start): ctx (T, k)
//   BATCH_SEQUENCES  the sequence up to it: each slot with a label becomes one packed run
//                    of positions 0..t_last (its last label; later positions cannot change an
//                    earlier prediction under causal attention), whose input at position t is
//                    the previous token (id 0, the begin id, at t = 0); no padding at all.
// To add a layout: its enum value here, its arrays in Batch, and its case in batch_build.
#ifndef DDPTOK_BATCH_H
#define DDPTOK_BATCH_H

#include <stdint.h>

#include "config/config.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

// Which positions carry a label (docs/spec.md §2; docs/objective.md "Labels"): t ≥ prefix, target ≠
// ignore_token, and at most max_labels of them per sequence (the first ones; 0 = all).
typedef struct {
    int prefix, ignore_token, max_labels;
} LabelRule;

static inline LabelRule label_rule(const Config *cfg) {
    LabelRule r = {cfg->data.unsupervised_prefix, cfg->data.ignore_token, cfg->data.max_labels};
    return r;
}

typedef enum {
    BATCH_CONTEXTS = 0,  // (T, k) context ids per supervised position (the window MLP)
    BATCH_SEQUENCES,     // whole sequences packed back to back, their runs and inputs (the GPT)
    BATCH_LAYOUT_COUNT
} BatchLayout;

// What a model row asks of its microbatches (model.h, model_batch_spec).
typedef struct {
    BatchLayout layout;
    int context;     // BATCH_CONTEXTS: k ids per position
    int max_length;  // the longest sequence a slot holds (data.max_length)
} BatchSpec;

typedef struct {
    BatchSpec spec;
    int B, L;            // slots, padded length (longest sequence)
    int T;               // supervised positions
    int64_t padded;      // B * L: what padding-in-denominator counts for the token unit
    int sequences;       // slots holding a sequence with at least one label
    int ns_min, ns_max;  // fewest and most labels among those sequences
    int32_t *target;     // (T)
    int32_t *pos;        // (T) padded position s * L + t (the dropout counter word)
    float *weight;       // (T) loss weight: 1 (token unit), or 1/n_s of its sequence (sequence unit)
    int cap;             // capacity in positions: slots · max_length
    // BATCH_CONTEXTS
    int k;               // context
    int32_t *ctx;        // (T, k) context ids (0 = pad/begin)
    // BATCH_SEQUENCES
    int n;               // packed positions
    int runs;            // packed sequences (= sequences)
    int32_t *input;      // (n) the id each packed position reads: the previous token, 0 at t = 0
    int32_t *at;         // (n) its padded position s * L + t (t: its position in its sequence)
    int32_t *run_start;  // (runs + 1) run j is packed positions run_start[j] .. run_start[j + 1] - 1
    int32_t *row;        // (T) the packed position of supervised position i
    // a sequence read from an on-disk corpus
    int32_t *seq;        // (seq_cap)
    int seq_cap;
} Batch;

// Bytes a batch holds per position of capacity (its arrays), and that figure as a formula.
static inline uint64_t batch_position_bytes(const BatchSpec *s) {
    return s->layout == BATCH_SEQUENCES ? 6 * 4 : ((uint64_t)s->context + 3) * 4;
}
static inline const char *batch_position_text(const BatchSpec *s) { return s->layout == BATCH_SEQUENCES ? "6*4" : "(k+3)*4"; }

// A batch of up to `slots` sequences of at most spec->max_length tokens.
void batch_init(Batch *b, const BatchSpec *spec, int slots);
void batch_free(Batch *b);
// Lays out sequences ids[0..B-1] (-1 = empty slot, B at most the slots of batch_init) under
// `rule`, with the weights of `unit`.
void batch_build(Batch *b, const Corpus *corpus, const int32_t *ids, int B, const LabelRule *rule, LossUnit unit);
// The rows a backend computes for this batch: T (contexts) or n (sequences); and their bound.
static inline int batch_rows(const Batch *b) { return b->spec.layout == BATCH_SEQUENCES ? b->n : b->T; }
// The token before supervised position i (0 at a sequence's start), whatever the layout.
static inline int32_t batch_prev(const Batch *b, int i) {
    return b->spec.layout == BATCH_SEQUENCES ? b->input[b->row[i]] : b->ctx[(size_t)i * b->k + b->k - 1];
}
// Labels of sequence `id` under `rule` (batch_build's count for one slot). Reads the tokens
// only when the rule can ignore one (ignore_token ≥ 1; every token is an id in [1, V - 1]),
// else its length alone. `buf`: room for max_length tokens.
int sequence_labels(const Corpus *corpus, int32_t id, const LabelRule *rule, int32_t *buf);

#ifdef __cplusplus
}
#endif
#endif
