// cuda_api.h — the C-callable side of the CUDA backend (cuda/*.cu), present only when
// ddptok is built with CUDA (DDPTOK_CUDA): device discovery and selection, and the NCCL
// data plane's set-up.
#ifndef DDPTOK_CUDA_API_H
#define DDPTOK_CUDA_API_H
#ifdef DDPTOK_CUDA

#include <stddef.h>

#include "job/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

// Number of usable GPUs (0 when there is no driver or no device).
int cuda_device_count(void);
// Selects this rank's GPU: local rank modulo the devices of its host. Returns the ordinal.
int cuda_select_device(const Comm *comm);
// "name, UUID, memory" of the current device.
void cuda_describe_device(char *out, size_t len);
// UUID of the current device as 32 hex digits.
void cuda_device_uuid(char out[33]);
// Copies host bytes to newly allocated device memory / back and frees it (tests, check-env).
void *cuda_upload(const void *host, size_t bytes);
void cuda_download_free(void *dev, void *host, size_t bytes);

// Sets up NCCL on `c` (unique id over MPI, non-blocking init with a deadline). Refuses,
// before NCCL starts, when two ranks share one GPU. 0 or -1 (error printed on every rank).
int comm_nccl_init(Comm *comm, double timeout_seconds);
// NCCL's version as "2.28.9".
void nccl_version_string(char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
#endif
