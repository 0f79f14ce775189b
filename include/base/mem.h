// mem.h — allocation that never returns NULL, sizes that saturate instead of wrapping, the
// memory this process may still allocate, and a budget of named terms to hold against it.
#ifndef DDPTOK_MEM_H
#define DDPTOK_MEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Allocation that never returns NULL: on failure the job ends naming the call site.
void *xmalloc_impl(size_t n, const char *file, int line);
void *xcalloc_impl(size_t n, size_t size, const char *file, int line);
#define xmalloc(n) xmalloc_impl((n), __FILE__, __LINE__)
#define xcalloc(n, s) xcalloc_impl((n), (s), __FILE__, __LINE__)

// Sizes are 64-bit and saturate instead of wrapping: a product beyond any machine stays
// beyond it (UINT64_MAX), so a memory check on it cannot be fooled by an overflow.
static inline uint64_t size_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
static inline uint64_t size_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
// Bytes this process may still allocate: /proc/meminfo's MemAvailable (the kernel's
// estimate of what can be allocated without swapping), or the free pages of sysconf where
// /proc is absent; lowered to the address-space limit (ulimit -v) when one is set, and to
// DDPTOK_MEMORY_LIMIT (bytes, or with a K, M or G suffix) when that is set.
uint64_t memory_available(void);
// The same, with what set it in *from: "MemAvailable", "free pages", "ulimit -v",
// "DDPTOK_MEMORY_LIMIT" or "unknown" (UINT64_MAX: nothing is refused on a guess).
uint64_t memory_available_from(const char **from);
// "1.5 GiB": `bytes` in binary units, for messages.
void format_bytes(uint64_t bytes, char *out, size_t len);

// A budget: the terms one process allocates in proportion to config keys, each an upper
// bound in bytes, added by the layer that allocates it (model/workload.c sums a config's: the
// data layer its cache, chain, plan and microbatches, the model row its parameters and
// activations, the optimizer its states).
enum { BUDGET_MAX_TERMS = 24 };
typedef struct {
    char what[112];  // its name and formula: "activations max(B,16)*Lmax*(2kD+4H+V)*4"
    char keys[224];  // the keys it follows, for "make those keys smaller"
    uint64_t bytes;
} BudgetTerm;
typedef struct {
    BudgetTerm term[BUDGET_MAX_TERMS];
    int n;
} Budget;
// Adds a term (saturating; a full budget is a BUG); `what` is a printf format.
void budget_add(Budget *b, uint64_t bytes, const char *keys, const char *what, ...) __attribute__((format(printf, 4, 5)));
// The sum (saturating); `largest` (may be NULL) gets "WHAT = BYTES: KEYS" of the largest term.
uint64_t budget_total(const Budget *b, char *largest, size_t len);

#ifdef __cplusplus
}
#endif
#endif
