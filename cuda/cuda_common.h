// cuda_common.h — one check idiom per CUDA library (CUDA_CHECK, CUBLAS_CHECK, NCCL_CHECK):
// static inline functions taking file and line that print rank, host and a hint, and end
// the whole job, since a rank whose device failed cannot go on.
#ifndef DDPTOK_CUDA_COMMON_H
#define DDPTOK_CUDA_COMMON_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"

static inline void cuda_check(cudaError_t e, const char *file, int line) {
    if (e == cudaSuccess) return;
    die_abort(EXIT_INTERNAL, "CUDA error on %s at %s:%d: %s (%s)", g_id.host, file, line, cudaGetErrorString(e),
              cudaGetErrorName(e));
}
#define CUDA_CHECK(call) cuda_check((call), __FILE__, __LINE__)
// After every kernel launch.
#define CUDA_LAUNCH_CHECK() cuda_check(cudaGetLastError(), __FILE__, __LINE__)

static inline void cublas_check(cublasStatus_t s, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    die_abort(EXIT_INTERNAL, "cuBLAS error %d on %s at %s:%d (%s)", (int)s, g_id.host, file, line,
              cublasGetStatusString(s));
}
#define CUBLAS_CHECK(call) cublas_check((call), __FILE__, __LINE__)

#endif
