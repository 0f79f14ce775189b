// loss.cuh — the row loss of every model's output layer on the device (the MLP's and the
// GPT's, as cpu_row_loss is on the CPU): one block of ROW_LOSS_LANES threads per row. Lane l
// takes the logits v ≡ l (mod lanes) in ascending order: its max and argmax (the lowest index
// on ties), then Σ exp_f32(y − mx) in double; lane 0 combines the lanes in a fixed order (a
// pairwise tree), so the loss is the same run to run. Against the CPU: the exps and the
// softmax's rounding are the CPU's formulas (bit-identical exps), the double sum is added in
// another order (a few ulp of a double), and log is the device's (≤ 1 ulp of a double).
#ifndef DDPTOK_CUDA_LAYERS_LOSS_CUH
#define DDPTOK_CUDA_LAYERS_LOSS_CUH

#include "layers/common.cuh"

enum { ROW_LOSS_LANES = 256 };

// Lane l's max and argmax over v = l, l + lanes, ... (mx −∞, arg V when it has none).
LAYER_FN void row_loss_lane_max(const float *y, int V, int l, int lanes, float *mx, int *arg) {
    float m = -INFINITY;
    int a = V;
    for (int v = l; v < V; v += lanes)
        if (a == V || y[v] > m) m = y[v], a = v;
    *mx = m, *arg = a;
}
// The row's max and argmax from the lanes' (lowest index on ties: the CPU's first maximum).
LAYER_FN void row_loss_combine_max(const float *mx, const int *arg, int lanes, int V, float *out_mx, int *out_arg) {
    float m = -INFINITY;
    int a = V;
    for (int l = 0; l < lanes; l++)
        if (arg[l] < V && (a == V || mx[l] > m || (mx[l] == m && arg[l] < a))) m = mx[l], a = arg[l];
    *out_mx = m, *out_arg = a;
}
// Lane l's Σ exp_f32(y − mx) in double; e (may be y) the exps.
LAYER_FN double row_loss_lane_sum(const float *y, float *e, int V, int l, int lanes, float mx) {
    double s = 0;
    for (int v = l; v < V; v += lanes) {
        float x = exp_f32(y[v] - mx);
        e[v] = x, s += (double)x;
    }
    return s;
}
// The lanes' sums added pairwise in place (lanes a power of two): the total in acc[0].
LAYER_FN double row_loss_tree(double *acc, int lanes) {
    for (int w = lanes / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) acc[l] += acc[l + w];
    return acc[0];
}
// The backward of lane l: y[v] = sw·(float)(e[v]·inv_s), minus sw at the target (cpu_row_loss's).
LAYER_FN void row_loss_lane_backward(float *y, const float *e, int V, int l, int lanes, double inv_s, float sw, int tgt) {
    for (int v = l; v < V; v += lanes) {
        float g = sw * (float)((double)e[v] * inv_s);
        y[v] = v == tgt ? g - sw : g;
    }
}

#ifdef __CUDACC__
// Rows (blockIdx.x) of Y (rows, V): row_loss[r] = w·(logsumexp − y[tgt]) (w = weight[r], 1 when
// weight is NULL), row_hit[r] = argmax == tgt; with backward Y becomes scale·w·(softmax − onehot).
static __global__ void row_loss_kernel(float *Y, const int32_t *target, const float *weight, int V, float scale, int backward,
                                double *row_loss, int *row_hit) {
    __shared__ double sd[ROW_LOSS_LANES];
    __shared__ float sm[ROW_LOSS_LANES];
    __shared__ int sa[ROW_LOSS_LANES];
    __shared__ float row_mx;
    __shared__ double row_s;
    float *y = Y + (size_t)blockIdx.x * V;
    int l = threadIdx.x, tgt = target[blockIdx.x];
    float ytgt = y[tgt];
    row_loss_lane_max(y, V, l, ROW_LOSS_LANES, &sm[l], &sa[l]);
    __syncthreads();
    if (l == 0) {
        int arg;
        row_loss_combine_max(sm, sa, ROW_LOSS_LANES, V, &row_mx, &arg);
        row_hit[blockIdx.x] = arg == tgt;
    }
    __syncthreads();
    sd[l] = row_loss_lane_sum(y, y, V, l, ROW_LOSS_LANES, row_mx);
    __syncthreads();
    if (l == 0) {
        row_s = row_loss_tree(sd, ROW_LOSS_LANES);
        double lse = (double)row_mx + log(row_s);
        float w = weight ? weight[blockIdx.x] : 1.0f;
        row_loss[blockIdx.x] = (double)w * (lse - (double)ytgt);
    }
    __syncthreads();
    if (backward) {
        float w = weight ? weight[blockIdx.x] : 1.0f;
        row_loss_lane_backward(y, y, V, l, ROW_LOSS_LANES, 1.0 / row_s, scale * w, tgt);
    }
}
static inline void row_loss_forward(cudaStream_t st, float *Y, const int32_t *target, const float *weight, int rows, int V, float scale,
                                    int backward, double *row_loss, int *row_hit) {
    row_loss_kernel<<<rows, ROW_LOSS_LANES, 0, st>>>(Y, target, weight, V, scale, backward, row_loss, row_hit);
}
#endif

#endif
