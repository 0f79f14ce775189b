// sampler.h — which sequences each rank sees (docs/spec.md §3; docs/sampling.md "Global sampling").
//
// train.sampler: bands — rank r's pool is the train sequences whose length lies in its
// band; each window draws A·B distinct ids from it by a partial Fisher–Yates shuffle driven
// by the rank's own Philox stream.
// train.sampler: global — epochs: epoch e visits every train sequence once, in the order of
// a keyed permutation of [0, n_train) (a 4-round Feistel bijection on the next power of two
// with cycle-walking, round keys Philox(seed, RNG_GLOBAL_SAMPLER, block e)), computed per id
// in O(1) memory; the epoch is cut into Q = ceil(n_train / G) windows of G = train.global_batch
// consecutive positions (the last one holds n_train mod G, its other slots -1). Window k
// (0-based, any k) is (epoch k / Q, window k mod Q): random access, the same on every rank
// whatever W is (docs/sampling.md "Epochs"); a deterministic partition (a pure function of the window, the
// corpus, the label rule and W) gives each of them to exactly one rank, and each rank cuts
// its n_r sequences, in window order, into A microbatches of Bw = ceil(n_r / A) slots
// (the last ones may hold fewer; empty slots are -1).
#ifndef DDPTOK_SAMPLER_H
#define DDPTOK_SAMPLER_H

#include <stdint.h>

#include "base/philox.h"
#include "config/config.h"
#include "data/batch.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int rank;
    int A, B;          // a window is (A, B) ids: the rank's microbatches, or (1, G) for the global sampler
    int global;        // train.sampler: global (no pool: the epoch permutation)
    int n_pool;        // bands: the rank's pool; global: n_train
    int32_t *pool;     // bands: (n_pool) train ids in the rank's band, ascending; global: NULL
    int32_t *scratch;  // bands: (A·B) the swaps of the last draw, to undo them
    RngStream rng;     // bands: the rank's sampler stream; global: key (seed, RNG_GLOBAL_SAMPLER), counter =
                       // windows drawn (the next window's index); checkpointed
    int train_begin;   // global: the first train id (train ids are [train_begin, train_begin + n_pool))
    int per_epoch;     // global: Q = ceil(n_train / G) windows per epoch
    int bits;          // global: the Feistel domain is [0, 2^bits), the next power of two >= n_train
    uint64_t keyed;    // global: the epoch whose round keys are in round_key (+1; 0 = none yet)
    uint32_t round_key[4];
} Sampler;

// 0, or -1 with an error naming the rank and band when the pool is empty.
int sampler_init(Sampler *s, const Config *cfg, const Corpus *corpus, int rank);
void sampler_free(Sampler *s);
// Draws the next window: ids (A, B), -1 in slots beyond a pool smaller than A·B (global: beyond
// the end of the epoch).
void sampler_next(Sampler *s, int32_t *ids);
// The window sampler_next would draw next, without drawing it (the prefetch's look ahead).
void sampler_peek(Sampler *s, int32_t *ids);
// Global sampler: window k (0-based, any k: random access) into ids (G); does not move the counter.
void sampler_window_at(Sampler *s, uint64_t k, int32_t *ids);
// Global sampler: the train id at position `pos` (< n_train) of epoch `epoch`'s permutation.
int32_t sampler_epoch_id(Sampler *s, uint64_t epoch, uint32_t pos);
// Where window k (0-based) lies: global (epoch k / Q, window k mod Q); bands (0, k): no epochs.
void sampler_position(const Sampler *s, uint64_t k, int64_t *epoch, int64_t *window);

// The running hash of the windows drawn (docs/checkpoints.md "Sampler state"): h_0 = SHA-256 of
// SAMPLER_HASH_DOMAIN, h_u = SHA-256(hex(h_{u-1}) || window u's ids as little-endian int32), as
// 64 lowercase hex digits.
#define SAMPLER_HASH_DOMAIN "ddptok-sampler-windows v1"
void window_hash_init(char h[65]);
void window_hash_add(char h[65], const int32_t *ids, size_t n);
// The global sampler's windows 0..k-1 are a pure function of what this names, so checkpoint
// format 4 holds this digest of it instead of the running hash over their ids (recomputed in
// O(1), where the running hash took all k·G ids): SHA-256 of
// "ddptok-sampler-windows v2 global seed=S n_train=N train_begin=T global_batch=G windows=k", hex.
void sampler_windows_digest(const Sampler *s, uint32_t seed, uint64_t k, char h[65]);
// The shape (A, B) of one window as sampler_next draws it (a checkpoint's /sampler/last).
void sampler_window_shape(const Config *cfg, int *A, int *B);

// train.epochs E >= 1 (global sampler): sets train.updates = E x ceil(n_train / G) from the corpus
// (whatever train.updates said) and checks train.interrupt_at against it. 0, or -1 with one line.
int sampler_resolve_epochs(Config *cfg, const Corpus *corpus);

// The bands sampler's whole plan as every rank would draw it from a fresh stream: (U, W, A, B).
// The global sampler has none (NULL, nothing printed): its windows are computed on demand
// (sampler_window_at; `ddptok plan`).
int32_t *plan_build(const Config *cfg, const Corpus *corpus);
// Writes plan.h5 with the corpus's data lock: bands, `plan` as plan_build made it; global, only
// the key and the epoch geometry (attributes, no ids). 0 or -1 (error printed).
int plan_write(const char *path, const Config *cfg, const Corpus *corpus, const int32_t *plan, const char *lock);
// Reads plan.h5 after checking it against the corpus: its own data lock, then (bands) its shape
// (U, W, A, B) and every id in [-1, n), or (global) its key and epoch geometry. Returns the ids
// (bands) or a 1-element dummy (global: nothing to compare windows with); NULL with one line
// printed (a stale plan says so, ending with `remedy`, e.g. "run `ddptok prepare --config F`").
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
    int32_t *tokens;  // (data.max_length) one sequence, to count its labels (sequence_labels)
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
