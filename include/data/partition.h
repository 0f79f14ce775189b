// partition.h — the global sampler's window laid out on W ranks (docs/sampling.md "Global
// sampling"): a deterministic partition (a pure function of the window, the corpus, the label
// rule and W) gives each sequence to exactly one rank (train.partition: bands, balanced,
// round-robin), and each rank cuts its n_r sequences, in window order, into A microbatches of
// Bw = ceil(n_r / A) slots (the last ones may hold fewer; empty slots are -1).
#ifndef DDPTOK_PARTITION_H
#define DDPTOK_PARTITION_H

#include <stdint.h>

#include "config/config.h"
#include "data/batch.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    PartitionKind kind;
    int W, A, G;
    const Config *cfg;
    const Corpus *corpus;
    LabelRule rule;
    int32_t *labels;  // (G) labels of each window position
    int32_t *owner;   // (G) rank of each window position
    int32_t *order;   // (G) scratch: positions, longest first
    int32_t *tokens;  // (data.max_length) one sequence, to count its labels (sequence_labels)
    int64_t *load;    // (W) scratch of the balanced partition: labels given to each rank
} Partition;

void partition_init(Partition *p, const Config *cfg, const Corpus *corpus, int W);
void partition_free(Partition *p);
// Gives every sequence of `window` (G ids, -1 = none) to one rank (p->owner).
void partition_assign(Partition *p, const int32_t *window);
// After partition_assign: rank r's share laid out as ids (A, Bw), Bw = ceil(n_r / A), -1 in
// empty slots. Returns Bw (0 when the rank holds nothing). `ids` holds at least A·ceil(G/A).
int partition_layout(const Partition *p, const int32_t *window, int rank, int32_t *ids);
// Slots a microbatch needs at most: ceil(G / A).
static inline int partition_max_slots(const Config *cfg) {
    return (cfg->train.global_batch + cfg->train.accumulation - 1) / cfg->train.accumulation;
}

#ifdef __cplusplus
}
#endif
#endif
