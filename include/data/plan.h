// plan.h — plan.h5 (docs/file-formats.md): the bands sampler's every window of every rank
// (U, W, A, B), or the global sampler's key and epoch geometry (its windows are computed on
// demand). A derived file: it carries the data lock (data/lock.h), so a plan of another
// layout (another W, B, A, seed or sampler) on the same corpus is made again from the corpus,
// never a reason to re-import.
#ifndef DDPTOK_PLAN_H
#define DDPTOK_PLAN_H

#include <stdint.h>

#include "config/config.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

// The bands sampler's whole plan as every rank would draw it from a fresh stream: (U, W, A, B).
// The global sampler has none (NULL, nothing printed): its windows are computed on demand
// (sampler_window_at; `ddptok plan`).
int32_t *plan_build(const Config *cfg, const Corpus *corpus);
// Writes plan.h5 with the corpus's data lock: bands, `plan` as plan_build made it; global, only
// the key and the epoch geometry (attributes, no ids). 0 or -1 (error printed).
int plan_write(const char *path, const Config *cfg, const Corpus *corpus, const int32_t *plan, const char *lock);
// Reads plan.h5 after checking it against the corpus: its own data lock, then (bands) its shape
// (U, W, A, B) and every id in [-1, n), or (global) its key and epoch geometry. Returns the ids
// (bands) or a 1-element dummy (global: nothing to compare windows with); NULL with one line
// printed (a damaged plan says so, ending with `remedy`). A plan of another data lock on this
// corpus (the layout changed since) is built again from the corpus, with one line saying so.
int32_t *plan_read(const char *path, const Config *cfg, const Corpus *corpus, const char *remedy);

#ifdef __cplusplus
}
#endif
#endif
