// budget.c — the budget's terms and checks (see budget.h). Which terms a config makes is
// said by the layers that allocate them (model/workload.c sums them); this file adds them up
// and refuses what does not fit, and sizes the on-demand corpus reader's cache.
#include "config/budget.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/report.h"

static int64_t clamp_slots(int64_t n, int64_t least, int64_t most) { return n < least ? least : n > most ? most : n; }

void budget_corpus_cache(const Config *cfg, int64_t *token_chunks, int64_t *offset_chunks) {
    // A window's sequences (at least an evaluation batch), each over at most
    // ceil(max_length / CORPUS_TOKEN_CHUNK) + 1 chunks, twice: a prefetched window is still
    // there when used; at most 64 MiB of token chunks and 32 MiB of offset chunks (a larger
    // window re-reads some chunks it prefetched: slower, never different).
    int64_t per = cfg->train.sampler == SAMPLER_GLOBAL ? cfg->train.global_batch
                                                      : (int64_t)cfg->train.accumulation * cfg->train.batch_size_per_rank;
    if (per < EVALUATE_BATCH) per = EVALUATE_BATCH;
    *token_chunks = clamp_slots(2 * per * ((cfg->data.max_length + CORPUS_TOKEN_CHUNK - 1) / CORPUS_TOKEN_CHUNK + 1), 64, 16384);
    *offset_chunks = clamp_slots(2 * per, 64, 8192);
}

uint64_t budget_corpus_bytes(const Config *cfg) {
    uint64_t n = (uint64_t)cfg->data.n_train + (uint64_t)cfg->data.n_validation + (uint64_t)cfg->data.n_test;
    return size_mul(n, size_add(size_mul((uint64_t)cfg->data.max_length, 4), 9));
}

// The counts ddptok holds in an int, per sampler, in 64 bits: 0, or -1 with one line.
int budget_int_sizes(const Config *cfg, char *err, size_t errlen) {
    const char *src = cfg->source[0] ? cfg->source : "config";
    int64_t Lmax = cfg->data.max_length, A = cfg->train.accumulation, B = cfg->train.batch_size_per_rank,
            G = cfg->train.global_batch;
    if (cfg->train.sampler == SAMPLER_GLOBAL) {
        // The reference's one batch holds the whole window (a rank's microbatch at most ceil(G/A)
        // of it); the window's ids, A·ceil(G/A) < G + A, fit whatever the keys' ranges allow.
        if (G * Lmax > INT32_MAX)
            return snprintf(err, errlen, "%s: train.global_batch x data.max_length = %lld positions in one global window "
                            "(train.sampler: global; the reference's one batch), at most %d", src, (long long)(G * Lmax),
                            INT32_MAX), -1;
        return 0;
    }
    if (B * Lmax > INT32_MAX)
        return snprintf(err, errlen, "%s: train.batch_size_per_rank x data.max_length = %lld positions per microbatch, at most %d",
                        src, (long long)(B * Lmax), INT32_MAX), -1;
    if (B * A > INT32_MAX)
        return snprintf(err, errlen, "%s: train.batch_size_per_rank x train.accumulation = %lld sequences per window, at most %d",
                        src, (long long)(B * A), INT32_MAX), -1;
    return 0;
}

// "... more than the Y this machine has available (SOURCE)".
static void say_available(char *out, size_t len) {
    const char *from;
    char have[32];
    format_bytes(memory_available_from(&from), have, sizeof have);
    snprintf(out, len, "the %s this machine has available (%s)", have, from);
}

// The one total, times the ranks of this host: they share its memory (MemAvailable,
// DDPTOK_MEMORY_LIMIT); ulimit -v limits each process alone, so against it the total of one.
int budget_fits(const Config *cfg, uint64_t each, int ranks_here, const char *host, const char *largest, char *err, size_t errlen) {
    const char *src = cfg->source[0] ? cfg->source : "config", *from;
    char need_s[32], each_s[32], have[128], ranks[160] = "";
    uint64_t need = each, avail = memory_available_from(&from);
    if (ranks_here > 1 && strcmp(from, "ulimit -v") != 0) {
        need = size_mul(each, (uint64_t)ranks_here);
        format_bytes(each, each_s, sizeof each_s);
        snprintf(ranks, sizeof ranks, " (%s per rank x %d ranks on this host%s%s)", each_s, ranks_here, host ? ", " : "", host ? host : "");
    }
    if (need <= avail) return 0;
    format_bytes(need, need_s, sizeof need_s);
    say_available(have, sizeof have);
    snprintf(err, errlen, "%s: the workload needs %s%s%s (largest: %s), more than %s: make those keys smaller%s", src, need_s,
             need == UINT64_MAX ? " or more" : "", ranks, largest, have, ranks[0] ? ", or start fewer ranks per host" : "");
    return -1;
}

int budget_check_bytes(const char *what, uint64_t bytes, const char *remedy, char *err, size_t errlen) {
    if (bytes <= memory_available()) return 0;
    char need_s[32], have[128];
    format_bytes(bytes, need_s, sizeof need_s);
    say_available(have, sizeof have);
    snprintf(err, errlen, "%s needs %s%s, more than %s: %s", what, need_s, bytes == UINT64_MAX ? " or more" : "", have, remedy);
    return -1;
}
