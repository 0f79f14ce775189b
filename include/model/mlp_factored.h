// mlp_factored.h — the window MLP's factored first layer of the CPU backend (train.first_layer: factored,
// docs/performance.md). With no non-linearity between the embedding and w1, slot j's share
// of Z is a row of a table computed once per θ:
//   P_j = emb · w1_jᵀ                 (V, H), w1_j = w1[:, jD:(j+1)D]
//   Z[t] = b1 + Σ_j P_j[ctx[t, j]]
// and its backward sums dZ per (slot, id) over the window's microbatches,
//   G_j[v] = Σ_{t: ctx[t, j] = v} dZ[t]   (V, H), in position order,
// which factored_finish turns into gw1_j += G_jᵀ · emb and gemb += G_j · w1_j once per
// window: k·V·D·H multiply-adds forward and 2·k·V·D·H backward per window instead of
// T·kD·H and 2·T·kD·H per microbatch. The same gradient up to float rounding.
// (The tables are "tables" and "sums" in the code: P alone is the parameter count.)
#ifndef DDPTOK_FACTORED_H
#define DDPTOK_FACTORED_H

#include "model/mlp.h"

typedef struct Factored Factored;

Factored *factored_create(const ModelShape *m);
void factored_destroy(Factored *f);
// θ changed (set_params, the optimizer's step through param_buffer): the tables are stale.
void factored_params_changed(Factored *f);
// A window begins (zero_grad): pending sums dropped, tables stale.
void factored_window_begin(Factored *f);
// Whether sums are pending (the embedding's and w1's gradient is not final yet).
int factored_pending(const Factored *f);
// Z (T, H) = b1 + Σ_j P_j[ctx[t, j]] for the microbatch b, computing the tables first when stale.
void factored_forward(Factored *f, const float *theta, const Batch *b, float *Z);
// G_j[ctx[t, j]] += dZ[t] over b's positions.
void factored_backward(Factored *f, const Batch *b, const float *dZ);
// Once per window: gw1 and gemb from the sums, added into grad; then the sums are zero.
void factored_finish(Factored *f, const float *theta, float *grad);

#endif
