// plan.c — plan.h5: the bands sampler's windows, or the global sampler's key and geometry (see plan.h).
#include "data/plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "data/sampler.h"
#include "io/h5io.h"

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
    int rank = 0, bad = 0, stale = 0;
    int32_t *plan = NULL;
    char *lock = h5_attr_read_str(f, path, "data_lock");
    if (!lock) bad = 1;
    else if (!is_sha256_hex(lock)) bad = error("%s: its data_lock is not a SHA-256 (damaged): %s", path, remedy);
    else if (strcmp(lock, corpus->lock) != 0) stale = 1;  // another layout (or data): made again below
    int64_t n = !bad && !stale && !global ? h5_size(f, path, "ids", &rank, dims) : 0;
    if (n < 0) bad = 1;
    else if (bad || stale) (void)0;
    else if (global)
        bad = plan_check_global(f, path, cfg, corpus, remedy) != 0;
    else if (rank != 4 || memcmp(dims, want, sizeof want) != 0)
        bad = error("%s: ids are not (U, W, A, B) = (%d, %d, %d, %d) of this config: %s", path, cfg->train.updates,
                    cfg->train.world_size, cfg->train.accumulation, cfg->train.batch_size_per_rank, remedy);
    if (!bad && !stale && global) plan = xmalloc(sizeof *plan);
    else if (!bad && !stale) {
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
    if (stale) {
        // A plan is a function of the config and the corpus: one of another layout is derived again.
        say("plan: %s is for another data lock (the layout or the data changed since it was written): the plan of this "
            "config is derived again from the corpus\n", text_safe(path));
        plan = global ? xmalloc(sizeof *plan) : plan_build(cfg, corpus);
    }
    return plan;
}
