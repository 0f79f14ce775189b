// row_reduce.h — the two row reductions of the causal attention, shared by the CPU's layers
// (src/model/layers.c) and the device's (cuda/layers/attention.cuh) so both compute them the
// same way: max is exact in any order; the dot product is eight partial sums in double over
// i mod 8, added pairwise ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
#ifndef DDPTOK_ROW_REDUCE_H
#define DDPTOK_ROW_REDUCE_H

#ifdef __CUDACC__
#define ROW_FN static inline __host__ __device__
#else
#define ROW_FN static inline __attribute__((always_inline))  // inlined into each instruction set's kernel (cpu_kernels.c)
#endif

// The largest of x[0..n-1] (n ≥ 1), eight lanes at a time.
ROW_FN float row_max(const float *x, int n) {
    float m[8];
    for (int l = 0; l < 8; l++) m[l] = x[0];
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int l = 1; l < 8; l++) m[0] = m[l] > m[0] ? m[l] : m[0];
    return m[0];
}

// Σ a[i]·b[i] in double as eight partial sums over i mod 8 added pairwise.
ROW_FN double row_dot(const float *a, const float *b, int n) {
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)a[i + l] * (double)b[i + l];
    for (int l = 0; i + l < n; l++) acc[l] += (double)a[i + l] * (double)b[i + l];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

#endif
