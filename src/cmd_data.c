// cmd_data.c — single-process commands that make the data and the witness:
// prepare, reference, check-loss; and the helpers every command shares.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "corpus.h"
#include "h5io.h"
#include "jsonio.h"
#include "reference.h"
#include "sampler.h"
#include "trainer.h"

void out_path(const App *app, char *buf, size_t len, const char *rel) {
    snprintf(buf, len, "%s/%s", app->cfg.paths.outputs, rel);
}

void art_path(const App *app, char *buf, size_t len, const char *rel) {
    snprintf(buf, len, "%s/%s", app->cfg.paths.artifacts, rel);
}

void load_corpus_or_die(App *app, Corpus *c) {
    char path[1024];
    out_path(app, path, sizeof path, "data/corpus.h5");
    error_capture(1);
    int rc = corpus_read(c, &app->cfg, path);
    const char *why = error_capture(0);
    // Every rank missing the same corpus (the usual case: not prepared yet) says it once.
    if (!comm_agree(&app->comm, rc == 0)) die(EXIT_BAD_INPUT, "%s", why);
    if (rc) error("%s", why);
    char what[1100];
    snprintf(what, sizeof what, "reading %s", path);
    comm_stop_if_any(&app->comm, rc, EXIT_BAD_INPUT, what);
}

void agree_on_run(App *app, const char *comm_name) {
    Comm *c = &app->comm;
    if (c->world == 1) return;
    char opts[1400];
    snprintf(opts, sizeof opts, "%s --backend %s --comm %s --comm-timeout %g%s%s%s%s", app->command, app->backend, comm_name,
             app->comm_timeout, app->continuous ? " --continuous" : "", app->resume ? " --resume " : "",
             app->resume ? app->resume : "", app->fresh ? " --fresh" : "");
    char *yaml = config_to_yaml(&app->cfg);
    int64_t n[2] = {(int64_t)strlen(yaml) + 1, (int64_t)strlen(opts) + 1};
    comm_bcast(c, n, sizeof n, 0);
    char *yaml0 = xmalloc((size_t)n[0]), *opts0 = xmalloc((size_t)n[1]);
    if (c->rank == 0) memcpy(yaml0, yaml, (size_t)n[0]), memcpy(opts0, opts, (size_t)n[1]);
    comm_bcast(c, yaml0, (size_t)n[0], 0);
    comm_bcast(c, opts0, (size_t)n[1], 0);
    Config cfg0;
    char err[512], what[600];
    int bad = 0;
    if (config_from_yaml(&cfg0, yaml0, "rank 0's config", err, sizeof err)) bad = error("%s", err);
    else if (config_diff_run(&app->cfg, &cfg0, what, sizeof what))
        bad = error("%s: differs from rank 0's config at %s (here vs rank 0): every rank must run the same config",
                    app->config_path, what);
    else if (strcmp(opts, opts0) != 0)
        bad = error("options differ from rank 0's: '%s' here, '%s' on rank 0", opts, opts0);
    free(yaml), free(yaml0), free(opts0);
    comm_stop_if_any(c, bad, EXIT_BAD_INPUT, "to agree with rank 0 on the config and options");
}

void write_json(const App *app, const char *rel, json_t *j) {
    char path[1024];
    out_path(app, path, sizeof path, rel);
    if (json_write_file(path, j)) stop_abort(EXIT_BAD_INPUT);
}

Compare compare_vectors(const float *g, const float *ref, size_t n, double atol, double rtol) {
    Compare c = {(int64_t)n, 0, 0, -1};
    double worst_excess = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)g[i] - (double)ref[i]);
        double excess = err - (atol + rtol * fabs((double)ref[i]));
        if (!(excess <= 0)) c.violations++;  // NaN counts as a violation
        if (err > c.max_abs_err || isnan(err)) c.max_abs_err = isnan(err) ? INFINITY : err;
        if (excess > worst_excess || isnan(excess)) worst_excess = isnan(excess) ? INFINITY : excess, c.worst = (int64_t)i;
    }
    return c;
}

// ---------------------------------------------------------------------------------------
// prepare

static int write_plan(const char *path, const Config *cfg, const int32_t *plan, const char *lock) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    // bands: ids (U, W, A, B); global: ids (U, G), each rank's share being the partition's
    // pure function of the window and W (README "Global sampling").
    int global = cfg->train.sampler == SAMPLER_GLOBAL;
    hsize_t dims[4] = {(hsize_t)cfg->train.updates, (hsize_t)cfg->train.world_size, (hsize_t)cfg->train.accumulation,
                       (hsize_t)cfg->train.batch_size_per_rank};
    if (global) dims[1] = (hsize_t)cfg->train.global_batch;
    if (h5_write(o.file, "ids", H5T_NATIVE_INT32, global ? 2 : 4, dims, plan) ||
        (global && h5_attr_str(o.file, "sampler", sampler_names[cfg->train.sampler])) || h5_attr_str(o.file, "data_lock", lock))
        return h5out_fail(&o, "the plan");
    return h5out_commit(&o, NULL);
}

int cmd_prepare(App *app) {
    const Config *cfg = &app->cfg;
    Corpus c;
    corpus_generate(&c, cfg);
    int32_t *plan = plan_build(cfg, &c);
    if (!plan) stop(EXIT_BAD_INPUT);
    char cpath[1024], ppath[1024];
    out_path(app, cpath, sizeof cpath, "data/corpus.h5");
    out_path(app, ppath, sizeof ppath, "data/plan.h5");
    if (corpus_write(&c, cfg, cpath) || write_plan(ppath, cfg, plan, c.lock)) stop(EXIT_BAD_INPUT);
    int64_t tok[3] = {0, 0, 0}, seqs[3] = {0, 0, 0};
    for (int i = 0; i < c.n; i++) tok[c.split[i]] += corpus_len(&c, i), seqs[c.split[i]]++;
    say("prepare: %d sequences (train %lld / validation %lld / test %lld), %lld tokens (%lld / %lld / %lld)\n", c.n,
        (long long)seqs[0], (long long)seqs[1], (long long)seqs[2], (long long)c.n_tokens, (long long)tok[0],
        (long long)tok[1], (long long)tok[2]);
    if (cfg->train.sampler == SAMPLER_GLOBAL)
        say("  global sampler: %d sequences per window from the whole train split, partition %s over %d ranks\n",
            cfg->train.global_batch, partition_names[cfg->train.partition], cfg->train.world_size);
    for (int r = 0; r < cfg->train.world_size && cfg->train.sampler == SAMPLER_BANDS; r++) {
        Sampler s;
        if (sampler_init(&s, cfg, &c, r)) stop(EXIT_BAD_INPUT);
        say("  rank %d: band [%d, %d], pool of %d train sequences\n", r, cfg->train.bands[r][0], cfg->train.bands[r][1],
            s.n_pool);
        sampler_free(&s);
    }
    if (cfg->train.sampler == SAMPLER_GLOBAL)
        say("  plan: %d updates x %d sequences -> %s\n  data lock %s\n", cfg->train.updates, cfg->train.global_batch, ppath, c.lock);
    else
        say("  plan: %d updates x %d ranks x %d microbatches x %d sequences -> %s\n  data lock %s\n", cfg->train.updates,
            cfg->train.world_size, cfg->train.accumulation, cfg->train.batch_size_per_rank, ppath, c.lock);
    free(plan);
    corpus_free(&c);
    return 0;
}

// ---------------------------------------------------------------------------------------
// reference

int cmd_reference(App *app) {
    const Config *cfg = &app->cfg;
    Corpus c;
    load_corpus_or_die(app, &c);
    ModelShape m;
    float *theta0 = model_initial(cfg, &m);
    Reference ref;
    int rc = reference_compute(cfg, &c, app->compute, theta0, &ref);
    if (rc == EXIT_EMPTY_WINDOW)
        die(EXIT_EMPTY_WINDOW, "reference: window 1 has no supervised position on any rank (N = 0): no gradient to compute");
    if (rc) stop(EXIT_BAD_INPUT);
    char path[1024];
    out_path(app, path, sizeof path, "reference.h5");
    if (reference_write(path, cfg, c.lock, &m, theta0, &ref)) stop(EXIT_BAD_INPUT);
    say("reference: window 1 replayed in one process (%s backend, dropout %g): N = %lld (", app->compute->name,
        cfg->model.dropout, (long long)ref.N);
    for (int r = 0; r < cfg->train.world_size; r++) say("%srank %d: %lld", r ? ", " : "", r, (long long)ref.rank_counts[r]);
    say("), loss %.6f, %zu gradient components -> %s\n", ref.loss, m.total, path);
    reference_free(&ref);
    free(theta0);
    corpus_free(&c);
    return 0;
}

// ---------------------------------------------------------------------------------------
// check-loss: the counter-example's arithmetic, computed by the objective rows the trainer
// uses (objective_scale, objective_ddp_average) on per-rank counts, loss sums and d loss
// sum / dθ.

// Per-rank counts of the token unit (padded = tokens: no padding).
static void token_counts(Counts *rank, const int64_t *tokens, int W) {
    for (int r = 0; r < W; r++) rank[r] = (Counts){.tokens = tokens[r], .padded = tokens[r]};
}

int cmd_check_loss(App *app) {
    // Counter-example: 12 tokens with loss sum 12, 36 tokens with loss sum 108.
    static const int64_t tokens[2] = {12, 36};
    Counts rank[2], all = {.tokens = 48, .padded = 48};
    token_counts(rank, tokens, 2);
    const double sums[2] = {12, 108};
    double mom = objective_ddp_average(NORM_MEAN_OF_MEANS, UNIT_TOKEN, 2, 1, rank, sums);
    double glob = objective_ddp_average(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, rank, sums);
    double scal0 = objective_scale(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, &all, &rank[0]) * 12;
    double scal1 = objective_scale(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, &all, &rank[1]) * 108;
    // One parameter θ = 1: rank 0's 12 tokens each have loss 1 − 2(θ−1), rank 1's 36 tokens
    // each 1 + 2(θ−1). Both formulas show loss 1; their gradients are 0 and 1.
    const double loss1[2] = {12, 36}, dloss1[2] = {12 * -2.0, 36 * 2.0};
    double l_mom = objective_ddp_average(NORM_MEAN_OF_MEANS, UNIT_TOKEN, 2, 1, rank, loss1);
    double g_mom = objective_ddp_average(NORM_MEAN_OF_MEANS, UNIT_TOKEN, 2, 1, rank, dloss1);
    double l_glob = objective_ddp_average(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, rank, loss1);
    double g_glob = objective_ddp_average(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, rank, dloss1);

    int ok = mom == 2.0 && glob == 2.5 && scal0 == 0.5 && scal1 == 4.5 && l_mom == 1.0 && l_glob == 1.0 &&
             g_mom == 0.0 && g_glob == 1.0;
    say("check-loss: counter-example (W = 2)\n"
        "  rank 0: 12 tokens, loss sum 12 (mean 1)    rank 1: 36 tokens, loss sum 108 (mean 3)\n"
        "  mean of means        (1 + 3) / 2         = %g\n"
        "  global token mean    (12 + 108) / 48     = %g\n"
        "  the formula's local scalars W*S_r/N: rank 0 %g, rank 1 %g; their average %g\n"
        "one parameter theta = 1: rank 0 tokens lose 1 - 2(theta-1), rank 1 tokens 1 + 2(theta-1)\n"
        "  mean of means:    loss %g, gradient %g\n"
        "  global token:     loss %g, gradient %g   (same loss, different gradient)\n"
        "%s\n",
        mom, glob, scal0, scal1, (scal0 + scal1) / 2, l_mom, g_mom, l_glob, g_glob,
        ok ? "check-loss: OK" : "check-loss: FAILED (arithmetic differs from the expected 2, 2.5, 0.5, 4.5, 0/1)");
    json_t *counter = json_pack("{s:[i,i], s:[i,i], s:o, s:o, s:[o,o]}", "counts", 12, 36, "loss_sums", 12, 108,
                                "mean_of_means", json_num(mom), "global_mean", json_num(glob), "local_scalars",
                                json_num(scal0), json_num(scal1));
    json_t *one = json_pack("{s:{s:o, s:o}, s:{s:o, s:o}}", "mean_of_means", "loss", json_num(l_mom), "gradient",
                            json_num(g_mom), "global_token", "loss", json_num(l_glob), "gradient", json_num(g_glob));
    write_json(app, "check_loss.json",
               json_pack("{s:o, s:o, s:b}", "counter_example", counter, "one_parameter", one, "pass", ok));
    return ok ? 0 : EXIT_CHECK_FAILED;
}
