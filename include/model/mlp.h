// mlp.h — the window MLP's row (docs/spec.md §4, docs/model.md "The window MLP"): k previous
// tokens → embeddings → tanh hidden layer → logits (Bengio et al. 2003).
//
// Tensors, in θ order: embedding (V, D), w1 (H, k·D), b1 (H), w2 (V, H), b2 (V). Its
// microbatches are contexts (BATCH_CONTEXTS: the k ids before each supervised position);
// the overlap's tail bucket is [w2, P): the output layer, final before the first layer's
// backward.
#ifndef DDPTOK_MLP_H
#define DDPTOK_MLP_H

#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MLP_EMBEDDING = 0, MLP_W1, MLP_B1, MLP_W2, MLP_B2, MLP_TENSORS };

// Its own shape (ModelShape.own, set by its row's shape from model.context, embed_dim, hidden).
typedef struct {
    int k;  // context: the ids before a position that its prediction reads
    int D;  // embedding width
    int H;  // hidden width
} MlpDims;
MODEL_OWN_SHAPE(MlpDims, mlp_dims)

// Its row, mlp_row (src/model/mlp.c): embedding ~ N(0, 1), w1 and b1 ~ U(±1/√(kD)), w2 and
// b2 ~ U(±1/√H) (torch's nn.Embedding and nn.Linear defaults) drawn in θ order from the init
// stream; the CPU backend's buffers per row (2kD + 4H + V)·4 bytes, the factored tables
// k·V·H·8; the logits after a sequence from its last k ids (0 before the start), in double.

extern const ComputeOps compute_mlp_cpu;  // src/model/mlp_cpu.c: the reference backend
#ifdef DDPTOK_CUDA
extern const ComputeOps compute_mlp_cuda;  // cuda/mlp_cuda.cu: its twin
#endif

#ifdef __cplusplus
}
#endif
#endif
