// plan.c — `plan --steps a..b [--world-size W]`: each window of steps a..b as the sampler
// draws it, and (global sampler) each rank's share of its partition on W ranks; computed on
// demand (the global sampler's window k directly, the bands sampler by replaying its streams
// from step 1), in memory of one window.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "data/corpus.h"
#include "data/sampler.h"

typedef struct {
    const char *steps;  // --steps a..b
    int world_size;     // --world-size W (0: train.world_size)
} PlanOptions;

// "a..b" (or "a") with 1 <= a <= b: 0, or -1.
static int parse_steps(const char *text, long long *a, long long *b) {
    char tail[8];
    if (sscanf(text, "%lld..%lld%7s", a, b, tail) == 2 || (sscanf(text, "%lld%7s", a, tail) == 1 && (*b = *a, 1)))
        return *a >= 1 && *b >= *a && *b <= INT32_MAX ? 0 : -1;
    return -1;
}

static void print_ids(const char *lead, const int32_t *ids, int n, int skip_empty) {
    Buf line = {0};
    buf_printf(&line, "%s", lead);
    for (int i = 0; i < n; i++)
        if (!skip_empty || ids[i] >= 0) buf_printf(&line, " %d", ids[i]);
    say("%s\n", line.s);
    buf_free(&line);
}

static int plan_run(App *app) {
    const PlanOptions *o = app->opts;
    long long a, b;
    if (parse_steps(o->steps, &a, &b))
        die(EXIT_BAD_INPUT, "plan: --steps %s: expected a..b with 1 <= a <= b (steps are 1-based), e.g. --steps 1..12",
            text_safe(o->steps));
    Config cfg = app->cfg;
    char err[512], set[64];
    if (o->world_size && o->world_size != cfg.train.world_size) {
        if (cfg.train.sampler != SAMPLER_GLOBAL)
            die(EXIT_BAD_INPUT, "plan: --world-size %d: the bands sampler's windows are drawn per rank of train.world_size %d "
                "(each rank its own stream and band); only train.sampler: global re-partitions its windows", o->world_size,
                cfg.train.world_size);
        snprintf(set, sizeof set, "train.world_size=%d", o->world_size);
        if (config_set(&cfg, set, err, sizeof err)) die(EXIT_BAD_INPUT, "plan: --world-size %d: %s", o->world_size, err);
    }
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    int W = cfg.train.world_size, A = cfg.train.accumulation;
    char lead[128];
    if (cfg.train.sampler == SAMPLER_GLOBAL) {
        Sampler s;
        if (sampler_init(&s, &cfg, &corpus, 0)) stop(EXIT_BAD_INPUT);
        int G = cfg.train.global_batch;
        say("plan: train.sampler global, seed %u: %d train sequences [%d, %d), G = %d: %d window%s per epoch; W = %d, "
            "partition %s, A = %d\n", cfg.seed, s.n_pool, s.train_begin, s.train_begin + s.n_pool, G, s.per_epoch,
            s.per_epoch == 1 ? "" : "s", W, partition_names[cfg.train.partition], A);
        int32_t *window = xmalloc((size_t)G * sizeof *window), *ids = xmalloc((size_t)A * partition_max_slots(&cfg) * sizeof *ids);
        Partition p;
        partition_init(&p, &cfg, &corpus, W);
        for (long long u = a; u <= b; u++) {
            int64_t e, k;
            sampler_position(&s, (uint64_t)(u - 1), &e, &k);
            sampler_window_at(&s, (uint64_t)(u - 1), window);  // random access: no replay
            snprintf(lead, sizeof lead, "step %lld epoch %lld window %lld/%d:", u, (long long)e + 1, (long long)k + 1, s.per_epoch);
            print_ids(lead, window, G, 0);
            partition_assign(&p, window);
            for (int r = 0; r < W; r++) {
                int Bw = partition_layout(&p, window, r, ids);
                snprintf(lead, sizeof lead, "  rank %d:", r);
                print_ids(lead, ids, A * Bw, 1);
            }
        }
        partition_free(&p);
        free(window), free(ids);
        sampler_free(&s);
    } else {
        int per = A * cfg.train.batch_size_per_rank;
        say("plan: train.sampler bands, seed %u: W = %d ranks, each window A x B = %d x %d ids per rank (-1: an empty slot)\n",
            cfg.seed, W, A, cfg.train.batch_size_per_rank);
        Sampler *s = xcalloc((size_t)W, sizeof *s);
        int32_t *ids = xmalloc((size_t)W * per * sizeof *ids);
        for (int r = 0; r < W; r++)
            if (sampler_init(&s[r], &cfg, &corpus, r)) stop(EXIT_BAD_INPUT);
        // Each rank's stream, replayed from step 1 (a stream is a chain: where window u's draw starts
        // depends on every draw before it), with a progress line when the steps before a take a while.
        WorkProgress progress;
        work_progress_init(&progress, "plan: replaying the bands sampler's streams to the first step asked for, step");
        for (long long u = 1; u <= b; u++) {
            if (u < a && !(u & 1023)) work_progress(&progress, u, a - 1);
            for (int r = 0; r < W; r++) {
                sampler_next(&s[r], ids + (size_t)r * per);
                if (u < a) continue;
                snprintf(lead, sizeof lead, "step %lld rank %d:", u, r);
                print_ids(lead, ids + (size_t)r * per, per, 0);
            }
        }
        for (int r = 0; r < W; r++) sampler_free(&s[r]);
        free(s), free(ids);
    }
    corpus_free(&corpus);
    return 0;
}

const Command cmd_plan = {
    .name = "plan",
    .run = plan_run,
    .distributed = 0,
    .summary = "print the windows of steps a..b (global sampler: with each rank's share on W ranks), computed on demand",
    .options = (const CommandOption[]){
        OPTION_STRING("--steps", PlanOptions, steps, "a..b", "the steps (1-based) whose windows to print", .required = 1),
        OPTION_INT("--world-size", PlanOptions, world_size, "W", 1, MAX_WORLD, "a world size",
                   "each rank's share on W ranks (global sampler; default train.world_size)"),
        OPTION_END,
    },
    .opts_size = sizeof(PlanOptions),
};
