// trainer.h — the training window (docs/spec.md §5): count → all-reduce the count → accumulate
// every microbatch with no communication → average the gradient once → optimizer step; and
// the state a checkpoint captures.
#ifndef DDPTOK_TRAINER_H
#define DDPTOK_TRAINER_H

#include <stdint.h>

#include "config/config.h"
#include "data/corpus.h"
#include "data/prefetch.h"
#include "data/partition.h"
#include "data/sampler.h"
#include "job/comm.h"
#include "method/objective.h"
#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const Config *cfg;
    const Corpus *corpus;
    ModelShape m;
    const ComputeOps *ops;
    Compute *cc;
    Optimizer *opt;      // its state lives in the compute backend's memory
    Comm *comm;
    int W, rank, A, B;
    int step;            // windows completed (= optimizer updates applied)
    Sampler sampler;     // its stream state is checkpointed; sampler.A/B: the shape of a drawn window
    RngStream dropout;   // counter = next microbatch block (keyed dropout: the rank-free stream); checkpointed
    int32_t *last;       // (sampler.A, sampler.B) the last window drawn (-1 before the first); checkpointed
    char windows_hash[65];  // the running hash of every window drawn so far (window_hash_add); checkpointed
    int global;          // train.sampler: global
    Partition part;      // global: the window's partition onto ranks
    Partition part_next; // global: the next window's, on the prefetch thread (which reads this rank's share only)
    int32_t *window;     // global: (G) the window drawn for every rank
    int Bw;              // slots per microbatch of the current window (B, or global: ceil(n_r / A))
    int32_t *ids;        // (A, B), global: (A, ceil(G/A)) this rank's current window
    Batch *micro;        // (A)
    CountExchange counts;  // the count all-reduce buffer, see trainer_window
    float *staging;      // (P + 1) host copy of the gradient when a GPU backend reduces over MPI
    float *clip_host;    // (P + 1) host copy for train.grad_clip when a GPU backend reduces over NCCL
    uint8_t *decay_mask; // (P) train.optimizer.decay: matrices: 1 on the tensors of rank >= 2; NULL: all
    float grad_div;      // after a window the gradient buffer holds the average times this (W or 1)
    OverlapKind overlap; // train.overlap in effect (OVERLAP_NONE where it cannot apply): the gradient
                         // sum in buckets (trainer_window)
    int bucket_progress; // 1: the hook progresses the buckets in flight (DDPTOK_BUCKET_PROGRESS=off: 0)
    Prefetch prefetch;   // on an on-disk corpus: the next window's chunks, read while this one computes
    int32_t *next;       // (sampler.A · sampler.B) the window after this one, as sampler_peek sees it
    // Negative controls of the tests, read from the environment once at trainer_init:
    // DDPTOK_TEST_PARTITION_DROP, DDPTOK_TEST_DROPOUT_PER_RANK, DDPTOK_TEST_BUCKET_GAP.
    struct { int partition_drop, dropout_per_rank, bucket_gap; } test;
    // parity's per-rank-clip control (train.grad_clip > 0): each rank clips its own gradient
    // before the all-reduce (trainer_window), with the overlap off; set after trainer_init by
    // window_gradient (src/app/app.c) for parity only, never by train.
    int clip_per_rank;
} Trainer;

typedef struct {
    int step;
    Counts global, local; // N = global.tokens, N_r = local.tokens
    const int64_t *rank_counts; // (W) supervised tokens per rank: a view into the trainer's count buffer
    const int64_t *rank_seqs;   // (W) labelled sequences per rank: likewise
    int ns_min, ns_max;   // this rank's fewest and most labels per labelled sequence
    double S_r;           // this rank's (weighted) loss sum
    double loss;          // the global mean of what was optimised (ΣS_r/N, or ΣQ_r/M)
    double seconds;
    // Where `seconds` went (this rank): drawing and counting the window, the count
    // all-reduce, forward + backward, the gradient all-reduce (with any wait for a slower
    // rank), the optimizer step.
    double t_draw, t_count, t_compute, t_allreduce, t_optimizer;
    double t_overlap;     // train.overlap: of t_compute, the time since the first bucket started (0: off)
    double t_data;        // of t_draw, the time spent waiting for corpus reads (on disk; 0 in memory)
    int stop_requested;   // some rank asked to stop (piggy-backed on the count all-reduce)
    int grad_finite;      // trainer_update: the averaged gradient is finite (or not checked)
    double grad_norm;     // trainer_update: ‖g‖ of the averaged gradient before clipping (train.grad_clip > 0; else NaN)
    double lr;            // trainer_update: the learning rate this update applied (train.lr_schedule)
} WindowStats;

// Sets up the trainer at step 0 from θ (P). The corpus must outlive it.
int trainer_init(Trainer *t, const Config *cfg, const Corpus *corpus, const ComputeOps *ops, Comm *comm,
                 const float *theta0);
void trainer_free(Trainer *t);

// Computes the averaged window gradient into the backend's gradient buffer with the
// given normalization, without stepping. Returns 0, or EXIT_EMPTY_WINDOW on every rank
// when N = 0 (nothing is applied or logged then). `stop_local` is this rank's request to
// stop, agreed in the count all-reduce.
int trainer_window(Trainer *t, Normalization mode, int stop_local, WindowStats *ws);
// The averaged window gradient (P + 1, host memory) after trainer_window.
void trainer_gradient(const Trainer *t, float *grad);
// A whole update: window + optimizer step; advances t->step. Returns EXIT_CHECK_FAILED on every
// rank, with nothing applied, when the window's loss or averaged gradient is not finite.
int trainer_update(Trainer *t, int stop_local, WindowStats *ws);
// torch's clip_grad_norm_(c) on g = grad/div (P): where c/(‖g‖ + 1e-6) < 1 every element is
// scaled by it; ‖g‖ summed in double in index order. Returns ‖g‖ before the clip.
double trainer_clip(float *grad, size_t P, float div, double c);
// 1 when all n values are finite.
int all_finite(const float *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif
