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
    s->rank = rank;
    sampler_window_shape(cfg, &s->A, &s->B);
    int lo = global ? 0 : cfg->train.bands[rank][0], hi = global ? INT32_MAX : cfg->train.bands[rank][1];
    int n_train = corpus_split_count(corpus, SPLIT_TRAIN);
    s->pool = xmalloc((size_t)(n_train ? n_train : 1) * sizeof *s->pool);
    for (int i = corpus_split_begin(corpus, SPLIT_TRAIN); i < corpus_split_end(corpus, SPLIT_TRAIN); i++) {
        int len = corpus_len(corpus, i);
        if (len >= lo && len <= hi) s->pool[s->n_pool++] = i;
    }
    s->scratch = xmalloc((size_t)s->A * s->B * sizeof *s->scratch);
    s->rng = global ? rng_stream(cfg->seed, RNG_GLOBAL_SAMPLER, 0) : rng_stream(cfg->seed, RNG_SAMPLER, (uint32_t)rank);
    if (s->n_pool == 0) {
        sampler_free(s);
        if (global) return error("%s: train.sampler: global: the train split is empty", cfg->source);
        return error("%s: train.rank_bands: rank %d's band [%d, %d] holds no train sequence", cfg->source, rank, lo, hi);
    }
    return 0;
}

void sampler_free(Sampler *s) {
    free(s->pool);
    free(s->scratch);
    s->pool = s->scratch = NULL;
}

// The first A·B steps of a Fisher–Yates shuffle of the pool, undone in reverse afterwards:
// O(A·B) per window however large the pool, which stays ascending between draws.
void sampler_next(Sampler *s, int32_t *ids) {
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

int32_t *plan_build(const Config *cfg, const Corpus *corpus) {
    int U = cfg->train.updates, W = cfg->train.sampler == SAMPLER_GLOBAL ? 1 : cfg->train.world_size, A, B;
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

int plan_write(const char *path, const Config *cfg, const int32_t *plan, const char *lock) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    // bands: ids (U, W, A, B); global: ids (U, G), each rank's share being the partition's
    // pure function of the window and W (docs/sampling.md "Global sampling").
    int global = cfg->train.sampler == SAMPLER_GLOBAL;
    hsize_t dims[4] = {(hsize_t)cfg->train.updates, (hsize_t)cfg->train.world_size, (hsize_t)cfg->train.accumulation,
                       (hsize_t)cfg->train.batch_size_per_rank};
    if (global) dims[1] = (hsize_t)cfg->train.global_batch;
    if (h5_write(o.file, "ids", H5T_NATIVE_INT32, global ? 2 : 4, dims, plan) ||
        (global && h5_attr_str(o.file, "sampler", sampler_names[cfg->train.sampler])) || h5_attr_str(o.file, "data_lock", lock))
        return h5out_fail(&o, "the plan");
    return h5out_commit(&o, NULL);
}

int32_t *plan_read(const char *path, const Config *cfg, const Corpus *corpus, const char *remedy) {
    char hint[HINT_MAX + 32];
    snprintf(hint, sizeof hint, "%s first", remedy);
    hid_t f = h5_open_read(path, hint);
    if (f < 0) return NULL;
    hsize_t want[4] = {(hsize_t)cfg->train.updates, (hsize_t)cfg->train.world_size, (hsize_t)cfg->train.accumulation,
                       (hsize_t)cfg->train.batch_size_per_rank}, dims[8];
    int global = cfg->train.sampler == SAMPLER_GLOBAL;
    if (global) want[1] = (hsize_t)cfg->train.global_batch;  // (U, G)
    int rank = 0, bad = 0;
    int32_t *plan = NULL;
    char *lock = h5_attr_read_str(f, path, "data_lock");
    int64_t n = lock ? h5_size(f, path, "ids", &rank, dims) : -1;
    if (n < 0) bad = 1;
    else if (!is_sha256_hex(lock)) bad = error("%s: its data_lock is not a SHA-256 (damaged): %s", path, remedy);
    else if (strcmp(lock, corpus->lock) != 0)
        bad = error("%s: stale: made for data lock %.12s…, the corpus has %.12s…: %s", path, lock, corpus->lock, remedy);
    else if (global && (rank != 2 || memcmp(dims, want, 2 * sizeof *want) != 0))
        bad = error("%s: ids are not (U, G) = (%d, %d) of this config: %s", path, cfg->train.updates,
                    cfg->train.global_batch, remedy);
    else if (!global && (rank != 4 || memcmp(dims, want, sizeof want) != 0))
        bad = error("%s: ids are not (U, W, A, B) = (%d, %d, %d, %d) of this config: %s", path, cfg->train.updates,
                    cfg->train.world_size, cfg->train.accumulation, cfg->train.batch_size_per_rank, remedy);
    if (!bad) {
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
    batch_init(&p->one, cfg->data.max_length, cfg->model.context);
}

void partition_free(Partition *p) {
    free(p->labels), free(p->owner), free(p->order);
    batch_free(&p->one);
    memset(p, 0, sizeof *p);
}

// The rank whose length band holds `len`, else the nearest band (ties: the lower rank).
static int band_of(const Config *cfg, int W, int len) {
    int best = 0, best_gap = INT32_MAX;
    for (int r = 0; r < W; r++) {
        int lo = cfg->train.bands[r][0], hi = cfg->train.bands[r][1];
        int gap = len < lo ? lo - len : len > hi ? len - hi : 0;
        if (gap < best_gap) best = r, best_gap = gap;
    }
    return best;
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

void partition_assign(Partition *p, const int32_t *window) {
    int W = p->W, G = p->G, n = 0;
    for (int i = 0; i < G; i++) {
        p->owner[i] = -1, p->labels[i] = 0;
        if (window[i] < 0) continue;
        batch_build(&p->one, p->corpus, window + i, 1, &p->rule, UNIT_TOKEN);
        p->labels[i] = p->one.T;
        p->order[n++] = i;
    }
    switch (p->kind) {
    case PARTITION_BANDS:
        for (int k = 0; k < n; k++) p->owner[p->order[k]] = band_of(p->cfg, W, corpus_len(p->corpus, window[p->order[k]]));
        break;
    case PARTITION_ROUND_ROBIN:
        for (int k = 0; k < n; k++) p->owner[p->order[k]] = k % W;
        break;
    case PARTITION_BALANCED: {  // longest-processing-time-first greedy on label counts
        int64_t load[MAX_WORLD] = {0};
        SortKeys keys = {p->labels, window};
        qsort_r(p->order, (size_t)n, sizeof *p->order, by_labels_desc, &keys);
        for (int k = 0; k < n; k++) {
            int best = 0;
            for (int r = 1; r < W; r++)
                if (load[r] < load[best]) best = r;
            p->owner[p->order[k]] = best;
            load[best] += p->labels[p->order[k]];
        }
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
