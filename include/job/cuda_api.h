// cuda_api.h — the CUDA backend as a module, present only when ddptok is built with CUDA
// (DDPTOK_CUDA). cuda/*.cu, cuBLAS, cudart and NCCL are linked into one shared module,
// build/cuda/ddptok-cuda.so (installed beside the binary as ddptok-cuda.so), and ddptok
// opens it with dlopen only when the backend is cuda: a CPU run maps none of those
// libraries. The binary and the module meet in one table of functions (CudaModule), which
// the module's one entry symbol returns and the loader checks (ABI number and header
// layout) before anything in it is called.
//
// The module calls back into the binary (die_abort, error, g_id, comm_agree, ...): the
// binary exports exactly the symbols the module's objects leave undefined (the Makefile
// derives the list, build/cuda/module-imports.list, from the objects).
#ifndef DDPTOK_CUDA_API_H
#define DDPTOK_CUDA_API_H
#ifdef DDPTOK_CUDA

#include <stddef.h>

#include "job/comm.h"
#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

// Bumped whenever CudaModule changes (a field added, removed or retyped).
#define DDPTOK_CUDA_ABI 2
// The entry symbol (a function returning the table) and the override of where it is.
#define DDPTOK_CUDA_ENTRY "ddptok_cuda_entry"
#define DDPTOK_CUDA_MODULE_ENV "DDPTOK_CUDA_MODULE"
#define DDPTOK_CUDA_MODULE_NAME "ddptok-cuda.so"
// DDPTOK_LAYOUT: a hash of include/*/*.h given by the Makefile to the binary and to the
// module alike, so a module built from other headers (other struct layouts behind the same
// ABI number) is refused too.
#ifndef DDPTOK_LAYOUT
#define DDPTOK_LAYOUT "unknown"
#endif

typedef struct {
    int abi;                        // DDPTOK_CUDA_ABI of the module's build
    const char *layout;             // DDPTOK_LAYOUT of the module's build
    const ComputeOps *compute[MODEL_COUNT];  // per model kind (NULL: no CUDA twin yet); their optimizer: optimizer_cuda
    const CommOps *nccl;            // comm_nccl, installed into a Comm by nccl_init
    // Number of usable GPUs (0 when there is no driver or no device).
    int (*device_count)(void);
    // Selects this rank's GPU: local rank modulo the devices of its host. Returns the ordinal.
    int (*select_device)(const Comm *comm);
    // "name, UUID, memory" of the current device.
    void (*describe_device)(char *out, size_t len);
    // UUID of the current device as 32 hex digits.
    void (*device_uuid)(char out[33]);
    // Copies host bytes to newly allocated device memory / back and frees it (check-env, bench-comm).
    void *(*upload)(const void *host, size_t bytes);
    void (*download_free)(void *dev, void *host, size_t bytes);
    // Sets up NCCL on `comm` (unique id over MPI, non-blocking init with a deadline). Refuses,
    // before NCCL starts, when two ranks share one GPU. 0 or -1 (error printed on every rank).
    int (*nccl_init)(Comm *comm, double timeout_seconds);
    // NCCL's version as "2.28.9".
    void (*nccl_version)(char *out, size_t len);
} CudaModule;

// The module's entry (cuda/cuda_module.cu): its table.
const CudaModule *ddptok_cuda_entry(void);

// --- The binary's side (src/job/cuda_module.c) ------------------------------------------
// Where the module is looked for: $DDPTOK_CUDA_MODULE when set (that path only), else
// ddptok-cuda.so beside the executable (/proc/self/exe), else ../lib/ddptok/ddptok-cuda.so
// from the executable's folder (an install under PREFIX/bin and PREFIX/lib), else
// build/cuda/ddptok-cuda.so under the executable's folder (the build tree).

// The module's table, opened on the first call. When the module or a library it needs is
// missing, or its ABI differs, dies with one line naming the path tried and dlerror()
// (exit 2; inside the start-up agreement every rank stops).
const CudaModule *cuda_module(void);
// The same without dying: NULL and the reason in `why`.
const CudaModule *cuda_module_try(char *why, size_t len);
// The table if it has been opened already, else NULL (opens nothing).
const CudaModule *cuda_module_loaded(void);
// The path cuda_module() opens (or would open); 1 when a file is there.
int cuda_module_path(char *out, size_t len);
// 1 when this machine shows an NVIDIA driver (/dev/nvidiactl, /dev/dxg or
// /proc/driver/nvidia/gpus/*): without one, the default backend is cpu and the module stays
// closed.
int cuda_driver_present(void);

// --- The module's functions (cuda/*.cu): reached from ddptok only through the table;
// test_cuda_model links the objects and calls them directly.
int cuda_device_count(void);
int cuda_select_device(const Comm *comm);
void cuda_describe_device(char *out, size_t len);
void cuda_device_uuid(char out[33]);
void *cuda_upload(const void *host, size_t bytes);
void cuda_download_free(void *dev, void *host, size_t bytes);
int comm_nccl_init(Comm *comm, double timeout_seconds);
void nccl_version_string(char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
#endif
