// trainer.h — the training window (SPEC §5): count → all-reduce the count → accumulate
// every microbatch with no communication → average the gradient once → SGD step; and
// the state a checkpoint captures.
#ifndef DDPTOK_TRAINER_H
#define DDPTOK_TRAINER_H

#include <stdint.h>

#include "comm.h"
#include "config.h"
#include "corpus.h"
#include "model.h"
#include "sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const Config *cfg;
    const Corpus *corpus;
    ModelShape m;
    const ComputeOps *ops;
    Compute *cc;
    Comm *comm;
    int W, rank, A, B;
    int step;            // windows completed (= SGD updates applied)
    Sampler sampler;     // its stream state is checkpointed
    RngStream dropout;   // counter = next microbatch block; checkpointed
    int32_t *history;    // (updates, A, B) ids consumed so far, first `step` windows valid
    int history_cap;     // windows
    int32_t *ids;        // (A, B) current window
    Batch *micro;        // (A)
    int64_t *counts;     // (W + 2) count all-reduce buffer
    float *staging;      // (P + 1) host copy of the gradient when a GPU backend reduces over MPI
} Trainer;

typedef struct {
    int step;
    int64_t N;            // global supervised count
    int64_t N_r;          // this rank's
    int64_t *rank_counts; // (W) view into the trainer's count buffer
    int64_t padded;       // global padded positions
    double S_r;           // this rank's loss sum
    double loss;          // global token mean ΣS_r / N
    double seconds;
    int stop_requested;   // some rank asked to stop (piggy-backed on the count all-reduce)
} WindowStats;

// Sets up the trainer at step 0 from θ (P). The corpus must outlive it.
int trainer_init(Trainer *t, const Config *cfg, const Corpus *corpus, const ComputeOps *ops, Comm *comm,
                 const float *theta0);
void trainer_free(Trainer *t);

// Computes the averaged window gradient into the backend's gradient buffer with the
// given normalization, without stepping. Returns 0, or EXIT_EMPTY_WINDOW on every rank
// when N = 0 (nothing is applied or logged then). `stop_local` is this rank's request to
// stop, agreed in the count all-reduce.
int trainer_window(Trainer *t, Normalization mode, int stop_local, WindowStats *ws);
// A whole update: window + SGD step; advances t->step.
int trainer_update(Trainer *t, int stop_local, WindowStats *ws);

// The local scale of the loss sum for each normalization (SPEC §5).
double normalization_scale(Normalization mode, int W, int A, int64_t N, int64_t N_r, int64_t padded);

#ifdef __cplusplus
}
#endif
#endif
