// sampler.h — which sequences each rank sees (SPEC §3). Rank r's pool is the train
// sequences whose length lies in its band; each window draws A·B distinct ids from it by
// a partial Fisher–Yates shuffle driven by the rank's own Philox stream.
#ifndef DDPTOK_SAMPLER_H
#define DDPTOK_SAMPLER_H

#include <stdint.h>

#include "config.h"
#include "corpus.h"
#include "philox.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int rank;
    int A, B;
    int n_pool;
    int32_t *pool;     // (n_pool) train ids in the rank's band, ascending
    int32_t *scratch;  // (A·B) the swaps of the last draw, to undo them
    RngStream rng;     // the rank's sampler stream; its state is checkpointed
} Sampler;

// 0, or -1 with an error naming the rank and band when the pool is empty.
int sampler_init(Sampler *s, const Config *cfg, const Corpus *c, int rank);
void sampler_free(Sampler *s);
// Draws the next window: ids (A, B), -1 in slots beyond a pool smaller than A·B.
void sampler_next(Sampler *s, int32_t *ids);

// The whole plan (U, W, A, B) as every rank would draw it from a fresh stream.
int32_t *plan_build(const Config *cfg, const Corpus *c);
// Reads plan.h5 (U, W, A, B) after checking it against the corpus: its own data lock,
// its shape, every id in [-1, n). NULL with one line printed (a stale plan says so,
// ending with `remedy`, e.g. "run `ddptok prepare --config F`").
int32_t *plan_read(const char *path, const Config *cfg, const Corpus *c, const char *remedy);

#ifdef __cplusplus
}
#endif
#endif
