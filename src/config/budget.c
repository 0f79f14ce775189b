// budget.c — the workload's memory, from the config (see budget.h).
//
// Every buffer ddptok allocates in proportion to a config key, as an upper bound
// (sequences at data.max_length), in bytes; the letters as in common.h, n = the
// sequences of all splits, Lmax = data.max_length, cap = B·Lmax positions:
//   corpus        n·(Lmax·4 + 9)                 tokens, offsets, split
//   chain         V·S·12                         successors and probabilities
//   plan          U·W·A·B·4                      prepare, check-checkpoints
//   history       U·A·B·4                        the sampler history of a run / checkpoint
//   parameters    P·4·8                          θ, θ0, gradient, momentum, checkpoint copies
//   activations   cap·(2·k·D + 4·H + V)·4        the CPU backend's per-microbatch buffers
//   microbatches  W·A·cap·(k + 3)·4              the reference builds every rank's window
//   tables        k·V·H·8                        train.first_layer factored: P and G (0 when dense)
#include "config/budget.h"

#include <stdio.h>
#include <string.h>

#include "base/mem.h"

typedef struct {
    const char *what, *keys;
    uint64_t bytes;
} Term;

uint64_t budget_bytes(const Config *cfg, char *largest, size_t len) {
    uint64_t V = (uint64_t)cfg->data.vocab_size, S = (uint64_t)cfg->data.markov_support, D = (uint64_t)cfg->model.embed_dim,
             H = (uint64_t)cfg->model.hidden, k = (uint64_t)cfg->model.context, W = (uint64_t)cfg->train.world_size,
             A = (uint64_t)cfg->train.accumulation, B = (uint64_t)cfg->train.batch_size_per_rank,
             U = (uint64_t)cfg->train.updates, Lmax = (uint64_t)cfg->data.max_length;
    // The global sampler: a microbatch holds up to ceil(G/A) sequences and the reference's
    // one batch all G; B = G bounds both (and the plan's U·G, the history's U·G).
    if (cfg->train.sampler == SAMPLER_GLOBAL) B = (uint64_t)cfg->train.global_batch;
    uint64_t n = (uint64_t)cfg->data.n_train + (uint64_t)cfg->data.n_validation + (uint64_t)cfg->data.n_test;
    uint64_t cap = size_mul(B, Lmax);
    uint64_t P = size_add(size_add(size_mul(V, D), size_mul(size_mul(H, k), D)), size_add(size_mul(V, H), size_add(H, V)));
    uint64_t per_position = size_add(size_mul(size_mul(2, k), D), size_add(size_mul(4, H), V));
    const Term terms[] = {
        {"corpus n*(Lmax*4+9)", "data.splits.* x data.max_length", size_mul(n, size_add(size_mul(Lmax, 4), 9))},
        {"chain V*S*12", "data.vocab_size x data.markov_support", size_mul(size_mul(V, S), 12)},
        {"plan U*W*A*B*4", "train.updates x train.world_size x train.accumulation x train.batch_size_per_rank",
         size_mul(size_mul(size_mul(size_mul(U, W), A), B), 4)},
        {"history U*A*B*4", "train.updates x train.accumulation x train.batch_size_per_rank",
         size_mul(size_mul(size_mul(U, A), B), 4)},
        {"parameters (V*D+H*k*D+V*H+H+V)*32", "data.vocab_size, model.embed_dim, model.hidden, model.context",
         size_mul(P, 32)},
        {"activations B*Lmax*(2kD+4H+V)*4", "train.batch_size_per_rank x data.max_length x (model.*, data.vocab_size)",
         size_mul(size_mul(cap, per_position), 4)},
        {"microbatches W*A*B*Lmax*(k+3)*4",
         "train.world_size x train.accumulation x train.batch_size_per_rank x data.max_length x model.context",
         size_mul(size_mul(size_mul(size_mul(W, A), cap), size_add(k, 3)), 4)},
        {"factored tables k*V*H*8", "model.context x data.vocab_size x model.hidden (train.first_layer: factored)",
         cfg->train.first_layer == FIRST_LAYER_FACTORED ? size_mul(size_mul(size_mul(k, V), H), 8) : 0},
    };
    uint64_t total = 0;
    const Term *big = &terms[0];
    for (size_t i = 0; i < sizeof terms / sizeof *terms; i++) {
        total = size_add(total, terms[i].bytes);
        if (terms[i].bytes > big->bytes) big = &terms[i];
    }
    if (largest) {
        char b[32];
        format_bytes(big->bytes, b, sizeof b);
        snprintf(largest, len, "%s = %s: %s", big->what, b, big->keys);
    }
    return total;
}

int budget_check(const Config *cfg, char *err, size_t errlen) {
    char largest[300], need_s[32], have_s[32];
    uint64_t need = budget_bytes(cfg, largest, sizeof largest), have = memory_available();
    if (need <= have) return 0;
    format_bytes(need, need_s, sizeof need_s);
    format_bytes(have, have_s, sizeof have_s);
    snprintf(err, errlen, "%s: the workload needs %s%s (largest: %s), more than the %s this machine has available "
             "(MemAvailable): make those keys smaller", cfg->source[0] ? cfg->source : "config", need_s,
             need == UINT64_MAX ? " or more" : "", largest, have_s);
    return -1;
}
