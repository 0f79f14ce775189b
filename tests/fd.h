// fd.h — the finite-difference test of every model's CPU backward (build/test_fd,
// tests/test_fd.c): for every model of DDPTOK_MODELS (config/config.h) one row here, fd_<name>
// in tests/fd_<name>.c (a model without one does not link), holding a tiny config of it and
// its checks; the window (corpus, sampler, microbatches in the row's layout, θ0) is made once
// for all, and the check of one window's gradient through the row's CPU backend
// (model_row(m)->cpu) against central differences of the model's own independent
// double-precision loss runs over every tensor the row lays out in θ (its names, sizes and
// offsets: ModelShape). So a model's test supplies only its forward in double.
#ifndef DDPTOK_TESTS_FD_H
#define DDPTOK_TESTS_FD_H

#include <stdint.h>

#include "config/config.h"
#include "data/corpus.h"
#include "model/model.h"

// The window every model's checks run on: A microbatches of B sequences (the sequence unit's
// weights, so the weighted path runs), drawn by the sampler from a synthetic corpus.
typedef struct {
    const Config *cfg;
    const Corpus *corpus;
    const ModelShape *m;
    Batch *mb;            // (A) in the row's layout (model_batch_spec)
    int A, B;
    int64_t N;            // the window's supervised positions
    const int32_t *ids;   // (A·B) the sequences, microbatch a's at a·B
    LabelRule rule;
    float *theta;         // (P) the row's θ0 for cfg.seed (a model's checks may move it)
} FdWindow;

// One model's row: its config (a YAML text of model.kind and a tiny shape, dropout on) and its
// checks on the window (fd_check with its own loss, and whatever else it proves).
typedef struct {
    const char *yaml;
    void (*run)(FdWindow *w, int *passed, int *failed);
} FdModel;
#define FD_MODEL_DECL(UP, low) extern const FdModel fd_##low;
DDPTOK_MODELS(FD_MODEL_DECL)
#undef FD_MODEL_DECL

// A model's independent window loss in double: Σ_a scale · Σ_t w_t·loss_t over the A
// microbatches mb with their dropouts d[a], from θ (P) in double.
typedef double (*FdWindowLoss)(const ModelShape *m, const double *th, const Batch *mb, int A, double scale, const Dropout *d);

// One window's gradient (P + 1 into g) of the A microbatches from θ through the row's CPU
// backend with first layer fl, scale = 1/N; returns its Σ w·loss (the float backend's).
double fd_window_grad(const ModelShape *m, FirstLayer fl, const float *theta, Batch *mb, int A, double scale, const Dropout *d, float *g);

// The forward's float loss sum against `loss` (within 1e-4 relative), then every tensor of the
// row: its gradient against central differences (h 1e-5), |g − fd| ≤ 1e-6 + 1e-4·|fd| for
// every component; one "ok"/"FAIL" line each, "<label> <tensor name>", with the worst component.
void fd_check(const char *label, const ModelShape *m, FirstLayer fl, const float *theta, Batch *mb, int A, int64_t N, const Dropout *d,
              FdWindowLoss loss, int *passed, int *failed);

#endif
