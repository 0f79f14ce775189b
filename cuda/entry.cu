// entry.cu — the CUDA module's one entry (job/cuda_api.h): the table through which
// ddptok reaches the GPU backend, the NCCL data plane and the device queries once it has
// opened build/cuda/ddptok-cuda.so. Nothing here computes: the table names the functions
// of device.cu, comm_nccl.cu, mlp_cuda.cu and gpt_cuda.cu as they are.
#include "job/cuda_api.h"
#include "gpt_cuda_plan.h"
#include "model/mlp.h"

static const CudaModule table = {
    .abi = DDPTOK_CUDA_ABI,
    .layout = DDPTOK_LAYOUT,
    .compute = {[MODEL_MLP] = &compute_mlp_cuda, [MODEL_GPT] = &compute_gpt_cuda},
    .nccl = &comm_nccl,
    .device_count = cuda_device_count,
    .select_device = cuda_select_device,
    .describe_device = cuda_describe_device,
    .device_uuid = cuda_device_uuid,
    .upload = cuda_upload,
    .download_free = cuda_download_free,
    .nccl_init = comm_nccl_init,
    .nccl_version = nccl_version_string,
};

extern "C" __attribute__((visibility("default"))) const CudaModule *ddptok_cuda_entry(void) { return &table; }
