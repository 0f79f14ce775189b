// device.cu — GPU discovery and selection for the CUDA backend (see cuda_api.h).
#include <stdio.h>
#include <string.h>

#include "cuda_common.h"
#include "job/cuda_api.h"

extern "C" int cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no driver" error
        return 0;
    }
    return n;
}

extern "C" int cuda_select_device(const Comm *comm) {
    int n = cuda_device_count();
    ASSERT(n > 0);
    int dev = comm->local_rank % n;
    CUDA_CHECK(cudaSetDevice(dev));
    return dev;
}

extern "C" void cuda_device_uuid(char out[33]) {
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
    for (int i = 0; i < 16; i++) sprintf(out + 2 * i, "%02x", (unsigned char)p.uuid.bytes[i]);
    out[32] = 0;
}

extern "C" void cuda_describe_device(char *out, size_t len) {
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
    char uuid[33];
    cuda_device_uuid(uuid);
    snprintf(out, len, "GPU %d %s, UUID %.8s-%.4s-%.4s-%.4s-%.12s, %.1f GiB, sm_%d%d", dev, p.name, uuid, uuid + 8,
             uuid + 12, uuid + 16, uuid + 20, (double)p.totalGlobalMem / (1 << 30), p.major, p.minor);
}

extern "C" void *cuda_upload(const void *host, size_t bytes) {
    void *d;
    CUDA_CHECK(cudaMalloc(&d, bytes));
    CUDA_CHECK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

extern "C" void cuda_download_free(void *dev, void *host, size_t bytes) {
    CUDA_CHECK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(dev));
}
