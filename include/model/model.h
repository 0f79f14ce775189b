// model.h — the window MLP of docs/spec.md §4: parameter layout, initialisation, and the compute
// backend interface that both the CPU reference (src/model_cpu.c) and the CUDA backend
// (cuda/model_cuda.cu) implement.
//
// Parameters are one flat float32 vector θ (P) in this order:
//   embedding (V, D), w1 (H, k·D), b1 (H), w2 (V, H), b2 (V).
// The gradient buffer has P + 1 elements: the last one carries W·S_r (this rank's loss
// sum times W) through the gradient average, so the logged global loss ΣS_r/N needs no
// collective of its own.
#ifndef DDPTOK_MODEL_H
#define DDPTOK_MODEL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "base/philox.h"
#include "config/config.h"
#include "data/batch.h"
#include "method/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { P_EMBEDDING = 0, P_W1, P_B1, P_W2, P_B2, N_PARAMS };
extern const char *const param_names[N_PARAMS];

typedef struct {
    int V, k, D, H;
    int max_length;           // the longest sequence a batch holds (data.max_length)
    size_t size[N_PARAMS];    // elements per tensor
    size_t offset[N_PARAMS];  // into θ
    int rank[N_PARAMS];       // tensor rank (1 or 2)
    size_t dims[N_PARAMS][2];
    size_t total;             // P
} ModelShape;

void model_shape(ModelShape *m, const Config *cfg);
// The microbatch layout this model reads (data/batch.h).
static inline BatchSpec model_batch_spec(const ModelShape *m) {
    BatchSpec s = {BATCH_CONTEXTS, m->k, m->max_length};
    return s;
}
// Initial θ (P): a pure function of `seed`, identical on every rank.
void model_init_params(const ModelShape *m, uint32_t seed, float *theta);
// Sets `m` from the config and returns a new θ0 (P) for its seed. Caller frees.
float *model_initial(const Config *cfg, ModelShape *m);

// Dropout for one microbatch: the rank's stream and the block index of this microbatch;
// or, keyed (global sampler), the rank-free RNG_KEYED_DROPOUT stream, the step and the
// sequence id of each slot, so a mask depends on (seed, step, sequence id, position, unit)
// only (philox.h, dropout_block_at).
typedef struct {
    double p;           // 0 = off
    RngStream stream;
    uint64_t block;        // per-microbatch keying
    const int32_t *ids;    // (B) keyed: sequence id of each slot of the batch; NULL: per-microbatch
    uint32_t step;         // keyed: the window (1-based)
} Dropout;

// A compute backend owns θ and the gradient (P+1) in its memory; the optimizer state lives
// in the same memory through the backend's optimizer twin (optimizer.h).
typedef struct Compute Compute;

// Gradient buckets (train.overlap). The backward runs from the output layer to the
// embedding, so the gradient's tail [offset[P_W2], P) — w2 and b2 — is final before the
// first layer's backward starts. A tail hook, while set, is called at that point of every
// backward with the microbatch's Σ w·loss (what forward_backward will return), so the
// caller can set the extra element grad[P] and start reducing [offset[P_W2], P + 1) while
// the first layer's backward runs. The backward never reads or writes the tail after the
// call. Not called for a microbatch with no supervised position (nothing is computed).
typedef void (*GradTailHook)(void *ctx, double loss);
typedef struct {
    const char *name;
    int on_device;                                            // θ and the gradient live in GPU memory
    int first_layers[FIRST_LAYER_COUNT];                      // 1: computes the first layer this way (train.first_layer)
    Compute *(*create)(const ModelShape *m, int max_positions, FirstLayer first_layer);
    void (*destroy)(Compute *cc);
    void (*set_params)(Compute *cc, const float *theta);       // host (P) → backend
    void (*get_params)(Compute *cc, float *theta);             // backend → host (P)
    void (*zero_grad)(Compute *cc);
    void (*get_grad)(Compute *cc, float *grad);                // backend → host (P+1)
    void (*set_grad)(Compute *cc, const float *grad);          // host (P+1) → backend (host-staged reductions)
    float *(*grad_buffer)(Compute *cc);                        // (P+1) in backend memory, for comm
    float *(*param_buffer)(Compute *cc);                       // θ (P) in backend memory, for the optimizer
    void (*set_grad_extra)(Compute *cc, float v);              // grad[P]
    float (*get_grad_extra)(Compute *cc);
    // Forward + backward of one microbatch: grad += scale · ∇(Σ_t w_t·loss_t) with the
    // batch's weights; returns Σ_t w_t·loss_t. The factored first layer leaves the
    // embedding's and w1's share pending until finish_backward.
    double (*forward_backward)(Compute *cc, const Batch *b, float scale, const Dropout *d);
    // The end of a window's backward: completes every gradient the microbatches since
    // zero_grad left pending (the factored first layer: gw1 and gemb from the per-slot
    // sums, once per window). Call it after the last forward_backward and before the
    // gradient is read, reduced or stepped on; the embedding's and w1's gradients are
    // final only from here (b1, w2 and b2 already after each microbatch).
    void (*finish_backward)(Compute *cc);
    // Sets (NULL: clears) the tail hook of the backwards that follow. NULL where the backend
    // does not offer it (cuda: the gradient is reduced after the backward).
    void (*set_tail_hook)(Compute *cc, GradTailHook hook, void *ctx);
    // Forward only, no dropout, unweighted: Σ losses and number of argmax hits.
    double (*evaluate)(Compute *cc, const Batch *b, int64_t *correct);
    const OptimizerOps *optimizer;                            // the optimizer steps in this backend's memory
} ComputeOps;

// The model's logits (V) for one context of k ids (0 = pad/begin), in double precision from
// θ (P): emb rows concatenated, tanh(w1 x + b1), w2 h + b2 (docs/spec.md §4; no dropout).
// For sampling (generate); training and evaluation run on a ComputeOps backend.
void model_logits(const ModelShape *m, const float *theta, const int32_t *ctx, double *logits);

// Parameter I/O: every tensor of a θ-shaped vector (P) as `group`/<param> of an HDF5 file,
// with the shapes of docs/spec.md §4 (checkpoints, reference.h5, grads.h5); read back only
// with exactly those shapes, stored as float32.
int h5_write_params(hid_t file, const char *group, const ModelShape *m, const float *v);
int h5_read_params(hid_t file, const char *path_in_file, const char *group, const ModelShape *m, float *v);

extern const ComputeOps compute_cpu;
#ifdef DDPTOK_CUDA
extern const ComputeOps compute_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
