// sampler.c — per-rank pools and window draws (see sampler.h).
#include "sampler.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "h5io.h"

int sampler_init(Sampler *s, const Config *cfg, const Corpus *c, int rank) {
    memset(s, 0, sizeof *s);
    s->rank = rank;
    s->A = cfg->train.accumulation;
    s->B = cfg->train.batch_size_per_rank;
    int lo = cfg->train.bands[rank][0], hi = cfg->train.bands[rank][1];
    s->pool = xmalloc((size_t)c->n * sizeof *s->pool);
    for (int i = 0; i < c->n; i++) {
        int len = corpus_len(c, i);
        if (c->split[i] == SPLIT_TRAIN && len >= lo && len <= hi) s->pool[s->n_pool++] = i;
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

int32_t *plan_build(const Config *cfg, const Corpus *c) {
    int U = cfg->train.updates, W = cfg->train.world_size;
    size_t per = (size_t)cfg->train.accumulation * cfg->train.batch_size_per_rank;
    int32_t *plan = xmalloc((size_t)U * W * per * sizeof *plan);
    for (int r = 0; r < W; r++) {
        Sampler s;
        if (sampler_init(&s, cfg, c, r)) {
            free(plan);
            return NULL;
        }
        for (int u = 0; u < U; u++) sampler_next(&s, plan + ((size_t)u * W + r) * per);
        sampler_free(&s);
    }
    return plan;
}

int32_t *plan_read(const char *path, const Config *cfg, const Corpus *c, const char *remedy) {
    char hint[4300];
    snprintf(hint, sizeof hint, "%s first", remedy);
    hid_t f = h5_open_read(path, hint);
    if (f < 0) return NULL;
    hsize_t want[4] = {(hsize_t)cfg->train.updates, (hsize_t)cfg->train.world_size, (hsize_t)cfg->train.accumulation,
                       (hsize_t)cfg->train.batch_size_per_rank}, dims[8];
    int rank = 0, bad = 0;
    int32_t *plan = NULL;
    char *lock = h5_attr_read_str(f, path, "data_lock");
    int64_t n = lock ? h5_size(f, path, "ids", &rank, dims) : -1;
    if (n < 0) bad = 1;
    else if (strcmp(lock, c->lock) != 0)
        bad = error("%s: stale: made for data lock %.12s…, the corpus has %.12s…: %s", path, lock, c->lock, remedy);
    else if (rank != 4 || memcmp(dims, want, sizeof want) != 0)
        bad = error("%s: ids are not (U, W, A, B) = (%d, %d, %d, %d) of this config: %s", path, cfg->train.updates,
                    cfg->train.world_size, cfg->train.accumulation, cfg->train.batch_size_per_rank, remedy);
    if (!bad) {
        plan = xmalloc((size_t)n * sizeof *plan);
        bad = h5_read(f, path, "ids", H5T_NATIVE_INT32, n, plan);
        for (int64_t i = 0; !bad && i < n; i++)
            if (plan[i] < -1 || plan[i] >= c->n)
                bad = error("%s: id %lld is %d, expected -1 (an empty slot) or a sequence in [0, %d]", path, (long long)i,
                            plan[i], c->n - 1);
    }
    free(lock);
    H5Fclose(f);
    if (bad) free(plan), plan = NULL;
    return plan;
}
