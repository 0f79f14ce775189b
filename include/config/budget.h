// budget.h — the memory a config's workload needs, computed from the config alone in
// saturating 64-bit arithmetic (common.h size_mul) before anything is allocated, and the
// check that refuses a workload the machine cannot hold (exit 2 naming the keys and the
// bytes) instead of a wrapped size, a heap overflow or "out of memory" (exit 70).
#ifndef DDPTOK_BUDGET_H
#define DDPTOK_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#ifdef __cplusplus
extern "C" {
#endif

// Bytes one process needs at most for `cfg` over the commands (the sum of every buffer
// below, each an upper bound); `largest` (may be NULL) gets the name and keys of the
// largest one, for messages.
uint64_t budget_bytes(const Config *cfg, char *largest, size_t len);
// 0 when budget_bytes(cfg) fits in memory_available(); else -1 with one line in `err`:
// "SOURCE: the workload needs X (largest: WHAT = KEYS), more than the Y this machine has
// available (MemAvailable)".
int budget_check(const Config *cfg, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
