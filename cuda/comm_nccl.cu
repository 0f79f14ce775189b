// comm_nccl.cu — the `nccl` data plane: counts (int64 sum) and the gradient (float
// average, ncclAvg) on device buffers. MPI remains the control plane: rank 0's
// ncclUniqueId travels by MPI_Bcast. Every wait polls the CUDA event and
// ncclCommGetAsyncError against a deadline (--comm-timeout); on an error or a timeout the
// rank names itself, its host, the step and the operation, aborts the communicator and
// ends the whole job (exit 4) — no rank waits forever.
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_common.h"
#include "job/comm.h"
#include "job/cuda_api.h"

typedef struct {
    ncclComm_t nccl;
    cudaStream_t stream;
    cudaEvent_t done;
    int64_t *dcounts;  // device buffer for the count all-reduce
    int cap_counts;
    double timeout;
} NcclImpl;

static void nccl_fail(Comm *comm, const char *what) {
    NcclImpl *im = (NcclImpl *)comm->impl;
    fprintf(stderr, "ddptok: rank %d: error: NCCL %s on %s during %s%s; aborting the job (exit %d)\n", comm->rank,
            what, g_id.host, comm->op ? comm->op : "?", comm_at_step(comm), EXIT_COMM_FAILURE);
    fflush(stderr);
    if (im && im->nccl) ncclCommAbort(im->nccl);
    MPI_Abort(MPI_COMM_WORLD, EXIT_COMM_FAILURE);
    exit(EXIT_COMM_FAILURE);
}

static inline void nccl_check(ncclResult_t r, Comm *comm, const char *file, int line) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    char what[512];
    snprintf(what, sizeof what, "error '%s' at %s:%d", ncclGetErrorString(r), file, line);
    nccl_fail(comm, what);
}
#define NCCL_CHECK(call, c) nccl_check((call), (c), __FILE__, __LINE__)

// Waits until the communicator is out of ncclInProgress (non-blocking init, enqueue).
static void wait_comm_ready(Comm *comm) {
    NcclImpl *im = (NcclImpl *)comm->impl;
    double deadline = now_seconds() + im->timeout;
    for (;;) {
        ncclResult_t st;
        NCCL_CHECK(ncclCommGetAsyncError(im->nccl, &st), comm);
        if (st == ncclSuccess) return;
        if (st != ncclInProgress) NCCL_CHECK(st, comm);
        if (now_seconds() > deadline) nccl_fail(comm, "timeout while the communicator was busy");
        usleep(100);
    }
}

// Records an event after the collective and polls it and the communicator's async error.
static void wait_collective(Comm *comm) {
    NcclImpl *im = (NcclImpl *)comm->impl;
    wait_comm_ready(comm);
    CUDA_CHECK(cudaEventRecord(im->done, im->stream));
    double deadline = now_seconds() + im->timeout;
    for (;;) {
        cudaError_t e = cudaEventQuery(im->done);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) CUDA_CHECK(e);
        ncclResult_t st;
        NCCL_CHECK(ncclCommGetAsyncError(im->nccl, &st), comm);
        if (st != ncclSuccess && st != ncclInProgress) NCCL_CHECK(st, comm);
        if (now_seconds() > deadline) {
            char what[128];
            snprintf(what, sizeof what, "timeout after %.0f s (--comm-timeout)", im->timeout);
            nccl_fail(comm, what);
        }
        usleep(50);
    }
}

static int nccl_allreduce_sum_i64(Comm *comm, int64_t *buf, int n) {
    NcclImpl *im = (NcclImpl *)comm->impl;
    comm_op_begin(comm, "count all-reduce (NCCL)");
    if (n > im->cap_counts) {
        if (im->dcounts) CUDA_CHECK(cudaFree(im->dcounts));
        CUDA_CHECK(cudaMalloc(&im->dcounts, (size_t)n * sizeof(int64_t)));
        im->cap_counts = n;
    }
    CUDA_CHECK(cudaMemcpyAsync(im->dcounts, buf, (size_t)n * sizeof(int64_t), cudaMemcpyHostToDevice, im->stream));
    NCCL_CHECK(ncclAllReduce(im->dcounts, im->dcounts, (size_t)n, ncclInt64, ncclSum, im->nccl, im->stream), comm);
    wait_collective(comm);
    CUDA_CHECK(cudaMemcpy(buf, im->dcounts, (size_t)n * sizeof(int64_t), cudaMemcpyDeviceToHost));
    return 0;
}

static int nccl_allreduce_avg_f32(Comm *comm, float *dbuf, size_t n) {
    NcclImpl *im = (NcclImpl *)comm->impl;
    comm_op_begin(comm, "gradient all-reduce (NCCL)");
    // n is an element count (NCCL counts elements, not bytes)
    NCCL_CHECK(ncclAllReduce(dbuf, dbuf, n, ncclFloat32, ncclAvg, im->nccl, im->stream), comm);
    wait_collective(comm);
    return 0;
}

static void nccl_destroy(Comm *comm) {
    NcclImpl *im = (NcclImpl *)comm->impl;
    if (!im) return;
    comm->op = "NCCL finalize";
    NCCL_CHECK(ncclCommFinalize(im->nccl), comm);
    wait_comm_ready(comm);  // non-blocking: finalize completes asynchronously
    ncclCommDestroy(im->nccl);
    if (im->dcounts) cudaFree(im->dcounts);
    cudaEventDestroy(im->done);
    cudaStreamDestroy(im->stream);
    free(im);
    comm->impl = NULL;
}

extern "C" const CommOps comm_nccl = {
    .name = "nccl",
    .device_buffers = 1,
    .allreduce_sum_i64 = nccl_allreduce_sum_i64,
    .allreduce_avg_f32 = nccl_allreduce_avg_f32,
    .destroy = nccl_destroy,
    .allreduce_sum_f32 = NULL,  // NCCL averages on the device (ncclAvg)
    .sum_f32_start = NULL,      // no buckets: the compute backend's tail hook is CPU-only (mlp_cuda.cu)
    .sum_f32_progress = NULL,
    .sum_f32_finish = NULL,
};

extern "C" void nccl_version_string(char *out, size_t len) {
    int v = 0;
    ncclGetVersion(&v);
    snprintf(out, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

extern "C" int comm_nccl_init(Comm *comm, double timeout) {
    // Two ranks on one GPU: refuse before NCCL starts (NCCL before 2.30 cannot do it).
    char uuid[33], key[160];
    cuda_device_uuid(uuid);
    snprintf(key, sizeof key, "%s/%s", g_id.host, uuid);
    char *all = (char *)xcalloc((size_t)comm->world, 160);
    MPI_Allgather(key, 160, MPI_CHAR, all, 160, MPI_CHAR, comm->mpi);
    int clash = -1;
    for (int r = 0; r < comm->world && clash < 0; r++)
        if (r != comm->rank && strcmp(all + (size_t)r * 160, key) == 0) clash = r;
    free(all);
    int any = comm_agree(comm, clash >= 0);
    if (any) {
        if (clash >= 0)
            error("--comm nccl: ranks %d and %d share GPU %.8s… on %s; NCCL needs one GPU per rank: use --comm mpi "
                  "(host-staged reductions) or start one rank per GPU",
                  comm->rank, clash, uuid, g_id.host);
        return -1;
    }
    NcclImpl *im = (NcclImpl *)xcalloc(1, sizeof *im);
    im->timeout = timeout;
    comm->impl = im;
    CUDA_CHECK(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&im->done, cudaEventDisableTiming));
    ncclUniqueId id;
    if (comm->rank == 0) NCCL_CHECK(ncclGetUniqueId(&id), comm);
    comm_bcast(comm, &id, sizeof id, 0);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    comm->op = "NCCL init";
    NCCL_CHECK(ncclCommInitRankConfig(&im->nccl, comm->world, id, comm->rank, &cfg), comm);
    wait_comm_ready(comm);
    comm->ops = &comm_nccl;
    return 0;
}
