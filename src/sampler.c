// sampler.c — per-rank pools and window draws (see sampler.h).
#include "sampler.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

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
    s->scratch = xmalloc((size_t)(s->n_pool ? s->n_pool : 1) * sizeof *s->scratch);
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

void sampler_next(Sampler *s, int32_t *ids) {
    int want = s->A * s->B, n = s->n_pool;
    memcpy(s->scratch, s->pool, (size_t)n * sizeof *s->pool);
    for (int i = 0; i < want; i++) {
        if (i >= n) {
            ids[i] = -1;
            continue;
        }
        int j = i + (int)rng_below(&s->rng, (uint32_t)(n - i));
        int32_t t = s->scratch[i];
        s->scratch[i] = s->scratch[j], s->scratch[j] = t;
        ids[i] = s->scratch[i];
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
