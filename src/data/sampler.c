// sampler.c — window draws: the bands sampler's derived pools, the global sampler's epochs,
// the running hash of the windows (see sampler.h).
#include "data/sampler.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"

void sampler_window_shape(const Config *cfg, int *A, int *B) {
    int global = cfg->train.sampler == SAMPLER_GLOBAL;
    *A = global ? 1 : cfg->train.accumulation;
    *B = global ? cfg->train.global_batch : cfg->train.batch_size_per_rank;
}

// ---------------------------------------------------------------------------------------
// The bands sampler's pool, derived: before[b] = in-band train sequences in blocks 0..b-1.

// Block b's in-band train ids, ascending, from a small cache of decoded blocks; their count.
static const int32_t *pool_block(Sampler *s, int b, int *count) {
    int slot = -1;
    for (int k = 0; k < SAMPLER_BLOCK_CACHE; k++)
        if (s->cached[k] == b) slot = k;
    if (slot < 0) {
        slot = s->cache_next, s->cache_next = (s->cache_next + 1) % SAMPLER_BLOCK_CACHE;
        int first = s->train_begin + b * SAMPLER_BLOCK, end = corpus_split_end(s->corpus, SPLIT_TRAIN);
        int n = end - first < SAMPLER_BLOCK ? end - first : SAMPLER_BLOCK, m = 0;
        corpus_lengths(s->corpus, first, n, s->lengths);
        for (int j = 0; j < n; j++)
            if (s->lengths[j] >= s->lo && s->lengths[j] <= s->hi) s->cache_ids[slot * SAMPLER_BLOCK + m++] = first + j;
        s->cached[slot] = b;
    }
    *count = s->before[b + 1] - s->before[b];
    return s->cache_ids + slot * SAMPLER_BLOCK;
}

int32_t sampler_pool_at(Sampler *s, int32_t k) {
    ASSERT(!s->global && k >= 0 && k < s->n_pool);
    int lo = 0, hi = s->n_blocks - 1;  // the block b with before[b] <= k < before[b + 1]
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (s->before[mid] <= k) lo = mid;
        else hi = mid - 1;
    }
    int count;
    const int32_t *ids = pool_block(s, lo, &count);
    ASSERT(k - s->before[lo] < count);
    return ids[k - s->before[lo]];
}

// The draw's overlay: pool position -> the id a swap put there (open addressing).
static int swap_slot(const Sampler *s, int32_t pos) {
    uint32_t h = (uint32_t)pos * 2654435761u;
    int i = (int)(h & (uint32_t)(s->swap_cap - 1));
    while (s->swap_key[i] != -1 && s->swap_key[i] != pos) i = (i + 1) & (s->swap_cap - 1);
    return i;
}
static int32_t pool_get(Sampler *s, int32_t pos) {
    int i = swap_slot(s, pos);
    return s->swap_key[i] == pos ? s->swap_val[i] : sampler_pool_at(s, pos);
}
static void pool_set(Sampler *s, int32_t pos, int32_t id) {
    int i = swap_slot(s, pos);
    if (s->swap_key[i] != pos) s->swap_key[i] = pos, s->swap_used[s->n_used++] = i;
    s->swap_val[i] = id;
}

// Bands a corpus's train lengths fill: W contiguous bands [min_length, l_1], [l_1 + 1, l_2], ...,
// [l_(W-1) + 1, max_length], each ending at a length the train split has, cut where the
// count passes r/W of the sequences (while enough lengths are left for the later bands); as
// --set text, "" when the lengths take fewer than W values. A histogram of data.max_length + 1.
static void bands_that_fit(const Config *cfg, const Corpus *corpus, char *out, size_t len) {
    int W = cfg->train.world_size, L = cfg->data.max_length, first = corpus_split_begin(corpus, SPLIT_TRAIN);
    int n = corpus_split_count(corpus, SPLIT_TRAIN), distinct = 0;
    int64_t *hist = xcalloc((size_t)L + 1, sizeof *hist), seen = 0;
    int32_t lengths[SAMPLER_BLOCK];
    for (int done = 0; done < n; done += SAMPLER_BLOCK) {
        int k = n - done < SAMPLER_BLOCK ? n - done : SAMPLER_BLOCK;
        corpus_lengths(corpus, first + done, k, lengths);
        for (int j = 0; j < k; j++) hist[lengths[j]]++;
    }
    for (int l = 0; l <= L; l++) distinct += hist[l] > 0;
    out[0] = 0;
    if (distinct < W || W > MAX_BANDS) return free(hist);  // beyond MAX_BANDS ranks a list is not accepted
    size_t at = (size_t)snprintf(out, len, "[");
    int r = 0, lo = cfg->data.min_length, left = distinct;  // left: distinct lengths from l on
    for (int l = 0; l <= L && r < W - 1; l++) {
        if (!hist[l]) continue;
        seen += hist[l], left--;
        if (seen * W >= (int64_t)n * (r + 1) || left == W - 1 - r) {
            at += (size_t)snprintf(out + at, at < len ? len - at : 0, "%s[%d, %d]", r ? ", " : "", lo, l);
            lo = l + 1, r++;
        }
    }
    if (at < len) snprintf(out + at, len - at, "%s[%d, %d]]", r ? ", " : "", lo, L);
    free(hist);
}

int sampler_init(Sampler *s, const Config *cfg, const Corpus *corpus, int rank) {
    memset(s, 0, sizeof *s);
    int global = cfg->train.sampler == SAMPLER_GLOBAL;
    s->rank = rank, s->global = global, s->corpus = corpus;
    sampler_window_shape(cfg, &s->A, &s->B);
    int n_train = corpus_split_count(corpus, SPLIT_TRAIN);
    s->train_begin = corpus_split_begin(corpus, SPLIT_TRAIN);
    if (global) {  // no pool: the epoch permutation of [train_begin, train_begin + n_train)
        s->rng = rng_stream(cfg->seed, RNG_GLOBAL_SAMPLER, 0);
        s->n_pool = n_train;
        s->per_epoch = (int)(((int64_t)n_train + s->B - 1) / s->B);
        while (s->bits < 31 && (1u << s->bits) < (uint32_t)n_train) s->bits++;
        if (n_train == 0) return error("%s: train.sampler: global: the train split is empty", cfg->source);
        return 0;
    }
    config_band(cfg, rank, &s->lo, &s->hi);
    s->n_blocks = (n_train + SAMPLER_BLOCK - 1) / SAMPLER_BLOCK;
    s->before = xmalloc(((size_t)s->n_blocks + 1) * sizeof *s->before);
    s->lengths = xmalloc(SAMPLER_BLOCK * sizeof *s->lengths);
    s->cache_ids = xmalloc((size_t)SAMPLER_BLOCK_CACHE * SAMPLER_BLOCK * sizeof *s->cache_ids);
    for (int k = 0; k < SAMPLER_BLOCK_CACHE; k++) s->cached[k] = -1;
    s->before[0] = 0;
    for (int b = 0; b < s->n_blocks; b++) {
        int first = s->train_begin + b * SAMPLER_BLOCK, n = n_train - b * SAMPLER_BLOCK < SAMPLER_BLOCK ? n_train - b * SAMPLER_BLOCK : SAMPLER_BLOCK;
        int in = 0;
        corpus_lengths(corpus, first, n, s->lengths);
        for (int j = 0; j < n; j++) in += s->lengths[j] >= s->lo && s->lengths[j] <= s->hi;
        s->before[b + 1] = s->before[b] + in;
    }
    s->n_pool = s->before[s->n_blocks];
    int want = s->A * s->B;
    for (s->swap_cap = 16; s->swap_cap < 4 * want; s->swap_cap *= 2) {}
    s->swap_key = xmalloc((size_t)s->swap_cap * sizeof *s->swap_key);
    s->swap_val = xmalloc((size_t)s->swap_cap * sizeof *s->swap_val);
    s->swap_used = xmalloc((size_t)2 * want * sizeof *s->swap_used);
    for (int i = 0; i < s->swap_cap; i++) s->swap_key[i] = -1;
    s->rng = rng_stream(cfg->seed, RNG_SAMPLER, (uint32_t)rank);
    if (s->n_pool == 0) {
        char fit[64 + MAX_BANDS * 24], also[sizeof fit + 64] = "";
        int lo = s->lo, hi = s->hi;
        sampler_free(s);
        bands_that_fit(cfg, corpus, fit, sizeof fit);
        if (fit[0]) snprintf(also, sizeof also, ", or bands that hold its lengths: --set 'train.rank_bands=%s'", fit);
        return error("%s: train.rank_bands: rank %d's band [%d, %d] holds no train sequence: --set train.sampler=global (every "
                     "train sequence whatever its length)%s", cfg->source, rank, lo, hi, also);
    }
    return 0;
}

void sampler_free(Sampler *s) {
    free(s->before), free(s->lengths), free(s->cache_ids);
    free(s->swap_key), free(s->swap_val), free(s->swap_used);
    s->before = s->lengths = s->cache_ids = s->swap_key = s->swap_val = s->swap_used = NULL;
}

// ---------------------------------------------------------------------------------------
// The global sampler's epochs: a keyed permutation of [0, n) in O(1) memory.

static uint32_t low_bits(int n) { return n >= 32 ? 0xFFFFFFFFu : (1u << n) - 1u; }

// A 4-round Feistel bijection of [0, 2^bits): x = (L, R), L its high bits - bits/2 bits, R its
// low bits/2; round i maps (L, R) to (R, L ^ F_i(R)) (the halves' widths swap each round, F_i
// cut to L's width), F_i(R) = word 0 of Philox4x32-10(counter (R, i, 0, 0), key (k_i, k_{i+1 mod 4})).
static uint32_t feistel(const Sampler *s, uint32_t x) {
    int wl = s->bits - s->bits / 2, wr = s->bits / 2;
    uint32_t L = wr ? x >> wr : x, R = x & low_bits(wr);
    for (int i = 0; i < 4; i++) {
        Philox4 c = {{R, (uint32_t)i, 0, 0}};
        uint32_t f = philox4x32_10(c, s->round_key[i], s->round_key[(i + 1) & 3]).v[0] & low_bits(wl);
        uint32_t nl = R, nr = L ^ f;
        int t = wl;
        L = nl, R = nr, wl = wr, wr = t;
    }
    return wr ? L << wr | R : L;
}

int32_t sampler_epoch_id(Sampler *s, uint64_t epoch, uint32_t pos) {
    ASSERT(s->global && pos < (uint32_t)s->n_pool);
    if (s->keyed != epoch + 1) {  // round keys: the 4 words of block `epoch` of (seed, RNG_GLOBAL_SAMPLER)
        Philox4 k = rng_block(&s->rng, epoch, 0, 0);
        memcpy(s->round_key, k.v, sizeof s->round_key);
        s->keyed = epoch + 1;
    }
    uint32_t x = pos;
    do x = feistel(s, x);  // cycle-walking: a bijection of [0, 2^bits) restricted to [0, n)
    while (x >= (uint32_t)s->n_pool);
    return s->train_begin + (int32_t)x;
}

void sampler_position(const Sampler *s, uint64_t k, int64_t *epoch, int64_t *window) {
    if (!s->global) {
        *epoch = 0, *window = (int64_t)k;
        return;
    }
    *epoch = (int64_t)(k / (uint64_t)s->per_epoch), *window = (int64_t)(k % (uint64_t)s->per_epoch);
}

void sampler_window_at(Sampler *s, uint64_t k, int32_t *ids) {
    ASSERT(s->global);
    int64_t e, j;
    sampler_position(s, k, &e, &j);
    int64_t first = j * s->B;
    for (int i = 0; i < s->B; i++)
        ids[i] = first + i < s->n_pool ? sampler_epoch_id(s, (uint64_t)e, (uint32_t)(first + i)) : -1;
}

// Bands: the first A·B steps of a Fisher–Yates shuffle of the pool, the swaps in the
// overlay, which is then cleared (the pool is ascending again): O(A·B) per window however
// large the pool. Global: window `counter` of the epochs.
void sampler_next(Sampler *s, int32_t *ids) {
    if (s->global) {
        sampler_window_at(s, s->rng.counter++, ids);
        return;
    }
    int want = s->A * s->B, n = s->n_pool, m = want < n ? want : n;
    for (int i = 0; i < m; i++) {
        int j = i + (int)rng_below(&s->rng, (uint32_t)(n - i));
        int32_t vi = pool_get(s, i), vj = pool_get(s, j);
        pool_set(s, i, vj), pool_set(s, j, vi);
        ids[i] = vj;
    }
    for (int i = m; i < want; i++) ids[i] = -1;
    for (int k = 0; k < s->n_used; k++) s->swap_key[s->swap_used[k]] = -1;
    s->n_used = 0;
}

void sampler_peek(Sampler *s, int32_t *ids) {
    RngStream saved = s->rng;
    sampler_next(s, ids);
    s->rng = saved;
}

void window_hash_init(char h[65]) {
    Sha256 *c = sha256_begin();
    sha256_add(c, SAMPLER_HASH_DOMAIN, strlen(SAMPLER_HASH_DOMAIN));
    sha256_hex(c, h);
}

void window_hash_add(char h[65], const int32_t *ids, size_t n) {
    Sha256 *c = sha256_begin();
    sha256_add(c, h, 64);
    unsigned char le[4 * 64];
    for (size_t done = 0; done < n;) {
        size_t k = 0;
        for (; k < 64 && done + k < n; k++) {
            uint32_t v = (uint32_t)ids[done + k];
            le[4 * k] = (unsigned char)v, le[4 * k + 1] = (unsigned char)(v >> 8);
            le[4 * k + 2] = (unsigned char)(v >> 16), le[4 * k + 3] = (unsigned char)(v >> 24);
        }
        sha256_add(c, le, 4 * k);
        done += k;
    }
    sha256_hex(c, h);
}

void sampler_windows_digest(const Sampler *s, uint32_t seed, uint64_t k, char h[65]) {
    ASSERT(s->global);
    char text[256];
    int n = snprintf(text, sizeof text, "ddptok-sampler-windows v2 global seed=%u n_train=%d train_begin=%d global_batch=%d windows=%llu",
                     seed, s->n_pool, s->train_begin, s->B, (unsigned long long)k);
    Sha256 *c = sha256_begin();
    sha256_add(c, text, (size_t)n);
    sha256_hex(c, h);
}

int sampler_resolve_epochs(Config *cfg, const Corpus *corpus) {
    if (!cfg->train.epochs) return 0;
    int64_t n = corpus_split_count(corpus, SPLIT_TRAIN), G = cfg->train.global_batch;
    if (n == 0) return error("%s: train.epochs: the train split is empty", cfg->source);
    int64_t U = (int64_t)cfg->train.epochs * ((n + G - 1) / G);
    if (U > (1 << 24))
        return error("%s: train.epochs %d x %lld windows per epoch = %lld updates, more than train.updates allows (%d)",
                     cfg->source, cfg->train.epochs, (long long)((n + G - 1) / G), (long long)U, 1 << 24);
    if (cfg->train.interrupt_at > U)
        return error("%s: train.interrupt_at (%d) must not exceed the %lld updates of train.epochs %d (%lld windows per epoch)",
                     cfg->source, cfg->train.interrupt_at, (long long)U, cfg->train.epochs, (long long)((n + G - 1) / G));
    cfg->train.updates = (int)U;
    return 0;
}

