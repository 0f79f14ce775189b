// cmd_parity.c — the distributed proofs: `parity` (every normalization through the real
// distributed window vs the single-process reference) and `check-empty` (a globally
// empty window rejected by all ranks together; a locally empty rank still matching).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "corpus.h"
#include "h5io.h"
#include "reference.h"
#include "trainer.h"

// Runs window 1 from θ0 with `mode` through the distributed path; returns the averaged
// gradient (P) in `grad`, the statistics in `ws` and, if `f`, the facts (whose per-rank
// counts go to `rank` (W)). Returns 0 or EXIT_EMPTY_WINDOW (on every rank).
static int distributed_window(App *app, const Config *cfg, const Corpus *corpus, const float *theta0, Normalization mode,
                              float *grad, WindowStats *ws, WindowFacts *f, Counts *rank) {
    Trainer t;
    comm_stop_if_any(&app->comm, trainer_init(&t, cfg, corpus, app->compute, &app->comm, theta0), EXIT_BAD_INPUT,
                     "setting up the window");
    int rc = trainer_window(&t, mode, 0, ws);
    if (!rc) {
        float *g = xmalloc((t.m.total + 1) * sizeof *g);
        trainer_gradient(&t, g);
        memcpy(grad, g, t.m.total * sizeof *g);
        free(g);
    }
    if (f) {
        f->W = t.W, f->A = t.A;
        f->global = ws->global;
        for (int r = 0; r < t.W; r++) rank[r] = count_exchange_rank(&t.counts, r);
        f->ns_max = comm_agree(&app->comm, ws->ns_max);
        f->ns_min = -comm_agree(&app->comm, ws->local.sequences ? -ws->ns_min : -(1 << 30));
    }
    ws->rank_counts = ws->rank_seqs = NULL;
    trainer_free(&t);
    return rc;
}

static int write_grads(const char *path, const ModelShape *m, float *const *grads, const char *lock) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    int rc = 0;
    for (int mode = 0; mode < NORM_COUNT && !rc; mode++) rc = h5_write_params(o.file, normalization_names[mode], m, grads[mode]);
    if (rc || h5_attr_str(o.file, "data_lock", lock)) return h5out_fail(&o, "the gradients");
    return h5out_commit(&o, NULL);
}

static int parity_invariance(App *app);

int cmd_parity(App *app) {
    if (app->invariance) return parity_invariance(app);
    const Config *cfg = &app->cfg;
    int W = cfg->train.world_size, A = cfg->train.accumulation;
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    ModelShape m;
    model_shape(&m, cfg);
    float *theta0 = xmalloc(m.total * sizeof *theta0), *ref = xmalloc(m.total * sizeof *ref);
    int64_t N_ref = 0;
    char rpath[1024];
    out_path(app, rpath, sizeof rpath, "reference.h5");
    comm_stop_if_any(&app->comm, reference_read(rpath, corpus.lock, &m, theta0, ref, &N_ref), EXIT_BAD_INPUT,
                     "reading the reference");

    LossUnit unit = cfg->train.loss_unit;
    Normalization product = loss_units[unit].product;
    float *grads[NORM_COUNT];
    Compare cmp[NORM_COUNT];
    int coincide[NORM_COUNT], good[NORM_COUNT];
    Counts *rank = xcalloc((size_t)W, sizeof *rank);
    WindowFacts f = {.rank = rank};
    WindowStats ws;
    for (int mode = 0; mode < NORM_COUNT; mode++) {
        grads[mode] = xmalloc(m.total * sizeof(float));
        if (distributed_window(app, cfg, &corpus, theta0, (Normalization)mode, grads[mode], &ws, &f, rank))
            die(EXIT_EMPTY_WINDOW, "parity: window 1 has no supervised position on any rank (N = 0)");
        cmp[mode] = compare_vectors(grads[mode], ref, m.total, cfg->parity.atol, cfg->parity.rtol);
        coincide[mode] = objective_coincides((Normalization)mode, unit, &f);
        int pass = cmp[mode].violations == 0;
        good[mode] = coincide[mode] ? pass : !pass;
    }
    if (ws.global.tokens != N_ref) die(EXIT_CHECK_FAILED, "parity: the distributed window counts N = %lld, the reference %lld",
                           (long long)ws.global.tokens, (long long)N_ref);
    int ok = 1;
    for (int mode = 0; mode < NORM_COUNT; mode++) ok &= good[mode];

    if (app->comm.rank == 0) {
        say("parity: window 1, %s unit, W = %d, A = %d, N = %lld (", loss_unit_names[unit], W, A, (long long)ws.global.tokens);
        for (int r = 0; r < W; r++) say("%s%lld", r ? " + " : "", (long long)rank[r].tokens);
        say(") tokens in %lld labelled sequences, %lld components, |g - ref| <= %g + %g*|ref|\n", (long long)f.global.sequences,
            (long long)cmp[0].compared, cfg->parity.atol, cfg->parity.rtol);
        say("  %-28s %12s %12s  %s\n", "normalization", "max abs err", "violations", "verdict");
        json_t *rank_counts = json_array(), *rank_sequences = json_array(), *modes = json_object();
        for (int r = 0; r < W; r++)
            json_array_append_new(rank_counts, json_integer(rank[r].tokens)),
                json_array_append_new(rank_sequences, json_integer(rank[r].sequences));
        for (int mode = 0; mode < NORM_COUNT; mode++) {
            int pass = cmp[mode].violations == 0;
            const char *verdict = mode == (int)product ? (pass ? "passes" : "FAILS")
                                  : coincide[mode]      ? (pass ? "coincides (counts make it equal)" : "FAILS (should coincide)")
                                                        : (pass ? "NOT REJECTED" : "rejected");
            say("  %-28s %12.4g %12lld  %s\n", normalization_names[mode], cmp[mode].max_abs_err,
                (long long)cmp[mode].violations, verdict);
            if (!good[mode] && cmp[mode].worst >= 0) {
                int64_t i = cmp[mode].worst;
                say("    worst component %lld: got %.9g, reference %.9g\n", (long long)i, grads[mode][i], ref[i]);
            }
            json_object_set_new(modes, normalization_names[mode],
                                json_pack("{s:o, s:I, s:b, s:s, s:b, s:s, s:s}", "max_abs_err", json_num(cmp[mode].max_abs_err),
                                          "violations", (json_int_t)cmp[mode].violations, "pass", pass, "expected",
                                          coincide[mode] ? (mode == (int)product ? "passes" : "coincides") : "rejected",
                                          "ok", good[mode], "short", objectives[mode].short_name, "formula",
                                          objectives[mode].formula));
        }
        write_json(app, "parity.json",
                   json_pack("{s:o, s:o, s:I, s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:b}", "atol",
                             json_num(cfg->parity.atol), "rtol", json_num(cfg->parity.rtol), "compared",
                             (json_int_t)cmp[0].compared, "loss_unit", loss_unit_names[unit], "product",
                             normalization_names[product], "world_size", W, "accumulation", A, "global_count",
                             (json_int_t)ws.global.tokens, "global_sequences", (json_int_t)f.global.sequences, "padded",
                             (json_int_t)f.global.padded, "rank_counts", rank_counts, "rank_sequences", rank_sequences,
                             "dropout", json_num(cfg->model.dropout), "modes", modes, "ok", ok));
        char gpath[1024];
        out_path(app, gpath, sizeof gpath, "grads.h5");
        if (write_grads(gpath, &m, grads, corpus.lock)) stop_abort(EXIT_BAD_INPUT);
        say("parity: %s\n", ok ? "OK (the product passes, every control that must differ is rejected)" : "FAILED");
    }
    for (int mode = 0; mode < NORM_COUNT; mode++) free(grads[mode]);
    free(rank), free(theta0), free(ref);
    corpus_free(&corpus);
    return ok ? 0 : EXIT_CHECK_FAILED;
}

// ---------------------------------------------------------------------------------------
// parity --invariance: the global sampler's window 1 on this world size, under every
// partition, A = 1 and 2, and both loss units, against the one-batch reference (which no
// rank, microbatch or partition enters). The product must pass on every row; the mean of
// means must be rejected on every row whose per-rank counts differ. Run it for each W.

static int parity_invariance(App *app) {
    const Config *base = &app->cfg;
    int W = base->train.world_size;
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    ModelShape m;
    float *theta0 = model_initial(base, &m), *grad = xmalloc(m.total * sizeof *grad);
    Counts *rank = xcalloc((size_t)W, sizeof *rank);
    WindowFacts f = {.rank = rank};
    WindowStats ws;
    char err[512], set[128];
    int ok = 1, rows = 0;
    json_t *rows_json = json_array();
    if (app->comm.rank == 0) {
        say("parity --invariance: global window 1 (G = %d sequences), W = %d, dropout %g keyed by (seed, step, sequence, "
            "position, unit), |g - ref| <= %g + %g*|ref|\n", base->train.global_batch, W, base->model.dropout,
            base->parity.atol, base->parity.rtol);
        say("  %2s %2s %-12s %-9s %-22s %11s %6s  %-8s %11s  %s\n", "W", "A", "partition", "unit", "per-rank count",
            "max abs err", "viol.", "product", "MoM err", "mean of means");
    }
    for (int unit = 0; unit < UNIT_COUNT; unit++) {
        Reference ref = {0};
        for (int A = 1; A <= 2; A++)
            for (int part = 0; part < PARTITION_COUNT; part++) {
                Config cfg = *base;
                snprintf(set, sizeof set, "train.loss_unit=%s", loss_unit_names[unit]);
                int bad = config_set(&cfg, "train.sampler=global", err, sizeof err) || config_set(&cfg, set, err, sizeof err);
                snprintf(set, sizeof set, "train.accumulation=%d", A);
                bad = bad || config_set(&cfg, set, err, sizeof err);
                snprintf(set, sizeof set, "train.partition=%s", partition_names[part]);
                bad = bad || config_set(&cfg, set, err, sizeof err);
                if (bad) die(EXIT_BAD_INPUT, "parity --invariance: %s", err);
                cfg.train.normalization = loss_units[unit].product;
                if (!ref.grad && app->comm.rank == 0 && reference_compute(&cfg, &corpus, app->compute, theta0, &ref))
                    die_abort(EXIT_EMPTY_WINDOW, "parity --invariance: the global window 1 has no supervised position");
                if (distributed_window(app, &cfg, &corpus, theta0, cfg.train.normalization, grad, &ws, &f, rank))
                    die(EXIT_EMPTY_WINDOW, "parity --invariance: the global window 1 has no supervised position (N = 0)");
                Compare prod = {0, 0, 0, -1}, mom = prod;
                if (app->comm.rank == 0) prod = compare_vectors(grad, ref.grad, m.total, cfg.parity.atol, cfg.parity.rtol);
                int coincide = objective_coincides(NORM_MEAN_OF_MEANS, (LossUnit)unit, &f);
                distributed_window(app, &cfg, &corpus, theta0, NORM_MEAN_OF_MEANS, grad, &ws, NULL, NULL);
                if (app->comm.rank == 0) mom = compare_vectors(grad, ref.grad, m.total, cfg.parity.atol, cfg.parity.rtol);
                int prod_ok = prod.violations == 0, mom_ok = coincide ? mom.violations == 0 : mom.violations > 0;
                if (app->comm.rank == 0) {
                    char counts[256];
                    int n = 0;
                    for (int r = 0; r < W && n < (int)sizeof counts; r++)
                        n += snprintf(counts + n, sizeof counts - (size_t)n, "%s%lld", r ? "+" : "",
                                      (long long)loss_units[unit].count(&rank[r]));
                    say("  %2d %2d %-12s %-9s %-22s %11.3g %6lld  %-8s %11.3g  %s\n", W, A, partition_names[part],
                        loss_unit_names[unit], counts, prod.max_abs_err, (long long)prod.violations, prod_ok ? "passes" : "FAILS",
                        mom.max_abs_err, coincide ? (mom_ok ? "coincides (equal counts)" : "FAILS (should coincide)")
                                                  : (mom_ok ? "rejected" : "NOT REJECTED"));
                    json_array_append_new(
                        rows_json, json_pack("{s:i, s:s, s:s, s:s, s:o, s:I, s:b, s:o, s:s, s:b}", "accumulation", A,
                                             "partition", partition_names[part], "loss_unit", loss_unit_names[unit], "counts",
                                             counts, "max_abs_err", json_num(prod.max_abs_err), "violations",
                                             (json_int_t)prod.violations, "product_ok", prod_ok, "mean_of_means_err",
                                             json_num(mom.max_abs_err), "mean_of_means_expected",
                                             coincide ? "coincides" : "rejected", "mean_of_means_ok", mom_ok));
                }
                ok &= prod_ok && mom_ok;
                rows++;
            }
        if (ref.grad) reference_free(&ref);
    }
    comm_bcast(&app->comm, &ok, sizeof ok, 0);
    if (app->comm.rank == 0) {
        snprintf(set, sizeof set, "invariance-w%d.json", W);
        write_json(app, set,
                   json_pack("{s:i, s:i, s:o, s:o, s:o, s:O, s:b}", "world_size", W, "global_batch", base->train.global_batch,
                             "dropout", json_num(base->model.dropout), "atol", json_num(base->parity.atol), "rtol",
                             json_num(base->parity.rtol), "rows", rows_json, "ok", ok));
        say("parity --invariance: %s\n", ok ? "OK (every partition gives the reference's gradient; the mean of means is "
                                               "rejected wherever per-rank counts differ)" : "FAILED");
    }
    json_decref(rows_json);
    free(rank), free(theta0), free(grad);
    corpus_free(&corpus);
    return ok ? 0 : EXIT_CHECK_FAILED;
}

// ---------------------------------------------------------------------------------------
// check-empty

int cmd_check_empty(App *app) {
    const Config *base = &app->cfg;
    int W = base->train.world_size;
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    ModelShape m;
    float *theta0 = model_initial(base, &m), *grad = xmalloc(m.total * sizeof *grad);
    char err[512];
    WindowStats ws;

    // (a) Globally empty: every position of every sequence is inside the unlabelled prefix.
    Config empty = *base;
    if (config_set(&empty, "data.unsupervised_prefix=65536", err, sizeof err)) die(EXIT_INTERNAL, "%s", err);
    double t0 = now_seconds();
    Normalization product = loss_units[base->train.loss_unit].product;
    int rc = distributed_window(app, &empty, &corpus, theta0, product, grad, &ws, NULL, NULL);
    double took = now_seconds() - t0;
    if (rc == EXIT_EMPTY_WINDOW)
        fprintf(stderr, "ddptok: rank %d: step %d: no supervised position in the window on any rank (N = 0): rejected\n",
                app->comm.rank, ws.step);
    int rejected_here = rc == EXIT_EMPTY_WINDOW;
    int all_rejected = comm_agree(&app->comm, !rejected_here) == 0;

    // (b) Locally empty: rank 0's prefix covers its whole band; other ranks keep labels.
    int local_ok = 1, local_applicable = W > 1;
    Compare cmp = {0, 0, 0, -1};
    int64_t N_r0 = -1, N_local = 0;
    if (local_applicable) {
        Config local = *base;
        char set[64];
        snprintf(set, sizeof set, "data.unsupervised_prefix=%d", base->train.bands[0][1]);
        if (config_set(&local, set, err, sizeof err)) die(EXIT_INTERNAL, "%s", err);
        // The global sampler empties rank 0 only when it partitions by length.
        if (local.train.sampler == SAMPLER_GLOBAL && config_set(&local, "train.partition=bands", err, sizeof err))
            die(EXIT_INTERNAL, "%s", err);
        rc = distributed_window(app, &local, &corpus, theta0, product, grad, &ws, NULL, NULL);
        if (rc) die(EXIT_CHECK_FAILED, "check-empty: the locally-empty case became globally empty");
        N_r0 = ws.local.tokens;
        comm_bcast(&app->comm, &N_r0, sizeof N_r0, 0);
        N_local = ws.global.tokens;
        if (app->comm.rank == 0) {
            Reference ref;
            if (reference_compute(&local, &corpus, app->compute, theta0, &ref)) die_abort(EXIT_INTERNAL, "reference failed");
            cmp = compare_vectors(grad, ref.grad, m.total, base->parity.atol, base->parity.rtol);
            local_ok = cmp.violations == 0 && N_r0 == 0 && ref.N == ws.global.tokens;
            reference_free(&ref);
        }
        comm_bcast(&app->comm, &local_ok, sizeof local_ok, 0);
    }
    int ok = all_rejected && local_ok;
    if (app->comm.rank == 0) {
        say("check-empty:\n  globally empty window: %s (%.2f s, every rank %s exit code %d in train)\n",
            all_rejected ? "rejected by all ranks" : "NOT rejected by every rank", took,
            all_rejected ? "stops with" : "should stop with", EXIT_EMPTY_WINDOW);
        if (local_applicable)
            say("  locally empty rank 0 (N_0 = %lld of N = %lld): %s, max abs err %.3g, %lld violations of %lld\n",
                (long long)N_r0, (long long)N_local, local_ok ? "matches the reference" : "DOES NOT MATCH",
                cmp.max_abs_err, (long long)cmp.violations, (long long)cmp.compared);
        else say("  locally empty rank: not applicable with one rank\n");
        json_t *local = local_applicable
                            ? json_pack("{s:b, s:i, s:I, s:I, s:o, s:I, s:I}", "pass", local_ok, "rank", 0, "rank_count",
                                        (json_int_t)N_r0, "global_count", (json_int_t)N_local, "max_abs_err",
                                        json_num(cmp.max_abs_err), "violations", (json_int_t)cmp.violations, "compared",
                                        (json_int_t)cmp.compared)
                            : json_pack("{s:b, s:s}", "pass", 1, "skipped", "one rank");
        write_json(app, "empty.json",
                   json_pack("{s:{s:b, s:i, s:i, s:o}, s:o, s:b}", "global_empty", "rejected_by_all_ranks", all_rejected,
                             "step", 1, "exit_code", EXIT_EMPTY_WINDOW, "seconds", json_num(round(took * 1e3) / 1e3),
                             "local_empty", local, "ok", ok));
    }
    free(theta0), free(grad);
    corpus_free(&corpus);
    return ok ? 0 : EXIT_CHECK_FAILED;
}
