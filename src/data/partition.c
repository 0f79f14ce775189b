// partition.c — the global sampler's window onto W ranks (see partition.h).
#include "data/partition.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"

void partition_init(Partition *p, const Config *cfg, const Corpus *corpus, int W) {
    memset(p, 0, sizeof *p);
    p->kind = cfg->train.partition;
    p->W = W, p->A = cfg->train.accumulation, p->G = cfg->train.global_batch;
    p->cfg = cfg, p->corpus = corpus;
    p->rule = label_rule(cfg);
    p->labels = xmalloc((size_t)p->G * sizeof *p->labels);
    p->owner = xmalloc((size_t)p->G * sizeof *p->owner);
    p->order = xmalloc((size_t)p->G * sizeof *p->order);
    p->tokens = xmalloc((size_t)cfg->data.max_length * sizeof *p->tokens);
    p->load = xmalloc((size_t)W * sizeof *p->load);
}

void partition_free(Partition *p) {
    free(p->labels), free(p->owner), free(p->order);
    free(p->tokens), free(p->load);
    memset(p, 0, sizeof *p);
}

// Window positions with the most labels first; ties by sequence id (ascending).
typedef struct {
    const int32_t *labels, *ids;
} SortKeys;
static int by_labels_desc(const void *a, const void *b, void *ctx) {
    const SortKeys *k = ctx;
    int i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (k->labels[i] != k->labels[j]) return k->labels[i] > k->labels[j] ? -1 : 1;
    return k->ids[i] < k->ids[j] ? -1 : k->ids[i] > k->ids[j];
}

// Labels of sequence `id` by batch_build's rule (sequence_labels: where no token can be
// ignored, a function of the length alone, so no rank reads the tokens of a sequence it
// does not hold, only its offsets).
static int partition_labels(Partition *p, int32_t id) { return sequence_labels(p->corpus, id, &p->rule, p->tokens); }

void partition_assign(Partition *p, const int32_t *window) {
    int W = p->W, G = p->G, n = 0;
    for (int i = 0; i < G; i++) {
        p->owner[i] = -1, p->labels[i] = 0;
        if (window[i] < 0) continue;
        p->labels[i] = partition_labels(p, window[i]);
        p->order[n++] = i;
    }
    switch (p->kind) {
    case PARTITION_BANDS:
        for (int k = 0; k < n; k++) p->owner[p->order[k]] = config_band_of(p->cfg, corpus_len(p->corpus, window[p->order[k]]));
        break;
    case PARTITION_ROUND_ROBIN:
        for (int k = 0; k < n; k++) p->owner[p->order[k]] = k % W;
        break;
    case PARTITION_BALANCED: {  // longest-processing-time-first greedy on label counts
        int64_t *load = p->load;
        memset(load, 0, (size_t)W * sizeof *load);
        SortKeys keys = {p->labels, window};
        qsort_r(p->order, (size_t)n, sizeof *p->order, by_labels_desc, &keys);
        for (int k = 0; k < n; k++) {
            int best = 0;
            for (int r = 1; r < W; r++)
                if (load[r] < load[best]) best = r;
            p->owner[p->order[k]] = best;
            load[best] += p->labels[p->order[k]];
        }
        break;
    }
    default: ASSERT(!"unknown partition");
    }
}

int partition_layout(const Partition *p, const int32_t *window, int rank, int32_t *ids) {
    int n_r = 0;
    for (int i = 0; i < p->G; i++) n_r += p->owner[i] == rank;
    int Bw = (n_r + p->A - 1) / p->A, k = 0;
    for (int i = 0; i < p->A * Bw; i++) ids[i] = -1;
    for (int i = 0; i < p->G; i++)
        if (p->owner[i] == rank) ids[k++] = window[i];
    return Bw;
}
