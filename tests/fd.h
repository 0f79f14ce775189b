// fd.h — the finite-difference check every model's backward test shares (tests/test_model.c
// for the MLP, tests/test_gpt.c for the GPT): one window's gradient through the row's CPU
// backend (model_row(m)->cpu), against central differences of the model's own independent
// double-precision loss, for every tensor the row lays out in θ (its names, sizes and
// offsets: ModelShape), so a model's test supplies only its forward in double and its batches.
#ifndef DDPTOK_TESTS_FD_H
#define DDPTOK_TESTS_FD_H

#include <stdint.h>

#include "model/model.h"

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
