// reference.c — single-process replay of window 1 (see reference.h).
#include "train/reference.h"

#include <stdlib.h>
#include <string.h>

#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "data/sampler.h"
#include "io/h5io.h"

// Takes the accumulated gradient (P) and the loss S / C into `ref`; destroys `cc`.
static void reference_take(const ComputeOps *ops, Compute *cc, const ModelShape *m, double S, int64_t C, Reference *ref) {
    float *g = xmalloc((m->total + 1) * sizeof *g);
    ops->finish_backward(cc);
    ops->get_grad(cc, g);
    memcpy(ref->grad, g, m->total * sizeof *g);
    free(g);
    ops->destroy(cc);
    ref->loss = S / (double)C;
}

// The global sampler's window 1 as one batch of G sequences with keyed dropout: no rank, no
// microbatch, no partition enters it. rank_counts: what the partition gives each of W ranks.
static int reference_global(const Config *cfg, const Corpus *corpus, const ComputeOps *ops, const float *theta0, Reference *ref) {
    int W = cfg->train.world_size, A = cfg->train.accumulation, G = cfg->train.global_batch;
    ModelShape m;
    model_shape(&m, cfg);
    Sampler s;
    if (sampler_init(&s, cfg, corpus, 0)) return -1;
    int32_t *window = xmalloc((size_t)G * sizeof *window), *ids = xmalloc((size_t)A * partition_max_slots(cfg) * sizeof *ids);
    sampler_next(&s, window);
    sampler_free(&s);
    LabelRule rule = label_rule(cfg);
    LossUnit unit = cfg->train.loss_unit;
    Batch b, part_b;
    BatchSpec spec = model_batch_spec(&m);
    batch_init(&b, &spec, G);
    batch_init(&part_b, &spec, partition_max_slots(cfg));
    batch_build(&b, corpus, window, G, &rule, unit);
    ref->N = b.T, ref->M = b.sequences;
    Partition p;
    partition_init(&p, cfg, corpus, W);
    partition_assign(&p, window);
    for (int r = 0; r < W; r++) {
        int Bw = partition_layout(&p, window, r, ids);
        for (int a = 0; a < A; a++) {
            batch_build(&part_b, corpus, ids + (size_t)a * Bw, Bw, &rule, unit);
            ref->rank_counts[r] += part_b.T;
        }
    }
    partition_free(&p);
    batch_free(&part_b);
    int rc = ref->N == 0 ? EXIT_EMPTY_WINDOW : 0;
    if (!rc) {
        Compute *cc = ops->create(&m, batch_rows(&b), FIRST_LAYER_DENSE);  // the reference is the dense truth
        ops->set_params(cc, theta0);
        ops->zero_grad(cc);
        int64_t C = unit == UNIT_SEQUENCE ? ref->M : ref->N;
        Dropout d = {.p = cfg->model.dropout, .stream = rng_stream(cfg->seed, RNG_KEYED_DROPOUT, 0), .ids = window, .step = 1};
        reference_take(ops, cc, &m, ops->forward_backward(cc, &b, (float)(1.0 / (double)C), &d), C, ref);
    }
    batch_free(&b);
    free(window), free(ids);
    return rc;
}

int reference_compute(const Config *cfg, const Corpus *corpus, const ComputeOps *ops, const float *theta0, Reference *ref) {
    int W = cfg->train.world_size, A = cfg->train.accumulation, B = cfg->train.batch_size_per_rank;
    ModelShape m;
    model_shape(&m, cfg);
    memset(ref, 0, sizeof *ref);
    ref->rank_counts = xcalloc((size_t)W, sizeof *ref->rank_counts);
    ref->grad = xmalloc(m.total * sizeof *ref->grad);
    if (cfg->train.sampler == SAMPLER_GLOBAL) return reference_global(cfg, corpus, ops, theta0, ref);
    BatchSpec spec = model_batch_spec(&m);
    Batch *micro = xmalloc((size_t)W * A * sizeof *micro);
    int32_t *ids = xmalloc((size_t)A * B * sizeof *ids);
    int rc = 0;
    LabelRule rule = label_rule(cfg);
    LossUnit unit = cfg->train.loss_unit;
    // Every rank's window 1, drawn from that rank's fresh sampler stream.
    for (int r = 0; r < W && !rc; r++) {
        Sampler s;
        if (sampler_init(&s, cfg, corpus, r)) {
            rc = -1;
            W = r;  // only ranks < r have batches to free
            break;
        }
        sampler_next(&s, ids);
        sampler_free(&s);
        for (int a = 0; a < A; a++) {
            Batch *b = &micro[r * A + a];
            batch_init(b, &spec, B);
            batch_build(b, corpus, ids + (size_t)a * B, B, &rule, unit);
            ref->rank_counts[r] += b->T;
            ref->M += b->sequences;
        }
        ref->N += ref->rank_counts[r];
    }
    if (!rc && ref->N == 0) rc = EXIT_EMPTY_WINDOW;
    if (!rc) {
        Compute *cc = ops->create(&m, micro[0].cap, FIRST_LAYER_DENSE);  // the reference is the dense truth
        ops->set_params(cc, theta0);
        ops->zero_grad(cc);
        double S = 0;
        Counts global = {.tokens = ref->N, .sequences = ref->M};
        int64_t C = loss_units[unit].count(&global);  // the unit's global count: ∇(Σ_r L_r / C), no W
        float scale = (float)(1.0 / (double)C);
        for (int r = 0; r < W; r++) {
            RngStream drop = rng_stream(cfg->seed, RNG_DROPOUT, (uint32_t)r);
            for (int a = 0; a < A; a++) {
                Dropout d = {.p = cfg->model.dropout, .stream = drop, .block = drop.counter++};
                S += ops->forward_backward(cc, &micro[r * A + a], scale, &d);
            }
        }
        reference_take(ops, cc, &m, S, C, ref);
    }
    for (int i = 0; i < W * A; i++) batch_free(&micro[i]);
    free(micro);
    free(ids);
    return rc;
}

void reference_free(Reference *ref) {
    free(ref->grad);
    free(ref->rank_counts);
    memset(ref, 0, sizeof *ref);
}

int reference_write(const char *path, const Config *cfg, const char *lock, const ModelShape *m, const float *theta0,
                    const Reference *ref) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    int rc = h5_write_params(o.file, "init", m, theta0) || h5_write_params(o.file, "grad", m, ref->grad) ||
             h5_attr_i64(o.file, "global_count", ref->N) ||
             h5_attr_i64_array(o.file, "rank_counts", ref->rank_counts, cfg->train.world_size) ||
             h5_attr_i64(o.file, "global_sequences", ref->M) || h5_attr_f64(o.file, "loss", ref->loss) ||
             h5_attr_str(o.file, "normalization", normalization_names[loss_units[cfg->train.loss_unit].product]) ||
             h5_attr_str(o.file, "loss_unit", loss_unit_names[cfg->train.loss_unit]) ||
             h5_attr_str(o.file, "data_lock", lock);
    if (rc) return h5out_fail(&o, "the reference");
    return h5out_commit(&o, NULL);
}

int reference_read(const char *path, const char *lock, const ModelShape *m, float *theta0, float *grad, int64_t *N) {
    char reference[HINT_MAX], hint[HINT_MAX + 16];
    hint_command(reference, sizeof reference, "reference", 0, NULL);
    snprintf(hint, sizeof hint, "run `%s` first", reference);
    hid_t f = h5_open_read(path, hint);
    if (f < 0) return -1;
    char *stored = h5_attr_read_str(f, path, "data_lock");
    int rc = !stored ? -1 : strcmp(stored, lock) != 0 ? error("%s: made for other data (data lock %.12s…, current %.12s…): run `%s` again", path, stored, lock, reference) : 0;
    if (!rc) rc = h5_read_params(f, path, "init", m, theta0) || (grad && h5_read_params(f, path, "grad", m, grad)) ||
                  (N && h5_attr_read_i64(f, path, "global_count", N));
    free(stored);
    h5_close(f);
    return rc ? -1 : 0;
}
