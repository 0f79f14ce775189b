// prepare.c — `prepare`: the corpus, the plan and the data lock -> outputs/data/.
#include <stdlib.h>

#include "app/app.h"
#include "base/report.h"
#include "data/corpus.h"
#include "data/corpus_file.h"
#include "data/plan.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "data/writer.h"

// The config's data.source, the run and --check alike (Command.check_options, which main
// calls before the run): --check prepare said ok to data.source: imported. The corpus is
// written as it is drawn (data/writer.h): no corpus-sized memory, but its bytes on disk, which
// the file system must have free (checked here too, from the lengths' draws alone).
static void prepare_check(const App *app) {
    const Config *cfg = &app->cfg;
    if (cfg->data.source != DATA_SOURCE_SYNTHETIC)
        die(EXIT_BAD_INPUT, "%s: data.source is %s: `ddptok import` makes its corpus and plan (prepare generates the "
            "synthetic one)", cfg->source, data_source_names[cfg->data.source]);
    CorpusShape shape = {{cfg->data.n_train, cfg->data.n_validation, cfg->data.n_test}, {0, 0, 0}};
    synthetic_tokens(cfg, shape.tokens);
    char cpath[1024];
    out_path(app, cpath, sizeof cpath, "data/corpus.h5");
    if (corpus_writer_space(cpath, corpus_writer_bytes(&shape, cfg, NULL))) stop(EXIT_BAD_INPUT);
}

static int prepare_run(App *app) {
    const Config *cfg = &app->cfg;
    char cpath[1024], ppath[1024];
    out_path(app, cpath, sizeof cpath, "data/corpus.h5");
    out_path(app, ppath, sizeof ppath, "data/plan.h5");
    if (synthetic_write(cfg, cpath)) stop(EXIT_BAD_INPUT);
    Corpus corpus;  // what every later command reads, read back
    if (corpus_read(&corpus, cfg, cpath)) stop(EXIT_BAD_INPUT);
    if (sampler_resolve_epochs(&app->cfg, &corpus)) stop(EXIT_BAD_INPUT);  // train.epochs -> train.updates
    int32_t *plan = plan_build(cfg, &corpus);
    if (!plan && cfg->train.sampler != SAMPLER_GLOBAL) stop(EXIT_BAD_INPUT);  // global: no ids to build
    if (plan_write(ppath, cfg, &corpus, plan, corpus.lock)) stop(EXIT_BAD_INPUT);
    int64_t tok[3];
    synthetic_tokens(cfg, tok);
    say("prepare: %d sequences (train %d / validation %d / test %d), %lld tokens (%lld / %lld / %lld)\n", corpus.n,
        corpus_split_count(&corpus, 0), corpus_split_count(&corpus, 1), corpus_split_count(&corpus, 2), (long long)corpus.n_tokens,
        (long long)tok[0], (long long)tok[1], (long long)tok[2]);
    if (cfg->train.sampler == SAMPLER_GLOBAL)
        say("  global sampler: %d sequences per window from the whole train split, partition %s over %d rank%s\n",
            cfg->train.global_batch, partition_names[cfg->train.partition], cfg->train.world_size, cfg->train.world_size == 1 ? "" : "s");
    for (int r = 0; r < cfg->train.world_size && cfg->train.sampler == SAMPLER_BANDS; r++) {
        Sampler s;
        if (sampler_init(&s, cfg, &corpus, r)) stop(EXIT_BAD_INPUT);
        int lo, hi;
        config_band(cfg, r, &lo, &hi);
        say("  rank %d: band [%d, %d], pool of %d train sequences\n", r, lo, hi, s.n_pool);
        sampler_free(&s);
    }
    if (cfg->train.sampler == SAMPLER_GLOBAL) {
        Sampler s;
        if (sampler_init(&s, cfg, &corpus, 0)) stop(EXIT_BAD_INPUT);
        say("  epochs: %d train sequences, %d window%s of %d per epoch (the last holds %d); %d update%s = %.4g epochs; "
            "key and geometry -> %s\n  data lock %s\n", s.n_pool, s.per_epoch, s.per_epoch == 1 ? "" : "s",
            cfg->train.global_batch, s.n_pool - (s.per_epoch - 1) * cfg->train.global_batch, cfg->train.updates,
            cfg->train.updates == 1 ? "" : "s", (double)cfg->train.updates / s.per_epoch, text_safe(ppath), corpus.lock);
        sampler_free(&s);
    }
    else
        say("  plan: %d update%s x %d rank%s x %d microbatch%s x %d sequence%s -> %s\n  data lock %s\n", cfg->train.updates,
            cfg->train.updates == 1 ? "" : "s", cfg->train.world_size, cfg->train.world_size == 1 ? "" : "s",
            cfg->train.accumulation, cfg->train.accumulation == 1 ? "" : "es", cfg->train.batch_size_per_rank,
            cfg->train.batch_size_per_rank == 1 ? "" : "s", text_safe(ppath), corpus.lock);
    free(plan);
    corpus_free(&corpus);
    say_next_train(app, "prepare");
    return 0;
}

const Command cmd_prepare = {
    .name = "prepare",
    .run = prepare_run,
    .distributed = 0,
    .makes_data = 1,
    .summary = "corpus, plan and data lock -> outputs/data/",
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "data", 1}, {0}},
    .check_options = prepare_check,
};
