// comm.h — communication between ranks. MPI is always the control plane (rendezvous,
// agreement on errors, broadcasts); the data plane — the window's integer counts and the
// gradient average — goes through a backend: `mpi` over host buffers (src/comm_mpi.c) or
// `nccl` over device buffers (cuda/comm_nccl.cu).
#ifndef DDPTOK_COMM_H
#define DDPTOK_COMM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct Comm Comm;
typedef struct {
    const char *name;
    int device_buffers;  // the float average works on GPU memory (else host memory)
    // Sum of int64 counts, in place. `buf` is host memory.
    int (*allreduce_sum_i64)(Comm *comm, int64_t *buf, int n);
    // Average of float32, in place, over `buf` (GPU memory when device_buffers, else host).
    int (*allreduce_avg_f32)(Comm *comm, float *buf, size_t n);
    void (*destroy)(Comm *comm);
    // Sum of float32, in place, host memory; NULL where the backend only averages. The
    // trainer uses it when present and folds the 1/W into the optimizer step.
    int (*allreduce_sum_f32)(Comm *comm, float *buf, size_t n);
    // Bucketed gradient sum (train.overlap), in place, host memory, the 1/W left to the
    // caller as above: sum_f32_start begins the sum of one bucket and returns at once (every
    // rank starts the same buckets in the same order, and calls no other collective before
    // sum_f32_finish but allreduce_sum_f32); sum_f32_progress advances the buckets in flight
    // and returns at once (an MPI without a progress thread moves a non-blocking collective
    // only inside MPI calls: the backward calls it between its blocks); sum_f32_finish waits
    // for every started bucket against the deadline. NULL where the backend has none.
    int (*sum_f32_start)(Comm *comm, float *buf, size_t n);
    int (*sum_f32_progress)(Comm *comm);
    int (*sum_f32_finish)(Comm *comm);
} CommOps;

struct Comm {
    const CommOps *ops;
    MPI_Comm mpi;     // control plane (a duplicate of MPI_COMM_WORLD)
    int rank, world;
    int local_rank;   // rank among the ranks of this host
    int local_size;
    const char *op;   // the operation in flight, for error messages
    const char *label;  // what the next collective is for, in its messages (comm_label); NULL: its own name
    int64_t step;     // the window in flight, for error messages; -1 (comm_setup): none, and no message names one
    double timeout;   // seconds one collective of the training loop may wait (--comm-timeout)
    MPI_Request *bucket;  // (bucket_cap) gradient buckets in flight (sum_f32_start; MPI counts are
    int buckets, bucket_cap;  // int: one request per 2^30 floats of a bucket), grown as needed
    void *impl;
};

// MPI control plane: ranks, hosts, local rank. Errors return instead of aborting.
// `timeout`: the deadline of the count and gradient all-reduces and of the agreements.
void comm_setup(Comm *comm, double timeout);
extern const CommOps comm_mpi;
#ifdef DDPTOK_CUDA
extern const CommOps comm_nccl;
#endif

// Names what the next collective of `comm` is for ("the evaluation's sums of the test split"),
// so that a failure or a timeout in it says what happened, not the name its primitive has in
// training ("count all-reduce"); the name is used once. `name` must outlive the collective.
static inline void comm_label(Comm *comm, const char *name) { comm->label = name; }
// The operation's name for messages: the caller's label if it gave one (taken), else `own`.
static inline const char *comm_op_begin(Comm *comm, const char *own) {
    comm->op = comm->label ? comm->label : own;
    comm->label = NULL;
    return comm->op;
}
// " at step N" while a training step is in flight, else "" (for messages).
const char *comm_at_step(const Comm *comm);

// Every rank passes its own code; all get the largest (0 = all fine). Used so that an
// error seen by one rank stops every rank at the same point.
int comm_agree(Comm *comm, int code);
// Collective: if any rank passes bad != 0, every rank stops with `code`. A rank that
// failed has printed its cause with error(); each other rank prints one line naming the
// failed rank and `what` it was doing, so no rank ends without saying why.
void comm_stop_if_any(Comm *comm, int bad, int code, const char *what);
int comm_bcast(Comm *comm, void *buf, size_t bytes, int root);
void comm_barrier(Comm *comm);
// Gathers one fixed-size string per rank to rank 0 (out: world * len bytes).
void comm_gather_str(Comm *comm, const char *mine, char *out, int len);

#ifdef __cplusplus
}
#endif
#endif
