// workload.h — the memory one process needs for a config: the sum of the terms every layer
// contributes (base/mem.h Budget): the data layer its cache, chain, plan and microbatches
// (data/data_budget.h), the model row its parameters and activations (model.h), the
// optimizer its states (method/optimizer.h). Every command checks it before it allocates
// (main.c; a checkpoint's stored config, rank_file.c; every config parity --invariance
// derives): a config that cannot be held is refused with one line naming the largest term
// and its keys (exit 2), instead of a wrapped size or "out of memory".
#ifndef DDPTOK_WORKLOAD_H
#define DDPTOK_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"
#include "config/config.h"

#ifdef __cplusplus
extern "C" {
#endif

// Every term of `cfg`'s workload, with the sampler in use.
void workload_budget(Budget *b, const Config *cfg);
// Their sum in bytes; `largest` (may be NULL) gets the largest term and its keys.
uint64_t workload_bytes(const Config *cfg, char *largest, size_t len);
// 0 when every int count fits in 31 bits (budget_int_sizes) and the workload of
// `ranks_here` ranks sharing this host (`host` names it in the message; may be NULL) fits in
// memory_available(); else -1 with one line in `err` (budget.h budget_fits).
int workload_check_host(const Config *cfg, int ranks_here, const char *host, char *err, size_t errlen);
// The same for one process.
static inline int workload_check(const Config *cfg, char *err, size_t errlen) { return workload_check_host(cfg, 1, NULL, err, errlen); }

#ifdef __cplusplus
}
#endif
#endif
