// workload.c — a config's workload as the sum of every layer's budget terms (see workload.h).
// E = train.eval_batch (an evaluation pass's sequences, 16 by default). The activations are one backend instance's
// rows: bands max(B, E)·Lmax (the training or the evaluation batch), global max(G, E)·Lmax
// (the reference's one batch of the window); with train.eval_every the evaluator's own E
// beside the training window's.
#include "model/workload.h"

#include <stdio.h>

#include "config/budget.h"
#include "data/data_budget.h"
#include "model/model.h"

void workload_budget(Budget *b, const Config *cfg) {
    ModelShape m;
    model_shape(&m, cfg);
    BatchSpec spec = model_batch_spec(&m);
    data_budget(b, cfg, &spec);
    int global = cfg->train.sampler == SAMPLER_GLOBAL, ev = cfg->train.eval_every != 0;  // auto: on, where the corpus has a validation split
    // E: the evaluator's pass, train.eval_batch sequences (evaluation.h), the key named beside
    // the batch's when it is what makes the rows.
    uint64_t n = (uint64_t)(global ? cfg->train.global_batch : cfg->train.batch_size_per_rank),
             E = cfg->train.eval_batch >= 1 && cfg->train.eval_batch < EVALUATE_BATCH ? (uint64_t)cfg->train.eval_batch : EVALUATE_BATCH;
    // A pass that fits the training batch runs on the trainer's instance (evaluation.h; host
    // backends, which are what this host budget holds): max(B, E) rows then.
    uint64_t seqs = ev && E > n ? size_add(n, E) : n > E ? n : E;
    char text[32], note[96];
    snprintf(text, sizeof text, ev && E > n ? "(%s+%d)*Lmax" : "max(%s,%d)*Lmax", global ? "G" : "B", (int)E);
    snprintf(note, sizeof note, "%s%s", global ? " (train.sampler: global)" : "", ev || E > n ? ", train.eval_batch" : "");
    model_budget(b, &m, size_mul(seqs, (uint64_t)cfg->data.max_length), text,
                 global ? "train.global_batch x data.max_length" : "train.batch_size_per_rank x data.max_length", note,
                 cfg->train.first_layer);
    const OptimizerRow *opt = &optimizers[cfg->train.optimizer];
    char keys[224];
    snprintf(keys, sizeof keys, "train.optimizer.name and the model's size (%s)", model_rows[m.kind]->shape_keys);
    budget_add(b, size_mul(size_mul((uint64_t)opt->n_states, m.total), 4), keys, "optimizer states %d*P*4 (%s)", opt->n_states,
               optimizer_names[cfg->train.optimizer]);
}

uint64_t workload_bytes(const Config *cfg, char *largest, size_t len) {
    Budget b = {0};
    workload_budget(&b, cfg);
    return budget_total(&b, largest, len);
}

int workload_check_host(const Config *cfg, int ranks_here, const char *host, char *err, size_t errlen) {
    if (budget_int_sizes(cfg, err, errlen)) return -1;
    char largest[400];
    uint64_t each = workload_bytes(cfg, largest, sizeof largest);
    return budget_fits(cfg, each, ranks_here, host, largest, err, errlen);
}
