// reference.h — the single-process witness (docs/spec.md §8 `reference`): one process replays
// every rank's window-1 microbatches, each rank's dropout stream included, and computes
// ∇(Σ_r S_r / N) directly — no world-size factor, no average, no communication (for the
// sequence unit ∇(Σ_r Q_r / M), Q_r summing each sequence's own token mean). With the
// global sampler it computes the same over the global window 1 as ONE batch with keyed
// dropout: a witness that no partition, rank or microbatch enters.
#ifndef DDPTOK_REFERENCE_H
#define DDPTOK_REFERENCE_H

#include <stdint.h>

#include "config/config.h"
#include "data/corpus.h"
#include "data/partition.h"
#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    float *grad;           // (P)
    int64_t N;             // global supervised count
    int64_t M;             // global count of sequences with a label
    int64_t *rank_counts;  // (W) supervised counts
    double loss;           // the unit's global mean: Σ S_r / N, or Σ Q_r / M
} Reference;

// Replays window 1 of every rank from θ0. Returns 0, EXIT_EMPTY_WINDOW when N = 0, or -1.
int reference_compute(const Config *cfg, const Corpus *corpus, const ComputeOps *ops, const float *theta0, Reference *ref);
void reference_free(Reference *ref);

// outputs/reference.h5 (docs/spec.md §10)
int reference_write(const char *path, const Config *cfg, const char *lock, const ModelShape *m, const float *theta0,
                    const Reference *ref);
// Reads /init and /grad (P each) and the counts; checks the data lock. 0 or -1.
int reference_read(const char *path, const char *lock, const ModelShape *m, float *theta0, float *grad, int64_t *N);

#ifdef __cplusplus
}
#endif
#endif
