// parity.c — `parity`: every normalization through the real distributed window vs the
// single-process reference; with --invariance, the global sampler's window under every
// partition.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/budget.h"
#include "model/workload.h"
#include "data/corpus.h"
#include "io/h5io.h"
#include "io/jsonio.h"
#include "train/reference.h"
#include "train/trainer.h"

typedef struct {
    int invariance;  // --invariance
} ParityOptions;

// grads.h5: each normalization's window-1 gradient, with the data lock and the config digest
// of the parity run that wrote it and parity.json (plot draws it only when they are its config's).
static int write_grads(const char *path, const ModelShape *m, float *const *grads, const char *lock, const char *digest) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    int rc = 0;
    for (int mode = 0; mode < NORM_COUNT && !rc; mode++) rc = h5_write_params(o.file, normalization_names[mode], m, grads[mode]);
    if (rc || h5_attr_str(o.file, "data_lock", lock) || h5_attr_str(o.file, "config_digest", digest))
        return h5out_fail(&o, "the gradients");
    return h5out_commit(&o, NULL);
}

static int parity_invariance(App *app);

static int parity_run(App *app) {
    if (((const ParityOptions *)app->opts)->invariance) return parity_invariance(app);
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
        if (window_gradient(app, cfg, &corpus, theta0, (Normalization)mode, grads[mode], &ws, &f, rank))
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

    // train.grad_clip > 0: where the clip happens. The product (global-norm) is the trainer's:
    // the all-reduced gradient clipped by its own norm; the control per-rank-clip clips each
    // rank's own gradient by its own norm before the all-reduce (a naive port). Both against
    // the reference's gradient clipped by its norm. They must coincide only where nothing is
    // clipped (or W = 1).
    double clip = cfg->train.grad_clip, ref_norm = 0;
    float *clipped[2] = {NULL, NULL}, *ref_clipped = NULL;
    Compare clip_cmp[2];
    int clip_good[2] = {1, 1}, clip_coincide = 0, ref_active = 0, rank_active = 0;
    static const char *const clip_names[2] = {"global-norm", "per-rank-clip"};
    if (clip > 0) {
        ref_clipped = xmalloc(m.total * sizeof *ref_clipped);
        memcpy(ref_clipped, ref, m.total * sizeof *ref);
        ref_norm = trainer_clip(ref_clipped, m.total, 1.0f, clip);
        ref_active = clip / (ref_norm + 1e-6) < 1.0;
        clipped[0] = xmalloc(m.total * sizeof *clipped[0]);
        memcpy(clipped[0], grads[product], m.total * sizeof *clipped[0]);
        trainer_clip(clipped[0], m.total, 1.0f, clip);
        clipped[1] = xmalloc(m.total * sizeof *clipped[1]);
        WindowStats cws;
        window_gradient_clipped(app, cfg, &corpus, theta0, product, 1, clipped[1], &cws, NULL, NULL);
        rank_active = comm_agree(&app->comm, clip / (cws.grad_norm + 1e-6) < 1.0);
        clip_coincide = W == 1 || (!ref_active && !rank_active);
        for (int i = 0; i < 2; i++) {
            clip_cmp[i] = compare_vectors(clipped[i], ref_clipped, m.total, cfg->parity.atol, cfg->parity.rtol);
            int pass = clip_cmp[i].violations == 0;
            clip_good[i] = i == 0 || clip_coincide ? pass : !pass;
            ok &= clip_good[i];
        }
    }

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
        json_t *report =
                   json_pack("{s:o, s:o, s:I, s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:b}", "atol",
                             json_num(cfg->parity.atol), "rtol", json_num(cfg->parity.rtol), "compared",
                             (json_int_t)cmp[0].compared, "loss_unit", loss_unit_names[unit], "product",
                             normalization_names[product], "world_size", W, "accumulation", A, "global_count",
                             (json_int_t)ws.global.tokens, "global_sequences", (json_int_t)f.global.sequences, "padded",
                             (json_int_t)f.global.padded, "rank_counts", rank_counts, "rank_sequences", rank_sequences,
                             "dropout", json_num(cfg->model.dropout), "modes", modes, "ok", ok);
        if (clip > 0) {
            say("  clip: train.grad_clip = %g, the reference's norm %.6g (%s), some rank's own norm above it: %s\n", clip,
                ref_norm, ref_active ? "clipped" : "not clipped", rank_active ? "yes" : "no");
            json_t *rows = json_object();
            for (int i = 0; i < 2; i++) {
                int pass = clip_cmp[i].violations == 0;
                const char *verdict = i == 0 ? (pass ? "passes" : "FAILS")
                                      : clip_coincide ? (pass ? "coincides (nothing clipped)" : "FAILS (should coincide)")
                                                      : (pass ? "NOT REJECTED" : "rejected");
                say("  %-28s %12.4g %12lld  %s\n", clip_names[i], clip_cmp[i].max_abs_err, (long long)clip_cmp[i].violations,
                    verdict);
                json_object_set_new(rows, clip_names[i],
                                    json_pack("{s:o, s:I, s:b, s:s, s:b}", "max_abs_err", json_num(clip_cmp[i].max_abs_err),
                                              "violations", (json_int_t)clip_cmp[i].violations, "pass", pass, "expected",
                                              i == 0 ? "passes" : clip_coincide ? "coincides" : "rejected", "ok",
                                              clip_good[i]));
            }
            json_object_set_new(report, "clip",
                                json_pack("{s:o, s:o, s:b, s:b, s:o}", "grad_clip", json_num(clip), "reference_norm",
                                          json_num(ref_norm), "reference_clipped", ref_active, "rank_clipped", rank_active,
                                          "rows", rows));
        }
        report_identity_add(app, &corpus, report);  // which config and data it is the verdict of (evaluate, plot)
        write_json(app, "parity.json", report);
        char gpath[1024], digest[65];
        out_path(app, gpath, sizeof gpath, "grads.h5");
        config_result_digest(cfg, digest);
        if (write_grads(gpath, &m, grads, corpus.lock, digest)) stop_abort(EXIT_BAD_INPUT);
        say("parity: %s\n", ok ? "OK (the product passes, every control that must differ is rejected)" : "FAILED");
    }
    for (int mode = 0; mode < NORM_COUNT; mode++) free(grads[mode]);
    free(clipped[0]), free(clipped[1]), free(ref_clipped);
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
    char err[1024], set[128];
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
                // A config derived here is budgeted like the one given (main.c checked that one
                // for its own sampler; the global sampler's sizes are others).
                if (bad || workload_check(&cfg, err, sizeof err)) die(EXIT_BAD_INPUT, "parity --invariance: %s", err);
                cfg.train.normalization = loss_units[unit].product;
                if (!ref.grad && app->comm.rank == 0 && reference_compute(&cfg, &corpus, app->compute, theta0, &ref))
                    die_abort(EXIT_EMPTY_WINDOW, "parity --invariance: the global window 1 has no supervised position");
                if (window_gradient(app, &cfg, &corpus, theta0, cfg.train.normalization, grad, &ws, &f, rank))
                    die(EXIT_EMPTY_WINDOW, "parity --invariance: the global window 1 has no supervised position (N = 0)");
                Compare prod = {0, 0, 0, -1}, mom = prod;
                if (app->comm.rank == 0) prod = compare_vectors(grad, ref.grad, m.total, cfg.parity.atol, cfg.parity.rtol);
                int coincide = objective_coincides(NORM_MEAN_OF_MEANS, (LossUnit)unit, &f);
                window_gradient(app, &cfg, &corpus, theta0, NORM_MEAN_OF_MEANS, grad, &ws, NULL, NULL);
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
        json_t *report = json_pack("{s:i, s:i, s:o, s:o, s:o, s:O, s:b}", "world_size", W, "global_batch", base->train.global_batch,
                                   "dropout", json_num(base->model.dropout), "atol", json_num(base->parity.atol), "rtol",
                                   json_num(base->parity.rtol), "rows", rows_json, "ok", ok);
        report_identity_add(app, &corpus, report);
        write_json(app, set, report);
        say("parity --invariance: %s\n", ok ? "OK (every partition gives the reference's gradient; the mean of means is "
                                               "rejected wherever per-rank counts differ)" : "FAILED");
    }
    json_decref(rows_json);
    free(rank), free(theta0), free(grad);
    corpus_free(&corpus);
    return ok ? 0 : EXIT_CHECK_FAILED;
}

const Command cmd_parity = {
    .name = "parity",
    .run = parity_run,
    .distributed = 1,
    .summary = "window-1 gradient of every normalization through the distributed path vs the reference; with --invariance, the "
               "global sampler's window under every partition, A = 1, 2 and both loss units vs its one-batch reference",
    .options = (const CommandOption[]){
        OPTION_FLAG("--invariance", ParityOptions, invariance,
                    "the global sampler's window under every partition instead -> outputs/invariance-wW.json"),
        OPTION_END,
    },
    .opts_size = sizeof(ParityOptions),
    // matrix/: run/protocol.sh's negative-control matrix, one cell per parity run with
    // paths.outputs (and paths.artifacts) = outputs/matrix/CELL.
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "parity.json", 0}, {UNDER_OUTPUTS, "grads.h5", 0},
                                       {UNDER_OUTPUTS, "invariance-w*.json", 0}, {UNDER_OUTPUTS, "matrix", 1}, {0}},
};
