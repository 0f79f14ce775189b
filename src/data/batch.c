// batch.c — the microbatch layouts of batch.h: the supervised positions of B sequences under
// the label rule, as contexts or as packed sequences.
#include "data/batch.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"

void batch_init(Batch *b, const BatchSpec *spec, int slots) {
    memset(b, 0, sizeof *b);
    ASSERT(spec->layout >= 0 && spec->layout < BATCH_LAYOUT_COUNT && slots >= 0);
    b->spec = *spec;
    int cap = b->cap = slots * spec->max_length;  // budget.h int_sizes_check: fits in 31 bits
    b->target = xmalloc((size_t)cap * sizeof *b->target);
    b->pos = xmalloc((size_t)cap * sizeof *b->pos);
    b->weight = xmalloc((size_t)cap * sizeof *b->weight);
    if (spec->layout == BATCH_CONTEXTS) {
        b->k = spec->context;
        b->ctx = xmalloc((size_t)cap * b->k * sizeof *b->ctx);
    } else {
        b->input = xmalloc((size_t)cap * sizeof *b->input);
        b->at = xmalloc((size_t)cap * sizeof *b->at);
        b->row = xmalloc((size_t)cap * sizeof *b->row);
        b->run_start = xmalloc(((size_t)slots + 1) * sizeof *b->run_start);
    }
}

void batch_free(Batch *b) {
    free(b->target), free(b->pos), free(b->weight), free(b->ctx);
    free(b->input), free(b->at), free(b->row), free(b->run_start);
    free(b->seq);
    memset(b, 0, sizeof *b);
}

// Sequence `id`'s tokens: in place for a corpus in memory, else read into b->seq.
static const int32_t *slot_tokens(Batch *b, const Corpus *corpus, int32_t id, int *len) {
    if (!corpus->file) {
        *len = corpus_len(corpus, id);
        return corpus->tokens + corpus->offsets[id];
    }
    int need = b->spec.max_length;
    if (b->seq_cap < need) free(b->seq), b->seq = xmalloc((size_t)need * sizeof *b->seq), b->seq_cap = need;
    *len = corpus_tokens(corpus, id, b->seq);
    return b->seq;
}

void batch_build(Batch *b, const Corpus *corpus, const int32_t *ids, int B, const LabelRule *rule, LossUnit unit) {
    int L = 0;
    for (int s = 0; s < B; s++)
        if (ids[s] >= 0 && corpus_len(corpus, ids[s]) > L) L = corpus_len(corpus, ids[s]);
    ASSERT(B * b->spec.max_length <= b->cap || B == 0);
    b->B = B, b->L = L, b->T = 0, b->sequences = 0, b->ns_min = 0, b->ns_max = 0, b->n = 0, b->runs = 0;
    b->padded = (int64_t)B * L;
    int k = b->k, packed = b->spec.layout == BATCH_SEQUENCES;
    if (packed) b->run_start[0] = 0;
    for (int s = 0; s < B; s++) {
        if (ids[s] < 0) continue;
        int len, first = b->T;
        const int32_t *x = slot_tokens(b, corpus, ids[s], &len);
        int last = -1;  // the last labelled position
        for (int t = rule->prefix; t < len; t++) {
            if (x[t] == rule->ignore_token) continue;
            if (rule->max_labels && b->T - first == rule->max_labels) break;
            ASSERT(b->T < b->cap);
            if (packed) b->row[b->T] = b->n + t;
            else {
                int32_t *ctx = b->ctx + (size_t)b->T * k;
                for (int j = 0; j < k; j++) ctx[j] = t - k + j >= 0 ? x[t - k + j] : 0;
            }
            b->target[b->T] = x[t];
            b->pos[b->T] = s * L + t;
            b->T++;
            last = t;
        }
        int n = b->T - first;
        if (n == 0) continue;
        if (packed) {  // the run of positions 0..last, each reading the token before it
            for (int t = 0; t <= last; t++) b->input[b->n + t] = t ? x[t - 1] : 0, b->at[b->n + t] = s * L + t;
            b->n += last + 1;
            b->run_start[++b->runs] = b->n;
        }
        b->ns_min = b->sequences ? (n < b->ns_min ? n : b->ns_min) : n;
        b->ns_max = n > b->ns_max ? n : b->ns_max;
        b->sequences++;
        float w = loss_units[unit].position_weight(n);
        for (int i = first; i < b->T; i++) b->weight[i] = w;
    }
}

int sequence_labels(const Corpus *corpus, int32_t id, const LabelRule *rule, int32_t *buf) {
    if (rule->ignore_token < 1) {
        int n = corpus_len(corpus, id) - rule->prefix;
        if (n < 0) n = 0;
        return rule->max_labels && n > rule->max_labels ? rule->max_labels : n;
    }
    int len;
    const int32_t *x;
    if (corpus->file) len = corpus_tokens(corpus, id, buf), x = buf;
    else len = corpus_len(corpus, id), x = corpus->tokens + corpus->offsets[id];
    int n = 0;
    for (int t = rule->prefix; t < len; t++) {
        if (x[t] == rule->ignore_token) continue;
        if (rule->max_labels && n == rule->max_labels) break;
        n++;
    }
    return n;
}
