// sampler.h — which sequences each rank sees (docs/spec.md §3; docs/sampling.md).
//
// train.sampler: bands — rank r's pool is the train sequences whose length lies in its
// band, in ascending id order; each window draws A·B distinct ids from it by a partial
// Fisher–Yates shuffle driven by the rank's own Philox stream. The pool is never held: it
// is derived from the corpus's lengths (a count of in-band sequences per block of
// SAMPLER_BLOCK train sequences, 4 bytes per block, and the few blocks a draw looks into),
// and a draw's swaps live in an overlay of 2·A·B entries cleared after it — memory of the
// window's size, not the corpus's, with the same draws as a pool held in full.
// train.sampler: global — epochs: epoch e visits every train sequence once, in the order of
// a keyed permutation of [0, n_train) (a 4-round Feistel bijection on the next power of two
// with cycle-walking, round keys Philox(seed, RNG_GLOBAL_SAMPLER, block e)), computed per id
// in O(1) memory; the epoch is cut into Q = ceil(n_train / G) windows of G = train.global_batch
// consecutive positions (the last one holds n_train mod G, its other slots -1). Window k
// (0-based, any k) is (epoch k / Q, window k mod Q): random access, the same on every rank
// whatever W is (docs/sampling.md "Epochs"); data/partition.h gives each of its sequences to
// one rank.
#ifndef DDPTOK_SAMPLER_H
#define DDPTOK_SAMPLER_H

#include <stdint.h>

#include "base/philox.h"
#include "config/config.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { SAMPLER_BLOCK = 512, SAMPLER_BLOCK_CACHE = 8 };

typedef struct {
    int rank;
    int A, B;          // a window is (A, B) ids: the rank's microbatches, or (1, G) for the global sampler
    int global;        // train.sampler: global (no pool: the epoch permutation)
    int n_pool;        // bands: the rank's pool; global: n_train
    RngStream rng;     // bands: the rank's sampler stream; global: key (seed, RNG_GLOBAL_SAMPLER), counter =
                       // windows drawn (the next window's index); checkpointed
    int train_begin;   // the first train id (train ids are [train_begin, train_begin + n_train))
    // bands: the pool, derived
    const Corpus *corpus;
    int lo, hi;              // the rank's band
    int n_blocks;            // blocks of SAMPLER_BLOCK train ids
    int32_t *before;         // (n_blocks + 1) pool entries before block b
    int32_t cached[SAMPLER_BLOCK_CACHE];       // the block each cache entry holds (-1: none)
    int32_t *cache_ids;      // (SAMPLER_BLOCK_CACHE, SAMPLER_BLOCK) its in-band ids, ascending
    int32_t *lengths;        // (SAMPLER_BLOCK) scratch
    int cache_next;
    int32_t *swap_key, *swap_val;  // (swap_cap) the draw's overlay: pool position -> id (-1: none)
    int32_t *swap_used;            // (2·A·B) its occupied slots, to clear them
    int swap_cap, n_used;
    // global
    int per_epoch;     // Q = ceil(n_train / G) windows per epoch
    int bits;          // the Feistel domain is [0, 2^bits), the next power of two >= n_train
    uint64_t keyed;    // the epoch whose round keys are in round_key (+1; 0 = none yet)
    uint32_t round_key[4];
} Sampler;

// 0, or -1 with an error naming the rank and band when the pool is empty (and the fix).
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
// Bands sampler: entry k (< n_pool) of the rank's pool, the k-th in-band train id ascending.
int32_t sampler_pool_at(Sampler *s, int32_t k);
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

#ifdef __cplusplus
}
#endif
#endif
