// budget.h — the one budget: the sizes a config (or a command's option) makes ddptok
// allocate, computed in saturating 64-bit arithmetic (mem.h size_mul) before anything is
// allocated, and the checks that refuse what cannot be held — a count beyond an int's 31
// bits, or more bytes than the machine has — with one line naming the keys (or the option)
// and the bytes (exit 2), instead of a wrapped size, a heap overflow or "out of memory"
// (exit 70). Every command runs workload_check (model/workload.h) on its config (main.c; a
// checkpoint's stored config before its buffers, rank_file.c; every config parity
// --invariance derives).
#ifndef DDPTOK_BUDGET_H
#define DDPTOK_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#ifdef __cplusplus
extern "C" {
#endif

// evaluate's microbatch, in sequences (its batch buffers are bounded by the activations term).
#define EVALUATE_BATCH 16

// The on-demand corpus reader's cache (src/data/corpus_file.c), from the config alone: chunks
// of CORPUS_TOKEN_CHUNK tokens (4 KiB) and of CORPUS_OFFSET_CHUNK offsets (4 KiB): the unit
// each corpus.h5 checksum covers (docs/file-formats.md), small enough that reading a short
// sequence hashes little more than it needs.
enum { CORPUS_TOKEN_CHUNK = 1024, CORPUS_OFFSET_CHUNK = 512 };
enum { CORPUS_CACHE_TOKEN_CHUNK = CORPUS_TOKEN_CHUNK * 4, CORPUS_CACHE_OFFSET_CHUNK = CORPUS_OFFSET_CHUNK * 8 };
void budget_corpus_cache(const Config *cfg, int64_t *token_chunks, int64_t *offset_chunks);
// The whole corpus in memory (what prepare and exercise build): n·(max_length·4 + 9) bytes.
uint64_t budget_corpus_bytes(const Config *cfg);
// 0 when every int count fits in 31 bits (bands: train.batch_size_per_rank x
// data.max_length positions per microbatch, x train.accumulation sequences per window;
// global: train.global_batch x data.max_length positions in one window), else -1 with one
// line in `err`: "SOURCE: KEYS = N positions per microbatch, at most 2147483647".
int budget_int_sizes(const Config *cfg, char *err, size_t errlen);
// 0 when `total` fits in memory_available(), else -1 with one line in `err`: "SOURCE: the
// workload needs X (largest: WHAT = BYTES: KEYS), more than the Y this machine has
// available (MemAvailable): make those keys smaller".
// `ranks_here` ranks sharing this host (`host`, for the message; may be NULL) need that
// total each, together against what the host has ("... needs 3.4 GiB (1.7 GiB per rank x 2
// ranks on this host, HOST) ..."); against ulimit -v (a per-process limit) the total of one.
int budget_fits(const Config *cfg, uint64_t total, int ranks_here, const char *host, const char *largest, char *err, size_t errlen);
// A command's own buffers, sized by its options rather than its config (bench-comm's
// --max-bytes): 0 when `bytes` fit in memory_available(), else -1 with one line in `err`:
// "WHAT needs X, more than the Y this machine has available (SOURCE): REMEDY".
int budget_check_bytes(const char *what, uint64_t bytes, const char *remedy, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
