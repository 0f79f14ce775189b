// trainer.c — the training window of docs/spec.md §5.
//
//   1. draw this rank's window (A microbatches of B ids) from its own sampler stream; or,
//      with the global sampler, draw the global window (G ids, the same on every rank) and
//      take this rank's share of its partition (A microbatches of up to ceil(n_r / A));
//   2. count its supervised positions N_r (and labelled sequences M_r);
//   3. all-reduce the integer counts (before any backward): N = Σ N_r, M = Σ M_r;
//   4. forward + backward every microbatch into one gradient with scale W/N — no
//      communication between microbatches;
//   5. average the gradient once (the DDP convention); W cancels: (1/W)Σ∇(W·S_r/N). The
//      all-reduce sums; the 1/W is applied in the optimizer pass (trainer_gradient for
//      a caller that wants the average itself). With train.overlap: output-layer the sum
//      goes in two buckets: the model's tail [m.tail, P) and W·S_r (the MLP's w2, b2) starts
//      as soon as the last microbatch's backward has finished it (the backend's tail hook),
//      the rest after the backward; with train.overlap: blocks each block's bucket starts
//      too as the backward finishes it (the GPT's NL − 1 down to 0), and the rest (wte, wpe)
//      after the backward; the same sums of the same values;
//   6. step: the optimizer's update on the backend (trainer_update), never for a window
//      whose loss or averaged gradient is not finite.
// These six numbers are the window's steps in ARCHITECTURE.md and docs/ too.
// For the sequence unit, S_r becomes Q_r (each position weighted by 1/n_s of its
// sequence) and N becomes M.
// The loss sum rides in the last element of the gradient buffer, so the logged loss is
// the true global mean ΣS_r/N at no extra collective.
#include "train/trainer.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"

// The prefetch thread's share of the next global window: this rank's ids of its partition.
static int next_share(void *ctx, const int32_t *window, int n, int32_t *out) {
    Trainer *t = ctx;
    (void)n;
    partition_assign(&t->part_next, window);
    return t->A * partition_layout(&t->part_next, window, t->rank, out);
}

int trainer_init(Trainer *t, const Config *cfg, const Corpus *corpus, const ComputeOps *ops, Comm *comm,
                 const float *theta0) {
    memset(t, 0, sizeof *t);
    t->cfg = cfg;
    t->corpus = corpus;
    t->comm = comm;
    t->ops = ops;
    t->W = comm->world;
    t->rank = comm->rank;
    t->A = cfg->train.accumulation;
    t->B = cfg->train.batch_size_per_rank;
    model_shape(&t->m, cfg);
    if (sampler_init(&t->sampler, cfg, corpus, t->rank)) return -1;
    t->global = cfg->train.sampler == SAMPLER_GLOBAL;
    t->dropout = t->global ? rng_stream(cfg->seed, RNG_KEYED_DROPOUT, 0) : rng_stream(cfg->seed, RNG_DROPOUT, (uint32_t)t->rank);
    if (t->global) {
        partition_init(&t->part, cfg, corpus, t->W);
        t->window = xmalloc((size_t)cfg->train.global_batch * sizeof *t->window);
        t->B = partition_max_slots(cfg);
    }
    t->Bw = t->B;
    size_t per = (size_t)t->sampler.A * t->sampler.B;
    t->last = xmalloc(per * sizeof *t->last);
    for (size_t i = 0; i < per; i++) t->last[i] = -1;
    window_hash_init(t->windows_hash);
    t->ids = xmalloc((size_t)t->A * t->B * sizeof *t->ids);
    t->micro = xmalloc((size_t)t->A * sizeof *t->micro);
    BatchSpec spec = model_batch_spec(&t->m);
    for (int a = 0; a < t->A; a++) batch_init(&t->micro[a], &spec, t->B);
    int cap = t->micro[0].cap;
    count_exchange_init(&t->counts, t->W);
    if (ops->on_device && !comm->ops->device_buffers) t->staging = xmalloc((t->m.total + 1) * sizeof *t->staging);
    t->cc = ops->create(&t->m, cap, cfg->train.first_layer);
    ops->set_params(t->cc, theta0);
    t->opt = optimizer_create(cfg->train.optimizer, &cfg->train.hyper, ops->optimizer, t->m.total);
    // train.grad_clip under NCCL's device buffers: the all-reduced gradient is brought to the
    // host for its norm and the clip, and back (2·P floats over PCIe per update; a norm kernel
    // on the device would save them). Every rank holds the same bits, so the same norm.
    if (cfg->train.grad_clip > 0 && ops->on_device && !t->staging) t->clip_host = xmalloc((t->m.total + 1) * sizeof *t->clip_host);
    if (cfg->train.decay == DECAY_MATRICES) {  // the tensors of two or more dims of their own (model_tensor_is_matrix)
        t->decay_mask = xcalloc(t->m.total, 1);
        for (int k = 0; k < t->m.n_tensors; k++)
            if (model_tensor_is_matrix(&t->m, k)) memset(t->decay_mask + t->m.offset[k], 1, t->m.size[k]);
        optimizer_set_decay_mask(t->opt, t->decay_mask);  // a GPU backend's copy on the device
    }
    t->opt->schedule = cfg->train.schedule;  // decay_updates 0: train.updates (set by now under train.epochs too)
    if (!t->opt->schedule.decay_updates) t->opt->schedule.decay_updates = cfg->train.updates;
    // The overlap needs the backend's tail hook and a bucketed host reduction (else one
    // all-reduce after the backward, as with train.overlap: none).
    t->test.partition_drop = getenv("DDPTOK_TEST_PARTITION_DROP") != NULL;
    t->test.dropout_per_rank = getenv("DDPTOK_TEST_DROPOUT_PER_RANK") != NULL;
    t->test.bucket_gap = getenv("DDPTOK_TEST_BUCKET_GAP") != NULL;
    t->next = xmalloc((size_t)t->sampler.A * t->sampler.B * sizeof *t->next);
    // DDPTOK_PREFETCH=off: every read waits (the control of `make bench`'s data-wait figures).
    const char *pf = getenv("DDPTOK_PREFETCH");
    if (!pf || strcmp(pf, "off") != 0) {
        int per = t->sampler.A * t->sampler.B, cap = t->A * t->B > per ? t->A * t->B : per;
        if (t->global) partition_init(&t->part_next, cfg, corpus, t->W);
        prefetch_start(&t->prefetch, corpus, cap, t->global ? next_share : NULL, t);
        if (t->prefetch.started) {  // window 1's reads (a resume's first window finds other chunks: slower, not different)
            sampler_peek(&t->sampler, t->next);
            prefetch_submit(&t->prefetch, t->next, per);
        }
    }
    int can_overlap = t->W > 1 && !ops->on_device && ops->set_tail_hook && t->m.tail < t->m.total && comm->ops->sum_f32_start &&
                      comm->ops->allreduce_sum_f32;
    t->overlap = can_overlap ? cfg->train.overlap : OVERLAP_NONE;
    // DDPTOK_BUCKET_PROGRESS=off: the hook starts buckets but does not progress those in flight
    // (the control of the progress calls' measurement, docs/performance.md).
    const char *bp = getenv("DDPTOK_BUCKET_PROGRESS");
    t->bucket_progress = !bp || strcmp(bp, "off") != 0;
    return 0;
}

void trainer_free(Trainer *t) {
    prefetch_stop(&t->prefetch);
    free(t->next);
    optimizer_free(t->opt);
    if (t->cc) t->ops->destroy(t->cc);
    for (int a = 0; t->micro && a < t->A; a++) batch_free(&t->micro[a]);
    free(t->micro);
    free(t->ids);
    free(t->window);
    if (t->global) partition_free(&t->part);
    if (t->part_next.owner) partition_free(&t->part_next);
    free(t->last);
    count_exchange_free(&t->counts);
    free(t->staging);
    free(t->clip_host);
    free(t->decay_mask);
    sampler_free(&t->sampler);
    memset(t, 0, sizeof *t);
}

// The buckets of the overlapped gradient sum, started in this order on every rank: the tail
// [m.tail, P + 1), the tensors the model row finishes first in the backward (the MLP's output
// layer, the GPT's ln_f) and the extra element, which takes W·S_r here (S_r: the earlier
// microbatches' loss sums, plus this one's); with train.overlap: blocks, then block NL − 1 ..
// 0's (model_block_segments: one sum_f32_start per segment); the rest (model_rest_segments)
// after the backward.
typedef struct {
    Trainer *t;
    float *grad;     // (P + 1) the backend's gradient buffer, taken before the backward (whose
                     // factored first layer leaves gw1, gemb pending: the buffer is not readable then)
    double S_r;      // Σ of the window's earlier microbatches' losses
    double started;  // now_seconds() when the tail bucket started (0: not yet)
    int blocks;      // the blocks whose buckets go during the backward (0: the tail only)
    int next_block;  // the block whose bucket starts next (blocks − 1 down to 0; −1: all started)
} GradBuckets;

static void block_bucket_start(GradBuckets *gb, int l) {
    Trainer *t = gb->t;
    GradSegment seg[MODEL_MAX_TENSORS];
    int n = model_block_segments(&t->m, l, seg);
    // DDPTOK_TEST_BUCKET_GAP under blocks: the first block bucket leaves its last element
    // unreduced (tests/test_gpt.sh), the result must differ.
    if (t->test.bucket_gap && l == gb->blocks - 1) seg[n - 1].count--;
    for (int i = 0; i < n; i++) t->comm->ops->sum_f32_start(t->comm, gb->grad + seg[i].offset, seg[i].count);
}

// The backend's tail hook (model.h): the tail, then each block as its gradient is final.
static void grad_bucket_ready(void *ctx, int bucket, double loss) {
    GradBuckets *gb = ctx;
    Trainer *t = gb->t;
    if (bucket == MODEL_BUCKET_TAIL) {
        size_t from = t->m.tail;
        t->ops->set_grad_extra(t->cc, (float)(t->W * (gb->S_r + loss)));
        gb->started = now_seconds();
        t->comm->ops->sum_f32_start(t->comm, gb->grad + from, t->m.total + 1 - from);
    } else if (gb->blocks) {
        ASSERT(gb->started && bucket == gb->next_block);  // the backward's order, every rank the same
        block_bucket_start(gb, bucket);
        gb->next_block--;
    }
    // blocks only (output-layer stays as it was): the buckets in flight advance during the backward
    if (gb->blocks && t->bucket_progress && t->comm->ops->sum_f32_progress) t->comm->ops->sum_f32_progress(t->comm);
}

// torch.nn.utils.clip_grad_norm_ on g = grad/div (see trainer.h): ‖g‖ summed in double in
// index order over the host copy every rank holds after the all-reduce (the same bits on
// every rank, so the same norm and the same coefficient), then, where c / (‖g‖ + 1e-6) < 1,
// every element scaled by it. Returns ‖g‖ before the clip.
double trainer_clip(float *grad, size_t P, float div, double c) {
    double ss = 0;
    for (size_t i = 0; i < P; i++) {
        double g = (double)(grad[i] / div);
        ss += g * g;
    }
    double norm = sqrt(ss), coef = c / (norm + 1e-6);
    if (coef < 1.0) {
        float f = (float)coef;
        for (size_t i = 0; i < P; i++) grad[i] *= f;
    }
    return norm;
}

int trainer_window(Trainer *t, Normalization mode, int stop_local, WindowStats *ws) {
    double t0 = now_seconds();
    const Config *cfg = t->cfg;
    int W = t->W, A = t->A, B = t->B;
    memset(ws, 0, sizeof *ws);
    ws->step = t->step + 1;
    t->comm->step = ws->step;

    // 1–2. draw and count (an on-disk corpus: the reads of the window after this one go to
    //      the prefetch thread as soon as this one is laid out)
    double waited0 = corpus_reads(t->corpus).waited;
    int32_t *drawn = t->global ? t->window : t->ids;
    size_t per = (size_t)t->sampler.A * t->sampler.B;
    sampler_next(&t->sampler, drawn);
    memcpy(t->last, drawn, per * sizeof *drawn);  // the bounded sampler state: the last window and the running hash
    window_hash_add(t->windows_hash, drawn, per);
    if (t->global) {
        partition_assign(&t->part, t->window);
        t->Bw = B = partition_layout(&t->part, t->window, t->rank, t->ids);
        // Negative control for the invariance and elastic-resume tests: rank 0 loses the
        // last sequence of its share (a partition that is not one), the check must fail.
        if (t->rank == 0 && t->test.partition_drop)
            for (int i = A * B - 1; i >= 0; i--)
                if (t->ids[i] >= 0) {
                    t->ids[i] = -1;
                    break;
                }
    }
    LabelRule rule = label_rule(cfg);
    LossUnit weighting = objective_unit(mode, cfg->train.loss_unit);  // token: 1 per position; sequence: 1/n_s
    const UnitRow *unit = &loss_units[weighting];
    Counts *l = &ws->local, *g = &ws->global;
    for (int a = 0; a < A; a++) {
        Batch *b = &t->micro[a];
        batch_build(b, t->corpus, t->ids + (size_t)a * B, B, &rule, weighting);
        if (b->sequences) {  // fewest and most labels of this rank's labelled sequences
            if (!l->sequences || b->ns_min < ws->ns_min) ws->ns_min = b->ns_min;
            if (b->ns_max > ws->ns_max) ws->ns_max = b->ns_max;
        }
        l->tokens += b->T, l->sequences += b->sequences, l->padded += b->padded, l->slots += B;
    }

    if (t->prefetch.started) {
        sampler_peek(&t->sampler, t->next);
        prefetch_submit(&t->prefetch, t->next, (int)per);
    }

    // 3. all-reduce the integer counts (per rank N_r and M_r, the padded totals and the
    //    stop requests) before any backward
    double t1 = now_seconds();
    ws->t_draw = t1 - t0;
    ws->t_data = corpus_reads(t->corpus).waited - waited0;
    CountExchange *exchange = &t->counts;
    count_exchange_fill(exchange, t->rank, l, stop_local);
    t->comm->ops->allreduce_sum_i64(t->comm, exchange->data, (int)exchange->n);
    double t2 = now_seconds();
    ws->t_count = t2 - t1;
    *g = count_exchange_global(exchange);
    ws->rank_counts = exchange->tokens, ws->rank_seqs = exchange->sequences;
    ws->stop_requested = *exchange->stop > 0;
    if (g->tokens == 0) {
        // Every rank sees the same N after the all-reduce, so every rank stops here
        // together; the dropout stream is not advanced and nothing is applied.
        ws->seconds = now_seconds() - t0;
        return EXIT_EMPTY_WINDOW;
    }

    // 4. accumulate every microbatch, no communication
    float scale = (float)objective_scale(mode, cfg->train.loss_unit, W, A, g, l);
    t->ops->zero_grad(t->cc);
    double S_r = 0;
    GradBuckets gb = {.t = t, .grad = t->overlap ? t->ops->grad_buffer(t->cc) : NULL};
    if (t->overlap == OVERLAP_BLOCKS) gb.blocks = model_blocks(&t->m), gb.next_block = gb.blocks - 1;
    for (int a = 0; a < A; a++) {
        if (t->overlap && a == A - 1) gb.S_r = S_r, t->ops->set_tail_hook(t->cc, grad_bucket_ready, &gb);
        Dropout d = {.p = cfg->model.dropout, .stream = t->dropout};
        // Keyed: nothing to advance. DDPTOK_TEST_DROPOUT_PER_RANK is the negative control of
        // the keying: masks drawn per (rank, microbatch) move with the partition.
        if (t->global && !t->test.dropout_per_rank) d.ids = t->ids + (size_t)a * B, d.step = (uint32_t)ws->step;
        else d.block = t->global ? ((uint64_t)t->rank << 32 | (uint64_t)a) : t->dropout.counter++;
        S_r += t->ops->forward_backward(t->cc, &t->micro[a], scale, &d);
    }
    if (t->overlap) {
        t->ops->set_tail_hook(t->cc, NULL, NULL);
        // The last microbatch was empty here (no backward, no hook): its buckets start now, in
        // the same order as on the other ranks.
        if (!gb.started) grad_bucket_ready(&gb, MODEL_BUCKET_TAIL, S_r - gb.S_r);
        while (gb.next_block >= 0 && gb.blocks) grad_bucket_ready(&gb, gb.next_block, 0);
    }
    t->ops->finish_backward(t->cc);  // from here every tensor's gradient is final (model.h); the buckets fly meanwhile

    double t3 = now_seconds();
    ws->t_compute = t3 - t2;
    ws->t_overlap = t->overlap ? t3 - gb.started : 0;

    // 5. one all-reduce of [gradient, W·S_r]: the sum where the backend offers it (the
    //    1/W of the average is then applied by the optimizer pass: t->grad_div), else the
    //    backend's average
    const CommOps *co = t->comm->ops;
    int host = !t->ops->on_device || t->staging;
    int sum = co->allreduce_sum_f32 && host;
    t->grad_div = sum ? (float)W : 1.0f;
    float *buf = t->staging ? t->staging : t->ops->grad_buffer(t->cc);
    if (t->overlap) {  // the tail (and the blocks) on their way: the rest, then wait for every bucket
        GradSegment seg[MODEL_MAX_TENSORS] = {{0, t->m.tail}};  // output-layer: the head [0, m.tail)
        int n = gb.blocks ? model_rest_segments(&t->m, seg) : 1;
        // DDPTOK_TEST_BUCKET_GAP under output-layer: the negative control of the bucket boundary
        // (tests/test_comm.sh): the head leaves its last element unreduced, the result must differ.
        if (t->test.bucket_gap && !gb.blocks && n) seg[n - 1].count--;
        for (int i = 0; i < n; i++) co->allreduce_sum_f32(t->comm, buf + seg[i].offset, seg[i].count);
        co->sum_f32_finish(t->comm);
    } else {
        t->ops->set_grad_extra(t->cc, (float)(W * S_r));
        if (t->staging) t->ops->get_grad(t->cc, t->staging);  // GPU compute, host reduction: stage through host memory
        // The negative control of train.grad_clip (parity's per-rank-clip): each rank clips its
        // own gradient W·∇S_r/N (the one the average averages) by its own norm before the
        // all-reduce, as a naive port does; ws->grad_norm is then this rank's own norm.
        if (t->clip_per_rank && host) ws->grad_norm = trainer_clip(buf, t->m.total, 1.0f, cfg->train.grad_clip);
        (sum ? co->allreduce_sum_f32 : co->allreduce_avg_f32)(t->comm, buf, t->m.total + 1);
        if (t->staging) t->ops->set_grad(t->cc, t->staging);
    }
    ws->t_allreduce = now_seconds() - t3;
    ws->S_r = S_r;
    ws->loss = (double)(t->ops->get_grad_extra(t->cc) / t->grad_div) / (double)unit->count(g);
    ws->seconds = now_seconds() - t0;
    return 0;
}

void trainer_gradient(const Trainer *t, float *grad) {
    t->ops->get_grad(t->cc, grad);
    if (t->grad_div != 1.0f)
        for (size_t i = 0; i <= t->m.total; i++) grad[i] /= t->grad_div;
}

// 1 when every element of x (n) is finite: Σ|x| is then finite (a NaN or inf anywhere, or
// values near FLT_MAX, make it non-finite). OpenBLAS's sasum: ~0.2 % of a window.
int all_finite(const float *x, size_t n) {
    double sum = 0;
    for (size_t done = 0; done < n;) {  // BLAS counts are int
        int chunk = n - done > (1u << 30) ? (1 << 30) : (int)(n - done);
        sum += cblas_sasum(chunk, x + done, 1);
        done += (size_t)chunk;
    }
    return isfinite(sum);
}

int trainer_update(Trainer *t, int stop_local, WindowStats *ws) {
    int rc = trainer_window(t, t->cfg->train.normalization, stop_local, ws);
    if (rc) return rc;
    // A diverged window is never applied. The loss and the averaged gradient are the same
    // on every rank, so every rank returns here together. The gradient is checked where
    // it is in host memory (the CPU backend, GPU + MPI staging, NCCL with train.grad_clip);
    // otherwise with NCCL a non-finite gradient shows in the next window's loss, or in the
    // parameters before a checkpoint.
    if (t->clip_host) t->ops->get_grad(t->cc, t->clip_host);  // NCCL + train.grad_clip: the host's copy
    const float *host_grad = t->staging ? t->staging : t->clip_host ? t->clip_host : t->ops->on_device ? NULL : t->ops->grad_buffer(t->cc);
    ws->grad_finite = !host_grad || all_finite(host_grad, t->m.total);
    if (!isfinite(ws->loss) || !ws->grad_finite) return EXIT_CHECK_FAILED;
    double t0 = now_seconds();  // 6. clip (train.grad_clip) and step
    ws->grad_norm = NAN;
    if (t->cfg->train.grad_clip > 0) {
        ws->grad_norm = trainer_clip((float *)host_grad, t->m.total, t->grad_div, t->cfg->train.grad_clip);
        if (t->staging || t->clip_host) t->ops->set_grad(t->cc, host_grad);
    }
    optimizer_step(t->opt, t->ops->param_buffer(t->cc), t->ops->grad_buffer(t->cc), t->grad_div);
    t->step++;
    ws->lr = t->opt->lr;
    ws->t_optimizer = now_seconds() - t0;
    ws->seconds += ws->t_optimizer;
    return 0;
}
