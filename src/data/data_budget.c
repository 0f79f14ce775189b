// data_budget.c — the data layer's terms of the budget (see data_budget.h), as upper bounds:
// sequences at data.max_length (Lmax), n = the sequences of all splits.
//   corpus pages  2·corpus_page_slots·4 KiB        its checked pages of checksums (tokens, offsets)
//   sampler       bands: 8·512·4 + 4·A·B·8          the pool's decoded blocks and a draw's overlay
//                                                (and 4 bytes per 512 train sequences: the corpus's)
//   corpus cache  (budget_corpus_cache)          the on-demand reader's checked chunks; the
//                                                corpus itself, n·(Lmax·4 + 9), only where
//                                                it is built in memory (exercise, which
//                                                check_corpus_in_memory checks; prepare streams it)
//   chain         V·S·12                         successors and probabilities
//   plan          U·W·A·B·4                      bands sampler: prepare, check-checkpoints (plan.h5's ids)
//   microbatches  W·A·B·Lmax·(per position)      bands: the reference builds every rank's window
//                 (G + A·ceil(G/A))·Lmax·(…)     global: the reference's one batch of the window,
//                                                and a rank's A microbatches
// With train.sampler: global there is no plan and no history: the epochs' windows are
// computed on demand, a checkpoint holds the last window and a running hash.
#include "data/data_budget.h"

#include <stdio.h>

#include "config/budget.h"

int64_t corpus_page_slots(const Config *cfg) {
    int64_t tokens, offsets;
    budget_corpus_cache(cfg, &tokens, &offsets);
    return tokens / 8 < 16 ? 16 : tokens / 8 > 256 ? 256 : tokens / 8;
}

void data_budget(Budget *b, const Config *cfg, const BatchSpec *spec) {
    uint64_t V = (uint64_t)cfg->data.vocab_size, S = (uint64_t)cfg->data.markov_support, W = (uint64_t)cfg->train.world_size,
             A = (uint64_t)cfg->train.accumulation, B = (uint64_t)cfg->train.batch_size_per_rank,
             G = (uint64_t)cfg->train.global_batch, U = (uint64_t)cfg->train.updates, Lmax = (uint64_t)cfg->data.max_length;
    int64_t cache_tokens, cache_offsets;
    budget_corpus_cache(cfg, &cache_tokens, &cache_offsets);
    budget_add(b, size_add(size_mul((uint64_t)cache_tokens, CORPUS_CACHE_TOKEN_CHUNK), size_mul((uint64_t)cache_offsets, CORPUS_CACHE_OFFSET_CHUNK)),
               "train.global_batch or train.accumulation x train.batch_size_per_rank, x data.max_length", "corpus cache");
    budget_add(b, size_mul((uint64_t)corpus_page_slots(cfg), 2 * 4096), "train.global_batch or train.accumulation x "
               "train.batch_size_per_rank, x data.max_length", "corpus pages of checksums");
    budget_add(b, size_mul(size_mul(size_mul(A, B), 4), 8) + 8 * 512 * 4, "train.accumulation x train.batch_size_per_rank",
               "bands sampler's blocks and overlay");
    budget_add(b, size_mul(size_mul(V, S), 12), "data.vocab_size x data.markov_support", "chain V*S*12");
    uint64_t per_sequence = size_mul(Lmax, batch_position_bytes(spec));  // one sequence's slots in a Batch
    const char *per = batch_position_text(spec), *ctx = spec->layout == BATCH_CONTEXTS ? " x model.context" : "";
    char keys[224];
    if (cfg->train.sampler == SAMPLER_GLOBAL) {
        snprintf(keys, sizeof keys, "train.global_batch x data.max_length%s (train.sampler: global)", ctx);
        budget_add(b, size_mul(size_add(G, size_mul(A, (G + A - 1) / A)), per_sequence), keys,
                   "microbatches (G+A*ceil(G/A))*Lmax*%s", per);
        return;
    }
    budget_add(b, size_mul(size_mul(size_mul(size_mul(U, W), A), B), 4),
               "train.updates x train.world_size x train.accumulation x train.batch_size_per_rank", "plan U*W*A*B*4");
    snprintf(keys, sizeof keys, "train.world_size x train.accumulation x train.batch_size_per_rank x data.max_length%s", ctx);
    budget_add(b, size_mul(size_mul(size_mul(W, A), B), per_sequence), keys, "microbatches W*A*B*Lmax*%s", per);
}
