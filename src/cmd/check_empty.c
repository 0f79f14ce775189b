// check_empty.c — `check-empty`: a globally empty window rejected by all ranks together;
// a locally empty rank still matching the reference.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "app/app.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "data/corpus.h"
#include "io/jsonio.h"
#include "train/reference.h"
#include "train/trainer.h"

static int check_empty_run(App *app) {
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
    int rc = window_gradient(app, &empty, &corpus, theta0, product, grad, &ws, NULL, NULL);
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
        int lo, hi;
        config_band(base, 0, &lo, &hi);
        snprintf(set, sizeof set, "data.unsupervised_prefix=%d", hi);
        if (config_set(&local, set, err, sizeof err)) die(EXIT_INTERNAL, "%s", err);
        // The global sampler empties rank 0 only when it partitions by length.
        if (local.train.sampler == SAMPLER_GLOBAL && config_set(&local, "train.partition=bands", err, sizeof err))
            die(EXIT_INTERNAL, "%s", err);
        rc = window_gradient(app, &local, &corpus, theta0, product, grad, &ws, NULL, NULL);
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
        json_t *report = json_pack("{s:{s:b, s:i, s:i, s:o}, s:o, s:b}", "global_empty", "rejected_by_all_ranks", all_rejected,
                                   "step", 1, "exit_code", EXIT_EMPTY_WINDOW, "seconds", json_num(round(took * 1e3) / 1e3),
                                   "local_empty", local, "ok", ok);
        report_identity_add(app, &corpus, report);  // which config and data it is the verdict of (evaluate --protocol)
        write_json(app, "empty.json", report);
    }
    free(theta0), free(grad);
    corpus_free(&corpus);
    return ok ? 0 : EXIT_CHECK_FAILED;
}

const Command cmd_check_empty = {
    .name = "check-empty",
    .run = check_empty_run,
    .distributed = 1,
    .summary = "a globally empty window is rejected by all ranks; a locally empty rank still matches",
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "empty.json", 0}, {0}},
};
