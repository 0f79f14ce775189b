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
    OPT_SGD = 0,  // torch.optim.SGD: dampening 0, not Nesterov
    OPT_ADAMW,    // torch.optim.AdamW: decoupled weight decay, bias correction, amsgrad off
    OPT_COUNT
} OptimizerKind;

extern const char *const optimizer_names[OPT_COUNT];  // train.optimizer.name

typedef struct {
    double lr, weight_decay;
    double momentum;      // SGD μ
    double beta1, beta2;  // AdamW betas
    double eps;           // AdamW ε
} OptimizerHyper;

#define OPT_MAX_STATES 2

typedef struct {
    int n_states;
    const char *state_names[OPT_MAX_STATES];  // the <state> of /optimizer/<state>/<param>
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
} OptimizerOps;

struct Optimizer {
    OptimizerKind kind;
    const OptimizerOps *ops;
    OptimizerHyper h;
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

// The hyper-parameters as named doubles (checkpoint attributes, checksum).
typedef struct {
    const char *name;
    size_t offset;  // into OptimizerHyper
} HyperField;
extern const HyperField optimizer_hyper_fields[];
extern const int optimizer_n_hyper_fields;

extern const OptimizerOps optimizer_cpu;
#ifdef DDPTOK_CUDA
extern const OptimizerOps optimizer_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
