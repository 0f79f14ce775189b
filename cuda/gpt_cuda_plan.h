// gpt_cuda_plan.h — the GPT's CUDA twin's device buffers as a table (cuda/gpt_cuda.cu's
// create allocates exactly these), so the bytes a GPU instance holds are known without a
// GPU: tests/test_cuda_model.c --host checks them against the row (θ and the gradient its P,
// P + 1) and the per-row ones against the row's budget (gpt.c,
// which counts gpt_cpu.c's buffers: the twin keeps the same ones).
#ifndef DDPTOK_GPT_CUDA_PLAN_H
#define DDPTOK_GPT_CUDA_PLAN_H

#include <stddef.h>

#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GPT_BUF_PARAMS,   // θ and the gradient (the budget's parameter terms)
    GPT_BUF_ROWS,     // per packed row: the row's budget "activations" and "attention" terms
    GPT_BUF_SCRATCH,  // per instance: one run's heads, 2·NH·Lmax² floats (the CPU's one head: 2·Lmax²)
    GPT_BUF_BATCH,    // the microbatch's device copy (the host's is the data layer's budget)
} GptBufKind;

typedef struct {
    const char *name;  // the Compute field it is allocated to
    GptBufKind kind;
    size_t bytes;
} GptCudaBuffer;

enum { GPT_CUDA_MAX_BUFFERS = 64 };
// Fills out (GPT_CUDA_MAX_BUFFERS; may be NULL) with the buffers of an instance of `cap` rows;
// returns their number.
size_t gpt_cuda_plan(const ModelShape *m, int cap, GptCudaBuffer *out);

extern const ComputeOps compute_gpt_cuda;  // cuda/gpt_cuda.cu

#ifdef __cplusplus
}
#endif
#endif
