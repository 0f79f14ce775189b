// test_fd.c — every model's CPU backward against central finite differences (fd.h): for each
// model of DDPTOK_MODELS (or the one named: `build/test_fd gpt`), its tiny config, the window
// drawn from its synthetic corpus, and its row's checks. Exit 1 on any failure. Built again
// against deliberately broken backwards (build/test_fd_*_broken, Makefile), which the same
// checks must reject: tests/test_unit.sh expects those to fail.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/batch.h"
#include "data/sampler.h"
#include "data/synthetic.h"

#include "fd.h"

#define FD_MODEL_ROW(UP, low) [MODEL_##UP] = &fd_##low,
static const FdModel *const fd_models[MODEL_COUNT] = {DDPTOK_MODELS(FD_MODEL_ROW)};
#undef FD_MODEL_ROW

static int run_model(ModelKind kind, int *passed, int *failed) {
    const FdModel *fm = fd_models[kind];
    Config cfg;
    char err[512];
    if (config_from_yaml(&cfg, fm->yaml, model_kind_names[kind], err, sizeof err)) {
        printf("FAIL %s config: %s\n", model_kind_names[kind], err);
        return 1;
    }
    if (cfg.model.kind != kind) {
        printf("FAIL fd_%s's config is model.kind %s\n", model_kind_names[kind], model_kind_names[cfg.model.kind]);
        return 1;
    }
    Corpus c;
    corpus_generate(&c, &cfg);
    Sampler s;
    if (sampler_init(&s, &cfg, &c, 0)) return 1;
    enum { A = 2, B = 3 };
    int32_t ids[A * B];
    sampler_next(&s, ids);
    ModelShape m;
    model_shape(&m, &cfg);
    const BatchSpec spec = model_batch_spec(&m);
    FdWindow w = {.cfg = &cfg, .corpus = &c, .m = &m, .A = A, .B = B, .ids = ids, .rule = label_rule(&cfg)};
    Batch mb[A];
    w.mb = mb;
    for (int a = 0; a < A; a++) {
        batch_init(&mb[a], &spec, B);
        batch_build(&mb[a], &c, ids + a * B, B, &w.rule, UNIT_SEQUENCE);  // weights 1/n_s exercise the weighted path
        w.N += mb[a].T;
    }
    w.theta = malloc(m.total * sizeof *w.theta);
    model_init_params(&m, cfg.seed, w.theta);
    printf("-- %s (%s)\n", model_kind_names[kind], model_row(&m)->param_text);
    fm->run(&w, passed, failed);
    for (int a = 0; a < A; a++) batch_free(&mb[a]);
    free(w.theta);
    sampler_free(&s);
    corpus_free(&c);
    return 0;
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0, ran = 0;
    for (int k = 0; k < MODEL_COUNT; k++) {
        if (argc > 1 && strcmp(argv[1], model_kind_names[k])) continue;
        failed += run_model((ModelKind)k, &passed, &failed);
        ran++;
    }
    if (!ran) {
        printf("FAIL no model %s (DDPTOK_MODELS)\n", argv[1]);
        return 2;
    }
    printf("test_fd: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
