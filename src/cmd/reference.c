// reference.c — `reference`: θ0 and the single-process gradient of window 1 ->
// outputs/reference.h5.
#include <stdlib.h>

#include "app/app.h"
#include "base/report.h"
#include "data/corpus.h"
#include "train/reference.h"

static int reference_run(App *app) {
    const Config *cfg = &app->cfg;
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    ModelShape m;
    float *theta0 = model_initial(cfg, &m);
    Reference ref;
    int rc = reference_compute(cfg, &corpus, app->compute, theta0, &ref);
    if (rc == EXIT_EMPTY_WINDOW)
        die(EXIT_EMPTY_WINDOW, "reference: window 1 has no supervised position on any rank (N = 0): no gradient to compute");
    if (rc) stop(EXIT_BAD_INPUT);
    char path[1024];
    out_path(app, path, sizeof path, "reference.h5");
    if (reference_write(path, cfg, corpus.lock, &m, theta0, &ref)) stop(EXIT_BAD_INPUT);
    say("reference: window 1 replayed in one process (%s backend, dropout %g): N = %lld (", app->compute->name,
        cfg->model.dropout, (long long)ref.N);
    for (int r = 0; r < cfg->train.world_size; r++) say("%srank %d: %lld", r ? ", " : "", r, (long long)ref.rank_counts[r]);
    say("), loss %.6f, %zu gradient components -> %s\n", ref.loss, m.total, text_safe(path));
    reference_free(&ref);
    free(theta0);
    corpus_free(&corpus);
    return 0;
}

const Command cmd_reference = {
    .name = "reference",
    .run = reference_run,
    .distributed = 0,
    .summary = "initial parameters and the single-process window-1 gradient -> outputs/reference.h5",
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "reference.h5", 0}, {0}},
};
