// sampler.h — which sequences each rank sees (docs/spec.md §3; docs/sampling.md "Global sampling").
//
// train.sampler: bands — rank r's pool is the train sequences whose length lies in its
// band; each window draws A·B distinct ids from it by a partial Fisher–Yates shuffle driven
// by the rank's own Philox stream.
// train.sampler: global — one stream keyed by (seed, RNG_GLOBAL_SAMPLER) only, the same on
// every rank, draws each window's G = train.global_batch distinct ids from the whole train
// split, whatever W is; a deterministic partition (a pure function of the window, the
// corpus, the label rule and W) gives each of them to exactly one rank, and each rank cuts
// its n_r sequences, in window order, into A microbatches of Bw = ceil(n_r / A) slots
// (the last ones may hold fewer; empty slots are -1).
#ifndef DDPTOK_SAMPLER_H
#define DDPTOK_SAMPLER_H

#include <stdint.h>

#include "base/philox.h"
#include "config/config.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int rank;
    int A, B;          // a window is (A, B) ids: the rank's microbatches, or (1, G) for the global sampler
    int n_pool;
    int32_t *pool;     // (n_pool) train ids in the rank's band (global: every train id), ascending
    int32_t *scratch;  // (A·B) the swaps of the last draw, to undo them
    RngStream rng;     // the rank's sampler stream (global: the one global stream); checkpointed
} Sampler;

// 0, or -1 with an error naming the rank and band when the pool is empty.
int sampler_init(Sampler *s, const Config *cfg, const Corpus *corpus, int rank);
void sampler_free(Sampler *s);
// Draws the next window: ids (A, B), -1 in slots beyond a pool smaller than A·B.
void sampler_next(Sampler *s, int32_t *ids);
// The window sampler_next would draw next, without drawing it (the prefetch's look ahead).
void sampler_peek(Sampler *s, int32_t *ids);
// The shape (A, B) of one window as sampler_next draws it (and a checkpoint's history holds it).
void sampler_window_shape(const Config *cfg, int *A, int *B);

// The whole plan as every rank would draw it from a fresh stream: (U, W, A, B) for the
// bands sampler, (U, G) for the global one (the partition is recomputed for any W).
int32_t *plan_build(const Config *cfg, const Corpus *corpus);
// Writes plan.h5 (`plan` as plan_build made it) with the corpus's data lock; 0 or -1 (error printed).
int plan_write(const char *path, const Config *cfg, const int32_t *plan, const char *lock);
// Reads plan.h5 (U, W, A, B), global (U, G), after checking it against the corpus: its own data lock,
// its shape, every id in [-1, n). NULL with one line printed (a stale plan says so,
// ending with `remedy`, e.g. "run `ddptok prepare --config F`").
int32_t *plan_read(const char *path, const Config *cfg, const Corpus *corpus, const char *remedy);

// The global sampler's partition of one window onto W ranks.
typedef struct {
    PartitionKind kind;
    int W, A, G;
    const Config *cfg;
    const Corpus *corpus;
    LabelRule rule;
    int32_t *labels;  // (G) labels of each window position
    int32_t *owner;   // (G) rank of each window position
    int32_t *order;   // (G) scratch: positions, longest first
    Batch one;        // one sequence, to count its labels by batch_build's own rule
} Partition;

void partition_init(Partition *p, const Config *cfg, const Corpus *corpus, int W);
void partition_free(Partition *p);
// Gives every sequence of `window` (G ids, -1 = none) to one rank (p->owner).
void partition_assign(Partition *p, const int32_t *window);
// After partition_assign: rank r's share laid out as ids (A, Bw), Bw = ceil(n_r / A), -1 in
// empty slots. Returns Bw (0 when the rank holds nothing). `ids` holds at least A·ceil(G/A).
int partition_layout(const Partition *p, const int32_t *window, int rank, int32_t *ids);
// Slots a microbatch needs at most: ceil(G / A).
static inline int partition_max_slots(const Config *cfg) {
    return (cfg->train.global_batch + cfg->train.accumulation - 1) / cfg->train.accumulation;
}

#ifdef __cplusplus
}
#endif
#endif
