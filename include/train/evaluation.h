// evaluation.h — a model's loss over a whole split, exact and the same for any number of
// ranks (docs/commands.md "evaluate", docs/config.md train.eval_every).
//
// The split's sequences are cut into fixed chunks of EVALUATE_BATCH sequences (the last one
// shorter), whose size does not depend on W; rank r evaluates the chunks c with c mod W = r,
// one microbatch each, laid out by batch_build under the label rule (the supervised
// positions of training: no padded position is computed or counted). The per-chunk loss
// sums are gathered exactly (each chunk's double comes from one rank, the others add 0) and
// added in chunk order on every rank, so the loss is bit-identical for W = 1, 2, 3, ... and
// equals the one-process sum of the same microbatches in the same order.
//
// Memory: a chunk is evaluated in passes of train.eval_batch sequences (default: the whole
// chunk in one). A pass's rows are only its own sequences' (attention never crosses a
// sequence), so each sequence's per-token losses are the same floats; only the chunk's double
// sum is then the passes' sums added in order instead of one running sum (a difference in the
// last bits of a double, far below anything a figure prints: docs/config.md train.eval_batch).
//
// Per sequence (evaluator_run_sequences, evaluate --per-sequence): the same passes, each
// supervised position's loss and hit as the backend computed them for the split's sum, added
// per sequence in position order; a sequence is named by its index in the split (0 .. n-1),
// which no W or rank changes. Each sequence's numbers come from the one rank that evaluated it
// and travel bit for bit (int64 sums, as the chunks' sums do), in blocks, so every rank holds
// n records (24 bytes each) and nothing more that grows with the split.
#ifndef DDPTOK_EVALUATION_H
#define DDPTOK_EVALUATION_H

#include <stdint.h>

#include "config/config.h"
#include "data/corpus.h"
#include "job/comm.h"
#include "model/model.h"
#include "train/trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int split;
    int64_t sequences;  // of the split
    int64_t chunks;     // of EVALUATE_BATCH sequences
    int64_t tokens;     // supervised positions (the denominator)
    int64_t correct;    // argmax hits among them
    double loss_sum;    // Σ nats over them: the chunks' sums added in chunk order
    double loss;        // nats per supervised token (NaN when there is none: evaluate refuses it)
    double bits_per_token;
    double bits_per_byte;  // byte-level corpora (each supervised target is one byte): = bits/token; NaN otherwise
    double accuracy;    // NaN when there is no supervised token
    double seconds;     // this rank's wall time of the evaluation
} SplitEval;

// One sequence's numbers (evaluator_run_sequences).
typedef struct {
    int64_t tokens;   // its supervised positions
    int64_t correct;  // argmax hits among them
    double loss_sum;  // Σ nats over them, in position order: the terms the split's sum adds
} SequenceEval;

typedef struct {
    const Config *cfg;
    const Corpus *corpus;
    const ComputeOps *ops;
    Comm *comm;
    Compute *cc;        // its own backend instance (per_pass sequences), or the trainer's (borrowed)
    int borrowed;       // 1: cc is the trainer's host instance (a pass fits its rows): not destroyed here
    Batch b;
    float *theta;       // (P) host staging of a device trainer's parameters (a host trainer's are copied straight in)
    size_t P;
    int per_pass;       // sequences per pass: train.eval_batch (1..EVALUATE_BATCH)
    int byte_level;     // the corpus was imported byte-level (--format bytes or jsonl-text)
    int progress;       // 1: "evaluate: sequences" progress of long work (rank 0)
    // Negative controls of the tests, read at evaluator_init: DDPTOK_TEST_EVAL_DROP_TAIL (only
    // the first W·floor(n/W) sequences: the tail dropped), DDPTOK_TEST_EVAL_PADDED (padded
    // slots counted in the denominator), DDPTOK_TEST_EVAL_RANK_SUMS (each rank sums its own
    // chunks and the W sums travel as float32, as through the gradient all-reduce, and are
    // added: the result then depends on W),
    // DDPTOK_TEST_EVAL_DISTURB (evaluator_set_trainer advances the trainer's dropout stream),
    // DDPTOK_TEST_EVAL_SKIP_PASS (a chunk's first pass only: what a chunked loop that loses
    // its later passes computes).
    struct { int drop_tail, padded, rank_sums, disturb, skip_pass; } test;
    double *row_loss;   // (cap) a pass's per-position losses (evaluator_run_sequences)
    int32_t *row_hit;   // (cap) and hits
} Evaluator;

// An evaluator for models of shape `m` over `corpus`; `corpus_path` is the corpus.h5 it was
// read from (whether it is byte-level; NULL: not). Every rank of `comm` takes part. `share`
// (or NULL): the trainer whose host instance a pass of train.eval_batch sequences runs on
// when it fits the trainer's microbatch (train.eval_batch <= train.batch_size_per_rank); then
// evaluator_set_trainer copies nothing and evaluator_set_params may not be called.
void evaluator_init(Evaluator *e, const Config *cfg, const Corpus *corpus, const char *corpus_path, const ComputeOps *ops,
                    Comm *comm, const ModelShape *m, Trainer *share);
void evaluator_free(Evaluator *e);
// The model to evaluate: θ (P), host memory.
void evaluator_set_params(Evaluator *e, const float *theta);
// The trainer's current parameters (copied; the trainer's state is not touched).
void evaluator_set_trainer(Evaluator *e, Trainer *t);
// Every rank: the metrics of the model over split `split` (SPLIT_VALIDATION, SPLIT_TEST), the
// same on every rank. A collective: every rank calls it at the same point.
void evaluator_run(Evaluator *e, int split, SplitEval *out);
// The same, with each sequence's numbers: seq (n, the split's sequences in order) on every
// rank. `want` (n flags, or NULL: every sequence) restricts the work to the passes that hold a
// wanted sequence, each pass as evaluator_run computes it, so a wanted sequence's numbers are
// bit for bit those of the whole split's; the others' are zero. `out` is evaluator_run's when
// want is NULL; with want, the sums of the passes computed (not the split's).
void evaluator_run_sequences(Evaluator *e, int split, const uint8_t *want, SequenceEval *seq, SplitEval *out);

// 1 when the corpus at `path` was imported byte-level (its import_format attribute is bytes
// or jsonl-text); 0 otherwise or when it cannot be read.
int corpus_file_byte_level(const char *path);

#ifdef __cplusplus
}
#endif
#endif
