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

#ifdef __cplusplus
}
#endif
#endif
