// sampler.c — per-rank pools and window draws (see sampler.h).
#include "data/sampler.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "io/h5io.h"

void sampler_window_shape(const Config *cfg, int *A, int *B) {
    int global = cfg->train.sampler == SAMPLER_GLOBAL;
    *A = global ? 1 : cfg->train.accumulation;
    *B = global ? cfg->train.global_batch : cfg->train.batch_size_per_rank;
}

int sampler_init(Sampler *s, const Config *cfg, const Corpus *corpus, int rank) {
    memset(s, 0, sizeof *s);
    int global = cfg->train.sampler == SAMPLER_GLOBAL;
    s->rank = rank, s->global = global;
    sampler_window_shape(cfg, &s->A, &s->B);
    int n_train = corpus_split_count(corpus, SPLIT_TRAIN);
    if (global) {  // no pool: the epoch permutation of [train_begin, train_begin + n_train)
        s->rng = rng_stream(cfg->seed, RNG_GLOBAL_SAMPLER, 0);
        s->n_pool = n_train, s->train_begin = corpus_split_begin(corpus, SPLIT_TRAIN);
        s->per_epoch = (int)(((int64_t)n_train + s->B - 1) / s->B);
        while (s->bits < 31 && (1u << s->bits) < (uint32_t)n_train) s->bits++;
        if (n_train == 0) return error("%s: train.sampler: global: the train split is empty", cfg->source);
        return 0;
    }
    int lo, hi;
    config_band(cfg, rank, &lo, &hi);
    s->pool = xmalloc((size_t)(n_train ? n_train : 1) * sizeof *s->pool);
    for (int i = corpus_split_begin(corpus, SPLIT_TRAIN); i < corpus_split_end(corpus, SPLIT_TRAIN); i++) {
        int len = corpus_len(corpus, i);
        if (len >= lo && len <= hi) s->pool[s->n_pool++] = i;
    }
    s->scratch = xmalloc((size_t)s->A * s->B * sizeof *s->scratch);
    s->rng = rng_stream(cfg->seed, RNG_SAMPLER, (uint32_t)rank);
    if (s->n_pool == 0) {
        sampler_free(s);
        return error("%s: train.rank_bands: rank %d's band [%d, %d] holds no train sequence", cfg->source, rank, lo, hi);
    }
    return 0;
}

void sampler_free(Sampler *s) {
    free(s->pool);
    free(s->scratch);
    s->pool = s->scratch = NULL;
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

// Bands: the first A·B steps of a Fisher–Yates shuffle of the pool, undone in reverse
// afterwards: O(A·B) per window however large the pool, which stays ascending between draws.
// Global: window `counter` of the epochs.
void sampler_next(Sampler *s, int32_t *ids) {
    if (s->global) {
        sampler_window_at(s, s->rng.counter++, ids);
        return;
    }
    int want = s->A * s->B, n = s->n_pool, m = want < n ? want : n;
    int32_t *p = s->pool, t;
    for (int i = 0; i < m; i++) {
        int j = s->scratch[i] = i + (int)rng_below(&s->rng, (uint32_t)(n - i));
        t = p[i], p[i] = p[j], p[j] = t;
        ids[i] = p[i];
    }
    for (int i = m; i < want; i++) ids[i] = -1;
    for (int i = m - 1; i >= 0; i--) {
        int j = s->scratch[i];
        t = p[i], p[i] = p[j], p[j] = t;
    }
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

int32_t *plan_build(const Config *cfg, const Corpus *corpus) {
    if (cfg->train.sampler == SAMPLER_GLOBAL) return NULL;
    int U = cfg->train.updates, W = cfg->train.world_size, A, B;
    sampler_window_shape(cfg, &A, &B);
    size_t per = (size_t)A * B;
    int32_t *plan = xmalloc((size_t)U * W * per * sizeof *plan);
    for (int r = 0; r < W; r++) {
        Sampler s;
        if (sampler_init(&s, cfg, corpus, r)) {
            free(plan);
            return NULL;
        }
        for (int u = 0; u < U; u++) sampler_next(&s, plan + ((size_t)u * W + r) * per);
        sampler_free(&s);
    }
    return plan;
}

int plan_write(const char *path, const Config *cfg, const Corpus *corpus, const int32_t *plan, const char *lock) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    // bands: ids (U, W, A, B); global: no ids, the key and the epoch geometry (docs/file-formats.md):
    // each window is the permutation's pure function of (seed, epoch) and each rank's share the
    // partition's of the window and W (docs/sampling.md "Epochs").
    int global = cfg->train.sampler == SAMPLER_GLOBAL, rc;
    if (global) {
        Sampler s;
        if (sampler_init(&s, cfg, corpus, 0)) return h5out_fail(&o, "the plan");
        rc = h5_attr_str(o.file, "sampler", sampler_names[cfg->train.sampler]) || h5_attr_i64(o.file, "seed", cfg->seed) ||
             h5_attr_i64(o.file, "n_train", s.n_pool) || h5_attr_i64(o.file, "train_begin", s.train_begin) ||
             h5_attr_i64(o.file, "global_batch", cfg->train.global_batch) ||
             h5_attr_i64(o.file, "windows_per_epoch", s.per_epoch);
        sampler_free(&s);
    } else {
        hsize_t dims[4] = {(hsize_t)cfg->train.updates, (hsize_t)cfg->train.world_size, (hsize_t)cfg->train.accumulation,
                           (hsize_t)cfg->train.batch_size_per_rank};
        rc = h5_write(o.file, "ids", H5T_NATIVE_INT32, 4, dims, plan);
    }
    if (rc || h5_attr_str(o.file, "data_lock", lock)) return h5out_fail(&o, "the plan");
    return h5out_commit(&o, NULL);
}

// The global plan's attributes against this config and corpus: 0, or -1 with one line.
static int plan_check_global(hid_t f, const char *path, const Config *cfg, const Corpus *corpus, const char *remedy) {
    Sampler s;
    if (sampler_init(&s, cfg, corpus, 0)) return -1;
    struct {
        const char *name;
        int64_t want;
    } attrs[] = {{"seed", cfg->seed}, {"n_train", s.n_pool}, {"train_begin", s.train_begin},
                 {"global_batch", cfg->train.global_batch}, {"windows_per_epoch", s.per_epoch}};
    sampler_free(&s);
    char *sampler = h5_attr_read_str(f, path, "sampler");
    int bad = !sampler;
    if (sampler && strcmp(sampler, "global") != 0)
        bad = error("%s: made for train.sampler %.20s, this config has global: %s", path, sampler, remedy);
    free(sampler);
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs && !bad; i++) {
        int64_t have;
        if (h5_attr_read_i64(f, path, attrs[i].name, &have)) bad = 1;
        else if (have != attrs[i].want)
            bad = error("%s: its %s is %lld, this config and corpus make %lld: %s", path, attrs[i].name, (long long)have,
                        (long long)attrs[i].want, remedy);
    }
    if (!bad && H5Lexists(f, "ids", H5P_DEFAULT) > 0)
        bad = error("%s: holds /ids, a global plan holds none (a plan of an older ddptok): %s", path, remedy);
    return bad ? -1 : 0;
}

int32_t *plan_read(const char *path, const Config *cfg, const Corpus *corpus, const char *remedy) {
    char hint[HINT_MAX + 32];
    snprintf(hint, sizeof hint, "%s first", remedy);
    hid_t f = h5_open_read(path, hint);
    if (f < 0) return NULL;
    hsize_t want[4] = {(hsize_t)cfg->train.updates, (hsize_t)cfg->train.world_size, (hsize_t)cfg->train.accumulation,
                       (hsize_t)cfg->train.batch_size_per_rank}, dims[8];
    int global = cfg->train.sampler == SAMPLER_GLOBAL;
    int rank = 0, bad = 0;
    int32_t *plan = NULL;
    char *lock = h5_attr_read_str(f, path, "data_lock");
    int64_t n = lock && !global ? h5_size(f, path, "ids", &rank, dims) : 0;
    if (!lock || n < 0) bad = 1;
    else if (!is_sha256_hex(lock)) bad = error("%s: its data_lock is not a SHA-256 (damaged): %s", path, remedy);
    else if (strcmp(lock, corpus->lock) != 0)
        bad = error("%s: stale: made for data lock %.12s…, the corpus has %.12s…: %s", path, lock, corpus->lock, remedy);
    else if (global)
        bad = plan_check_global(f, path, cfg, corpus, remedy) != 0;
    else if (rank != 4 || memcmp(dims, want, sizeof want) != 0)
        bad = error("%s: ids are not (U, W, A, B) = (%d, %d, %d, %d) of this config: %s", path, cfg->train.updates,
                    cfg->train.world_size, cfg->train.accumulation, cfg->train.batch_size_per_rank, remedy);
    if (!bad && global) plan = xmalloc(sizeof *plan);
    else if (!bad) {
        plan = xmalloc((size_t)n * sizeof *plan);
        bad = h5_read(f, path, "ids", H5T_NATIVE_INT32, n, plan);
        for (int64_t i = 0; !bad && i < n; i++)
            if (plan[i] < -1 || plan[i] >= corpus->n)
                bad = error("%s: id %lld is %d, expected -1 (an empty slot) or a sequence in [0, %d]", path, (long long)i,
                            plan[i], corpus->n - 1);
    }
    free(lock);
    h5_close(f);
    if (bad) free(plan), plan = NULL;
    return plan;
}

// ---------------------------------------------------------------------------------------
// The global sampler's partition

void partition_init(Partition *p, const Config *cfg, const Corpus *corpus, int W) {
    memset(p, 0, sizeof *p);
    p->kind = cfg->train.partition;
    p->W = W, p->A = cfg->train.accumulation, p->G = cfg->train.global_batch;
    p->cfg = cfg, p->corpus = corpus;
    p->rule = label_rule(cfg);
    p->labels = xmalloc((size_t)p->G * sizeof *p->labels);
    p->owner = xmalloc((size_t)p->G * sizeof *p->owner);
    p->order = xmalloc((size_t)p->G * sizeof *p->order);
    p->tokens = xmalloc((size_t)cfg->data.max_length * sizeof *p->tokens);
}

void partition_free(Partition *p) {
    free(p->labels), free(p->owner), free(p->order);
    free(p->tokens);
    memset(p, 0, sizeof *p);
}

// Window positions with the most labels first; ties by sequence id (ascending).
typedef struct {
    const int32_t *labels, *ids;
} SortKeys;
static int by_labels_desc(const void *a, const void *b, void *ctx) {
    const SortKeys *k = ctx;
    int i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (k->labels[i] != k->labels[j]) return k->labels[i] > k->labels[j] ? -1 : 1;
    return k->ids[i] < k->ids[j] ? -1 : k->ids[i] > k->ids[j];
}

// Labels of sequence `id` by batch_build's rule (sequence_labels: where no token can be
// ignored, a function of the length alone, so no rank reads the tokens of a sequence it
// does not hold, only its offsets).
static int partition_labels(Partition *p, int32_t id) { return sequence_labels(p->corpus, id, &p->rule, p->tokens); }

void partition_assign(Partition *p, const int32_t *window) {
    int W = p->W, G = p->G, n = 0;
    for (int i = 0; i < G; i++) {
        p->owner[i] = -1, p->labels[i] = 0;
        if (window[i] < 0) continue;
        p->labels[i] = partition_labels(p, window[i]);
        p->order[n++] = i;
    }
    switch (p->kind) {
    case PARTITION_BANDS:
        for (int k = 0; k < n; k++) p->owner[p->order[k]] = config_band_of(p->cfg, corpus_len(p->corpus, window[p->order[k]]));
        break;
    case PARTITION_ROUND_ROBIN:
        for (int k = 0; k < n; k++) p->owner[p->order[k]] = k % W;
        break;
    case PARTITION_BALANCED: {  // longest-processing-time-first greedy on label counts
        int64_t *load = xcalloc((size_t)W, sizeof *load);  // per rank: W may be MAX_WORLD
        SortKeys keys = {p->labels, window};
        qsort_r(p->order, (size_t)n, sizeof *p->order, by_labels_desc, &keys);
        for (int k = 0; k < n; k++) {
            int best = 0;
            for (int r = 1; r < W; r++)
                if (load[r] < load[best]) best = r;
            p->owner[p->order[k]] = best;
            load[best] += p->labels[p->order[k]];
        }
        free(load);
        break;
    }
    default: ASSERT(!"unknown partition");
    }
}

int partition_layout(const Partition *p, const int32_t *window, int rank, int32_t *ids) {
    int n_r = 0;
    for (int i = 0; i < p->G; i++) n_r += p->owner[i] == rank;
    int Bw = (n_r + p->A - 1) / p->A, k = 0;
    for (int i = 0; i < p->A * Bw; i++) ids[i] = -1;
    for (int i = 0; i < p->G; i++)
        if (p->owner[i] == rank) ids[k++] = window[i];
    return Bw;
}
