// budget.c — the sizes a config makes ddptok allocate, from the config (see budget.h).
//
// Every buffer ddptok allocates in proportion to a config key, as an upper bound
// (sequences at data.max_length), in bytes; the letters as in report.h, n = the sequences
// of all splits, Lmax = data.max_length, E = EVALUATE_BATCH (evaluate's 16 sequences).
// With train.sampler: bands (B = train.batch_size_per_rank):
//   corpus cache  (see budget_corpus_cache)      the on-demand reader's checked chunks; the
//                                                corpus itself, n·(Lmax·4 + 9), only where
//                                                it is built in memory (prepare, exercise)
//   chain         V·S·12                         successors and probabilities
//   plan          U·W·A·B·4                      prepare, check-checkpoints (plan.h5's ids)
//   parameters    P·4·18                         the most P-vectors one command holds at once:
//                                                plot and parity 16 (measured: 16.2 P·4 bytes
//                                                beyond the start at V = H = 4096), e.g.
//                                                reference.h5's 2 and grads.h5's 5 read whole,
//                                                each copied by HDF5, and 2 working vectors
//   activations   max(B,E)·Lmax·(2·k·D + 4·H + V)·4   the CPU backend's per-microbatch buffers
//                                                ((B+E)·… with train.eval_every: the evaluator's own)
//   microbatches  W·A·B·Lmax·(k + 3)·4           the reference builds every rank's window
//   tables        k·V·H·8                        train.first_layer factored: P and G (0 when dense)
// With train.sampler: global (G = train.global_batch; no rank or band enters the window):
//   (no plan, no history: the epochs' windows are computed on demand, a checkpoint holds
//   the last window and a running hash — docs/sampling.md "Epochs")
//   activations   max(G,E)·Lmax·(2·k·D + 4·H + V)·4   the reference's one batch of G sequences
//   microbatches  (G + A·ceil(G/A))·Lmax·(k + 3)·4   that batch, and a rank's A microbatches
// Counts held in an int must also fit in 31 bits: the positions of one batch (batch_build
// counts them in int; pos is the 32-bit dropout counter word) and the ids of one window.
#include "config/budget.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"

typedef struct {
    const char *what, *keys;
    uint64_t bytes;
} Term;

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

uint64_t budget_bytes(const Config *cfg, char *largest, size_t len) {
    uint64_t V = (uint64_t)cfg->data.vocab_size, S = (uint64_t)cfg->data.markov_support, D = (uint64_t)cfg->model.embed_dim,
             H = (uint64_t)cfg->model.hidden, k = (uint64_t)cfg->model.context, W = (uint64_t)cfg->train.world_size,
             A = (uint64_t)cfg->train.accumulation, B = (uint64_t)cfg->train.batch_size_per_rank,
             G = (uint64_t)cfg->train.global_batch, U = (uint64_t)cfg->train.updates, Lmax = (uint64_t)cfg->data.max_length;
    int64_t cache_tokens, cache_offsets;
    budget_corpus_cache(cfg, &cache_tokens, &cache_offsets);
    uint64_t P = size_add(size_add(size_mul(V, D), size_mul(size_mul(H, k), D)), size_add(size_mul(V, H), size_add(H, V)));
    uint64_t per_position = size_add(size_mul(size_mul(2, k), D), size_add(size_mul(4, H), V));
    uint64_t batch_k3 = size_mul(size_mul(Lmax, size_add(k, 3)), 4);  // one sequence's slots in a Batch
    const Term common[] = {
        {"corpus cache", "train.global_batch or train.accumulation x train.batch_size_per_rank, x data.max_length",
         size_add(size_mul((uint64_t)cache_tokens, CORPUS_CACHE_TOKEN_CHUNK), size_mul((uint64_t)cache_offsets, CORPUS_CACHE_OFFSET_CHUNK))},
        {"chain V*S*12", "data.vocab_size x data.markov_support", size_mul(size_mul(V, S), 12)},
        {"parameters (V*D+H*k*D+V*H+H+V)*72", "data.vocab_size, model.embed_dim, model.hidden, model.context",
         size_mul(P, 72)},
        {"factored tables k*V*H*8", "model.context x data.vocab_size x model.hidden (train.first_layer: factored)",
         cfg->train.first_layer == FIRST_LAYER_FACTORED ? size_mul(size_mul(size_mul(k, V), H), 8) : 0},
    };
    // train.eval_every: the validation evaluator's E sequences beside the training window's
    int ev = cfg->train.eval_every != 0;  // auto: on, where the corpus has a validation split
    uint64_t act_b = ev ? size_add(B, EVALUATE_BATCH) : max_u64(B, EVALUATE_BATCH),
             act_g = ev ? size_add(G, EVALUATE_BATCH) : max_u64(G, EVALUATE_BATCH);
    const Term bands[] = {
        {"plan U*W*A*B*4", "train.updates x train.world_size x train.accumulation x train.batch_size_per_rank",
         size_mul(size_mul(size_mul(size_mul(U, W), A), B), 4)},
        {ev ? "activations (B+16)*Lmax*(2kD+4H+V)*4" : "activations max(B,16)*Lmax*(2kD+4H+V)*4",
         "train.batch_size_per_rank x data.max_length x (model.*, data.vocab_size)",
         size_mul(size_mul(size_mul(act_b, Lmax), per_position), 4)},
        {"microbatches W*A*B*Lmax*(k+3)*4",
         "train.world_size x train.accumulation x train.batch_size_per_rank x data.max_length x model.context",
         size_mul(size_mul(size_mul(W, A), B), batch_k3)},
    };
    const Term global[] = {
        {ev ? "activations (G+16)*Lmax*(2kD+4H+V)*4" : "activations max(G,16)*Lmax*(2kD+4H+V)*4",
         "train.global_batch x data.max_length x (model.*, data.vocab_size) (train.sampler: global)",
         size_mul(size_mul(size_mul(act_g, Lmax), per_position), 4)},
        {"microbatches (G+A*ceil(G/A))*Lmax*(k+3)*4",
         "train.global_batch x data.max_length x model.context (train.sampler: global)",
         size_mul(size_add(G, size_mul(A, (G + A - 1) / A)), batch_k3)},
    };
    int is_global = cfg->train.sampler == SAMPLER_GLOBAL;
    const Term *sampler = is_global ? global : bands;
    size_t n_sampler = is_global ? sizeof global / sizeof *global : sizeof bands / sizeof *bands;
    uint64_t total = 0;
    const Term *big = &common[0];
    for (size_t i = 0; i < 4 + n_sampler; i++) {
        const Term *t = i < 4 ? &common[i] : &sampler[i - 4];
        total = size_add(total, t->bytes);
        if (t->bytes > big->bytes) big = t;
    }
    if (largest) {
        char b[32];
        format_bytes(big->bytes, b, sizeof b);
        snprintf(largest, len, "%s = %s: %s", big->what, b, big->keys);
    }
    return total;
}

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
static int int_sizes_check(const Config *cfg, const char *src, char *err, size_t errlen) {
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

int budget_check(const Config *cfg, char *err, size_t errlen) { return budget_check_host(cfg, 1, NULL, err, errlen); }

// The one total, times the ranks of this host: they share its memory (MemAvailable,
// DDPTOK_MEMORY_LIMIT); ulimit -v limits each process alone, so against it the total of one.
int budget_check_host(const Config *cfg, int ranks_here, const char *host, char *err, size_t errlen) {
    const char *src = cfg->source[0] ? cfg->source : "config";
    if (int_sizes_check(cfg, src, err, errlen)) return -1;
    char largest[300], need_s[32], each_s[32], have[128], ranks[160] = "";
    uint64_t each = budget_bytes(cfg, largest, sizeof largest), need = each;
    const char *from;
    uint64_t avail = memory_available_from(&from);
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
