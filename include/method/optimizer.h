// optimizer.h — the optimizer interface beside the compute backends (docs/spec.md §4 "Optimizer";
// docs/model.md "Optimizers"). An algorithm is one row (its named state tensors) plus one step
// function per backend (src/optimizer_cpu.c, cuda/optimizer_cuda.cu); its state is
// P-element tensors in the backend's memory plus a scalar step count, which checkpoints
// write generically as /optimizer/<state>/<param> and the attribute `step`.
//
// Both step functions take the gradient buffer as the window left it: grad[0..P-1] holds
// the all-reduced sum when grad_div = W (the optimizer divides, bit for bit as a separate
// division would), or the average when grad_div = 1.
#ifndef DDPTOK_OPTIMIZER_H
#define DDPTOK_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    OPT_SGD = 0,  // torch.optim.SGD: momentum with dampening, not Nesterov
    OPT_ADAMW,    // torch.optim.AdamW: decoupled weight decay, bias correction, amsgrad off
    OPT_COUNT
} OptimizerKind;

extern const char *const optimizer_names[OPT_COUNT];  // train.optimizer.name

// ---------------------------------------------------------------------------------------
// The hyper-parameters: one table, from which OptimizerHyper, the config keys
// train.optimizer.<field> (src/config/config.c), the checkpoint's /optimizer attributes,
// their payload checksum and their checks on load (src/store/rank_file.c) all derive.
//
//   X(field, n, attributes, min, max, default, users, expect)
//
//   field       OptimizerHyper's member, and the config key train.optimizer.<field>
//   n           1: a number; 2: a pair, the config's flow list [a, b] (member double[2])
//   attributes  the checkpoint attribute of each element, in parentheses
//   min, max    each element's inclusive range
//   default     each element, in parentheses: the config key's default (its YAML is these
//               tokens) and the value of an attribute a checkpoint written before the row
//               existed does not hold
//   users       the optimizers whose step reads it (OPT_USES(kind) | ...)
//   expect      what the config key expects, for its error message
//
// Adding a hyper-parameter is a row here and its use in the step functions
// (optimizer_cpu.c, cuda/optimizer_cuda.cu). A checkpoint's checksum lists the attributes
// it holds in this order: a row may be inserted anywhere, but rows are never reordered or
// renamed (every format-2 checkpoint written before would fail its checksum).
#define OPT_USES(kind) (1u << (kind))
#define OPTIMIZER_HYPERS(X)                                                                                           \
    X(lr, 1, ("lr"), 0, 1e6, (0.1), OPT_USES(OPT_SGD) | OPT_USES(OPT_ADAMW), "a non-negative number")                \
    X(weight_decay, 1, ("weight_decay"), 0, 1e6, (0), OPT_USES(OPT_SGD) | OPT_USES(OPT_ADAMW), "a non-negative number") \
    X(momentum, 1, ("momentum"), 0, 0.999999, (0.9), OPT_USES(OPT_SGD), "a number in [0, 1)")                       \
    X(dampening, 1, ("dampening"), 0, 1, (0), OPT_USES(OPT_SGD), "a number in [0, 1]")                              \
    X(betas, 2, ("beta1", "beta2"), 0, 0.9999999999, (0.9, 0.999), OPT_USES(OPT_ADAMW),                             \
      "[beta1, beta2], each a number in [0, 1)")                                                                      \
    X(eps, 1, ("eps"), 0, 1, (1e-8), OPT_USES(OPT_ADAMW), "a number in [0, 1]")

#define OPT_HYPER_MEMBER_1(field) double field;
#define OPT_HYPER_MEMBER_2(field) double field[2];
#define OPT_HYPER_MEMBER(field, n, ...) OPT_HYPER_MEMBER_##n(field)
typedef struct {
    OPTIMIZER_HYPERS(OPT_HYPER_MEMBER)
} OptimizerHyper;

// The table at run time: one row per hyper-parameter, in OPTIMIZER_HYPERS order.
typedef struct {
    const char *field;     // OptimizerHyper's member; the config key train.optimizer.<field>
    int n;                 // elements (1 or 2)
    const char *attrs[2];  // the checkpoint attribute of each element
    size_t offset;         // of the member in OptimizerHyper
    double min, max;       // each element's range
    double def[2];         // each element's default
    unsigned users;        // bit k: optimizer k reads it
    const char *expect;
} HyperRow;
extern const HyperRow optimizer_hypers[];
extern const int optimizer_n_hypers;

// The hyper-parameters as checkpoint attributes: every element of every row, in table order.
typedef struct {
    const char *name;  // the attribute
    const HyperRow *row;
    int elem;
} HyperAttr;
#define OPT_MAX_HYPER_ATTRS 32  // a checkpoint's bit mask of the attributes it holds
// Attribute a (0, 1, ...) into *out: 0, or -1 past the last.
int optimizer_hyper_attr(int a, HyperAttr *out);
// The number of attributes.
int optimizer_n_hyper_attrs(void);
// Attribute a's value in h.
double *optimizer_hyper_slot(OptimizerHyper *h, int a);
double optimizer_hyper_get(const OptimizerHyper *h, int a);
// Every element at its default.
void optimizer_hyper_defaults(OptimizerHyper *h);

#define OPT_MAX_STATES 2

typedef struct {
    int n_states;
    const char *state_names[OPT_MAX_STATES];  // the <state> of /optimizer/<state>/<param>
    int nonnegative[OPT_MAX_STATES];          // 1: every element of that state is >= 0 (AdamW's v)
    int step_is_update;  // 1: `steps` counts every update, so a checkpoint's optimizer step is its step
} OptimizerRow;

extern const OptimizerRow optimizers[OPT_COUNT];

typedef struct Optimizer Optimizer;
typedef void (*OptimizerStepFn)(const Optimizer *o, float *theta, const float *grad, float grad_div);

// A backend: its memory and one step function per algorithm.
typedef struct {
    const char *name;
    float *(*alloc)(size_t n);  // n floats, zeroed
    void (*release)(float *buf);
    void (*download)(float *host, const float *buf, size_t n);
    void (*upload)(float *buf, const float *host, size_t n);
    // θ (P) and grad (P + 1) in the backend's memory; o->steps is already the number of
    // this update (1 for the first).
    OptimizerStepFn step[OPT_COUNT];
    // A copy of the decay mask (n bytes) in the backend's memory, and its release; NULL where
    // the step reads the host's mask itself (cpu).
    const uint8_t *(*mask_upload)(const uint8_t *host, size_t n);
    void (*mask_release)(const uint8_t *mask);
} OptimizerOps;

// The learning-rate schedule (train.lr_schedule and its keys; docs/config.md): the rate of
// update `it` (0-based) is a pure function of it, so a resume, elastic or not, follows it
// from the optimizer's restored step count alone.
typedef enum { LR_CONSTANT = 0, LR_COSINE, LR_SCHEDULE_COUNT } LrScheduleKind;
extern const char *const lr_schedule_names[LR_SCHEDULE_COUNT];
// train.optimizer.decay: which elements weight decay applies to. matrices: the tensors of two
// or more dimensions (every GEMM weight and the embeddings), not biases or LayerNorm's, as
// nanoGPT's configure_optimizers (`p.dim() >= 2`).
typedef enum { DECAY_ALL = 0, DECAY_MATRICES, DECAY_COUNT } DecayGroups;
extern const char *const decay_group_names[DECAY_COUNT];

typedef struct {
    LrScheduleKind kind;
    int warmup;         // train.warmup_updates
    int decay_updates;  // train.lr_decay_updates, resolved (0 there: train.updates)
    double min_lr;      // train.min_lr
} LrSchedule;
// The rate of update `it` under base rate lr: constant: lr itself (the same double, so the
// bits of a run without a schedule); cosine: nanoGPT's get_lr, in double.
double lr_schedule_rate(const LrSchedule *s, double lr, int64_t it);

struct Optimizer {
    OptimizerKind kind;
    const OptimizerOps *ops;
    OptimizerHyper h;
    LrSchedule schedule;           // constant unless the trainer sets one
    double lr;                     // the rate of the update in progress (optimizer_step sets it)
    const uint8_t *decay_mask;     // (P) in the backend's memory: 1 where weight decay applies (train.optimizer.decay:
                                   // matrices); NULL: every element. Set by optimizer_set_decay_mask.
    int mask_owned;                // decay_mask is the backend's copy (mask_upload), released with the optimizer
    size_t P;
    int64_t steps;                 // updates applied (SGD: 0 = no momentum buffer yet; AdamW: bias correction's t)
    float *state[OPT_MAX_STATES];  // (P) each, in the backend's memory
};

// A host copy of an optimizer's state (what a checkpoint holds).
typedef struct {
    OptimizerKind kind;
    OptimizerHyper h;
    int64_t steps;
    float *state[OPT_MAX_STATES];  // (P) each, host; NULL beyond the row's n_states
} OptimizerSnapshot;

Optimizer *optimizer_create(OptimizerKind kind, const OptimizerHyper *h, const OptimizerOps *ops, size_t P);
void optimizer_free(Optimizer *o);
// Weight decay only where host[i] is 1 (P bytes, the caller's; kept or copied to the backend).
void optimizer_set_decay_mask(Optimizer *o, const uint8_t *host);
// One update of θ from the gradient buffer (see the top of this file).
void optimizer_step(Optimizer *o, float *theta, const float *grad, float grad_div);
// Host copy of the state (allocates; optimizer_snapshot_free releases).
void optimizer_snapshot(const Optimizer *o, OptimizerSnapshot *s);
void optimizer_snapshot_free(OptimizerSnapshot *s);
// Restores the step count and the state tensors (not the hyper-parameters: those come
// from the config, which a resume has checked). `skip` names a state tensor not to
// restore (a test hook; NULL: none).
void optimizer_restore(Optimizer *o, const OptimizerSnapshot *s, const char *skip);
// Index of a state name in the row, or -1.
int optimizer_state_index(OptimizerKind kind, const char *name);

// AdamW's per-update scalars, computed once on the host in double and rounded to float
// (as torch does with its Python-float arguments); both backends' kernels use them.
typedef struct {
    float decay;                             // 1 − lr·wd
    float beta1, beta2, one_minus_beta1, one_minus_beta2;
    float step_size;                         // lr / (1 − β1^t)
    float bias2_sqrt;                        // √(1 − β2^t)
    float eps;
} AdamWScalars;
void adamw_scalars(const Optimizer *o, AdamWScalars *s);

// The CPU's AdamW pass over n values (optimizer_cpu.c) in the variant named (NULL: the first
// this CPU supports); returns 0, or −1 and does nothing for a name this CPU cannot run; and the names of the variants this
// CPU runs, fastest first (tests/test_kernels.c checks every one gives the portable bits).
int optimizer_cpu_adamw_pass(const char *variant, float *theta, float *m, float *v, const float *grad, const uint8_t *mask,
                              size_t n, float div, const AdamWScalars *sc);
int optimizer_cpu_adamw_variants(const char **names, int max);

extern const OptimizerOps optimizer_cpu;
#ifdef DDPTOK_CUDA
extern const OptimizerOps optimizer_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
