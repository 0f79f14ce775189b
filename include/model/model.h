// model.h — the model kinds as rows (ModelRow, as the optimizers are OptimizerRow): each
// row gives its tensors (names, dims) and their initialisation, its shape from the config,
// the bytes a backend instance allocates (for the budget), the tensor where the overlap's
// tail bucket starts, the microbatch layout it reads (data/batch.h) and its ComputeOps per
// backend. Everything outside src/model/ reads the row and the shape it gives (ModelShape):
// no other layer names a tensor of one model.
//
// Parameters are one flat float32 vector θ (P): the row's tensors back to back in its order
// (mlp.h: the window MLP of docs/spec.md §4; gpt.h: GPT-2). The gradient buffer has P + 1
// elements: the last one carries W·S_r (this rank's loss sum times W) through the gradient
// average, so the logged global loss ΣS_r/N needs no collective of its own.
//
// To add a model (ARCHITECTURE.md "Which files a change touches"): one X(ENUM, name) in
// DDPTOK_MODELS (config/config.h); its header include/model/<name>.h (its tensors' enum, what
// its two files share, its own shape struct through MODEL_OWN_SHAPE), its row
// src/model/<name>.c (`const ModelRow name_row`: shape, init, budget, logits) and its CPU
// backend src/model/<name>_cpu.c (a ComputeOps). Keys of its own shape are rows of
// DDPTOK_MODEL_KEYS (config.h; its row's `shape` reads them), their cross-field checks rows of
// DDPTOK_MODEL_CHECKS; its finite-difference test is its row tests/fd_<name>.c (tests/fd.h); a
// CUDA twin is cuda/<name>_cuda.cu and its CudaModule.compute entry. Its layers are
// model/layers.h's calls (the twin's: the same names).
#ifndef DDPTOK_MODEL_H
#define DDPTOK_MODEL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"
#include "base/philox.h"
#include "config/budget.h"
#include "config/config.h"
#include "data/batch.h"
#include "method/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MODEL_MAX_TENSORS = 16, MODEL_MAX_DIMS = 3, MODEL_MAX_FIELDS = 8, MODEL_OWN_BYTES = 64 };

// The shape of one model: what the config says of it (derived once, model_shape) and the
// tensors its row lays out in θ.
typedef struct {
    ModelKind kind;
    int V;               // vocabulary (data.vocab_size): ids 0 (the begin/pad id) .. V - 1
    int max_length;      // the longest sequence a batch holds (data.max_length): the GPT's context
    int context;         // the ids before a position that its prediction reads (mlp k, gpt max_length)
    // The row's own shape: its keys as its header's struct (MlpDims in mlp.h, GptDims in gpt.h,
    // any types), which its `shape` fills and its files read through the header's accessor, so
    // that this header names no model's field.
    union {
        double align_;
        long long align_ll_;
        unsigned char bytes[MODEL_OWN_BYTES];
    } own;
    int n_tensors;
    const char *name[MODEL_MAX_TENSORS];  // in θ order; checkpoints' /model/<name>
    int rank[MODEL_MAX_TENSORS];          // 1 to MODEL_MAX_DIMS
    size_t dims[MODEL_MAX_TENSORS][MODEL_MAX_DIMS];
    size_t size[MODEL_MAX_TENSORS];       // elements per tensor
    size_t offset[MODEL_MAX_TENSORS];     // into θ
    unsigned char stacked[MODEL_MAX_TENSORS];  // 1: its first dimension stacks blocks (one per layer)
    size_t total;        // P
    size_t tail;         // the overlap's tail bucket is [tail, P) (GradTailHook); P: the row has none
    int n_fields;        // the shape as named integers (export's metadata, in this order)
    struct {
        const char *key;
        long long value;
    } field[MODEL_MAX_FIELDS];
} ModelShape;

// A model's header declares its own shape struct S and its accessor: MODEL_OWN_SHAPE(S, name)
// gives `S *name(const ModelShape *m)` over ModelShape.own (and fails to compile when S does not
// fit in MODEL_OWN_BYTES).
#define MODEL_OWN_SHAPE(S, name)                                                             \
    typedef char name##_fits_[sizeof(S) <= MODEL_OWN_BYTES ? 1 : -1];                      \
    static inline S *name(const ModelShape *m) { return (S *)(void *)m->own.bytes; }

typedef struct ComputeOps ComputeOps;

typedef struct {
    const char *name;        // model.kind
    BatchLayout layout;      // what its microbatches hold
    const char *param_text;  // P as a formula of its letters, for budget messages ("V*D+H*k*D+V*H+H+V")
    const char *shape_keys;  // the config keys P follows
    // Reads its own shape keys from cfg (config.h DDPTOK_MODEL_KEYS, the rows with its users
    // bit) into m (whose kind, V and max_length are set) and lays out its tensors: names,
    // dims, offsets, total, tail, fields.
    void (*shape)(ModelShape *m, const Config *cfg);
    // θ0 (P): a pure function of `seed`, identical on every rank.
    void (*init)(const ModelShape *m, uint32_t seed, float *theta);
    // Adds the terms of a CPU backend instance computing up to `rows` batch rows (batch_rows)
    // with this first layer, in bytes; `rows_text` ("max(B,16)*Lmax") names the rows in its
    // formula, `keys` the config keys the activations follow.
    void (*budget)(Budget *b, const ModelShape *m, uint64_t rows, const char *rows_text, const char *keys,
                   FirstLayer first_layer);
    // The logits (V) of the token after ids[0..n-1] (the sequence so far, n ≥ 0), in double
    // from θ (P), no dropout: for sampling (generate). Reads what the model reads (the MLP its
    // last k ids, the GPT up to its context).
    void (*logits)(const ModelShape *m, const float *theta, const int32_t *ids, int n, double *logits);
    const ComputeOps *cpu;   // its CPU backend (a CUDA one is CudaModule.compute[kind], job/cuda_api.h)
} ModelRow;

// The rows, by ModelKind: each model's file defines its `name_row` (config.h DDPTOK_MODELS).
#define DDPTOK_MODEL_ROW_DECL(UP, low) extern const ModelRow low##_row;
DDPTOK_MODELS(DDPTOK_MODEL_ROW_DECL)
#undef DDPTOK_MODEL_ROW_DECL
extern const ModelRow *const model_rows[MODEL_COUNT];
static inline const ModelRow *model_row(const ModelShape *m) { return model_rows[m->kind]; }

// The config's model (model.*, data.vocab_size, data.max_length), its row's tensors.
void model_shape(ModelShape *m, const Config *cfg);
// 1 when tensor k is a matrix of its own (two or more dimensions besides a stacked block
// axis, ModelShape.stacked): what weight decay applies to under train.optimizer.decay:
// matrices (nanoGPT's p.dim() >= 2: every GEMM weight and the embeddings, not biases or
// LayerNorm's).
int model_tensor_is_matrix(const ModelShape *m, int k);
// For a row's shape: appends tensor `name` (rank 1..3, dims d0 d1 d2; unused dims 1).
void model_add_tensor(ModelShape *m, const char *name, int rank, size_t d0, size_t d1, size_t d2);
// The same for a tensor whose first dimension d0 stacks one block's tensor per layer (the
// GPT's ln1w is n_layer vectors, not a matrix).
void model_add_block_tensor(ModelShape *m, const char *name, int rank, size_t d0, size_t d1, size_t d2);
void model_add_field(ModelShape *m, const char *key, long long value);
// Tensor index of `name`, or -1.
int model_tensor(const ModelShape *m, const char *name);
// Initial θ (P) by the row: a pure function of `seed`, identical on every rank.
void model_init_params(const ModelShape *m, uint32_t seed, float *theta);
// Sets `m` from the config and returns a new θ0 (P): for its seed, or read from
// train.init_from (model/hf.h; a directory that does not fit ends the process, exit 2, one
// line). Caller frees.
float *model_initial(const Config *cfg, ModelShape *m);
// The microbatch layout this model reads (data/batch.h).
static inline BatchSpec model_batch_spec(const ModelShape *m) {
    BatchLayout layout = model_rows[m->kind]->layout;
    BatchSpec s = {layout, layout == BATCH_CONTEXTS ? m->context : 0, m->max_length};
    return s;
}
// The budget's terms of this model: its parameters (the working P-vectors the commands hold
// at once: plot and parity 16) and the activations of a backend instance of `rows` rows
// (the row's budget; `rows_keys` the config keys of the rows, `note` added after the keys).
void model_budget(Budget *b, const ModelShape *m, uint64_t rows, const char *rows_text, const char *rows_keys, const char *note,
                  FirstLayer first_layer);

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

// Gradient buckets (train.overlap). The backward runs from the output layer towards the
// input, so the gradient's tail [m.tail, P) (the MLP's w2 and b2, the GPT's final LayerNorm)
// is final before the rest of the backward, and in a model with blocks (ModelShape.stacked)
// block l's slices of the stacked tensors are final once the backward has passed block l
// (l = NL − 1 down to 0). A tail hook, while set, is called at those points of every backward
// with the microbatch's Σ w·loss (what forward_backward will return): once with bucket
// MODEL_BUCKET_TAIL when the tail is final, so the caller can set the extra element grad[P]
// and start reducing [m.tail, P + 1); then, by a backend of a model with blocks, with bucket
// l after block l's backward (model_block_segments gives its segments), so the caller can
// start that bucket and progress those in flight while the rest of the backward runs. The
// backward never reads or writes a bucket's gradient after its call. Not called for a
// microbatch with no supervised position (nothing is computed). What no bucket holds (the
// GPT's wte, whose gradient the encoder's backward adds to last, and wpe:
// model_rest_segments) is final after the backward.
enum { MODEL_BUCKET_TAIL = -1 };
typedef void (*GradTailHook)(void *ctx, int bucket, double loss);
// A contiguous range of θ (or of the gradient): [offset, offset + count).
typedef struct {
    size_t offset, count;
} GradSegment;
// The blocks of the shape: the first dimension of its stacked tensors (0: it has none).
int model_blocks(const ModelShape *m);
// Block l's bucket: slice l of every stacked tensor, in θ order, adjacent slices coalesced
// (one segment when NL = 1); seg holds MODEL_MAX_TENSORS. Returns the number of segments.
int model_block_segments(const ModelShape *m, int l, GradSegment *seg);
// What neither the tail nor a block holds: the tensors before m.tail that are not stacked, in
// θ order, coalesced (the MLP's [0, w2); the GPT's wte and wpe). Returns the number of segments.
int model_rest_segments(const ModelShape *m, GradSegment *seg);
struct ComputeOps {
    const char *name;                                         // the backend: "cpu", "cuda"
    ModelKind model;                                          // the model it computes
    int on_device;                                            // θ and the gradient live in GPU memory
    // A device twin: where and when run/device-check.sh last passed on this code. NULL: not
    // since it last changed, and a run on it says so in one line at start (src/main.c).
    const char *device_verified;
    int first_layers[FIRST_LAYER_COUNT];                      // 1: computes the first layer this way (train.first_layer)
    // An instance for batches of up to max_rows rows (batch_rows: the MLP's supervised
    // positions, the GPT's packed positions).
    Compute *(*create)(const ModelShape *m, int max_rows, FirstLayer first_layer);
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
    // gradient is read, reduced or stepped on.
    void (*finish_backward)(Compute *cc);
    // Sets (NULL: clears) the tail hook of the backwards that follow (the tail's call, then
    // one per block where the model has blocks). NULL where the backend does not offer it
    // (cuda: the gradient is reduced after the backward).
    void (*set_tail_hook)(Compute *cc, GradTailHook hook, void *ctx);
    // Forward only, no dropout, unweighted: Σ losses and number of argmax hits. row_loss (T)
    // and row_hit (T), when not NULL, receive each supervised position's loss (the terms the
    // returned sum adds, in position order) and 1 where its argmax is the target (evaluate
    // --per-sequence sums them per sequence).
    double (*evaluate)(Compute *cc, const Batch *b, int64_t *correct, double *row_loss, int32_t *row_hit);
    // Forward only, no dropout: logits (V, host) = the output layer at the batch's last
    // supervised position (b->T ≥ 1), what generate samples the next token from.
    void (*last_logits)(Compute *cc, const Batch *b, float *logits);
    const OptimizerOps *optimizer;                            // the optimizer steps in this backend's memory
};

// Parameter I/O: every tensor of a θ-shaped vector (P) as `group`/<name> of an HDF5 file,
// with the row's shapes (checkpoints, reference.h5, grads.h5); read back only with exactly
// those shapes, stored as float32.
int h5_write_params(hid_t file, const char *group, const ModelShape *m, const float *v);
int h5_read_params(hid_t file, const char *path_in_file, const char *group, const ModelShape *m, float *v);

#ifdef __cplusplus
}
#endif
#endif
