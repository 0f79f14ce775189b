// data_budget.h — the data layer's terms of a config's memory budget (base/mem.h Budget;
// model/workload.c adds every layer's): the on-demand reader's cache, the generating chain,
// the bands sampler's plan, and the microbatches of a window laid out as `spec` says.
#ifndef DDPTOK_DATA_BUDGET_H
#define DDPTOK_DATA_BUDGET_H

#include "base/mem.h"
#include "config/config.h"
#include "data/batch.h"

#ifdef __cplusplus
extern "C" {
#endif

void data_budget(Budget *b, const Config *cfg, const BatchSpec *spec);
// The on-demand reader's checked pages of checksums per array (data/corpus_file.h): an eighth
// of its token chunks, 16 to 256 pages of 4 KiB.
int64_t corpus_page_slots(const Config *cfg);

#ifdef __cplusplus
}
#endif
#endif
